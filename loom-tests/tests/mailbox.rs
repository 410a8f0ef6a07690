//! Loom models of the mailbox: the lane ring, the doorbell and its parking
//! protocol. Run (about 8 minutes, nearly all `two_senders_one_receiver`;
//! see docs/mailbox.md):
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p loom-tests --release
//! ```
//!
//! loom reports a lost wake-up as a deadlock (every thread parked), a data
//! race on a slot as a causality violation, and a leak of a message or a
//! lane when the model ends.
//!
//! A loom limitation shapes the models: loom 0.7 lets `Thread::unpark` wake a
//! thread blocked in `JoinHandle::join` (or on a loom mutex), which then
//! trips loom's own `assertion failed: state.notified` (tokio-rs/loom#249).
//! With std, a late unpark merely leaves a token for a later `park`. Our
//! senders may unpark a receiver that has already woken (they saw SLEEPING
//! just before it stored RUNNING), so every thread that waits on a mailbox
//! is a spawned thread that joins nobody; the main thread only joins.
#![cfg(loom)]

use corrected::mailbox::{Compact, Endpoint, Mailboxes, Woke};
use loom::sync::Arc;
use loom::thread;

/// Receives one message, waiting through the doorbell (parks under loom).
fn recv_waiting<T: Send>(ep: &mut Endpoint<'_, T>) -> (u32, T) {
    loop {
        if let Some(got) = ep.try_recv() {
            return got;
        }
        // Message or a stale bit: try again. Nobody calls wake here.
        assert_eq!(ep.wait(None), Woke::Message);
    }
}

/// (1) One lane of capacity 2, three messages: FIFO, nothing lost or
/// duplicated, and a send into the full lane hands the value back.
#[test]
fn lane_fifo_full_returns_value() {
    loom::model(|| {
        let boxes = Arc::new(Mailboxes::new(2, 2));
        let sender = {
            let boxes = boxes.clone();
            thread::spawn(move || {
                let mut ep = boxes.endpoint(0).unwrap();
                let mut full = 0;
                for i in 0..3u32 {
                    let mut msg = i;
                    while let Err(back) = ep.send(1, msg) {
                        assert_eq!(back, i, "full lane hands the value back");
                        assert_eq!(i, 2, "a lane of 2 is full only at the third");
                        msg = back;
                        full += 1;
                        thread::yield_now();
                    }
                }
                full
            })
        };
        let mut rx = boxes.endpoint(1).unwrap();
        let mut got = Vec::new();
        while got.len() < 3 {
            match rx.try_recv() {
                Some((from, i)) => {
                    assert_eq!(from, 0);
                    got.push(i);
                }
                None => thread::yield_now(),
            }
        }
        assert_eq!(got, [0, 1, 2]);
        assert_eq!(rx.try_recv(), None);
        sender.join().unwrap();
    });
}

/// A value with a loom `Arc` (loom reports one leaked or dropped twice)
/// travels whole; one without travels in its one-line form.
struct Small;

impl Compact<(u32, Option<Arc<()>>)> for Small {
    type Small = u32;
    fn compact(value: &(u32, Option<Arc<()>>)) -> Option<u32> {
        value.1.is_none().then_some(value.0)
    }
    fn expand(small: u32) -> (u32, Option<Arc<()>>) {
        (small, None)
    }
}

/// (1b) One lane of capacity 2 and a codec: a one-line message, then two
/// whole ones, the last in the slot the one-line message used. FIFO, each
/// in its form, the full lane hands the value back, no whole value leaked
/// or dropped twice, and no slot read before its write (either form).
#[test]
fn lane_carries_one_line_and_whole_forms() {
    loom::model(|| {
        let boxes = Arc::new(Mailboxes::<_, Small>::with_codec(2, 2));
        let sender = {
            let boxes = boxes.clone();
            thread::spawn(move || {
                let mut ep = boxes.endpoint(0).unwrap();
                for i in 0..3u32 {
                    let mut msg = (i, (i > 0).then(|| Arc::new(())));
                    while let Err(back) = ep.send(1, msg) {
                        msg = back;
                        thread::yield_now();
                    }
                }
            })
        };
        let mut rx = boxes.endpoint(1).unwrap();
        let mut got = 0;
        while got < 3 {
            match rx.try_recv() {
                Some((from, (i, whole))) => {
                    assert_eq!((from, i), (0, got));
                    assert_eq!(whole.is_some(), i > 0);
                    got += 1;
                }
                None => thread::yield_now(),
            }
        }
        assert!(rx.try_recv().is_none());
        sender.join().unwrap();
    });
}

