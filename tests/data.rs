//! Data of any size: slices of every length, plain-data element
//! types including a user's struct, length mismatches as typed errors, kills
//! and panics during large operations, and segment reuse.
//!
//! The fault checks use vectors whose element i of rank r is
//! `input_of(r) * (2i + 1)` (wrapping): the odd factor is invertible modulo
//! 2^64, so each element of a sum gives back the sum of the inputs of the
//! ranks it includes. Every element must give back the same sum, and that
//! sum must pass `includes_exactly`: every live rank once, a rank that died
//! during the operation in every element or in none. A result whose chunks
//! disagree on the set of contributions fails this check. The reductions'
//! contributors must name exactly the ranks whose inputs that sum holds.

mod common;

use common::serial;
use std::time::Duration;

use corrected::check::{element_value, includes_exactly, input_of, vector_element};
use corrected::prelude::*;
use corrected::runtime::{Fault, TeamReport};
use corrected::types::Tick;

const LENGTHS: [usize; 7] = [0, 1, 7, 8, 9, 1000, 1_000_000];

/// A user's element type: a `#[repr(C)]` struct without padding, with a
/// field of another user type.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
struct Cell {
    count: u32,
    low: f32,
    high: f32,
    tag: Pair,
}

/// A collective's element: plain data, declared so.
impl Element for Cell {}

#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
struct Pair {
    lo: u32,
    hi: u32,
}

fn merge(a: &Cell, b: &Cell) -> Cell {
    Cell {
        count: a.count + b.count,
        low: a.low.min(b.low),
        high: a.high.max(b.high),
        tag: Pair {
            lo: a.tag.lo.wrapping_add(b.tag.lo),
            hi: a.tag.hi ^ b.tag.hi,
        },
    }
}

fn cell(rank: u32, i: usize) -> Cell {
    Cell {
        count: 1,
        low: (rank as f32) - i as f32,
        high: (rank as f32) + i as f32,
        tag: Pair {
            lo: rank * 7 + i as u32,
            hi: rank.rotate_left(i as u32 % 32),
        },
    }
}

fn team(ranks: u32, f: u32) -> Team {
    Team::builder()
        .ranks(ranks)
        .fault_budget(f)
        .build()
        .unwrap()
}

/// Asserts every rank returned `Ok` and all the same value.
fn all_same<T: PartialEq + std::fmt::Debug>(report: &TeamReport<Result<T, Error>>, what: &str) {
    let mut first: Option<&T> = None;
    for (r, got) in report.returned() {
        let got = got
            .as_ref()
            .unwrap_or_else(|e| panic!("{what}: rank {r}: {e}"));
        match first {
            None => first = Some(got),
            Some(f) => assert!(f == got, "{what}: rank {r} differs"),
        }
    }
    assert!(
        report.failed.is_empty(),
        "{what}: {:?} failed",
        report.failed
    );
}

