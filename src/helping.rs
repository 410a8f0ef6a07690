//! Helping: a rank that waits lends its call in progress, and the threads of
//! other waiting ranks advance it.
//!
//! When ranks outnumber cores, a rank whose message has arrived may not run
//! for a whole scheduling round, and every step of a collective that waits
//! for it costs a context switch (about a microsecond each in this VM:
//! docs/benchmarks.md, *How to read these numbers on a noisy host*). But the ranks are
//! threads of one process, and the work a waiting rank still has to do
//! (take its messages, hand them to its protocol core, send what the core
//! answers) needs nothing of its thread. So a waiting rank puts its call in
//! its [`Loan`] while it yields, and the thread of any other waiting rank
//! that gets the core [pumps](Pump::pump) it, as an MPI progress thread
//! would. The last rank to enter an operation can then carry every lent call
//! to its end, and each rank is scheduled about once per operation.
//!
//! What a helper runs is exactly what the lending rank would run itself, on
//! the same state, one thread at a time: nothing a failed rank does is done
//! for it. A rank that failed or hung does not lend (it is not waiting in a
//! call); an emulated death by send count is part of the lent state and
//! fires in whoever sends; only the lender runs timers, the failure
//! detector and the operation timeout.
//!
//! A [`Loan`] is a one-slot lock around a borrowed `&mut dyn Pump`:
//! `EMPTY` (nothing lent), `FREE` (lent, nobody on it) and `BUSY` (a helper
//! pumps it). [`Loan::lend`] publishes the borrow, runs a closure, and takes
//! the borrow back before it returns (waiting out a helper that has it), so
//! the borrow never outlives its lifetime. `loom-tests/tests/helping.rs`
//! checks the protocol.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};

use crate::sync::{fence, thread, AtomicBool, AtomicU32, AtomicU64, Ordering, UnsafeCell};

/// A call in progress that any thread may advance, one at a time.
pub trait Pump: Send {
    /// Does what the call can do now without waiting (take what arrived,
    /// send what the protocol answers). True if anything moved.
    fn pump(&mut self) -> bool;
}

const EMPTY: u32 = 0;
const FREE: u32 = 1;
const BUSY: u32 = 2;

