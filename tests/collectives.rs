//! Reduce, allreduce and barrier on threads: results, Theorem 5's message
//! count, the semantics of Sections 4.1 and 5.1 sampled over fault sets and
//! kill points, failure detection (registry and timeout), panicking
//! operations, mismatches and bad input. Every test runs more ranks than
//! this machine's cores.

mod common;

use common::serial;
use corrected::topology::TreeSpec;
use corrected::Collectives;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use corrected::protocol::reduce::{FailureScheme, ReducePlan};
use corrected::runtime::{
    Comm, Fault, FaultSchedule, RankOutcome, SystemOperation, Team, TeamReport,
};
use corrected::sim::engine::NEVER;
use corrected::sim::reduce::{includes_exactly, input_of};
use corrected::types::{LogP, Rank, Tick};
use corrected::{ConfigError, Error};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn team(ranks: u32, f: u32, faults: FaultSchedule) -> Team {
    common::recorded_team(ranks, faults)
        .fault_budget(f)
        .build()
        .unwrap()
}

/// Per rank, the results of `ops(rank)` allreduces summing `input(rank)`.
fn sums(
    t: &Team,
    ops: impl Fn(Rank) -> u32 + Sync,
    input: impl Fn(Rank) -> u64 + Sync,
) -> TeamReport<Vec<Result<u64, Error>>> {
    t.run(|comm| {
        let me = input(comm.rank());
        (0..ops(comm.rank()))
            .map(|_| {
                let mut out = 0u64;
                comm.all_reduce_into(&me, &mut out, SystemOperation::sum())
                    .map(|_| out)
            })
            .collect()
    })
}

fn wrapping_sum(a: &u64, b: &u64) -> u64 {
    a.wrapping_add(*b)
}

#[test]
fn reduce_and_allreduce_compute_the_right_values() {
    let _s = serial();
    for procs in [1u32, 2, 3, 7, 8, 16, 17, 33] {
        for f in [0, 1, 2].into_iter().filter(|&f| f < procs) {
            let t = team(procs, f, FaultSchedule::none());
            let report = t.run(|comm| {
                let me = comm.rank();
                let mut got = Vec::new();
                for root in 0..comm.size().min(4) {
                    let mut sum = 0u64;
                    comm.reduce_into(root, &(me as u64 + 1), &mut sum, SystemOperation::sum())
                        .unwrap();
                    got.push((root, sum));
                }
                let x = [
                    me as f64,
                    1.0,
                    -(me as f64),
                    0.5,
                    2.0,
                    0.0,
                    1e-3,
                    me as f64 * 2.0,
                ];
                let mut all = [0.0f64; 8];
                comm.all_reduce_into(&x, &mut all, SystemOperation::sum())
                    .unwrap();
                let mut max = 0i32;
                comm.all_reduce_into(&-(me as i32), &mut max, SystemOperation::max())
                    .unwrap();
                let mut xor = 0u16;
                comm.all_reduce_into(&(1u16 << (me % 16)), &mut xor, |a: &u16, b: &u16| a ^ b)
                    .unwrap();
                comm.barrier().unwrap();
                (got, all, max, xor)
            });
            let n = procs as u64;
            for (rank, (got, all, max, xor)) in report.returned() {
                for &(root, sum) in got {
                    if root == rank {
                        assert_eq!(sum, n * (n + 1) / 2, "P={procs} f={f} root {root}");
                    }
                }
                let ranks_sum = (n * (n - 1) / 2) as f64;
                assert_eq!(all[0], ranks_sum, "P={procs} f={f}");
                assert_eq!(all[1], n as f64);
                assert_eq!(all[7], 2.0 * ranks_sum);
                assert_eq!(*max, 0);
                let expect = (0..procs).fold(0u16, |x, r| x ^ (1 << (r % 16)));
                assert_eq!(*xor, expect);
            }
            assert_eq!(report.returned().count(), procs as usize);
        }
    }
}

#[test]
fn theorem_5_message_count_on_threads() {
    let _s = serial();
    for procs in [2u32, 3, 5, 8, 13, 16, 17, 32] {
        for f in [0u32, 1, 2, 3].into_iter().filter(|&f| f < procs) {
            let t = team(procs, f, FaultSchedule::none());
            let report = t.run(|comm| {
                let mut out = 0u64;
                comm.reduce_into(0, &1u64, &mut out, SystemOperation::sum())
                    .map(|_| out)
            });
            let plan = ReducePlan::new(
                TreeSpec::binomial(),
                procs,
                f,
                FailureScheme::Bit,
                LogP::PAPER,
            )
            .unwrap();
            assert_eq!(
                report.ops[0].messages,
                plan.fault_free_messages(),
                "P={procs} f={f}"
            );
            assert_eq!(report.outcomes[0].returned(), Some(&Ok(procs as u64)));
        }
    }
}

