//! Loom models of helping (`corrected::helping::Loan`): a lender lends its
//! call while it yields, and a helper thread pokes the slot and pumps the lent
//! call. Run:
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p loom-tests --release --test helping
//! ```
//!
//! The loan's own cells (the lent pointer, the caught panic) are loom cells
//! under `--cfg loom`, and every model's call keeps part of its state in a
//! loom cell too, so loom reports a causality violation if a helper's pump
//! and the lender's own use of its call (or two pumps) are not ordered by
//! the slot's hand-overs.
#![cfg(loom)]

use corrected::helping::{Loan, Pump};
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;

/// A model with the bound fixed (not taken from `LOOM_MAX_PREEMPTIONS`).
fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(bound);
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    RUNS.store(0, std::sync::atomic::Ordering::Relaxed);
    model.check(move || {
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f()
    });
    eprintln!("ITERATIONS {}", RUNS.load(std::sync::atomic::Ordering::Relaxed));
}

/// A call that counts its pumps, per lend, in a loom cell.
struct Counting {
    /// The lend in progress (set by the lender between lends).
    lend: usize,
    /// Pumps per lend. A pump is a write; the lender reads it back once it
    /// has its call again, so an unordered pair is a causality violation.
    pumps: UnsafeCell<[u32; 2]>,
}

impl Pump for Counting {
    fn pump(&mut self) -> bool {
        let lend = self.lend;
        // SAFETY: `&mut self`: this thread holds the call (BUSY); loom
        // checks the claim.
        self.pumps.with_mut(|p| unsafe { (*p)[lend] += 1 });
        true
    }
}

/// (1) Exclusive access and no lost work: the lender lends its call twice,
/// yielding inside each lend, while a helper pokes and helps twice. Every
/// pump the helper reports is in the call when the lender has it back, each
/// lend reports progress iff a pump ran during it, and no pump overlaps the
/// lender's own use of the call.
#[test]
fn exclusive_access_and_no_lost_work() {
    model(3, || {
        let loan = Arc::new(Loan::new());
        let helper = {
            let loan = loan.clone();
            thread::spawn(move || {
                let mut pumped = 0u32;
                for _ in 0..2 {
                    loan.poke();
                    match loan.help() {
                        Some(true) => pumped += 1,
                        // The call always moves: Some(false) would be a pump
                        // of a call that is not `Counting` (a stale pointer).
                        Some(false) => panic!("help pumped something else"),
                        None => {}
                    }
                }
                pumped
            })
        };
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
        // Read before the join (which would order everything): a pump that
        // `lend` did not wait out, or whose writes it did not acquire, is a
        // causality violation here or a count short of the helper's.
        // SAFETY: the lender has its call back (loom checks it).
        let pumps = call.pumps.with_mut(|p| unsafe { *p });
        let pumped = helper.join().unwrap();
        // Fails if a pump ran after `lend` returned (the slot not taken back
        // to EMPTY), or two pumps overlapped and one increment was lost.
        assert_eq!(pumps[0] + pumps[1], pumped, "pumps {pumps:?}");
        // `progressed` is set before the helper frees the slot (Release) and
        // swapped out by the lend that takes the slot back (Acquire), so it
        // belongs to the lend the pump ran in: it fails if it were lost, or
        // left over for the next lend.
        for lend in 0..2 {
            assert_eq!(
                progressed[lend],
                pumps[lend] > 0,
                "lend {lend}: progressed {progressed:?}, pumps {pumps:?}"
            );
        }
    });
}

/// The payload of the pump that panics (told apart in the panic hook).
struct PumpPanic;

/// Keeps the default panic hook quiet about the pumps that panic on purpose
/// (loom runs the model thousands of times); any other panic is reported.
fn quiet_pump_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<PumpPanic>() {
                default(info);
            }
        }));
    });
}

/// A call whose pump panics.
struct Panicking {
    /// Written by the pump before it panics.
    touched: UnsafeCell<bool>,
}

impl Pump for Panicking {
    fn pump(&mut self) -> bool {
        // SAFETY: `&mut self` (loom checks it).
        self.touched.with_mut(|t| unsafe { *t = true });
        std::panic::panic_any(PumpPanic)
    }
}