/// The lent call, its lifetime erased: valid while the state is not `EMPTY`
/// (see [`Loan::lend`]).
type Lent = *mut (dyn Pump + 'static);

/// One rank's loan slot.
pub struct Loan {
    state: AtomicU32,
    /// Written by the lender only while `EMPTY`; read by a helper only while
    /// it holds `BUSY`.
    call: UnsafeCell<Option<Lent>>,
    /// A helper's pump moved something since the lender last looked.
    progressed: AtomicBool,
    /// Something may be waiting for the call (a message, failure news):
    /// set by [`Loan::poke`], cleared by whoever is about to look. Helpers
    /// pump only poked calls: pumping a call that has nothing costs cache
    /// misses on its state for nothing.
    poked: AtomicBool,
    /// Pumps by helpers that moved something, over the loan's life.
    helped: AtomicU64,
    /// A panic a helper caught while pumping, for the lender to resume.
    /// Written while `BUSY`, taken by the lender after it took the call back.
    panic: UnsafeCell<Option<Box<dyn Any + Send>>>,
}

// SAFETY: the cells are reached under the state protocol above: `call` and
// `panic` are written by the one thread that holds the slot (the lender while
// EMPTY, a helper while BUSY) and every hand-over is a Release store or
// successful CAS read by an Acquire CAS/load. The lent call is `Send`.
unsafe impl Sync for Loan {}
// SAFETY: as above; an EMPTY loan holds no borrow.
unsafe impl Send for Loan {}

impl Default for Loan {
    fn default() -> Self {
        Loan::new()
    }
}

impl std::fmt::Debug for Loan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loan")
            .field("state", &self.state.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Loan {
    /// An empty slot.
    pub fn new() -> Self {
        Loan {
            state: AtomicU32::new(EMPTY),
            call: UnsafeCell::new(None),
            progressed: AtomicBool::new(false),
            poked: AtomicBool::new(false),
            helped: AtomicU64::new(0),
            panic: UnsafeCell::new(None),
        }
    }

    /// Lends `call` while `meanwhile` runs, then takes it back, waiting for
    /// a helper that is pumping it to finish. Returns whether a helper moved
    /// anything. A panic a helper caught while pumping `call` resumes here,
    /// on the lender's thread, as if the lender had pumped it.
    ///
    /// # Panics
    ///
    /// If the slot is already lent (a rank lends one call at a time), or as
    /// above.
    pub fn lend<P: Pump, R>(&self, call: &mut P, meanwhile: impl FnOnce() -> R) -> (R, bool) {
        assert_eq!(
            self.state.load(Ordering::Relaxed),
            EMPTY,
            "a loan slot lends one call at a time"
        );
        let short: *mut (dyn Pump + '_) = call;
        // SAFETY: only the lifetime bound of the trait object changes (same
        // layout). The pointer is reachable by helpers only while the state
        // is FREE or BUSY, and `TakeBack` below returns the state to EMPTY,
        // waiting out any BUSY helper, before this function returns or
        // unwinds, so no use outlives the `&mut` borrow of `call`.
        let erased: Lent = unsafe { std::mem::transmute::<*mut (dyn Pump + '_), Lent>(short) };
        // SAFETY: EMPTY: no helper reads the cell (they read it only after a
        // successful FREE -> BUSY CAS, and the state is EMPTY).
        self.call.with_mut(|c| unsafe { *c = Some(erased) });
        // The lender looks itself once it has the call back; a poke from
        // now on is for helpers. Acquire: what the poker did before it (a
        // send) is visible to that look.
        self.poked.swap(false, Ordering::Acquire);
        // Release: publishes the pointer (and everything the lender did to
        // the call) to the helper whose Acquire CAS takes FREE.
        self.state.store(FREE, Ordering::Release);
        let guard = TakeBack(self);
        let result = meanwhile();
        drop(guard);
        // Taken before a panic resumes, so that it is not left for the
        // next loan (found by loom-tests/tests/helping.rs).
        let progressed = self.progressed.swap(false, Ordering::Relaxed);
        // SAFETY: EMPTY again and taken back with Acquire: any helper's
        // writes (its pump and a caught panic) happen before this read.
        if let Some(payload) = self.panic.with_mut(|p| unsafe { (*p).take() }) {
            panic::resume_unwind(payload);
        }
        (result, progressed)
    }

    /// Says that something may be waiting for the call: the next helper
    /// pumps it. Called after the thing is published (a message pushed).
    ///
    /// A poke that finds the flag set stores nothing. That loses no poke if
    /// the publisher has a SeqCst fence between its publication and this
    /// call (the mailbox's `send` has one): [`help`](Loan::help) clears the
    /// flag and fences before it pumps, so of the two fences, if the
    /// publisher's comes first the pump sees the message, and otherwise
    /// this load sees the clear and stores. (Without the publisher's fence
    /// a message could be left to its lender, which looks at its own
    /// endpoint after every round anyway: late, never lost.)
    #[inline]
    pub fn poke(&self) {
        // A load first: a poked slot stays poked, and the store would take
        // the line exclusive for nothing. Release: pairs with the Acquire
        // that clears the flag, so the message is visible to the pump after.
        if !self.poked.load(Ordering::Relaxed) {
            self.poked.store(true, Ordering::Release);
        }
    }

    /// Pumps the lent call if it is lent, poked, and nobody else has it.
    /// `None` if there was nothing to take; otherwise whether the pump moved
    /// anything. A panic inside the pump is caught and handed to the lender.
    pub fn help(&self) -> Option<bool> {
        // Plain loads first: most looks find the slot empty, busy or not
        // poked, and a failing CAS would take the line exclusive for nothing.
        if self.state.load(Ordering::Relaxed) != FREE || !self.poked.load(Ordering::Relaxed) {
            return None;
        }
        // Acquire: pairs with the lender's Release store of FREE (and with
        // the previous helper's Release store of FREE), so the call's state
        // as last left is visible.
        self.state
            .compare_exchange(FREE, BUSY, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        // Cleared before the pump looks: a poke after this is seen by the
        // next helper. Acquire: pairs with the poker's Release. The fence
        // pairs with the poker's (see `poke`): a poke that found the flag
        // still set either published before this look or sees the clear.
        self.poked.swap(false, Ordering::Acquire);
        fence(Ordering::SeqCst);
        // SAFETY: BUSY: the lender is not writing the cell (it writes only
        // while EMPTY, and cannot take BUSY back), and no other helper holds
        // the slot.
        let lent = self.call.with(|c| unsafe { *c });
        let moved = match lent {
            Some(call) => {
                let pumped = panic::catch_unwind(AssertUnwindSafe(|| {
                    crate::fault_point::as_helper(|| {
                        // SAFETY: the pointer is valid while the state is
                        // not EMPTY (see `lend`), and BUSY makes this the
                        // only access: the lender waits in `TakeBack`
                        // instead of using its borrow.
                        unsafe { (*call).pump() }
                    })
                }));
                match pumped {
                    Ok(moved) => moved,
                    Err(payload) => {
                        // SAFETY: BUSY (as above): the lender reads the cell
                        // only after it has taken the slot back.
                        self.panic.with_mut(|p| unsafe { *p = Some(payload) });
                        true
                    }
                }
            }
            None => false,
        };
        if moved {
            self.progressed.store(true, Ordering::Relaxed);
            // BUSY: the one writer, so no read-modify-write.
            let helped = self.helped.load(Ordering::Relaxed);
            self.helped.store(helped + 1, Ordering::Relaxed);
        }
        // Release: the pump's writes (and `progressed`, ordered before this)
        // happen before the lender's or the next helper's Acquire.
        self.state.store(FREE, Ordering::Release);
        Some(moved)
    }

    /// How many helpers' pumps moved something, over the loan's life (read
    /// when no helper is active for an exact count).
    pub fn helped(&self) -> u64 {
        self.helped.load(Ordering::Relaxed)
    }

    /// True while a call is lent and no helper has moved it since its
    /// lender last looked: its thread has nothing to do until a message or
    /// news comes (a call a helper moved, maybe to its end, wants its
    /// thread back).
    pub fn is_idle(&self) -> bool {
        self.is_lent() && !self.progressed.load(Ordering::Relaxed)
    }

    /// True while a call is lent (free or being pumped).
    pub fn is_lent(&self) -> bool {
        self.state.load(Ordering::Relaxed) != EMPTY
    }
}

/// Takes a lent call back, on return or unwind of [`Loan::lend`].
struct TakeBack<'a>(&'a Loan);

impl Drop for TakeBack<'_> {
    fn drop(&mut self) {
        let loan = self.0;
        // Acquire (success): pairs with the Release that freed the slot, so
        // a helper's pump happens before the lender uses its call again.
        while loan
            .state
            .compare_exchange(FREE, EMPTY, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            // A helper is pumping: its pump never waits, so this is short
            // unless the helper's thread is descheduled.
            thread::yield_now();
        }
        // SAFETY: EMPTY: no helper reads the cell.
        loan.call.with_mut(|c| unsafe { *c = None });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Counts its pumps; moves while it has work left.
    struct Work(u32);

    impl Pump for Work {
        fn pump(&mut self) -> bool {
            let moved = self.0 > 0;
            self.0 = self.0.saturating_sub(1);
            moved
        }
    }

    #[test]
    fn only_a_lent_poked_call_is_pumped_and_the_lender_hears_of_it() {
        let loan = Loan::new();
        let mut work = Work(2);
        // Nothing lent: nothing to help.
        loan.poke();
        assert_eq!(loan.help(), None);
        let ((), moved) = loan.lend(&mut work, || {
            // Lent and poked (the poke before the lend was cleared by it).
            assert_eq!(loan.help(), None, "a poke before the lend is the lender's");
            loan.poke();
            assert_eq!(loan.help(), Some(true));
            // The pump cleared the poke.
            assert_eq!(loan.help(), None);
            assert!(loan.is_lent());
        });
        assert!(moved);
        assert_eq!(loan.helped(), 1);
        assert!(!loan.is_lent());
        assert_eq!(work.0, 1, "one pump, on the lender's own state");
        let ((), moved) = loan.lend(&mut work, || {});
        assert!(!moved, "progress is reported once");
    }

    #[test]
    fn a_panic_in_a_helpers_pump_resumes_on_the_lender() {
        struct Refuses;
        impl Pump for Refuses {
            fn pump(&mut self) -> bool {
                panic!("refused")
            }
        }
        let loan = Loan::new();
        let caught = std::panic::catch_unwind(AssertUnwindSafe(|| {
            loan.lend(&mut Refuses, || {
                loan.poke();
                // The helper does not unwind: it caught the panic.
                assert_eq!(loan.help(), Some(true));
            })
        }));
        let payload = caught.expect_err("the lender must panic");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"refused"));
        assert!(!loan.is_lent(), "taken back on unwind");
    }
}
