//! Loom models of a lent allreduce input (`corrected::value::lent`): the
//! owner lends its buffer for its call, readers lease it, and the owner's
//! guard revokes the loan on its way out of the call. Run (a few seconds):
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p loom-tests --release --test lent
//! ```
//!
//! The buffer's end of life is a loom cell: a reader touches it (`with`)
//! while its lease holds the owner's bytes, and the owner touches it
//! (`with_mut`) once the guard has dropped, standing for the caller reusing
//! or freeing the buffer. If a lease's reads were not ordered before the end
//! of the owner's revocation (the reader's Release decrement, the owner's
//! Acquire wait), or a lease could be taken after the revocation, loom
//! reports the two accesses as concurrent.
#![cfg(loom)]

use corrected::value::lent::{Lending, LendingOutput};
use corrected::value::segment::SegmentPool;
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

const BYTES: [u8; 4] = [1, 2, 3, 4];

fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(bound);
    model.check(f);
}

/// `readers` threads each read the input once while the owner lends it and
/// then leaves its call without settling: every reader sees the bytes,
/// in place under a lease ordered before the buffer's end, or from the
/// fallback copy.
fn lend_and_leave(readers: usize) {
    let pool = SegmentPool::new();
    let alive = Arc::new(UnsafeCell::new(()));
    let buffer = BYTES;
    let lending = Lending::new(&buffer, &pool);
    let handles: Vec<_> = (0..readers)
        .map(|_| {
            let alive = Arc::clone(&alive);
            let input = std::sync::Arc::clone(lending.lent());
            thread::spawn(move || {
                let reading = input.read();
                if reading.in_place() {
                    // The owner's buffer is still in its call.
                    alive.with(|_| ());
                }
                assert_eq!(&*reading, &BYTES[..]);
                reading.in_place()
            })
        })
        .collect();
    drop(lending);
    // The call is over: the caller may now free or reuse the buffer.
    alive.with_mut(|_| ());
    for h in handles {
        h.join().unwrap();
    }
}

/// One reader against the owner's revocation.
#[test]
fn a_lease_ends_before_the_loan_does() {
    model(3, || lend_and_leave(1));
}

/// Two readers: the count of leases in flight admits both, and the
/// revocation waits for both.
#[test]
fn two_leases_end_before_the_loan_does() {
    model(2, || lend_and_leave(2));
}

/// A settled input: the reader finished its reduction (it says so through a
/// Release store the owner acquires, as a completed chunk board does) before
/// the owner settles and revokes, so no fallback is needed and none is made.
#[test]
fn a_settled_loan_ends_after_its_last_lease() {
    model(3, || {
        let pool = SegmentPool::new();
        let alive = Arc::new(UnsafeCell::new(()));
        let done = Arc::new(loom::sync::atomic::AtomicBool::new(false));
        let buffer = BYTES;
        let mut lending = Lending::new(&buffer, &pool);
        let reader = {
            let (alive, done) = (Arc::clone(&alive), Arc::clone(&done));
            let input = std::sync::Arc::clone(lending.lent());
            thread::spawn(move || {
                let reading = input.read();
                assert!(reading.in_place(), "nobody revoked before the end");
                alive.with(|_| ());
                assert_eq!(&*reading, &BYTES[..]);
                drop(reading);
                done.store(true, loom::sync::atomic::Ordering::Release);
            })
        };
        while !done.load(loom::sync::atomic::Ordering::Acquire) {
            thread::yield_now();
        }
        lending.settle();
        drop(lending);
        alive.with_mut(|_| ());
        assert_eq!(pool.segments(), 0, "a settled input is not copied");
        reader.join().unwrap();
    });
}

/// A lent output of two chunks: `writers` threads each push both chunks'
/// results while the owner completes what nobody pushed (or, if `leave`,
/// leaves at once, as on a panic, closing what is empty). Each chunk's
/// writes never overlap and all end before the owner's loan does (the
/// loom cells inside `LentOutput`), and a completed output holds every
/// chunk.
fn push_and_complete(writers: usize, leave: bool) {
    let pool = SegmentPool::new();
    let results = [
        pool.fill(2, |b| b.copy_from_slice(&[1, 2])),
        pool.fill(1, |b| b[0] = 3),
    ];
    let mut out = [0u8; 3];
    {
        let lending = LendingOutput::new(&mut out, 2, &pool);
        let handles: Vec<_> = (0..writers)
            .map(|_| {
                let output = std::sync::Arc::clone(lending.lent());
                let results = results.clone();
                thread::spawn(move || {
                    for (c, r) in results.iter().enumerate() {
                        output.write(c, r.bytes());
                    }
                })
            })
            .collect();
        if !leave {
            for (c, r) in results.iter().enumerate() {
                lending.complete(c, |out| out.copy_from_slice(r.bytes()));
            }
        }
        drop(lending);
        if !leave {
            assert_eq!(out, [1, 2, 3]);
        }
        for h in handles {
            h.join().unwrap();
        }
    }
}

/// One writer against the owner completing its output.
#[test]
fn pushed_chunks_land_once_and_before_the_loan_ends() {
    model(3, || push_and_complete(1, false));
}

/// Two writers: one thread at a time writes a chunk.
#[test]
fn two_writers_never_write_a_chunk_at_once() {
    model(2, || push_and_complete(2, false));
}

/// The owner leaves without completing (a panic in its reduction): no
/// write is left in flight when its loan ends.
#[test]
fn a_closed_output_takes_no_write_after_its_end() {
    model(3, || push_and_complete(1, true));
}

