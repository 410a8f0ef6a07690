//! Fault points: places in the mailbox and the driver where a test can stop
//! a rank's thread, for a while or until a condition holds (a freeze at an
//! arbitrary point).
//!
//! The library calls `reach(point)` at each [`FaultPoint`]. Without the
//! cargo feature `fault-points` (and always under loom) `reach` is an empty
//! `#[inline(always)]` function: the mailbox's hot path and the loom models
//! are the same code as without it. With the feature, a test arms the
//! current thread with [`arm`]: when that thread reaches the point for the
//! `nth` time it [freezes](Freeze) there, once. `tests/freeze.rs` uses it.

/// A place in the mailbox or the driver where a rank's thread can be frozen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultPoint {
    /// A lane's `push`: the slot's value is written, the stamp that
    /// publishes it to the receiver is not.
    SlotWritten,
    /// `Endpoint::send`: the message is published in its lane, the
    /// receiver's doorbell is not rung yet (nor found already set).
    Published,
    /// `Endpoint::send`: the doorbell is rung, a parked receiver is not
    /// woken yet.
    Rung,
    /// `Endpoint::try_recv`: a message is taken out of its lane, not yet
    /// handed to the caller (the driver has not counted or routed it).
    Taken,
    /// The driver's loop: the current core gave a message to send, which is
    /// not handed to the transport yet.
    BeforeSend,
}

/// Called by the library at `point`: freezes the thread if it is armed for
/// this point and this is the armed occurrence. Compiled to nothing without
/// the feature `fault-points` and under loom.
#[cfg(not(all(feature = "fault-points", not(loom))))]
#[inline(always)]
pub(crate) fn reach(_point: FaultPoint) {}

/// Runs `f` (a pump of another rank's call, see [`crate::helping`]) with the
/// calling thread's fault points off: an armed point freezes the rank whose
/// thread is armed, never a rank that thread happens to help.
#[cfg(not(all(feature = "fault-points", not(loom))))]
#[inline(always)]
pub(crate) fn as_helper<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(all(feature = "fault-points", not(loom)))]
pub use imp::{arm, armed, disarm, Freeze};

#[cfg(all(feature = "fault-points", not(loom)))]
pub(crate) use imp::{as_helper, reach};

#[cfg(all(feature = "fault-points", not(loom)))]
mod imp {
    use std::cell::RefCell;
    use std::time::Duration;

    use super::FaultPoint;

    /// What a thread does when its armed point fires.
    pub enum Freeze {
        /// Sleeps this long, then goes on.
        For(Duration),
        /// Stops, looking at the condition every millisecond, until it is
        /// true ("for ever" within a test: until the rest of the team is
        /// done, which the test's closures signal).
        Until(Box<dyn Fn() -> bool>),
    }

    impl std::fmt::Debug for Freeze {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match self {
                Freeze::For(d) => f.debug_tuple("For").field(d).finish(),
                Freeze::Until(_) => f.write_str("Until(..)"),
            }
        }
    }

    impl Freeze {
        fn apply(self) {
            match self {
                Freeze::For(pause) => std::thread::sleep(pause),
                Freeze::Until(done) => {
                    while !done() {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            }
        }
    }

    /// One arming: the point, how many more times it is passed before it
    /// fires (the firing one included), and what it does then.
    struct Arming {
        point: FaultPoint,
        left: u32,
        freeze: Freeze,
    }

    thread_local! {
        static ARMED: RefCell<Option<Arming>> = const { RefCell::new(None) };
        /// Set while the thread pumps another rank's call.
        static HELPING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// See the crate-level `as_helper`.
    pub(crate) fn as_helper<R>(f: impl FnOnce() -> R) -> R {
        struct Reset(bool);
        impl Drop for Reset {
            fn drop(&mut self) {
                HELPING.with(|h| h.set(self.0));
            }
        }
        let _reset = Reset(HELPING.with(|h| h.replace(true)));
        f()
    }

    /// Arms the calling thread: the `nth` time (1-based) it reaches `point`
    /// from now on, it does `freeze`. The arming fires once; a new `arm`
    /// replaces one that has not fired.
    ///
    /// # Panics
    ///
    /// If `nth` is 0.
    pub fn arm(point: FaultPoint, nth: u32, freeze: Freeze) {
        assert!(nth > 0, "fault points count from 1");
        ARMED.with(|a| {
            *a.borrow_mut() = Some(Arming {
                point,
                left: nth,
                freeze,
            })
        });
    }

    /// Removes the calling thread's arming, if it has not fired.
    pub fn disarm() {
        ARMED.with(|a| a.borrow_mut().take());
    }

    /// True while the calling thread's arming waits to fire (false once it
    /// has fired, from the moment the freeze starts, or if it was never
    /// armed).
    pub fn armed() -> bool {
        ARMED.with(|a| a.borrow().is_some())
    }

    /// Freezes the thread if this is its armed occurrence of `point`.
    pub(crate) fn reach(point: FaultPoint) {
        if HELPING.with(|h| h.get()) {
            return;
        }
        let fire = ARMED.with(|a| {
            let mut a = a.borrow_mut();
            let arming = a.as_mut().filter(|arming| arming.point == point)?;
            arming.left -= 1;
            if arming.left > 0 {
                return None;
            }
            a.take().map(|arming| arming.freeze)
        });
        if let Some(freeze) = fire {
            freeze.apply();
        }
    }
}
