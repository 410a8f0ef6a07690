//! Loom models of helping (`corrected::helping::Loan`): a lender lends its
//! call while it yields, helper threads poke the slot and pump the lent call.
//! Run (about 15 s on 2 cores, nearly all of it the two-helper model; each
//! model fixes its own preemption bound):
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p loom-tests --release --test helping
//! ```
//!
//! Under `--cfg loom` the loan's own cells (the lent pointer, a caught panic)
//! are loom cells, and each model's call keeps its state in a loom cell too,
//! written by every pump and read by the lender once `lend` has returned: if
//! the slot's hand-overs (the lender's Release of FREE and Acquire take-back,
//! a helper's Acquire CAS to BUSY and Release of FREE) did not order a pump
//! against the lender's own use of its call, or against another pump, loom
//! reports a causality violation. The lender reads its call before it joins
//! the helpers, since a join would order everything.
//!
//! What the models do not claim: that a message published and poked while a
//! call is lent is seen by the lender as soon as that `lend` returns. A poke
//! that comes after the lend began is for helpers; if none takes it before
//! the lender takes its call back (the helper may find the slot EMPTY, or,
//! under weak memory, still see it EMPTY from before the lend), it stays set
//! for a later lend, whose start clears it with Acquire. "After lend
//! returns" is no ordering at all between the two threads, so such a model
//! fails on the plain interleaving in which the helper runs after the lend
//! (loom finds it at once). Nor can a model say "the poke came before the
//! next lend" without ordering the message too: a Relaxed "helper done" flag
//! does not put the poke before the next lend's clear in the poke flag's
//! modification order (loom finds that execution), and a Release/Acquire one
//! hands the lender the message itself. Model 3 checks what a poke does
//! promise: the pump it sets off sees what was published before it.
#![cfg(loom)]

use std::panic::{self, AssertUnwindSafe};

use corrected::helping::{Loan, Pump};
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;

/// Checks `f` under loom with the preemption bound fixed at `bound` (not
/// taken from `LOOM_MAX_PREEMPTIONS`).
fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(bound);
    model.check(f);
}

/// A call that counts its pumps, per lend, in a loom cell.
struct Counting {
    /// The lend in progress (set by the lender between its lends).
    lend: usize,
    /// Pumps per lend: each pump writes it, the lender reads it back.
    pumps: UnsafeCell<[u32; 2]>,
}

impl Pump for Counting {
    fn pump(&mut self) -> bool {
        let lend = self.lend;
        // SAFETY: a pump runs only while its helper holds the slot BUSY, so
        // nobody else touches the call; loom checks exactly this claim.
        self.pumps.with_mut(|p| unsafe { (*p)[lend] += 1 });
        true
    }
}

/// (1) Exclusive access and no lost work: the lender lends its call twice,
/// yielding inside each lend, while a helper pokes and helps twice. No pump
/// overlaps the lender's own use of the call, every pump the helper reports
/// is in the call once the lender has it back, and each lend reports
/// progress exactly when a pump ran during it.
#[test]
fn exclusive_access_and_no_lost_work() {
    model(3, || lend_while_helped(1, 2));
}

/// (1b) As (1) with two helpers that poke and help once each: their pumps
/// never overlap either (the FREE -> BUSY CAS admits one helper at a time).
#[test]
fn two_helpers_pump_one_at_a_time() {
    model(2, || lend_while_helped(2, 1));
}