#[test]
fn barrier_lets_nobody_through_before_everyone_arrived() {
    let _s = serial();
    for procs in [2u32, 7, 16, 33] {
        let arrived = AtomicU32::new(0);
        let t = team(procs, 1, FaultSchedule::none());
        let report = t.run(|comm| {
            for round in 1..=20u32 {
                arrived.fetch_add(1, Ordering::SeqCst);
                comm.barrier().unwrap();
                // Everyone has arrived for this round (maybe some for the next).
                assert!(arrived.load(Ordering::SeqCst) >= round * comm.size());
                comm.barrier().unwrap();
            }
        });
        assert_eq!(report.returned().count(), procs as usize, "P={procs}");
    }
}

/// Death times as the inclusion check wants them: live ranks `NEVER`, ranks
/// dead before the operation 0, ranks that died in it 1.
fn deaths(procs: u32, killed: &[(Rank, u32)], failed: &[Rank]) -> Vec<Tick> {
    (0..procs)
        .map(|r| match killed.iter().find(|&&(k, _)| k == r) {
            Some(&(_, 0)) => 0,
            Some(_) if failed.contains(&r) => 1,
            _ => NEVER,
        })
        .collect()
}

/// Sections 4.1 and 5.1 on threads, sampled: for P in 2..=17 and f in
/// 1..=3, random sets of at most f ranks each killed before the operation or
/// after a random number of its sends; the reduce root's result and every
/// live rank's allreduce result hold every live input once and each dying
/// rank's once or not at all, identical on all live ranks.
#[test]
fn sampled_kill_points_keep_reduce_and_allreduce_exact() {
    let _s = serial();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let mut runs = 0;
    for procs in 2..=17u32 {
        for f in (1..=3u32).filter(|&f| f < procs) {
            for _ in 0..3 {
                let victims = rng.gen_range(1..=f);
                let mut killed: Vec<(Rank, u32)> = Vec::new();
                while killed.len() < victims as usize {
                    let r = rng.gen_range(0..procs);
                    if killed.iter().all(|&(k, _)| k != r) {
                        killed.push((r, rng.gen_range(0..=6)));
                    }
                }
                let allreduce = rng.gen_bool(0.6);
                let root = rng.gen_range(0..procs);
                let faults = killed.iter().fold(FaultSchedule::none(), |s, &(r, n)| {
                    s.at(r, 0, Fault::DieAfterSends(n))
                });
                let report = team(procs, f, faults).run(|comm| {
                    let mine = input_of(comm.rank());
                    let mut out = 0u64;
                    if allreduce {
                        comm.all_reduce_into(&mine, &mut out, wrapping_sum)
                            .map(|_| Some(out))
                    } else {
                        comm.reduce_into(root, &mine, &mut out, wrapping_sum)
                            .map(|_| (comm.rank() == root).then_some(out))
                    }
                });
                runs += 1;
                let death = deaths(procs, &killed, &report.failed);
                let what = format!(
                    "P={procs} f={f} killed {killed:?} {}",
                    if allreduce {
                        "allreduce".to_string()
                    } else {
                        format!("reduce to {root}")
                    }
                );
                let mut agreed = None;
                for (r, outcome) in report.outcomes.iter().enumerate() {
                    if death[r] != NEVER {
                        continue;
                    }
                    let got = match outcome {
                        RankOutcome::Returned(Ok(v)) => *v,
                        other => panic!("{what}: live rank {r} got {other:?}"),
                    };
                    if let Some(v) = got {
                        assert!(includes_exactly(v, &death), "{what}: rank {r} got {v:#x}");
                        assert_eq!(*agreed.get_or_insert(v), v, "{what}: rank {r} disagrees");
                    }
                }
            }
        }
    }
    assert!(runs >= 100);
}