#[test]
fn every_length_of_f64_u8_and_a_user_struct_reaches_every_rank_alike() {
    let _s = serial();
    for ranks in [2, 5] {
        let t = team(ranks, 1);
        for n in LENGTHS {
            // f64: small integers, so every order of summing is exact and
            // the expected value is known; bitwise equality across ranks
            // is checked on the raw bits.
            let report = t.run(|comm| {
                let me = comm.rank();
                let local: Vec<f64> = (0..n).map(|i| (me as usize * 3 + i % 5) as f64).collect();
                let mut sum = vec![-1.0; n];
                comm.all_reduce_into(&local[..], &mut sum[..], SystemOperation::sum())?;
                let mut root = if me == 1 { local.clone() } else { vec![0.0; n] };
                comm.broadcast_into(1, &mut root[..])?;
                let mut at0 = vec![0.0; n];
                comm.reduce_into(0, &local[..], &mut at0[..], SystemOperation::max())?;
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                Ok::<_, Error>((bits(&sum), bits(&root), (me == 0).then(|| bits(&at0))))
            });
            let what = format!("f64 P={ranks} n={n}");
            for (r, got) in report.returned() {
                let (sum, root, at0) = got.as_ref().unwrap_or_else(|e| panic!("{what}: {r}: {e}"));
                for i in 0..n {
                    let want: f64 = (0..ranks).map(|q| (q as usize * 3 + i % 5) as f64).sum();
                    assert_eq!(f64::from_bits(sum[i]), want, "{what}: rank {r} sum[{i}]");
                    assert_eq!(
                        f64::from_bits(root[i]),
                        (3 + i % 5) as f64,
                        "{what}: bcast[{i}]"
                    );
                    if let Some(at0) = at0 {
                        let max = ((ranks as usize - 1) * 3 + i % 5) as f64;
                        assert_eq!(f64::from_bits(at0[i]), max, "{what}: reduce[{i}]");
                    }
                }
            }
            // Bitwise the same (above: equal as numbers).
            let sums: Vec<_> = report
                .returned()
                .map(|(_, g)| &g.as_ref().unwrap().0)
                .collect();
            assert!(sums.windows(2).all(|w| w[0] == w[1]), "{what}");
            assert!(report.failed.is_empty(), "{what}");

            // u8: wrapping sums and a bitwise operation.
            let report = t.run(|comm| {
                let me = comm.rank() as u8;
                let local: Vec<u8> = (0..n).map(|i| (i as u8).wrapping_mul(31) ^ me).collect();
                let mut sum = vec![0u8; n];
                comm.all_reduce_into(&local[..], &mut sum[..], SystemOperation::sum())?;
                let mut xor = vec![0u8; n];
                comm.all_reduce_into(&local[..], &mut xor[..], SystemOperation::bitwise_xor())?;
                Ok((sum, xor))
            });
            let what = format!("u8 P={ranks} n={n}");
            for (r, got) in report.returned() {
                let (sum, xor) = got.as_ref().unwrap();
                for i in 0..n {
                    let parts = (0..ranks as u8).map(|q| (i as u8).wrapping_mul(31) ^ q);
                    let want = parts.clone().fold(0u8, u8::wrapping_add);
                    assert_eq!(sum[i], want, "{what}: rank {r} sum[{i}]");
                    assert_eq!(xor[i], parts.fold(0, |a, b| a ^ b), "{what}: xor[{i}]");
                }
            }
            all_same(&report, &what);

            // A user's struct with a closure.
            let report = t.run(|comm| {
                let me = comm.rank();
                let local: Vec<Cell> = (0..n).map(|i| cell(me, i)).collect();
                let mut merged = vec![Cell::zeroed(); n];
                comm.all_reduce_into(&local[..], &mut merged[..], merge)?;
                Ok(merged)
            });
            let what = format!("Cell P={ranks} n={n}");
            for (r, got) in report.returned() {
                let merged = got.as_ref().unwrap();
                for (i, m) in merged.iter().enumerate() {
                    let want = (1..ranks).fold(cell(0, i), |acc, q| merge(&acc, &cell(q, i)));
                    assert_eq!(*m, want, "{what}: rank {r} [{i}]");
                }
            }
            all_same(&report, &what);
        }
    }
}

fn element(rank: u32, i: usize) -> u64 {
    vector_element(input_of(rank), i)
}

/// The sum of inputs element `i` of a result includes.
fn included(v: u64, i: usize) -> u64 {
    element_value(v, i)
}

/// The sum of the inputs of the ranks `who` names (all listed: these
/// tests kill few ranks).
fn sum_of(who: &Contributors) -> u64 {
    let ranks = who.ranks().expect("a few failures are listed");
    ranks.iter().fold(0, |s, &r| s.wrapping_add(input_of(r)))
}

fn wrapping_sum(a: &u64, b: &u64) -> u64 {
    a.wrapping_add(*b)
}

