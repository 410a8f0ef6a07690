//! The window of ticks both event queues of [`crate::sim::queue`] keep (see
//! its docs for the cost model): a ring of `WINDOW` per-tick slots from the
//! current time, which slots are occupied, and an ordered map of the ticks
//! beyond the window.

use std::collections::BTreeMap;

use crate::types::Tick;

/// Ticks in the ring, the window (a power of two). A 64K-rank broadcast
/// spans about a hundred ticks, so it never leaves the ring. With 256, 1024
/// or 4096 the 64K-rank simulations ran the same number of instructions
/// within 2 % (also `delayed:D` with D on either side of the window); a wider
/// ring costs memory (at most one [`WakeSets`](crate::sim::queue::WakeSets)
/// bitset per slot, 8 KiB at 64K ranks) and a longer occupancy scan.
pub(crate) const WINDOW: usize = 1024;
const _: () = assert!(WINDOW.is_power_of_two() && WINDOW % 64 == 0);

/// The ring slot of tick `t`.
#[inline]
fn slot(t: Tick) -> usize {
    t as usize & (WINDOW - 1)
}

/// The end of the window that starts at `base`.
#[inline]
fn window_end(base: Tick) -> Tick {
    base.saturating_add(WINDOW as Tick)
}

/// A fresh ring of empty slots.
fn empty_ring<T>() -> Box<[Vec<T>; WINDOW]> {
    let ring: Box<[Vec<T>]> = (0..WINDOW).map(|_| Vec::new()).collect();
    match ring.try_into() {
        Ok(ring) => ring,
        Err(_) => unreachable!("the ring has WINDOW slots"),
    }
}

/// Which ring slots hold something, one bit per slot.
#[derive(Clone, Debug)]
struct Occupancy([u64; WINDOW / 64]);

impl Default for Occupancy {
    fn default() -> Self {
        Occupancy([0; WINDOW / 64])
    }
}

impl Occupancy {
    #[inline]
    fn contains(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }

    #[inline]
    fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    #[inline]
    fn remove(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }

    /// The first tick of `from..to` whose slot is occupied, where `to - from`
    /// is at most `WINDOW` (so each slot stands for one tick of the range).
    #[inline]
    fn first_in(&self, from: Tick, to: Tick) -> Option<Tick> {
        let mut t = from;
        while t < to {
            let i = slot(t);
            let bits = self.0[i / 64] >> (i % 64);
            if bits != 0 {
                // Bits past `to` in this word stand for ticks before `from`.
                let found = t.saturating_add(Tick::from(bits.trailing_zeros()));
                return (found < to).then_some(found);
            }
            t = t.saturating_add((64 - i % 64) as Tick);
        }
        None
    }

    /// Empties every occupied slot of a tick in `base..to` (the ticks the
    /// window leaves when time moves from `base` to `to`), calling `clear` on
    /// each and counting it off `near`, the number of occupied slots.
    fn empty_before(
        &mut self,
        base: Tick,
        to: Tick,
        near: &mut usize,
        mut clear: impl FnMut(usize),
    ) {
        let mut from = base;
        let end = to.min(window_end(base));
        while *near > 0 {
            let Some(t) = self.first_in(from, end) else {
                break;
            };
            let i = slot(t);
            clear(i);
            self.remove(i);
            *near -= 1;
            from = t + 1;
        }
    }

    /// Calls `f` on every occupied slot and empties the set.
    fn drain(&mut self, mut f: impl FnMut(usize)) {
        for (w, word) in self.0.iter_mut().enumerate() {
            let mut bits = std::mem::take(word);
            while bits != 0 {
                f(w * 64 + bits.trailing_zeros() as usize);
                bits &= bits - 1;
            }
        }
    }
}

/// The window and what lies beyond it, shared by both queues: tick `t` of
/// the window is the slot `t % WINDOW` of the ring, a `Vec<T>` that keeps its
/// capacity across runs; a later tick is a list of `F` in an ordered map.
/// The queue that owns the ring says how a slot is filled, emptied, and how
/// a far tick's list enters its slot.
#[derive(Debug)]
pub(crate) struct TickRing<T, F> {
    /// The current time: the ring holds ticks `base..base + WINDOW`.
    base: Tick,
    /// Tick `t` of the window at slot `t % WINDOW`.
    slots: Box<[Vec<T>; WINDOW]>,
    /// The slots with something pending.
    occupied: Occupancy,
    /// The number of slots with something pending.
    near: usize,
    /// What is pending at `base + WINDOW` or later, by tick, in push order.
    far: BTreeMap<Tick, Vec<F>>,
}

