//! Parking without lost wake-ups: the thread handle a receiver registers
//! before it sleeps, and the unparkers that wake it, lock-free on both
//! sides, with the handle freed only once no unparker can hold it (the
//! argument is in each step's comments; the loom models check it).

use super::{Header, SLEEPING};
use crate::sync::{thread, Ordering, UnsafeCell};

/// A registered thread handle.
pub(super) struct Waiter {
    pub(super) thread: thread::Thread,
    /// Touched (read) by every unparker that uses the handle and (written)
    /// just before the handle is freed: zero-sized and free with std; under
    /// loom it makes a free that is not ordered after every use a reported
    /// data race, so the models check the reclamation argument.
    in_use: UnsafeCell<()>,
}

impl Waiter {
    /// Frees a handle that came from `Box::into_raw`.
    ///
    /// # Safety
    ///
    /// `waiter` came from `Box::into_raw`, is freed once, and every use of it
    /// happens before this call.
    pub(super) unsafe fn free(waiter: *mut Waiter) {
        // SAFETY: the caller's contract.
        let waiter = unsafe { Box::from_raw(waiter) };
        waiter.in_use.with_mut(|_| ());
    }
}

impl Header {
    /// Called right before the rank's endpoint parks: counts the park for
    /// the unit tests (see `parks`); nothing otherwise.
    #[inline(always)]
    pub(super) fn parking(&self) {
        // Release: the probe that found nothing happens before a test's
        // Acquire load that sees this count, and so before the test's next
        // ring or wake, which then reads SLEEPING and unparks.
        #[cfg(test)]
        self.parks.fetch_add(1, Ordering::Release);
    }

    /// Makes `me` the thread that unparkers wake. Called only by the rank's
    /// endpoint, before it announces `SLEEPING`.
    #[cold]
    pub(super) fn register(&self, me: thread::Thread) {
        // AcqRel: Release publishes the new handle to unparkers that Acquire
        // the pointer.
        let old = self.waiter.swap(
            Box::into_raw(Box::new(Waiter {
                thread: me,
                in_use: UnsafeCell::new(()),
            })),
            Ordering::AcqRel,
        );
        // SAFETY: `retired` is touched only by the rank's endpoint (we are
        // it: `&mut` endpoint, one per rank, handovers ordered by `taken`).
        let retired = self.retired.with_mut(|r| unsafe { &mut *r });
        if !old.is_null() {
            retired.push(old);
        }
        // An RMW, so that it reads the latest count: if it precedes an
        // unparker's increment in the counter's modification order, that
        // increment reads from it (all writes are RMWs) and the unparker's
        // later load of `waiter` sees our swap, not `old`; if it follows the
        // increment and reads 0, it also follows that unparker's Release
        // decrement, which then happens before the frees below.
        if self.unparkers.fetch_add(0, Ordering::AcqRel) == 0 {
            for waiter in retired.drain(..) {
                // SAFETY: came from Box::into_raw in an earlier register, was
                // replaced there, and no unparker can still hold it (above).
                unsafe { Waiter::free(waiter) };
            }
        }
    }
}

/// After a ring or a notification: unparks the receiver if it sleeps. Only
/// the receiver writes `state`. Several senders that see SLEEPING all
/// unpark; after the first, std's `unpark` finds the token set and makes no
/// system call.
#[inline]
pub(super) fn wake_sleeper(header: &Header) {
    // Relaxed: the ordering argument is the RMW pair on the doorbell word or
    // the flag that precedes this call.
    if header.state.load(Ordering::Relaxed) == SLEEPING {
        unpark(header);
    }
}

/// Unparks the thread registered as `header`'s waiter, if any. Lock-free:
/// an unparker never blocks (nor waits for a preempted thread), and the
/// receiver never blocks on an unparker.
#[cold]
pub(super) fn unpark(header: &Header) {
    // AcqRel: announces this unparker before it loads `waiter` (see
    // `Header::register` for the pairing).
    header.unparkers.fetch_add(1, Ordering::AcqRel);
    // Acquire: pairs with the Release swap in `register`, so the handle's
    // contents are visible.
    let waiter = header.waiter.load(Ordering::Acquire);
    if !waiter.is_null() {
        // SAFETY: a registered handle is freed only by `register` after it
        // has been replaced and the unparker count was seen at 0 after the
        // replacement, or by drop; our increment keeps it alive until the
        // decrement below.
        let waiter = unsafe { &*waiter };
        waiter.in_use.with(|_| ());
        waiter.thread.unpark();
    }
    // Release: our use of the handle happens before a `register` that reads
    // the count after this decrement and frees it.
    header.unparkers.fetch_sub(1, Ordering::Release);
}