/// The lender lends a `Counting` call twice while `helpers` threads each
/// poke and help `rounds` times.
fn lend_while_helped(helpers: usize, rounds: usize) {
    let loan = Arc::new(Loan::new());
    let helpers: Vec<_> = (0..helpers)
        .map(|_| {
            let loan = loan.clone();
            thread::spawn(move || {
                let mut pumped = 0u32;
                for _ in 0..rounds {
                    loan.poke();
                    match loan.help() {
                        Some(true) => pumped += 1,
                        // `Counting` always moves: false would mean a pump of
                        // something else (a stale or torn pointer).
                        Some(false) => panic!("help pumped something else"),
                        None => {}
                    }
                }
                pumped
            })
        })
        .collect();
    // Made after the spawns: only the loan orders the helpers' pumps after
    // the cell's creation.
    let mut call = Counting {
        lend: 0,
        pumps: UnsafeCell::new([0; 2]),
    };
    let mut progressed = [false; 2];
    for (lend, progressed) in progressed.iter_mut().enumerate() {
        call.lend = lend;
        let ((), moved) = loan.lend(&mut call, thread::yield_now);
        *progressed = moved;
    }
    assert!(!loan.is_lent());
    // A pump that `lend` did not wait out, or whose writes its take-back did
    // not acquire, is a causality violation here; so are two pumps at once.
    // SAFETY: `lend` returned, so the lender has its call back (loom checks
    // it).
    let pumps = call.pumps.with_mut(|p| unsafe { *p });
    // The loan's own count of moving pumps, read once no helper can be on
    // the slot: fails if one helper's unsynchronized increment were lost.
    let helped = loan.helped();
    let pumped: u32 = helpers.into_iter().map(|h| h.join().unwrap()).sum();
    // Fails if a pump ran after the last `lend` returned (the slot not taken
    // back to EMPTY, or a helper's CAS winning against EMPTY).
    assert_eq!(pumps[0] + pumps[1], pumped, "pumps per lend {pumps:?}");
    assert_eq!(helped, u64::from(pumped));
    // A pump sets `progressed` before its helper frees the slot (Release),
    // and the lend that takes the slot back swaps it out after its Acquire:
    // fails if a pump's progress were lost, or left over to be reported by
    // the next lend.
    for lend in 0..2 {
        assert_eq!(
            progressed[lend],
            pumps[lend] > 0,
            "lend {lend}: progressed {progressed:?}, pumps per lend {pumps:?}"
        );
    }
}

/// The payload of a pump that panics on purpose.
struct PumpPanic;

/// Keeps the default panic hook quiet about pumps that panic on purpose
/// (loom runs the model many times; `help` catches them); any other panic
/// is reported as usual.
fn quiet_pump_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<PumpPanic>() {
                default(info);
            }
        }));
    });
}

/// A call whose pump panics (after touching the call's state).
struct Panicking {
    touched: UnsafeCell<bool>,
}

impl Pump for Panicking {
    fn pump(&mut self) -> bool {
        // SAFETY: the helper holds the slot BUSY (loom checks it).
        self.touched.with_mut(|t| unsafe { *t = true });
        panic::panic_any(PumpPanic)
    }
}

/// (2) A panic inside a helper's pump is caught there (the helper's `help`
/// returns normally, reporting a move) and resumed on the lender when its
/// `lend` returns, with the slot already taken back.
///
/// Panics work under loom as long as none escapes a model thread: `help`
/// catches the pump's panic with `catch_unwind` on the helper's thread, and
/// the lender catches the resumed one.
#[test]
fn pump_panic_resumes_on_lender() {
    quiet_pump_panics();
    model(3, || {
        let loan = Arc::new(Loan::new());
        let helper = {
            let loan = loan.clone();
            thread::spawn(move || {
                loan.poke();
                loan.help()
            })
        };
        let mut call = Panicking {
            touched: UnsafeCell::new(false),
        };
        let lent =
            panic::catch_unwind(AssertUnwindSafe(|| loan.lend(&mut call, thread::yield_now)));
        // Unwinding did not leave the call lent.
        assert!(!loan.is_lent());
        // SAFETY: `lend` returned (by unwinding), so the lender has its call
        // back (loom checks it).
        let touched = call.touched.with_mut(|t| unsafe { *t });
        let helped = helper.join().unwrap();
        assert!(matches!(helped, None | Some(true)), "help: {helped:?}");
        assert_eq!(helped.is_some(), touched);
        // Fails if the payload were lost (not stored, or stored after the
        // helper freed the slot, so the lender's take-back missed it) or
        // made up without a pump.
        match lent {
            Ok(((), moved)) => {
                assert!(helped.is_none(), "a helper's panic was lost");
                assert!(!moved);
            }
            Err(payload) => {
                assert!(payload.is::<PumpPanic>(), "not the pump's panic");
                assert!(helped.is_some(), "a panic without a pump");
            }
        }
        // Nothing of that loan is left for the next one: with no helper
        // about, a lend reports no progress (fails if the panic's
        // progress were taken only after it resumed).
        let ((), moved) = loan.lend(&mut call, || {});
        assert!(!moved, "progress left over from a resumed panic");
    });
}

