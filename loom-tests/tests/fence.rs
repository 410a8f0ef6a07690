//! Loom model of operation fencing over the mailbox: sender 1 sends a message
//! of operation 0 and then one of operation 1, sender 2 one of operation 0;
//! however the sends interleave, the receiver hands each operation exactly
//! its own messages, keeps the early one, and loses none. The preemption
//! bound is fixed at 2 here, which keeps the model at seconds.
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p loom-tests --release
//! ```
#![cfg(loom)]

use corrected::mailbox::Mailboxes;
use corrected::runtime::{Fence, Route};
use loom::sync::Arc;
use loom::thread;

#[test]
fn each_operation_gets_exactly_its_messages() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(|| {
        // Messages are (op, sender) pairs.
        let boxes = Arc::new(Mailboxes::<(u32, u32)>::new(3, 2));
        // Sender 1 sends operations 0 and 1, sender 2 only operation 0.
        let senders: Vec<_> = [(1u32, 2u32), (2, 1)]
            .into_iter()
            .map(|(me, ops)| {
                let boxes = boxes.clone();
                thread::spawn(move || {
                    let mut ep = boxes.endpoint(me).unwrap();
                    for op in 0..ops {
                        while ep.send(0, (op, me)).is_err() {
                            thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let receiver = {
            let boxes = boxes.clone();
            thread::spawn(move || {
                let mut ep = boxes.endpoint(0).unwrap();
                let mut fence = Fence::new();
                let mut got: Vec<Vec<u32>> = vec![Vec::new(), Vec::new()];
                let want = [2, 1];
                for _ in 0..2 {
                    let op = fence.enter();
                    for (from, (o, sender)) in fence.release(op) {
                        assert_eq!((o, from), (op, sender));
                        got[op as usize].push(sender);
                    }
                    while got[op as usize].len() < want[op as usize] {
                        match ep.try_recv() {
                            Some((from, (o, sender))) => {
                                assert_eq!(from, sender);
                                match fence.route(o) {
                                    Route::Current => got[op as usize].push(sender),
                                    Route::Early => fence.hold(from, o, (o, sender)),
                                    Route::Past => panic!("a sender sent operation {o} twice"),
                                }
                            }
                            None => {
                                ep.wait(None);
                            }
                        }
                    }
                }
                assert_eq!(fence.held(), 0);
                got[0].sort_unstable();
                assert_eq!(got, vec![vec![1, 2], vec![1]]);
            })
        };
        for s in senders {
            s.join().unwrap();
        }
        receiver.join().unwrap();
    });
}