/// Two ranks' outputs of one chunk: a writer computes the chunk straight
/// into the first (takes it, writes, and, if `finish`, pushes it from there
/// into the second and finishes; otherwise gives it back unfinished, as a
/// panicking user operation does) while both owners complete and end their
/// loans. The writer's reads of the first output end before that loan does
/// (it holds the chunk until it finishes), an unfinished chunk is completed
/// by its owner, and both outputs hold the result.
fn compute_in_one_and_push(finish: bool) {
    let pool = SegmentPool::new();
    let (mut a, mut b) = ([0u8; 2], [0u8; 2]);
    {
        let (first, second) = (
            LendingOutput::new(&mut a, 2, &pool),
            LendingOutput::new(&mut b, 2, &pool),
        );
        let (x, y) = (
            std::sync::Arc::clone(first.lent()),
            std::sync::Arc::clone(second.lent()),
        );
        let writer = thread::spawn(move || {
            if let Some(mut chunk) = x.take(0) {
                chunk.bytes_mut().copy_from_slice(&[5, 6]);
                if finish {
                    y.write(0, chunk.bytes());
                    chunk.finish();
                }
            }
        });
        first.complete(0, |out| out.copy_from_slice(&[5, 6]));
        second.complete(0, |out| out.copy_from_slice(&[5, 6]));
        drop((first, second));
        writer.join().unwrap();
    }
    assert_eq!((a, b), ([5, 6], [5, 6]));
}

/// A chunk computed in one output and pushed from there.
#[test]
fn a_chunk_is_pushed_from_the_output_it_was_computed_in() {
    model(3, || compute_in_one_and_push(true));
}

/// A chunk given back unfinished (a panic while computing it).
#[test]
fn a_chunk_given_back_unfinished_is_completed_by_its_owner() {
    model(3, || compute_in_one_and_push(false));
}

/// The owner leaves without completing (a panic in its reduction) while a
/// writer gives a chunk back unfinished (its user operation panicked) and
/// another writer then tries it: the loan's end closes the chunk given
/// back too, so no write reaches the buffer after the loan ends.
fn give_back_while_the_owner_leaves() {
    let pool = SegmentPool::new();
    let mut out = [0u8; 2];
    {
        let lending = LendingOutput::new(&mut out, 2, &pool);
        let output = std::sync::Arc::clone(lending.lent());
        let writer = thread::spawn(move || {
            if let Some(mut chunk) = output.take(0) {
                chunk.bytes_mut()[0] = 9;
                // Dropped unfinished: given back.
            }
            output.write(0, &[7, 8]);
        });
        drop(lending);
        writer.join().unwrap();
    }
}

/// A chunk given back while its owner leaves is closed, not left open.
#[test]
fn a_chunk_given_back_as_the_owner_leaves_takes_no_later_write() {
    model(3, give_back_while_the_owner_leaves);
}

/// A broadcast root lends its buffer: `readers` receivers each copy the
/// value once ([`Lent::copy_to`], a piece at a time) while the root waits
/// for `expected` copies. If they all come, the root settles and ends the
/// loan without a copy: every read was in place and ordered before the
/// buffer's end. If one is missing (`expected` above `readers`, the
/// missing one known failed), or `grace_over` and a receiver has not begun
/// when the root looks, the root gives up, copies, and ends the loan while
/// copies may be under way: each receiver still gets the whole value (its
/// pieces from the buffer until the end, from the copy after), no piece
/// is read from the buffer after the loan's end (each piece is a
/// [`Lent::read`] lease, whose end before the loan's the models above
/// check), a settled loan is never read again (that read would panic), and
/// a reader that comes after the end reads the copy.
///
/// [`Lent::copy_to`]: corrected::value::lent::Lent::copy_to
/// [`Lent::read`]: corrected::value::lent::Lent::read
fn broadcast(readers: usize, expected: usize, grace_over: bool) {
    let pool = SegmentPool::new();
    let buffer = BYTES;
    let mut lending = Lending::new(&buffer, &pool);
    let handles: Vec<_> = (0..readers)
        .map(|_| {
            let input = std::sync::Arc::clone(lending.lent());
            thread::spawn(move || {
                let mut out = [0u8; BYTES.len()];
                input.copy_to(&mut out);
                assert_eq!(out, BYTES);
            })
        })
        .collect();
    let late = std::sync::Arc::clone(lending.lent());
    let now = std::time::Instant::now();
    let far = now + std::time::Duration::from_secs(3600);
    let grace = if grace_over { now } else { far };
    let settled = lending.wait_copies(expected, |copies| copies >= readers, grace, far);
    if !grace_over {
        assert_eq!(settled, readers >= expected);
    }
    drop(lending);
    for h in handles {
        h.join().unwrap();
    }
    if !settled {
        // A receiver slower than the root's wait reads the root's copy.
        let mut out = [0u8; BYTES.len()];
        late.copy_to(&mut out);
        assert_eq!(out, BYTES);
    }
}

/// Every receiver copies: the loan ends settled, after the last read.
#[test]
fn a_broadcast_loan_ends_after_every_copy() {
    model(3, || broadcast(2, 2, false));
}

/// A receiver is missing: the root copies, and a late reader reads that.
#[test]
fn a_broadcast_loan_missing_a_copy_leaves_a_copy_behind() {
    model(3, || broadcast(1, 2, false));
}

/// The root's grace is over when it first looks: it settles if the
/// receiver copied by then, and otherwise ends the loan with a copy while
/// the receiver may be between two pieces of its copy.
#[test]
fn a_broadcast_loan_ended_mid_copy_leaves_the_receiver_whole() {
    model(3, || broadcast(1, 1, true));
}