/// (2) A panic inside a helper's pump is caught there (the helper's `help`
/// returns) and resumed on the lender when `lend` returns; nobody else sees
/// it.
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
        let lent = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            loan.lend(&mut call, thread::yield_now)
        }));
        assert!(!loan.is_lent());
        // SAFETY: the lender has its call back (loom checks it).
        let touched = call.touched.with_mut(|t| unsafe { *t });
        let helped = helper.join().unwrap();
        // A helper that pumped caught a panic: `help` reports it as a move.
        assert!(matches!(helped, None | Some(true)), "help: {helped:?}");
        // Fails if the payload were lost (not stored, or not acquired by the
        // lender) or resumed without a pump.
        match lent {
            Ok(((), _)) => assert!(helped.is_none() && !touched),
            Err(payload) => {
                assert!(payload.is::<PumpPanic>());
                assert!(helped.is_some() && touched);
            }
        }
    });
}

/// A call that takes the messages a "poker" publishes in the given flags.
struct Receiving {
    messages: Arc<[AtomicBool; 2]>,
    /// Which messages this call's pumps took.
    taken: UnsafeCell<[bool; 2]>,
}

impl Pump for Receiving {
    fn pump(&mut self) -> bool {
        let mut moved = false;
        for (m, message) in self.messages.iter().enumerate() {
            if message.swap(false, Ordering::Acquire) {
                // SAFETY: `&mut self` (loom checks it).
                self.taken.with_mut(|t| unsafe { (*t)[m] = true });
                moved = true;
            }
        }
        moved
    }
}

/// (3) A poke is never lost: the helper publishes a message, pokes, and
/// helps once; the lender keeps lending (yielding inside) until it has seen
/// the helper finish, then looks for the message itself once. Either a
/// helper's pump took the message or the lender's look sees it.
#[test]
fn poke_is_never_lost() {
    model(3, || poke_model(1));
}

/// EXPERIMENT: two messages, two pokes.
#[test]
fn experiment_two_messages() {
    model(3, || poke_model(2));
}

fn poke_model(n: usize) {
    let messages = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
    let loan = Arc::new(Loan::new());
    let done = Arc::new(AtomicBool::new(false));
    let helper = {
        let (loan, messages, done) = (loan.clone(), messages.clone(), done.clone());
        thread::spawn(move || {
            for message in &messages[..n] {
                message.store(true, Ordering::Release);
                loan.poke();
            }
            let helped = loan.help();
            done.store(true, Ordering::Relaxed);
            helped
        })
    };
    let lender = thread::spawn(move || {
        let mut call = Receiving {
            messages: messages.clone(),
            taken: UnsafeCell::new([false; 2]),
        };
        loop {
            let last = done.load(Ordering::Relaxed);
            loan.lend(&mut call, thread::yield_now);
            if last {
                break;
            }
        }
        let seen = [
            messages[0].load(Ordering::Acquire),
            messages[1].load(Ordering::Acquire),
        ];
        // SAFETY: the lender has its call back (loom checks it).
        let taken = call.taken.with_mut(|t| unsafe { *t });
        (seen, taken)
    });
    let helped = helper.join().unwrap();
    let (seen, taken) = lender.join().unwrap();
    for m in 0..n {
        assert!(
            taken[m] || seen[m],
            "message {m} lost (help: {helped:?}, taken {taken:?}, seen {seen:?})"
        );
        assert!(!(taken[m] && seen[m]), "message {m} seen after a pump took it");
    }
    assert_eq!(helped == Some(true), taken.iter().any(|&t| t));
}

/// EXPERIMENT: the brief's single-lend form.
#[test]
fn experiment_single_lend() {
    model(3, || {
        let messages = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
        let loan = Arc::new(Loan::new());
        let helper = {
            let (loan, messages) = (loan.clone(), messages.clone());
            thread::spawn(move || {
                messages[0].store(true, Ordering::Release);
                loan.poke();
                loan.help()
            })
        };
        let mut call = Receiving {
            messages: messages.clone(),
            taken: UnsafeCell::new([false; 2]),
        };
        loan.lend(&mut call, thread::yield_now);
        let seen = messages[0].load(Ordering::Acquire);
        // SAFETY: the lender has its call back (loom checks it).
        let taken = call.taken.with_mut(|t| unsafe { (*t)[0] });
        let helped = helper.join().unwrap();
        assert!(taken || seen, "message lost (help: {helped:?})");
    });
}