impl<T, F> Default for TickRing<T, F> {
    fn default() -> Self {
        TickRing {
            base: 0,
            slots: empty_ring(),
            occupied: Occupancy::default(),
            near: 0,
            far: BTreeMap::new(),
        }
    }
}

impl<T, F> TickRing<T, F> {
    /// Whether tick `at` lies in the window (the current time or after it,
    /// less than `WINDOW` ticks ahead).
    #[inline]
    pub(crate) fn in_window(&self, at: Tick) -> bool {
        at.wrapping_sub(self.base) < WINDOW as Tick
    }

    /// The slot of tick `at`, in the window, marked as holding something:
    /// the caller fills it.
    #[inline]
    pub(crate) fn occupy(&mut self, at: Tick) -> &mut Vec<T> {
        let i = slot(at);
        if !self.occupied.contains(i) {
            self.occupied.insert(i);
            self.near += 1;
        }
        &mut self.slots[i]
    }

    /// The slot of tick `at` if it lies in the window, whatever it holds.
    #[inline]
    pub(crate) fn slot_in_window(&mut self, at: Tick) -> Option<&mut Vec<T>> {
        self.in_window(at).then(|| &mut self.slots[slot(at)])
    }

    /// Schedules `item` at `at`, beyond the window; `what` names it in the
    /// panic if `at` lies before the current time.
    #[cold]
    #[inline(never)]
    pub(crate) fn push_far(&mut self, at: Tick, item: F, what: &str) {
        assert!(
            at >= self.base,
            "{what} at tick {at}, before the current time {}",
            self.base
        );
        self.far.entry(at).or_default().push(item);
    }

    /// The first tick after `now` (and not before the current time) with
    /// something pending, if any.
    #[inline]
    pub(crate) fn next_after(&self, now: Tick) -> Option<Tick> {
        let from = now.checked_add(1)?.max(self.base);
        if self.near > 0 {
            if let Some(t) = self.occupied.first_in(from, window_end(self.base)) {
                return Some(t);
            }
        }
        self.far.range(from..).next().map(|(&t, _)| t)
    }

    /// Takes the slot of tick `at`, which becomes the current time: what is
    /// still pending before `at` is dropped ([`TickRing::advance`] with
    /// `empty` and `admit`). An empty vector if nothing is pending at `at`.
    pub(crate) fn take(
        &mut self,
        at: Tick,
        empty: impl FnMut(&mut Vec<T>),
        admit: impl FnMut(&mut Vec<T>, Vec<F>),
    ) -> Vec<T> {
        if at < self.base {
            return Vec::new();
        }
        if at != self.base {
            self.advance(at, empty, admit);
        }
        let i = slot(at);
        if !self.occupied.contains(i) {
            return Vec::new();
        }
        self.occupied.remove(i);
        self.near -= 1;
        std::mem::take(&mut self.slots[i])
    }

    /// Makes `to`, later than the current time, the current time: `empty`
    /// clears each slot left behind (keeping its storage), and `admit` puts
    /// the list of each far tick the window now covers into its slot, empty
    /// until then.
    fn advance(
        &mut self,
        to: Tick,
        mut empty: impl FnMut(&mut Vec<T>),
        mut admit: impl FnMut(&mut Vec<T>, Vec<F>),
    ) {
        // Drop what is left before `to`; its slots are about to stand for
        // ticks of the new window.
        let slots = &mut self.slots;
        self.occupied
            .empty_before(self.base, to, &mut self.near, |i| empty(&mut slots[i]));
        self.base = to;
        // Far ticks the window now covers move into the ring before
        // anything else can be scheduled at them.
        let end = window_end(to);
        while let Some(entry) = self.far.first_entry() {
            let t = *entry.key();
            if t >= end {
                break;
            }
            let items = entry.remove();
            if t >= to {
                admit(self.occupy(t), items);
            }
        }
    }

    /// Drops the storage of every slot, and what it holds.
    pub(crate) fn drop_storage(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = Vec::new());
        self.occupied = Occupancy::default();
        self.near = 0;
    }

    /// Drops everything pending, `empty` clearing each occupied slot, and
    /// sets the time back to 0.
    pub(crate) fn clear(&mut self, mut empty: impl FnMut(&mut Vec<T>)) {
        let slots = &mut self.slots;
        self.occupied.drain(|i| empty(&mut slots[i]));
        self.near = 0;
        self.far.clear();
        self.base = 0;
    }

    /// Ticks the ring holds storage for: slots with a buffer and far ticks.
    /// At most `WINDOW` plus the far ticks pending.
    #[cfg(test)]
    pub(crate) fn allocated_ticks(&self) -> usize {
        self.slots.iter().filter(|s| s.capacity() > 0).count() + self.far.len()
    }
}