/// A team whose detector declares a silent rank failed within a second,
/// far below its operation timeout.
fn faulty_team(ranks: u32, f: u32, faults: FaultSchedule) -> Team {
    Team::builder()
        .ranks(ranks)
        .fault_budget(f)
        .faults(faults)
        .failure_timeout(Duration::from_secs(1))
        .op_timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// Kill points of one or two victims (before the operation, after the n-th
/// send, at the end of the call) in an allreduce and a broadcast of
/// `n` elements: every live rank gets the same vector, every element
/// includes the same contributions, exactly (within the budget), and a
/// broadcast from a live root reaches every live rank whole.
fn kills_during(ranks: u32, f: u32, n: usize) {
    const END: u32 = 1 << 20;
    // Every send point of a single victim (a rank of these teams sends
    // fewer than 16 messages in an allreduce; later points fire at the end
    // of its call), and a sample of pairs.
    let points = (0..16).chain([END]);
    let mut cases: Vec<Vec<(u32, u32)>> = Vec::new();
    for v in 0..ranks {
        for p in points.clone() {
            cases.push(vec![(v, p)]);
        }
    }
    if f >= 2 {
        for (a, b) in [(1, 2), (0, 3), (2, 4)] {
            for (p, q) in [(0, 1), (2, END), (1, 3)] {
                cases.push(vec![(a, p), (b, q)]);
            }
        }
    }
    for kills in cases {
        let faults = kills.iter().fold(FaultSchedule::none(), |s, &(r, p)| {
            s.at(r, 0, Fault::DieAfterSends(p)).at(r, 1, Fault::Dead)
        });
        let report = faulty_team(ranks, f, faults).run(|comm| {
            let me = comm.rank();
            let local: Vec<u64> = (0..n).map(|i| element(me, i)).collect();
            let mut out = vec![0u64; n];
            let all = comm
                .all_reduce_into_contributors(&local[..], &mut out[..], wrapping_sum)
                .map(|who| (out.clone(), who));
            let mut got = if me == 0 { local.clone() } else { vec![0; n] };
            let bcast = comm.broadcast_into(0, &mut got[..]).map(|()| got);
            (all, bcast)
        });
        let name = format!("P={ranks} f={f} n={n} kills {kills:?}");
        let victims: Vec<u32> = kills.iter().map(|&(r, _)| r).collect();
        let death: Vec<Tick> = (0..ranks)
            .map(|r| match kills.iter().find(|&&(k, _)| k == r) {
                Some(&(_, 0)) => 0,
                Some(_) => 1,
                None => Tick::MAX,
            })
            .collect();
        let mut failed = report.failed.clone();
        failed.sort_unstable();
        let mut want = victims.clone();
        want.sort_unstable();
        assert_eq!(failed, want, "{name}: the victims, and only they, die");
        let mut agreed: Option<&(Vec<u64>, Contributors)> = None;
        for (r, (all, bcast)) in report.returned().filter(|(r, _)| !victims.contains(r)) {
            let got = all
                .as_ref()
                .unwrap_or_else(|e| panic!("{name}: rank {r}: {e}"));
            let (v, who) = got;
            assert_eq!(v.len(), n);
            if n > 0 {
                let set = included(v[0], 0);
                assert!(includes_exactly(set, &death), "{name}: rank {r}");
                assert_eq!(set, sum_of(who), "{name}: rank {r}'s contributors");
                for (i, &x) in v.iter().enumerate() {
                    assert_eq!(
                        included(x, i),
                        set,
                        "{name}: rank {r} element {i} disagrees"
                    );
                }
            }
            assert!(
                *agreed.get_or_insert(got) == got,
                "{name}: rank {r} differs"
            );
            match bcast {
                Ok(b) => {
                    let want: Vec<u64> = (0..n).map(|i| element(0, i)).collect();
                    assert!(*b == want, "{name}: rank {r} broadcast");
                }
                Err(Error::RootFailed { root: 0, .. }) if victims.contains(&0) => {}
                Err(e) => panic!("{name}: rank {r} broadcast: {e}"),
            }
        }
    }
}

#[test]
fn large_vectors_keep_the_fault_guarantees_at_every_kill_point() {
    let _s = serial();
    // Inline (5 elements), shared and reduced as it travels (1000), and
    // reduced lazily (40 000: 5 chunks of a large allreduce), f = 1 and 2.
    for n in [5, 1000, 40_000] {
        kills_during(5, 1, n);
    }
    kills_during(6, 2, 40_000);
}

/// A large reduce (its inputs lent, the root reducing them by chunks once
/// the protocol agreed on them) at every kill point of one victim, the root
/// included: the root gets a vector each of whose elements includes the
/// same contributions, exactly; the other live ranks' calls end without
/// error, or with the root's failure when it is the victim.
#[test]
fn large_reduces_keep_the_fault_guarantees_at_every_kill_point() {
    let _s = serial();
    const END: u32 = 1 << 20;
    let (ranks, root, n) = (5u32, 1u32, 40_000usize);
    for victim in 0..ranks {
        for point in (0..12).chain([END]) {
            let faults = FaultSchedule::none()
                .at(victim, 0, Fault::DieAfterSends(point))
                .at(victim, 1, Fault::Dead);
            let report = faulty_team(ranks, 1, faults).run(|comm| {
                let me = comm.rank();
                let local: Vec<u64> = (0..n).map(|i| element(me, i)).collect();
                let mut out = vec![0u64; n];
                comm.reduce_into_contributors(root, &local[..], &mut out[..], wrapping_sum)
                    .map(|who| (out, who))
            });
            let name = format!("victim {victim} at send {point}");
            assert_eq!(report.failed, [victim], "{name}");
            let mut death = vec![Tick::MAX; ranks as usize];
            death[victim as usize] = u64::from(point != 0);
            for (r, got) in report.returned().filter(|&(r, _)| r != victim) {
                match got {
                    Ok((v, who)) if r == root => {
                        let set = included(v[0], 0);
                        assert!(includes_exactly(set, &death), "{name}: root");
                        let who = who.as_ref().expect("the root's contributors");
                        assert_eq!(set, sum_of(who), "{name}: the root's contributors");
                        assert!(
                            v.iter().enumerate().all(|(i, &x)| included(x, i) == set),
                            "{name}: the root's elements disagree"
                        );
                    }
                    Ok((_, who)) => assert_eq!(*who, None, "{name}: rank {r}"),
                    Err(Error::RootFailed { .. }) if victim == root => {}
                    Err(e) => panic!("{name}: rank {r}: {e}"),
                }
            }
        }
    }
}

/// Ranks that are not the root return from a reduce once they sent, and
/// may run ahead of a slower root; a value that does not travel inline is
/// held in a segment until the root has it, so a rank waits, serving,
/// before a reduce while the root has not returned from the one
/// `reduces_ahead(bytes)` operations back. Here the root works for a millisecond
/// between its calls: the others hold at most that many values each, where
/// without the limit they run up to a lane's capacity (64 messages) ahead,
/// a copy of their input for each (hundreds of segments).
#[test]
fn a_loop_of_large_reduces_holds_a_bounded_number_of_copies() {
    let _s = serial();
    let (ranks, n, rounds, root) = (8u32, 40_000usize, 200, 2u32);
    let report = team(ranks, 1).run(|comm| {
        let local = vec![comm.rank() as f64; n];
        let mut out = vec![0.0; n];
        for _ in 0..rounds {
            comm.reduce_into(root, &local[..], &mut out[..], SystemOperation::sum())?;
            if comm.rank() == root {
                assert_eq!(out[n - 1], 28.0);
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        Ok::<_, Error>(())
    });
    for (r, got) in report.returned() {
        assert_eq!(*got, Ok(()), "rank {r}");
    }
    let ahead = u64::from(corrected::runtime::reduces_ahead(n * 8));
    // Per rank its copies out and the one of the call it is in; the
    // root's chunk results (5 per call) and the pool's slack besides.
    let bound = u64::from(ranks) * (ahead + 1) + 10;
    assert!(
        report.segment_allocations <= bound,
        "{} segments allocated in {rounds} rounds (bound {bound})",
        report.segment_allocations
    );
}

/// The pacing of reduces gives up on a root whose heartbeat stands still
/// for a failure timeout (here it hangs in its third call) until that root
/// returns from another call: the others' loop of 20 reduces costs one
/// failure timeout of waiting, not one per call (they are not the root:
/// each call ends once it sent). With f = 0 no rank awaits the root in a
/// reduce (no up-correction group holds it and another), so no detector
/// declares it failed: only the pacing could wait for it.
#[test]
fn a_hung_root_holds_back_a_loop_of_reduces_once() {
    let _s = serial();
    let (ranks, n, rounds, root) = (4u32, 1000usize, 20, 1u32);
    let failure_timeout = Duration::from_millis(200);
    let team = Team::builder()
        .ranks(ranks)
        .fault_budget(0)
        .faults(FaultSchedule::none().at(root, 2, Fault::Hang))
        .failure_timeout(failure_timeout)
        .op_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let report = team.run(|comm| {
        let local = vec![1u64; n];
        let mut out = vec![0u64; n];
        let started = std::time::Instant::now();
        for _ in 0..rounds {
            comm.reduce_into(root, &local[..], &mut out[..], wrapping_sum)?;
        }
        Ok::<_, Error>(started.elapsed())
    });
    assert_eq!(report.hung, [root]);
    for (r, got) in report.returned().filter(|&(r, _)| r != root) {
        let took = got.as_ref().unwrap_or_else(|e| panic!("rank {r}: {e}"));
        assert!(
            *took < failure_timeout * 3,
            "rank {r}: {rounds} reduces took {took:?}"
        );
    }
}

#[test]
fn a_panic_in_the_user_operation_on_a_large_vector_fails_that_rank_only() {
    let _s = serial();
    let n = 100_000;
    for victim in [0u32, 3] {
        // The ranks agree on the inputs, then reduce chunks (13 of them):
        // the victim's closure panics on the first element it reduces; the
        // others' wait until it has, so that the victim surely claims a
        // chunk (the others hold at most one each meanwhile) and the
        // others must compute the one it dropped.
        let panicked = std::sync::atomic::AtomicBool::new(false);
        let report = faulty_team(5, 1, FaultSchedule::none()).run(|comm| {
            let me = comm.rank();
            let local: Vec<u64> = (0..n).map(|i| element(me, i)).collect();
            let mut out = vec![0u64; n];
            let panicked = &panicked;
            let op = move |a: &u64, b: &u64| {
                use std::sync::atomic::Ordering::SeqCst;
                if me == victim {
                    panicked.store(true, SeqCst);
                    panic!("user operation failed on rank {me}");
                }
                while !panicked.load(SeqCst) {
                    std::thread::yield_now();
                }
                a.wrapping_add(*b)
            };
            comm.all_reduce_into(&local[..], &mut out[..], op)
                .map(|()| out)
        });
        assert!(report.failed.contains(&victim), "{:?}", report.failed);
        let mut death = vec![Tick::MAX; 5];
        death[victim as usize] = 1;
        let mut agreed = None;
        let mut live = 0;
        for (r, got) in report.returned() {
            let v = got.as_ref().unwrap_or_else(|e| panic!("rank {r}: {e}"));
            let set = included(v[0], 0);
            assert!(includes_exactly(set, &death), "victim {victim}: rank {r}");
            assert!(v.iter().enumerate().all(|(i, &x)| included(x, i) == set));
            assert!(*agreed.get_or_insert(v) == v);
            live += 1;
        }
        assert_eq!(live, 4, "victim {victim}");
    }
}

#[test]
fn length_mismatches_are_typed_errors_on_the_ranks_that_see_them() {
    let _s = serial();
    let t = team(5, 1);
    for n in [3usize, 100] {
        let report = t.run(|comm| {
            let me = comm.rank();
            // Broadcast: rank 2's buffer is one element short. It takes
            // part in full and only it fails; its buffer is untouched.
            let mut b = vec![7u32; if me == 2 { n - 1 } else { n }];
            if me == 0 {
                b.iter_mut().for_each(|x| *x = 1);
            }
            let bcast = comm.broadcast_into(0, &mut b[..]).map(|()| b.clone());
            let kept = b;
            // Allreduce: rank 3's output is one element long: only it fails.
            let local = vec![me as u64; n];
            let mut out = vec![0u64; if me == 3 { n + 1 } else { n }];
            let short_out = comm
                .all_reduce_into(&local[..], &mut out[..], SystemOperation::sum())
                .map(|()| out.clone());
            // Allreduce: rank 4's input is longer: nobody has a result.
            let input = vec![1u64; if me == 4 { n + 2 } else { n }];
            let mut out = vec![0u64; input.len()];
            let long_in = comm.all_reduce_into(&input[..], &mut out[..], SystemOperation::sum());
            // Reduce: the root's input and output lengths differ.
            let mut at0 = vec![0u64; if me == 0 { n + 1 } else { n }];
            let reduce = comm.reduce_into(0, &local[..], &mut at0[..], SystemOperation::sum());
            // The team goes on: the next operation is whole everywhere.
            let mut next = 0u64;
            let after = comm
                .all_reduce_into(&1u64, &mut next, SystemOperation::sum())
                .map(|()| next);
            (bcast, kept, short_out, long_in, reduce, after)
        });
        assert!(report.failed.is_empty());
        for (r, (bcast, kept, short_out, long_in, reduce, after)) in report.returned() {
            let what = format!("n={n} rank {r}");
            match r {
                2 => assert_eq!(
                    *bcast,
                    Err(Error::LengthMismatch {
                        op: 0,
                        mine: n - 1,
                        theirs: n
                    }),
                    "{what}"
                ),
                _ => assert_eq!(*bcast, Ok(vec![1; n]), "{what}"),
            }
            if r == 2 {
                assert_eq!(
                    *kept,
                    vec![7; n - 1],
                    "{what}: a failed broadcast wrote its buffer"
                );
            }
            match r {
                3 => assert_eq!(
                    *short_out,
                    Err(Error::LengthMismatch {
                        op: 1,
                        mine: n + 1,
                        theirs: n
                    }),
                    "{what}"
                ),
                _ => assert_eq!(*short_out, Ok(vec![10; n]), "{what}"),
            }
            let (mine, theirs) = if r == 4 { (n + 2, n) } else { (n, n + 2) };
            assert_eq!(
                *long_in,
                Err(Error::LengthMismatch {
                    op: 2,
                    mine,
                    theirs
                }),
                "{what}"
            );
            match r {
                0 => assert_eq!(
                    *reduce,
                    Err(Error::LengthMismatch {
                        op: 3,
                        mine: n + 1,
                        theirs: n
                    }),
                    "{what}"
                ),
                _ => assert_eq!(*reduce, Ok(()), "{what}"),
            }
            assert_eq!(*after, Ok(5), "{what}");
        }
    }
}

#[test]
fn a_loop_of_large_allreduces_reuses_its_segments() {
    let _s = serial();
    let t = team(4, 1);
    // 10 000 values reduce as they travel, in segments; 40 000 (320 KB)
    // reduce by chunks, from the lent inputs straight into the lent
    // outputs (a segment only for an input whose rank left its call
    // before the reduction completed, which a fault-free loop never does).
    for n in [10_000, 40_000] {
        let run = |rounds: usize| {
            let report = t.run(|comm| {
                let local = vec![comm.rank() as f64; n];
                let mut out = vec![0.0; n];
                for _ in 0..rounds {
                    comm.all_reduce_into(&local[..], &mut out[..], SystemOperation::sum())?;
                    comm.broadcast_into(1, &mut out[..])?;
                }
                Ok::<_, Error>(out[n - 1])
            });
            for (_, got) in report.returned() {
                assert_eq!(*got, Ok(6.0));
            }
            report.segment_allocations
        };
        let (short, long) = (run(20), run(200));
        // A warm pool serves every later operation: ten times the
        // operations, no more allocations (a little slack for segments
        // still held by messages in flight at the moment a rank takes one).
        if n == 10_000 {
            assert!(
                short > 0,
                "values reduced as they travel go through segments"
            );
        }
        assert!(
            long <= short + 4,
            "n = {n}: {short} allocations for 20 rounds, {long} for 200"
        );
    }
}

/// A large broadcast's receivers copy the value from the root's own
/// buffer, lent for its call; the root waits for the copies under way
/// before its call ends, and copies the value into a segment for any
/// receiver that has not begun within its grace: every rank gets the value
/// whole, and the run allocates at most that one segment. Whether all
/// eight receivers (on 2 cores) begin within the grace is the scheduler's
/// affair, so without a stall the run has no segment or one (the root
/// settling without a copy is `value::lent`'s unit test). A receiver
/// asleep for 300 ms as it enters has not begun: then the root always
/// copies, and that receiver reads the copy.
#[test]
fn a_large_broadcast_is_read_from_the_roots_buffer_or_from_its_copy() {
    let _s = serial();
    let n = 40_000; // 320 KB: lent (from 256 KiB)
    let want: Vec<u64> = (0..n).map(|i| element(0, i)).collect();
    for stall in [None, Some(5)] {
        let faults = match stall {
            Some(r) => FaultSchedule::none().at(r, 0, Fault::Stall(Duration::from_millis(300))),
            None => FaultSchedule::none(),
        };
        let report = faulty_team(8, 1, faults).run(|comm| {
            let mut v = if comm.rank() == 0 {
                want.clone()
            } else {
                vec![0; n]
            };
            comm.broadcast_into(0, &mut v[..]).map(|()| v)
        });
        assert_eq!(report.returned().count(), 8, "{stall:?}");
        for (r, got) in report.returned() {
            let got = got
                .as_ref()
                .unwrap_or_else(|e| panic!("{stall:?}: rank {r}: {e}"));
            assert!(*got == want, "{stall:?}: rank {r}");
        }
        if stall.is_some() {
            assert_eq!(report.segment_allocations, 1, "{stall:?}");
        } else {
            assert!(report.segment_allocations <= 1, "{stall:?}");
        }
    }
}

#[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Config {
    name: String,
    hosts: Vec<String>,
    weights: Vec<f64>,
    retries: Option<u32>,
}

/// A value whose encoding fails (as a type with an invalid state would).
#[derive(Debug, Default, PartialEq, serde::Deserialize)]
struct Unencodable(u8);

impl serde::Serialize for Unencodable {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom(
            "this value refuses to be encoded",
        ))
    }
}