#[test]
fn a_panicking_operation_fails_its_rank_not_the_team() {
    let _s = serial();
    let t = team(8, 1, FaultSchedule::none());
    let report = t.run(|comm| {
        let me = comm.rank();
        let mut out = 0u64;
        // Rank 5 combines its group peer's value before it sends up: its
        // closure panics there.
        let op = move |a: &u64, b: &u64| {
            if me == 5 {
                panic!("rank 5's reduction panics");
            }
            a + b
        };
        comm.reduce_into(0, &(me as u64), &mut out, op)?;
        let reduced = out;
        comm.all_reduce_into(&(me as u64), &mut out, SystemOperation::sum())?;
        Ok::<_, Error>((reduced, out))
    });
    assert!(
        matches!(report.outcomes[5], RankOutcome::Panicked(_)),
        "{:?}",
        report.outcomes
    );
    assert_eq!(report.failed, vec![5]);
    let all: u64 = (0..8).sum();
    // Rank 5 failed during the reduce: its input is in whole or not at all.
    let (reduced, _) = report.outcomes[0].returned().unwrap().clone().unwrap();
    assert!(reduced == all || reduced == all - 5, "{reduced}");
    for (r, got) in report.returned() {
        assert_eq!(got.as_ref().map(|g| g.1), Ok(all - 5), "rank {r}");
    }
    // The report as `Result`s leaves nobody out: the panic is rank 5's
    // error; the survivors are the seven others, and agree on the sum.
    let results: Vec<_> = report.results().collect();
    assert_eq!(results.len(), 8);
    assert_eq!(results[5], (5, Err("rank 5's reduction panics")));
    assert!(results
        .iter()
        .filter(|(r, _)| *r != 5)
        .all(|(_, got)| got.is_ok()));
    let survivors: Vec<Rank> = report.survivors().map(|(r, _)| r).collect();
    assert_eq!(survivors, [0, 1, 2, 3, 4, 6, 7]);
    assert_eq!(
        report.agreed().map(|v| v.1),
        None,
        "the reduces' outputs differ"
    );
    assert!(report.returned_early.is_empty());
}

#[test]
fn a_hanging_rank_is_found_by_the_timeout_detector() {
    let _s = serial();
    // With and without operation records: without, a call reads the clock
    // only once it waits, and its timeouts count from then.
    for records in [true, false] {
        hanging_ranks_are_found(records);
    }
}

fn hanging_ranks_are_found(records: bool) {
    // Rank 2 hangs inside the second allreduce; rank 0 (the first root)
    // hangs in the third, so the third also needs a root retry.
    let faults = FaultSchedule::none()
        .at(2, 1, Fault::Hang)
        .at(0, 2, Fault::Hang);
    let t = Team::builder()
        .ranks(12)
        .fault_budget(2)
        .faults(faults)
        .failure_timeout(Duration::from_millis(150))
        .op_timeout(Duration::from_secs(20))
        .op_records(records)
        .build()
        .unwrap();
    let report = sums(&t, |_| 3, |r| u64::from(r) + 1);
    let all: u64 = (1..=12).sum();
    for (r, got) in report.returned() {
        if r == 0 || r == 2 {
            continue;
        }
        assert_eq!(got[0], Ok(all), "rank {r}");
        assert_eq!(got[1], Ok(all - 3), "rank {r}: the hung rank 2 never sent");
        assert_eq!(
            got[2],
            Ok(all - 3 - 1),
            "rank {r}: root 0 hung before sending"
        );
    }
    assert_eq!(
        report.outcomes[0].returned().map(|g| g[2].clone()),
        Some(Err(Error::Hung(0)))
    );
    assert_eq!(report.hung, vec![0, 2]);
    assert!(report.failed.contains(&0) && report.failed.contains(&2));
    assert_eq!(report.ops.is_empty(), !records);
}

#[test]
fn a_killed_root_is_retried_and_later_operations_go_on() {
    let _s = serial();
    // Rank 0, the first allreduce root, dies before operation 1.
    let t = team(16, 1, FaultSchedule::none().kill(0, 1));
    let report = sums(&t, |_| 50, u64::from);
    let all: u64 = (0..16).sum();
    for (r, got) in report.returned().filter(|&(r, _)| r != 0) {
        assert_eq!(got[0], Ok(all), "rank {r}");
        assert!(got[1..].iter().all(|g| *g == Ok(all)), "rank {r}: {got:?}");
    }
}