/// A call that takes a message published in a flag.
struct Receiving {
    message: Arc<AtomicBool>,
    /// Whether one of this call's pumps took the message.
    taken: UnsafeCell<bool>,
}

impl Pump for Receiving {
    fn pump(&mut self) -> bool {
        // What a real pump does: look for what arrived, take it. A load,
        // not a swap: a read-modify-write always reads the latest value, so
        // it would find the message whatever the loan ordered.
        let got = self.message.load(Ordering::Acquire);
        if got {
            self.message.store(false, Ordering::Relaxed);
            // SAFETY: the helper holds the slot BUSY (loom checks it).
            self.taken.with_mut(|t| unsafe { *t = true });
        }
        got
    }
}

/// (3) A poke hands its message to the pump it sets off: while the call is
/// lent, a sender thread publishes a message and pokes, and a helper (another
/// thread) helps once; the lender then looks for the message itself. If the
/// helper pumped, that pump found the message, and the message is taken at
/// most once.
///
/// The helper pumps only if it saw the poke, and its pump sees the message
/// only through the loan (the sender's Release poke read by the helper's
/// Acquire clear): the sender is not the helper, and the pump reads with a
/// load, which may return a stale value where a swap would not.
///
/// The lender spawns both threads from inside `lend`, so the clear at the
/// start of the lend happens before the poke. A poke racing with that clear
/// runs into loom 0.7's RMW atomicity bug (tokio-rs/loom#254, fix in
/// tokio-rs/loom#391): loom lets the poke slip between the read and the write
/// of the lender's swap, after which the helper's clear may read the
/// lender's `false` although the helper has already seen the poke, an
/// execution C++ forbids. That path (a poke the lender's clear takes, its
/// message reaching a helper through the lender's Release of FREE) is
/// therefore not modelled here.
#[test]
fn poke_hands_message_to_pump() {
    model(3, || {
        let message = Arc::new(AtomicBool::new(false));
        let loan = Arc::new(Loan::new());
        let mut call = Receiving {
            message: message.clone(),
            taken: UnsafeCell::new(false),
        };
        let ((sender, helper), moved) = loan.lend(&mut call, || {
            let sender = {
                let (loan, message) = (loan.clone(), message.clone());
                thread::spawn(move || {
                    message.store(true, Ordering::Release);
                    loan.poke();
                })
            };
            let helper = {
                let loan = loan.clone();
                thread::spawn(move || loan.help())
            };
            thread::yield_now();
            (sender, helper)
        });
        // The lender's own look once it has its call back.
        let seen = message.load(Ordering::Acquire);
        // SAFETY: `lend` returned, so the lender has its call back (loom
        // checks it).
        let taken = call.taken.with_mut(|t| unsafe { *t });
        let helped = helper.join().unwrap();
        sender.join().unwrap();
        // Fails if a pump set off by the poke could miss the message (a
        // Relaxed poke or a Relaxed clear in `help`).
        assert_ne!(helped, Some(false), "a poked pump found nothing");
        assert_eq!(helped == Some(true), taken);
        assert_eq!(moved, taken);
        // Fails if the lender could still read the message after a pump
        // took it (the pump not ordered before the lender's look).
        assert!(!(taken && seen), "message taken twice");
    });
}
