//! Reuse of shared, reference-counted objects: a [`Recycler`] keeps every
//! object it made, and one whose only holder is the recycler is free for the
//! next [`Recycler::take`]. A team's segments are reused so
//! ([`crate::value::segment`]), and so are the small objects a large
//! operation is made of (a lent buffer's shared half, a lazy sum, its chunk
//! board, a lent output's chunk states), so that a loop of large
//! collectives allocates nothing once warm (`tests/allocations.rs`).
//!
//! Free means what it says: a holder can only be made from another holder,
//! so a count of one, read under the recycler's lock, stays one until the
//! recycler hands the object out, and `Arc::get_mut` on it (an Acquire of
//! the count) orders every former holder's use before its reuse. The
//! objects are plain `Arc`s: whoever holds one (a message in a lane, a
//! lingering core, a rank that failed holding it) keeps it valid for as
//! long as it does, exactly as before they were recycled.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::sync::{AtomicU64, Ordering};

/// An object a [`Recycler`] reuses.
pub trait Recycle {
    /// Whether objects of this type may hold other shared objects: a
    /// recycler then looks at every object on each take, to release what
    /// the free ones hold, instead of stopping at the first fit.
    const HOLDS_OTHERS: bool = false;

    /// Whether a free object still holds other shared objects (segments,
    /// loans) that it should let go of: the recycler then calls
    /// [`Recycle::release`] on it as soon as it sees it free, so that a free
    /// object never keeps another object (and its memory) from reuse.
    fn holds_others(&self) -> bool {
        false
    }

    /// Drops the shared objects it holds (it is free: nobody else holds it).
    fn release(&mut self) {}
}

/// A pool of `Arc<T>`s, each reused once only the pool holds it.
pub struct Recycler<T> {
    held: Mutex<Vec<Arc<T>>>,
    allocations: AtomicU64,
}

impl<T> Default for Recycler<T> {
    fn default() -> Self {
        Recycler {
            held: Mutex::new(Vec::new()),
            allocations: AtomicU64::new(0),
        }
    }
}

impl<T: Recycle> Recycler<T> {
    /// A free object, as its last holder left it, else a new one from
    /// `make`: the caller sets it up through the [`Taken`], then shares it.
    pub fn take(&self, make: impl FnOnce() -> T) -> Taken<'_, T> {
        self.take_best(|_| Some(0)).unwrap_or_else(|| {
            self.count_allocation();
            Taken {
                arc: Arc::new(make()),
                recycler: self,
            }
        })
    }

    /// The free object with the lowest `fit` (`None`: unsuitable), the
    /// oldest among equals, removed from the recycler: its one holder is
    /// the caller, who gives it back with [`Taken::share`]. `Some(0)`
    /// ends the search. `fit` sees objects others may hold (it reads only
    /// what holders cannot change), and is asked before the count is read
    /// (a count is a cache line others write). On the way, free objects
    /// that hold others [release](Recycle::release) them.
    pub fn take_best(&self, mut fit: impl FnMut(&T) -> Option<usize>) -> Option<Taken<'_, T>> {
        let mut held = self.lock();
        let mut best: Option<(usize, usize)> = None;
        for (i, arc) in held.iter_mut().enumerate() {
            let better = fit(arc).filter(|&f| best.map_or(true, |(_, b)| f < b));
            let releases = T::HOLDS_OTHERS && arc.holds_others();
            if (better.is_none() && !releases) || Arc::strong_count(arc) != 1 {
                continue;
            }
            if releases {
                if let Some(free) = Arc::get_mut(arc) {
                    free.release();
                }
            }
            if let Some(f) = better {
                best = Some((i, f));
                if f == 0 && !T::HOLDS_OTHERS {
                    break;
                }
            }
        }
        // In order: the oldest objects, the likeliest free, stay in front.
        best.map(|(i, _)| Taken {
            arc: held.remove(i),
            recycler: self,
        })
    }

    /// Counts an object made or grown outside [`Recycler::take`].
    pub fn count_allocation(&self) {
        self.allocations.fetch_add(1, Ordering::Relaxed);
    }

    /// Objects made (or grown, as counted) so far: constant in a steady
    /// state.
    pub fn allocations(&self) -> u64 {
        self.allocations.load(Ordering::Relaxed)
    }

    /// Objects in the recycler, free or held.
    pub fn objects(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Arc<T>>> {
        // Nothing runs user code under the lock: the list stays whole.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// An object taken from a [`Recycler`], its one holder: set it up through
/// `DerefMut`, then [`share`](Taken::share) it. Dropped unshared, it is
/// freed, not recycled.
pub struct Taken<'r, T> {
    arc: Arc<T>,
    recycler: &'r Recycler<T>,
}

impl<T: Recycle> Taken<'_, T> {
    /// The object, for holders to clone; the recycler keeps it too, and
    /// reuses it once they all let go.
    pub fn share(self) -> Arc<T> {
        self.recycler.lock().push(Arc::clone(&self.arc));
        self.arc
    }
}

