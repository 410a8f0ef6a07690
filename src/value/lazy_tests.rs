//! Unit tests of `lazy.rs`.

use super::*;
use crate::op::SystemOperation;
use std::sync::atomic::AtomicUsize;

/// A sum, counting every element it folds.
fn counting(folds: &AtomicUsize) -> impl Fn(&u64, &u64) -> u64 + Sync + '_ {
    move |a, b| {
        folds.fetch_add(1, Ordering::Relaxed);
        a + b
    }
}

/// The input of rank `k` of 4 (element `i` is `i * 1000 + k`), with
/// its output `out` lent at the call's entry, if any.
fn entry(pool: &SegmentPool, n: usize, k: u64, out: Option<&Arc<LentOutput>>) -> Arc<LazySum> {
    let v: Vec<u64> = (0..n as u64).map(|i| i * 1000 + k).collect();
    let input = pool.fill(n * 8, |b| b.copy_from_slice(bytemuck::cast_slice(&v)));
    LazySum::single(k as Rank, Lent::from_segment(input), out, 4, pool)
}

/// The chunks `lent` holds after `by` reduced `sum` (of `u64`) with a
/// sum that panics once it has folded `folds` elements.
fn done_when_stopped(
    sum: &LazySum,
    by: Reducer<'_>,
    folds: usize,
    lent: &LendingOutput<'_>,
    pool: &SegmentPool,
) -> Vec<usize> {
    let folded = AtomicUsize::new(0);
    let stopping = |a: &u64, b: &u64| {
        assert!(folded.fetch_add(1, Ordering::Relaxed) < folds);
        a + b
    };
    let stopped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut out = vec![0u64; sum.len() / 8];
        let _ = sum.reduce_into(by, &mut out, &stopping, pool);
    }));
    assert!(stopped.is_err());
    (0..sum.len().div_ceil(CHUNK_BYTES))
        .filter(|&c| lent.lent().is_done(c))
        .collect()
}

#[test]
fn ranks_share_the_chunks_and_get_the_same_result() {
    let pool = SegmentPool::new();
    let n = 3 * CHUNK_BYTES / 8 + 5;
    let want: Vec<u64> = (0..n as u64).map(|i| 4 * i * 1000 + 6).collect();
    let mut outs = vec![vec![0u64; n]; 3];
    let folds = AtomicUsize::new(0);
    {
        // Ranks 0-2 lend their outputs at entry; rank 3 does not.
        let lendings: Vec<LendingOutput<'_>> = outs
            .iter_mut()
            .map(|o| LendingOutput::new(bytemuck::cast_slice_mut(o), chunk_bytes(8), &pool))
            .collect();
        let sum = [2, 0, 3, 1]
            .map(|k| entry(&pool, n, k, lendings.get(k as usize).map(|l| l.lent())))
            .into_iter()
            .reduce(|a, b| LazySum::join(&a, &b, &pool))
            .unwrap();
        assert_eq!(sum.terms(), 4);
        let ranks: Vec<Rank> = sum.terms.iter().map(|t| t.rank).collect();
        assert_eq!(ranks, [0, 1, 2, 3], "inputs fold in rank order");
        std::thread::scope(|s| {
            for (me, lending) in lendings.into_iter().enumerate() {
                let (sum, op) = (&sum, counting(&folds));
                s.spawn(move || {
                    sum.reduce_lent(Reducer::alone(me as Rank), &lending, &op)
                        .unwrap()
                });
            }
        });
        // Each chunk was computed once (three folds of each element,
        // four inputs), straight into the outputs: no segment beyond
        // the inputs.
        assert_eq!(folds.load(Ordering::Relaxed), 3 * n);
        assert_eq!(pool.segments(), 4);
        // Rank 3 lends its output only now, after every chunk was
        // computed: nobody pushed there, so it computes them itself.
        let mut late = vec![0u64; n];
        sum.reduce_into(Reducer::alone(3), &mut late, &counting(&folds), &pool)
            .unwrap();
        assert_eq!(folds.load(Ordering::Relaxed), 2 * 3 * n);
        assert_eq!(late, want);
    }
    for out in &outs {
        assert_eq!(out, &want);
    }
}