#[test]
fn mismatched_collectives_and_bad_input_are_typed_errors() {
    let _s = serial();
    assert!(matches!(
        Team::builder().ranks(4).fault_budget(4).build(),
        Err(ConfigError::FaultBudget { f: 4, procs: 4 })
    ));
    // Above the failure timeout (1 s) with room to spare: the ranks that go
    // on without rank 0 finish after the detector excludes it.
    let t = Team::builder()
        .ranks(6)
        .fault_budget(1)
        .op_timeout(Duration::from_secs(3))
        .build()
        .unwrap();
    let report = t.run(|comm| {
        let mut out = 0.0f64;
        let bad_root = comm.reduce_into(9, &1.0, &mut out, SystemOperation::sum());
        let bad_op = comm.all_reduce_into(&1.0, &mut out, SystemOperation::bitwise_and());
        // Rank 0's input is longer than the others': every rank learns it
        // (operation 0; the calls above fail before they number one).
        let n = if comm.rank() == 0 { 9 } else { 8 };
        let mut long = [0u64; 9];
        let lengths = comm.all_reduce_into(&[1u64; 9][..n], &mut long[..n], SystemOperation::sum());
        // Rank 0 reduces while the others allreduce (operation 1): an
        // error, not a hang.
        let mismatch = if comm.rank() == 0 {
            comm.reduce_into(0, &1.0, &mut out, SystemOperation::sum())
        } else {
            comm.all_reduce_into(&1.0, &mut out, SystemOperation::sum())
        };
        let mismatch = mismatch.map(|()| out);
        // Then every rank calls the same: the team goes on.
        let next = comm
            .all_reduce_into(&1.0, &mut out, SystemOperation::sum())
            .map(|()| out);
        (bad_root, bad_op, lengths, mismatch, next)
    });
    let failed_ranks = report.failed.clone();
    for (r, (bad_root, bad_op, lengths, _, _)) in report.returned() {
        assert!(
            matches!(bad_root, Err(Error::RankOutOfRange { rank: 9, .. })),
            "rank {r}"
        );
        assert_eq!(
            *bad_op,
            Err(Error::OperationType {
                op: "bitwise_and",
                ty: "f64"
            }),
            "rank {r}"
        );
        let theirs = if r == 0 { 8 } else { 9 };
        assert!(
            matches!(lengths, Err(Error::LengthMismatch { op: 0, theirs: t, .. }) if *t == theirs),
            "rank {r}: {lengths:?}"
        );
    }
    // Rank 0 reduces while ranks 1 to 5 allreduce. With f = 1 the reduce's
    // up-correction groups are {1, 2}, {3, 4} and {5, 0} (the root joins
    // the short last group), and the I(f)-tree's subtrees are {1, 3, 5} and
    // {2, 4}: rank 0 cannot end its reduce before a child's result comes,
    // and subtree {2, 4} sends rank 2's partial result (an allreduce
    // message) up to rank 0 without waiting on rank 0 or 5. So rank 0 must
    // meet the mismatch; it then tells the team to abort operation 1, and
    // every other rank ends its call with `Mismatch` too, at once, instead
    // of waiting out a timeout or taking rank 0 for failed.
    let outcome = |r: usize| report.outcomes[r].returned().expect("no panics");
    for r in 0..6 {
        let (_, _, _, mismatch, next) = outcome(r);
        assert!(
            matches!(mismatch, Err(Error::Mismatch { op: 1, .. })),
            "rank {r}: {mismatch:?}"
        );
        // The next operation, called alike everywhere, succeeds with every
        // rank's input: nobody was declared failed for the mismatch.
        assert_eq!(*next, Ok(6.0), "rank {r}");
    }
    assert_eq!(failed_ranks, Vec::<u32>::new());
}

/// A fault is placed at a rank's n-th call, whatever the calls before it
/// take inside (`broadcast_value` two operations, `agree_failed` one per
/// rank): rank 3, killed at its call 2, is in the agreement of call 1 and
/// out of the allreduce of call 2; placed at the engine's operation
/// instead (`kill_at_op`), the same death needs the operation count.
#[test]
fn a_fault_is_placed_at_the_ranks_own_call() {
    let _s = serial();
    let calls = |comm: &mut Comm<'_>| {
        let mut config = if comm.rank() == 0 {
            String::from("go")
        } else {
            String::new()
        };
        comm.broadcast_value(0, &mut config)?;
        let failed = comm.agree_failed()?;
        let mut sum = 0u64;
        comm.all_reduce_into(&1u64, &mut sum, SystemOperation::sum())?;
        Ok::<_, Error>((config, failed, sum))
    };
    // broadcast_value: operations 0 and 1; the agreement: 2 to 6; the
    // allreduce: 7.
    for faults in [
        FaultSchedule::none().kill(3, 2),
        FaultSchedule::none().kill_at_op(3, 7),
    ] {
        let report = team(5, 1, faults).run(calls);
        assert_eq!(report.failed, vec![3]);
        for (r, got) in report.survivors() {
            assert_eq!(got, &("go".to_string(), vec![], 4), "rank {r}");
        }
        assert_eq!(report.survivors().count(), 4);
    }
}