impl<T> std::ops::Deref for Taken<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.arc
    }
}

impl<T> std::ops::DerefMut for Taken<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // `Arc::get_mut`'s Acquire orders every former holder's use of the
        // object before this.
        Arc::get_mut(&mut self.arc).expect("a taken object has one holder")
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// An object that may hold another (as a lazy sum holds loans).
    #[derive(Default)]
    struct Holder {
        id: u32,
        other: Option<Arc<Holder>>,
    }

    impl Recycle for Holder {
        const HOLDS_OTHERS: bool = true;
        fn holds_others(&self) -> bool {
            self.other.is_some()
        }
        fn release(&mut self) {
            self.other = None;
        }
    }

    #[test]
    fn an_object_is_reused_only_once_the_recycler_alone_holds_it() {
        let r = Recycler::<Holder>::default();
        let mut a = r.take(Holder::default);
        a.id = 1;
        let a = a.share();
        // Held: the next take makes another.
        let b = r.take(Holder::default).share();
        assert_eq!((r.allocations(), r.objects()), (2, 2));
        assert_eq!(a.id, 1, "a held object is never handed out");
        drop(a);
        // Free now: taken as its last holder left it, nothing allocated.
        let c = r.take(Holder::default);
        assert_eq!(c.id, 1);
        drop(c.share());
        assert_eq!((r.allocations(), r.objects()), (2, 2));
        drop(b);
        // An object taken and dropped unshared is gone, not recycled.
        drop(r.take(Holder::default));
        assert_eq!(r.objects(), 1);
    }

    #[test]
    fn a_free_object_lets_go_of_what_it_holds_on_the_next_take() {
        let r = Recycler::<Holder>::default();
        let inner = r.take(Holder::default).share();
        let mut outer = r.take(Holder::default);
        outer.other = Some(Arc::clone(&inner));
        let outer = outer.share();
        drop(inner);
        // `inner` is held by `outer` only, `outer` by its holder.
        let third = r.take(Holder::default).share();
        assert_eq!(r.allocations(), 3);
        drop((outer, third));
        // `outer` is free: the take releases what it holds, so `inner`
        // is free for the same take or the next.
        let x = r.take(Holder::default).share();
        let y = r.take(Holder::default).share();
        let z = r.take(Holder::default).share();
        assert_eq!(r.allocations(), 3, "all three reused");
        assert!([&x, &y, &z].iter().all(|h| h.other.is_none()));
    }

    #[derive(Default)]
    struct Sized(usize);
    impl Recycle for Sized {}

    #[test]
    fn take_best_takes_the_free_object_of_lowest_fit() {
        let r = Recycler::<Sized>::default();
        let made: Vec<_> = [8, 2, 4, 16]
            .map(|n| {
                let mut s = r.take(Sized::default);
                s.0 = n;
                s.share()
            })
            .into_iter()
            .collect();
        let held = Arc::clone(&made[2]);
        drop(made);
        // The smallest of at least 3: 4, but it is held, so 8.
        let fit = |s: &Sized| s.0.checked_sub(3);
        let best = r.take_best(fit).expect("a free one fits");
        assert_eq!(best.0, 8);
        assert!(r.take_best(|s: &Sized| s.0.checked_sub(100)).is_none());
        drop(held);
        assert_eq!(r.take_best(fit).map(|s| s.0), Some(4));
    }
}