/// (2) The doorbell: the receiver waits (and may park) while the sender
/// sends. A lost wake-up would leave it parked forever: loom reports that as
/// a deadlock.
#[test]
fn doorbell_no_lost_wakeup() {
    loom::model(|| {
        let boxes = Arc::new(Mailboxes::new(2, 2));
        let receiver = {
            let boxes = boxes.clone();
            thread::spawn(move || {
                let mut ep = boxes.endpoint(1).unwrap();
                recv_waiting(&mut ep)
            })
        };
        let mut tx = boxes.endpoint(0).unwrap();
        tx.send(1, 42u32).unwrap();
        assert_eq!(receiver.join().unwrap(), (0, 42));
    });
}

/// (3) Two senders to one receiver that waits: both messages arrive, each
/// once, and a second message of one sender after its first.
#[test]
fn two_senders_one_receiver() {
    loom::model(|| {
        let boxes = Arc::new(Mailboxes::new(3, 2));
        let senders: Vec<_> = [1u32, 2]
            .into_iter()
            .map(|r| {
                let boxes = boxes.clone();
                thread::spawn(move || {
                    let mut ep = boxes.endpoint(r).unwrap();
                    ep.send(0, (r, 0)).unwrap();
                    if r == 1 {
                        ep.send(0, (r, 1)).unwrap();
                    }
                })
            })
            .collect();
        let receiver = thread::spawn(move || {
            let mut rx = boxes.endpoint(0).unwrap();
            let mut next = [0u32; 3];
            for _ in 0..3 {
                let (from, (tag, i)) = recv_waiting(&mut rx);
                assert_eq!(tag, from);
                assert_eq!(i, next[from as usize], "FIFO from {from}");
                next[from as usize] += 1;
            }
            assert_eq!(rx.try_recv(), None);
            next
        });
        for s in senders {
            s.join().unwrap();
        }
        assert_eq!(receiver.join().unwrap(), [0, 2, 1]);
    });
}

/// (4) `wake` from a third thread ends a wait (no messages at all).
#[test]
fn wake_from_third_thread_ends_wait() {
    loom::model(|| {
        let boxes = Arc::new(Mailboxes::<u32>::new(2, 2));
        let waiter = {
            let boxes = boxes.clone();
            thread::spawn(move || {
                let mut ep = boxes.endpoint(0).unwrap();
                ep.wait(None)
            })
        };
        let waker = {
            let boxes = boxes.clone();
            thread::spawn(move || boxes.wake(0))
        };
        waker.join().unwrap();
        assert_eq!(waiter.join().unwrap(), Woke::Notified);
    });
}

/// A message in flight while the receiver's endpoint is dropped and taken
/// again on another thread: the bits the first endpoint had taken are handed
/// on, so the second gets the message.
#[test]
fn endpoint_handover_keeps_messages() {
    loom::model(|| {
        let boxes = Arc::new(Mailboxes::new(2, 2));
        let sender = {
            let boxes = boxes.clone();
            thread::spawn(move || {
                let mut ep = boxes.endpoint(0).unwrap();
                ep.send(1, 7u32).unwrap();
            })
        };
        let first = {
            let boxes = boxes.clone();
            thread::spawn(move || {
                let mut ep = boxes.endpoint(1).unwrap();
                ep.try_recv()
            })
        };
        let got = match first.join().unwrap() {
            Some(got) => got,
            None => thread::spawn(move || {
                let mut ep = boxes.endpoint(1).unwrap();
                recv_waiting(&mut ep)
            })
            .join()
            .unwrap(),
        };
        assert_eq!(got, (0, 7));
        sender.join().unwrap();
    });
}

/// The rank's endpoint parks on one thread, is dropped, and is taken again
/// on another thread that parks too, while a sender rings (and may unpark
/// the old thread's handle): the new thread is registered and woken, and the
/// old handle is freed only when no unparker can still be using it.
#[test]
fn reregistration_under_concurrent_unpark() {
    loom::model(|| {
        let boxes = Arc::new(Mailboxes::new(2, 2));
        let sender = {
            let boxes = boxes.clone();
            thread::spawn(move || {
                let mut ep = boxes.endpoint(0).unwrap();
                ep.send(1, 1u32).unwrap();
                ep.send(1, 2u32).unwrap();
            })
        };
        let first = {
            let boxes = boxes.clone();
            thread::spawn(move || {
                let mut ep = boxes.endpoint(1).unwrap();
                recv_waiting(&mut ep)
            })
        };
        assert_eq!(first.join().unwrap(), (0, 1));
        let second = thread::spawn(move || {
            let mut ep = boxes.endpoint(1).unwrap();
            recv_waiting(&mut ep)
        });
        assert_eq!(second.join().unwrap(), (0, 2));
        sender.join().unwrap();
    });
}