/// The report's helpers answer the common questions: every survivor's
/// value, and the one value they agree on, with a killed rank's error in
/// its place rather than skipped.
#[test]
fn the_report_gives_the_survivors_and_their_agreed_value() {
    let _s = serial();
    let report = team(4, 1, FaultSchedule::none().kill(2, 0)).run(|comm| {
        let mut sum = 0u64;
        comm.all_reduce_into(&u64::from(comm.rank()), &mut sum, SystemOperation::sum())?;
        Ok::<_, Error>(sum)
    });
    let survivors: Vec<(Rank, u64)> = report.survivors().map(|(r, v)| (r, *v)).collect();
    assert_eq!(survivors, [(0, 4), (1, 4), (3, 4)]);
    assert_eq!(report.agreed(), Some(&4));
    let results: Vec<_> = report.results().map(|(r, got)| (r, got.cloned())).collect();
    assert_eq!(results[2], (2, Ok(Err(Error::Failed(2)))));
}

#[test]
fn a_rank_that_leaves_early_counts_as_failed_for_what_it_skips() {
    let _s = serial();
    let t = team(9, 1, FaultSchedule::none());
    let report = sums(&t, |r| if r == 4 { 1 } else { 3 }, u64::from);
    let all: u64 = (0..9).sum();
    for (r, got) in report.returned() {
        assert_eq!(got[0], Ok(all), "rank {r}");
        if r != 4 {
            assert_eq!(got[1..], [Ok(all - 4), Ok(all - 4)], "rank {r}");
        }
    }
    assert!(report.failed.is_empty(), "leaving is not failing");
    // Reported as what it is: rank 4 returned before operation 1.
    assert_eq!(report.returned_early, [(4, 1)]);
}

/// A team of two runs the pair exchange: floating-point sums come out
/// bitwise identical on both ranks, each allreduce costs two messages, and
/// whichever rank dies, before or after its one send, in whichever
/// operation, the survivor's results hold the dead rank's input whole or
/// not at all and it goes on alone.
#[test]
fn a_pair_agrees_bitwise_and_survives_either_death() {
    let _s = serial();
    let iters = 500u32;
    let report = team(2, 1, FaultSchedule::none()).run(|comm| {
        let mut bits = Vec::new();
        for i in 0..iters {
            // Summed in another order, these would differ in the last bits.
            let mine = [
                0.1 * f64::from(i + comm.rank()),
                1e16 + f64::from(comm.rank()),
            ];
            let mut out = [0.0f64; 2];
            comm.all_reduce_into(&mine, &mut out, SystemOperation::sum())?;
            bits.push(out.map(f64::to_bits));
            comm.barrier()?;
        }
        Ok::<_, Error>(bits)
    });
    let a = report.outcomes[0].returned().unwrap().as_ref().unwrap();
    let b = report.outcomes[1].returned().unwrap().as_ref().unwrap();
    assert_eq!(a, b);
    assert_eq!(report.ops.len(), 2 * iters as usize);
    assert!(
        report.ops.iter().all(|op| op.messages == 2),
        "{:?}",
        &report.ops[..4]
    );

    let ops = 4u32;
    for victim in 0..2u32 {
        for at in 0..ops {
            for sends in 0..=1 {
                let faults = FaultSchedule::none().at(victim, at, Fault::DieAfterSends(sends));
                let report = team(2, 1, faults).run(|comm| {
                    let mut got = Vec::new();
                    for _ in 0..ops {
                        let mut out = 0u64;
                        comm.all_reduce_into(&(comm.rank() as u64 + 1), &mut out, wrapping_sum)?;
                        got.push(out);
                    }
                    Ok::<_, Error>(got)
                });
                let what = format!("rank {victim} dies in op {at} after {sends} sends");
                assert_eq!(report.failed, vec![victim], "{what}");
                let survivor = 1 - victim;
                let mine = u64::from(survivor) + 1;
                let got = report.outcomes[survivor as usize].returned().unwrap();
                let got = got.as_ref().unwrap_or_else(|e| panic!("{what}: {e}"));
                for (op, &v) in got.iter().enumerate() {
                    match (op as u32).cmp(&at) {
                        std::cmp::Ordering::Less => assert_eq!(v, 3, "{what}: op {op}"),
                        std::cmp::Ordering::Equal => assert!(v == 3 || v == mine, "{what}: {v}"),
                        std::cmp::Ordering::Greater => assert_eq!(v, mine, "{what}: op {op}"),
                    }
                }
            }
        }
    }
}

