//! Unit tests of `lent.rs`.

use super::*;

#[test]
fn reads_in_place_then_from_the_fallback_after_an_unsettled_end() {
    let pool = SegmentPool::new();
    let lent = {
        let mine = vec![7u8; 1000];
        let lending = Lending::new(&mine, &pool);
        let r = lending.lent().read();
        assert!(r.in_place());
        assert_eq!(r.as_ptr(), mine.as_ptr());
        drop(r);
        Arc::clone(lending.lent())
    };
    let r = lent.read();
    assert!(!r.in_place());
    assert_eq!(&*r, &[7u8; 1000][..]);
    assert_eq!(pool.segments(), 1);
}

/// A broadcast root waits for copies under way, never for a receiver
/// that has not begun once its grace is over: it ends the loan with a
/// copy, through the grace path (`enough` is not even asked).
#[test]
fn a_broadcast_root_stops_waiting_for_a_receiver_that_has_not_begun() {
    let pool = SegmentPool::new();
    let mine = vec![5u8; 3 * COPY_PIECE + 7];
    let mut lending = Lending::new(&mine, &pool);
    let lent = Arc::clone(lending.lent());
    let now = std::time::Instant::now();
    let far = now + std::time::Duration::from_secs(3600);
    let mut asked = 0;
    let settled = lending.wait_copies(
        1,
        |_| {
            asked += 1;
            asked > 100
        },
        now,
        far,
    );
    assert!(!settled);
    assert_eq!(asked, 0, "stopped by the grace, not by `enough`");
    drop(lending);
    // The late receiver copies from the root's copy, whole.
    let mut out = vec![0u8; mine.len()];
    lent.copy_to(&mut out);
    assert_eq!(out, mine);
    assert_eq!(pool.segments(), 1);
}

/// Within its grace, or once every receiver has begun, the root waits
/// for the copies, and with every copy in it settles without one.
#[test]
fn a_broadcast_root_settles_once_every_receiver_copied_in_pieces() {
    let pool = SegmentPool::new();
    let mine: Vec<u8> = (0..2 * COPY_PIECE + 3).map(|i| i as u8).collect();
    let mut lending = Lending::new(&mine, &pool);
    let lent = Arc::clone(lending.lent());
    let (a, b) = (vec![0u8; mine.len()], vec![0u8; mine.len()]);
    let copied = std::thread::scope(|s| {
        let copies = [a, b].map(|mut out| {
            let lent = Arc::clone(&lent);
            s.spawn(move || {
                lent.copy_to(&mut out);
                out
            })
        });
        let now = std::time::Instant::now();
        let far = now + std::time::Duration::from_secs(3600);
        assert!(lending.wait_copies(2, |_| false, far, far));
        copies.map(|h| h.join().unwrap())
    });
    drop(lending);
    for out in copied {
        assert_eq!(out, mine);
    }
    assert_eq!(pool.segments(), 0, "settled: no copy");
}

/// A receiver whose buffer has another length is counted without
/// reading, so the root settles.
#[test]
fn a_refusing_receiver_counts_as_done() {
    let pool = SegmentPool::new();
    let mine = vec![1u8; 64];
    let mut lending = Lending::new(&mine, &pool);
    lending.lent().refuse();
    let far = std::time::Instant::now() + std::time::Duration::from_secs(3600);
    assert!(lending.wait_copies(1, |_| false, far, far));
    drop(lending);
    assert_eq!(pool.segments(), 0);
}

#[test]
fn a_settled_end_copies_nothing() {
    let pool = SegmentPool::new();
    let mine = vec![1u8; 64];
    let mut lending = Lending::new(&mine, &pool);
    let lent = Arc::clone(lending.lent());
    assert_eq!(&*lent.read(), &mine[..]);
    lending.settle();
    drop(lending);
    assert_eq!(pool.segments(), 0);
    assert!(std::panic::catch_unwind(|| lent.read().len()).is_err());
}

#[test]
fn revocation_waits_for_a_lease_in_flight() {
    use std::sync::atomic::AtomicBool;
    let pool = SegmentPool::new();
    let mine = vec![3u8; 4096];
    let reading = AtomicBool::new(false);
    let ended = AtomicBool::new(false);
    std::thread::scope(|s| {
        let mut lending = Lending::new(&mine, &pool);
        lending.settle();
        let lent = Arc::clone(lending.lent());
        let (reading, ended) = (&reading, &ended);
        s.spawn(move || {
            let b = lent.read();
            reading.store(true, std::sync::atomic::Ordering::SeqCst);
            // Hold the lease until the owner has started revoking.
            while lent.state.load(Ordering::Relaxed) & REVOKED == 0 {
                std::thread::yield_now();
            }
            assert!(!ended.load(std::sync::atomic::Ordering::SeqCst));
            assert!(b.iter().all(|&x| x == 3));
        });
        while !reading.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::yield_now();
        }
        drop(lending);
        ended.store(true, std::sync::atomic::Ordering::SeqCst);
    });
}