/// Where ranks share cores most get their turn after every chunk is
/// computed: an output lent at the call's entry holds the result by
/// then, written by whoever computed, with nothing left to compute.
#[test]
fn an_output_lent_at_entry_gets_every_chunk_from_whoever_computes() {
    let pool = SegmentPool::new();
    let n = 3 * CHUNK_BYTES / 8 + 5;
    let folds = AtomicUsize::new(0);
    let (mut late, mut cut) = (vec![0u64; n], vec![0u8; n * 8]);
    {
        let late_lent =
            LendingOutput::new(bytemuck::cast_slice_mut(&mut late), chunk_bytes(8), &pool);
        // A rank that reduces 3-byte elements cuts its output apart: it
        // must get nothing (its rank errors with a type mismatch).
        let cut_lent = LendingOutput::new(&mut cut, chunk_bytes(3), &pool);
        let a = entry(&pool, n, 0, None);
        let b = entry(&pool, n, 1, Some(late_lent.lent()));
        let c = entry(&pool, n, 2, Some(cut_lent.lent()));
        let sum = LazySum::join(&LazySum::join(&a, &b, &pool), &c, &pool);
        let mut first = vec![0u64; n];
        sum.reduce_into(Reducer::alone(0), &mut first, &counting(&folds), &pool)
            .unwrap();
        let chunks = n.div_ceil(CHUNK_BYTES / 8);
        assert!((0..chunks).all(|c| late_lent.lent().is_done(c)));
        assert!((0..chunks).all(|c| !cut_lent.lent().is_done(c)));
        assert_eq!(folds.load(Ordering::Relaxed), 2 * n);
        // The late rank's own reduction finds every chunk in place.
        sum.reduce_lent::<u64>(Reducer::alone(1), &late_lent, &counting(&folds))
            .unwrap();
        assert_eq!(
            folds.load(Ordering::Relaxed),
            2 * n,
            "nothing computed anew"
        );
        assert_eq!(
            first,
            (0..n as u64).map(|i| 3 * i * 1000 + 3).collect::<Vec<_>>()
        );
    }
    assert!(late
        .iter()
        .enumerate()
        .all(|(i, &x)| x == 3 * i as u64 * 1000 + 3));
    assert!(cut.iter().all(|&x| x == 0));
}

/// Each rank computes its own share of the chunks first (the same at
/// every call, so a loop keeps each share of the outputs in one core's
/// cache): rank 1 of 2, reducing first, starts with chunk 2 of 4.
#[test]
fn a_rank_computes_its_own_share_of_the_chunks_first() {
    let pool = SegmentPool::new();
    let per_chunk = CHUNK_BYTES / 8;
    let n = 4 * per_chunk;
    let mut out0 = vec![0u64; n];
    let lent0 = LendingOutput::new(bytemuck::cast_slice_mut(&mut out0), chunk_bytes(8), &pool);
    let sum = LazySum::join(
        &entry(&pool, n, 0, Some(lent0.lent())),
        &entry(&pool, n, 1, None),
        &pool,
    );
    // Rank 1's operation stops it (a panic) in the second chunk it
    // computes: only its first reached rank 0's output.
    let folds = AtomicUsize::new(0);
    let one_chunk = |a: &u64, b: &u64| {
        assert!(folds.fetch_add(1, Ordering::Relaxed) < per_chunk);
        a + b
    };
    let stopped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut out1 = vec![0u64; n];
        let _ = sum.reduce_into(Reducer::alone(1), &mut out1, &one_chunk, &pool);
    }));
    assert!(stopped.is_err());
    let done: Vec<bool> = (0..4).map(|c| lent0.lent().is_done(c)).collect();
    assert_eq!(done, [false, false, true, false]);
    // Rank 0 computes the rest, the chunk rank 1 gave back included.
    sum.reduce_lent::<u64>(Reducer::alone(0), &lent0, &SystemOperation::sum())
        .unwrap();
    drop(lent0);
    assert!(out0
        .iter()
        .enumerate()
        .all(|(i, &x)| x == 2 * i as u64 * 1000 + 1));
}

/// After its own share a rank computes its core mates' shares, then
/// the rest from the last chunk down: four ranks, two per core, eight
/// chunks; rank 1, on the core of rank 0, reducing first.
#[test]
fn a_rank_computes_its_core_mates_shares_next_and_the_rest_from_the_end() {
    let pool = SegmentPool::new();
    let per_chunk = CHUNK_BYTES / 8;
    let n = 8 * per_chunk;
    // Which chunks rank 0's lent output has after rank 1 computed
    // `chunks` of them (its operation panics in the next one).
    let computed_by_rank_1 = |mates: &[Rank], chunks: usize| {
        let mut out0 = vec![0u64; n];
        let lent0 = LendingOutput::new(bytemuck::cast_slice_mut(&mut out0), chunk_bytes(8), &pool);
        let sum = LazySum::join(
            &LazySum::join(
                &entry(&pool, n, 0, Some(lent0.lent())),
                &entry(&pool, n, 1, None),
                &pool,
            ),
            &LazySum::join(&entry(&pool, n, 2, None), &entry(&pool, n, 3, None), &pool),
            &pool,
        );
        let by = Reducer { rank: 1, mates };
        done_when_stopped(&sum, by, chunks * 3 * per_chunk, &lent0, &pool)
    };
    assert_eq!(computed_by_rank_1(&[0], 4), [0, 1, 2, 3]);
    assert_eq!(computed_by_rank_1(&[0], 5), [0, 1, 2, 3, 7]);
    assert_eq!(computed_by_rank_1(&[], 4), [2, 3, 6, 7]);
}