#[test]
fn values_that_are_not_plain_data_broadcast_through_an_encoding() {
    let _s = serial();
    let t = team(5, 1);
    let report = t.run(|comm| {
        let me = comm.rank();
        let mut text = if me == 2 {
            "héllo, wörld".repeat(100)
        } else {
            String::new()
        };
        comm.broadcast_value(2, &mut text)?;
        let mut config = Config::default();
        if me == 0 {
            config = Config {
                name: "run 7".into(),
                hosts: (0..50).map(|i| format!("node{i}")).collect(),
                weights: vec![0.5; 1000],
                retries: Some(3),
            };
        }
        comm.broadcast_value(0, &mut config)?;
        // Not encodable at the root: every rank learns it, nobody waits.
        let mut bad = Unencodable(1);
        let refused = comm.broadcast_value(0, &mut bad);
        // Decoded as another type than the root's: only the decoders fail.
        let mut as_number = 0u64;
        let mut words = vec!["a".to_string()];
        let mismatched = if me == 0 {
            comm.broadcast_value(0, &mut words)
        } else {
            comm.broadcast_value(0, &mut as_number)
        };
        Ok::<_, Error>((text, config, refused, mismatched))
    });
    for (r, got) in report.returned() {
        let (text, config, refused, mismatched) = got.as_ref().unwrap();
        assert_eq!(*text, "héllo, wörld".repeat(100), "rank {r}");
        assert_eq!(config.hosts.len(), 50, "rank {r}");
        assert_eq!(config.weights, vec![0.5; 1000]);
        assert_eq!((config.name.as_str(), config.retries), ("run 7", Some(3)));
        assert!(
            matches!(refused, Err(Error::Encoding { message }) if message.contains("could not encode")),
            "rank {r}: {refused:?}"
        );
        match r {
            0 => assert_eq!(*mismatched, Ok(())),
            _ => assert!(
                matches!(mismatched, Err(Error::Encoding { .. })),
                "rank {r}"
            ),
        }
    }
}