/// Without operation records a call reads the clock only when it waits; a
/// broadcast whose root hangs still ends in a timeout, not a hang.
#[test]
fn without_records_the_operation_timeout_still_holds() {
    let _s = serial();
    let timeout = Duration::from_millis(200);
    let t = Team::builder()
        .ranks(3)
        .faults(FaultSchedule::none().at(0, 1, Fault::Hang))
        .op_timeout(timeout)
        .op_records(false)
        .build()
        .unwrap();
    let report = t.run(|comm| {
        let mut v = 7u64;
        comm.broadcast_into(0, &mut v)?;
        let started = std::time::Instant::now();
        let second = comm.broadcast_into(0, &mut v);
        Ok::<_, Error>((v, second, started.elapsed()))
    });
    assert!(report.ops.is_empty());
    for r in 1..3 {
        let (v, second, waited) = report.outcomes[r].returned().unwrap().clone().unwrap();
        assert_eq!(v, 7, "rank {r}");
        assert!(
            matches!(second, Err(Error::Timeout { op: 1, .. })),
            "rank {r}: {second:?}"
        );
        assert!(waited >= timeout, "rank {r} gave up after {waited:?}");
    }
}

/// Operation records are off by default (they grow with every call) and,
/// when asked for, count every call of every rank.
#[test]
fn records_are_kept_only_when_asked() {
    let _s = serial();
    for records in [None, Some(false), Some(true)] {
        let mut builder = Team::builder().ranks(3);
        if let Some(on) = records {
            builder = builder.op_records(on);
        }
        let report = builder.build().unwrap().run(|comm| {
            let mut sum = 0u64;
            comm.all_reduce_into(&1u64, &mut sum, SystemOperation::sum())?;
            comm.barrier()?;
            Ok::<_, Error>(sum)
        });
        assert!(report.returned().all(|(_, s)| *s == Ok(3)));
        if records == Some(true) {
            assert_eq!(report.ops.len(), 2);
            assert!(report
                .ops
                .iter()
                .all(|op| op.completed == 3 && op.messages > 0 && op.latency_ns.len() == 3));
        } else {
            assert!(report.ops.is_empty(), "records {records:?}");
        }
    }
}

/// Contributors are refused, before the call, where they are not known (a
/// team whose failure scheme is the bit): every rank gets the same typed
/// error at once, and the next allreduce works.
/// Beyond the list's capacity (a star with more dead ranks than it holds)
/// the count stays exact and the set is reported unknown.
#[test]
fn contributors_are_refused_where_unknown_and_counted_beyond_the_list() {
    let _s = serial();
    let teams =
        [common::recorded_team(4, FaultSchedule::none()).failure_scheme(FailureScheme::Bit)];
    for builder in teams {
        let report = builder.build().unwrap().run(|comm| {
            let mut out = 0u64;
            let refused = comm.all_reduce_into_contributors(&1u64, &mut out, wrapping_sum);
            let at_root = comm.reduce_into_contributors(0, &1u64, &mut out, wrapping_sum);
            let after = comm
                .all_reduce_into(&1u64, &mut out, wrapping_sum)
                .map(|()| out);
            (refused.map(drop), at_root.map(drop), after)
        });
        for (r, (refused, at_root, after)) in report.returned() {
            for got in [refused, at_root] {
                assert!(
                    matches!(got, Err(Error::Config(ConfigError::Unsupported { .. }))),
                    "rank {r}: {got:?}"
                );
            }
            assert_eq!(*after, Ok(4), "rank {r}");
        }
    }
    let dead: Vec<Rank> = (1..=8).collect();
    let faults = FaultSchedule::none().kill_group(dead.iter().copied(), 0);
    let star = common::recorded_team(12, faults)
        .fault_budget(1)
        .allreduce(corrected::protocol::allreduce::AllreduceAlgorithm::Star)
        .build()
        .unwrap();
    let report = star.run(|comm| {
        let mut out = 0u64;
        comm.all_reduce_into_contributors(&(1u64 << comm.rank()), &mut out, wrapping_sum)
            .map(|who| (out, who))
    });
    let (sum, who) = report.agreed().expect("the survivors agree");
    assert_eq!(*sum, 1 | 1 << 9 | 1 << 10 | 1 << 11);
    assert_eq!((who.len(), who.missing(), who.contains(3)), (4, None, None));
}
