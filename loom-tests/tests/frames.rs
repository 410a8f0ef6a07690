//! Loom model of the frame ring (`corrected::mailbox::frames`): the MPI
//! engine's channel to a process of its node. Between two threads, loom
//! explores every interleaving and every weak-memory outcome it models;
//! a payload read before its stamp says it is written, or a slot written
//! again before the reader has left it, is a causality violation.
#![cfg(loom)]

use corrected::mailbox::frames::{FrameRing, FrameWriter};
use loom::thread;

fn frame(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8) ^ seed).collect()
}

/// A one-slot frame and a three-slot frame through a ring of two slots:
/// the second streams (the writer comes back for what did not fit), and
/// the reader gets both whole, in order, and nothing more.
#[test]
fn frames_stream_through_a_ring_smaller_than_them() {
    loom::model(|| {
        let (mut w, mut r) = FrameRing::on_heap(2);
        let lens = [10, 120];
        let writer = thread::spawn(move || {
            for (i, len) in lens.into_iter().enumerate() {
                let f = frame(len, i as u8);
                let mut done = 0;
                loop {
                    done = w.write(&f, done);
                    if done == FrameWriter::slots_for(len) {
                        break;
                    }
                    thread::yield_now();
                }
            }
        });
        let mut into = Vec::new();
        for (i, len) in lens.into_iter().enumerate() {
            while !r.read(&mut into) {
                thread::yield_now();
            }
            assert_eq!(into, frame(len, i as u8));
            into.clear();
        }
        writer.join().unwrap();
        assert!(!r.has_next());
    });
}