/// A rank with a core of its own takes no chunk from a share its rank
/// has begun: it waits for it, and computes what is left only after
/// [`SHARE_WAIT`]. One that shares its core with that rank takes them.
#[test]
fn a_rank_with_a_core_of_its_own_leaves_a_begun_share_to_its_rank() {
    let pool = SegmentPool::new();
    let per_chunk = CHUNK_BYTES / 8;
    let n = 4 * per_chunk;
    // Rank 0 began its share (chunks 0 and 1) and computes no more;
    // rank 1 reduces, its operation panicking in its fourth chunk.
    let computed_by_rank_1 = |mates: &[Rank]| {
        let mut out0 = vec![0u64; n];
        let lent0 = LendingOutput::new(bytemuck::cast_slice_mut(&mut out0), chunk_bytes(8), &pool);
        let sum = LazySum::join(
            &entry(&pool, n, 0, Some(lent0.lent())),
            &entry(&pool, n, 1, None),
            &pool,
        );
        sum.terms[0].board.claimed[0].store(true, Ordering::Relaxed);
        let started = Instant::now();
        let by = Reducer { rank: 1, mates };
        let done = done_when_stopped(&sum, by, 3 * per_chunk, &lent0, &pool);
        (done, started.elapsed())
    };
    // Its own share, then, after waiting, the chunk rank 0 claimed
    // (its first chunk to wait for), not chunk 1 first.
    let (done, waited) = computed_by_rank_1(&[]);
    assert_eq!(done, [0, 2, 3]);
    assert!(waited >= SHARE_WAIT);
    // A core mate of rank 0 takes the rest of rank 0's share at once.
    assert_eq!(computed_by_rank_1(&[0]).0, [1, 2, 3]);
}

#[test]
fn a_chunk_claimed_by_a_rank_that_never_finishes_is_computed_by_another() {
    let pool = SegmentPool::new();
    let n = 2 * CHUNK_BYTES / 8;
    let make = || LazySum::join(&entry(&pool, n, 1, None), &entry(&pool, n, 2, None), &pool);
    let want: Vec<u64> = (0..n as u64).map(|i| 2 * i * 1000 + 3).collect();
    // A rank claimed chunk 0 and died before computing it.
    let sum = make();
    let board = &sum.terms[0].board;
    let _ = board.shape.set(Shape {
        size: 8,
        align: 8,
        chunk: CHUNK_BYTES,
    });
    board.claimed[0].store(true, Ordering::Relaxed);
    let mut out = vec![0u64; n];
    sum.reduce_into(Reducer::alone(0), &mut out, &SystemOperation::sum(), &pool)
        .unwrap();
    assert_eq!(out, want);
    // A rank's computation of a chunk panicked (its user operation):
    // the chunk stays open, and the next rank computes it.
    let sum = make();
    let panicking = |a: &u64, b: &u64| -> u64 {
        if *a == 1 {
            panic!("user operation");
        }
        a + b
    };
    let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut out = vec![0u64; n];
        let _ = sum.reduce_into(Reducer::alone(0), &mut out, &panicking, &pool);
    }));
    assert!(died.is_err());
    let mut out = vec![0u64; n];
    sum.reduce_into(Reducer::alone(0), &mut out, &SystemOperation::sum(), &pool)
        .unwrap();
    assert_eq!(out, want);
}

#[test]
fn ranks_that_read_the_bytes_as_another_type_get_an_error() {
    let pool = SegmentPool::new();
    // 3 * 8 * 4096 bytes: whole u64s and whole [u8; 3]s.
    let n = 3 * 4096;
    let sum = LazySum::join(&entry(&pool, n, 1, None), &entry(&pool, n, 2, None), &pool);
    let mut words = vec![0u64; n];
    sum.reduce_into(
        Reducer::alone(1),
        &mut words,
        &SystemOperation::sum(),
        &pool,
    )
    .unwrap();
    let mut triples = vec![[0u8; 3]; n * 8 / 3];
    let xor = |a: &[u8; 3], b: &[u8; 3]| [a[0] ^ b[0], a[1] ^ b[1], a[2] ^ b[2]];
    assert_eq!(
        sum.reduce_into(Reducer::alone(2), &mut triples, &xor, &pool),
        Err((8, 8))
    );
    // Same size, another alignment: an error too (a lent buffer of
    // the first type need not be aligned for the second).
    let mut pairs = vec![[0u32; 2]; n];
    let add = |a: &[u32; 2], b: &[u32; 2]| [a[0] + b[0], a[1] + b[1]];
    assert_eq!(
        sum.reduce_into(Reducer::alone(2), &mut pairs, &add, &pool),
        Err((8, 8))
    );
}