/// A call's recorded latency (`TeamBuilder::op_records`) is the whole call:
/// a large allreduce's and reduce's include the reduction by chunks after
/// the protocol agreed on the inputs. The user operation spins 50 µs at
/// the start of each of the 16 chunks (8192 elements), so no rank's call
/// can end before 16 x 50 µs of spinning is done on two cores: 400 µs. (The
/// latency was once taken before the chunks: 1-2 µs.)
#[test]
fn a_large_reductions_recorded_latency_covers_its_chunks() {
    let _serial = serial();
    let n = 1 << 17;
    let team = Team::builder()
        .ranks(2)
        .fault_budget(1)
        .op_records(true)
        .build()
        .unwrap();
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let slow = |a: &u64, b: &u64| {
        if calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 8192 == 0 {
            let until = std::time::Instant::now() + Duration::from_micros(50);
            while std::time::Instant::now() < until {
                std::hint::spin_loop();
            }
        }
        a.wrapping_add(*b)
    };
    let report = team.run(|comm| {
        let x = vec![1u64; n];
        let mut y = vec![0u64; n];
        comm.all_reduce_into(&x[..], &mut y[..], &slow)?;
        assert!(y.iter().all(|&v| v == 2));
        comm.reduce_into(0, &x[..], &mut y[..], &slow)
    });
    for (rank, got) in report.returned() {
        assert!(got.is_ok(), "rank {rank}: {got:?}");
    }
    // The allreduce (operation 0) on both ranks, the reduce's root.
    let allreduce = &report.ops[0].latency_ns;
    assert_eq!(allreduce.len(), 2);
    for &ns in allreduce {
        assert!(ns >= 400_000, "allreduce recorded {ns} ns");
    }
    let reduce = &report.ops[1].latency_ns;
    assert!(
        reduce.iter().any(|&ns| ns >= 400_000),
        "reduce recorded {reduce:?} ns"
    );
}
