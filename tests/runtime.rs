//! The broadcast cores on threads: delivery, faults, fencing, and agreement
//! with the simulator. Every test runs more ranks than this machine's cores.

mod common;

use common::serial;
use corrected::Collectives;
use std::time::{Duration, Instant};

use corrected::protocol::allreduce::AllreduceAlgorithm;
use corrected::protocol::bcast::Correction;
use corrected::runtime::{Fault, FaultSchedule, Pinning, RankOutcome, Team};
use corrected::sim::{BcastScenario, BcastSim, FaultPlan};
use corrected::topology::{Shape, TreeSpec};
use corrected::types::{LogP, Rank};
use corrected::{ConfigError, Error};

const TREES: [&str; 5] = [
    "binomial",
    "lame:2",
    "kary:4",
    "optimal",
    "inorder-binomial",
];
const CORRECTIONS: [&str; 8] = [
    "none",
    "opportunistic:2",
    "optimized:4",
    "relaying:2",
    "forwarding:2",
    "checked",
    "checked-sync",
    "delayed:20000",
];
const SIZES: [u32; 8] = [1, 2, 3, 7, 8, 16, 33, 64];

fn team(ranks: u32, tree: &str, correction: &str, faults: FaultSchedule) -> Team {
    Team::builder()
        .ranks(ranks)
        .tree(tree.parse().unwrap())
        .correction(correction.parse().unwrap())
        .faults(faults)
        .op_timeout(Duration::from_secs(20))
        .op_records(true)
        .build()
        .unwrap()
}

/// Value root `root` sends in round `i`.
fn value(root: Rank, i: u32) -> u64 {
    ((root as u64) << 32) | i as u64 | 0xabc0_0000_0000_0000
}

/// Broadcasts from every root in turn; returns per rank the values received.
fn every_root(team: &Team) -> Vec<RankOutcome<Vec<Result<u64, Error>>>> {
    team.run(|comm| {
        (0..comm.size())
            .map(|root| {
                let mut v = if comm.rank() == root {
                    value(root, root)
                } else {
                    0
                };
                comm.broadcast_into(root, &mut v).map(|()| v)
            })
            .collect()
    })
    .outcomes
}

#[test]
fn every_tree_and_correction_delivers_from_every_root() {
    let _serial = serial();
    for tree in TREES {
        for correction in CORRECTIONS {
            for procs in SIZES {
                let t = team(procs, tree, correction, FaultSchedule::none());
                for (rank, outcome) in every_root(&t).into_iter().enumerate() {
                    let RankOutcome::Returned(got) = outcome else {
                        panic!("rank {rank} panicked")
                    };
                    for (root, v) in got.into_iter().enumerate() {
                        assert_eq!(
                            v,
                            Ok(value(root as Rank, root as u32)),
                            "{tree} {correction} P={procs} root {root} rank {rank}"
                        );
                    }
                }
            }
        }
    }
}

fn assert_live_ranks_deliver(procs: u32, tree: &str, correction: &str, dead: &[Rank], rounds: u32) {
    let faults = FaultSchedule::none().kill_group(dead.iter().copied(), 0);
    let t = team(procs, tree, correction, faults);
    let report = t.run(|comm| {
        (0..rounds)
            .map(|i| {
                let root = [0, procs / 2, procs - 1][i as usize % 3];
                let root = if dead.contains(&root) { 0 } else { root };
                let mut v = if comm.rank() == root {
                    value(root, i)
                } else {
                    0
                };
                comm.broadcast_into(root, &mut v).map(|()| (root, v))
            })
            .collect::<Vec<_>>()
    });
    for (rank, outcome) in report.outcomes.iter().enumerate() {
        let got = outcome.returned().expect("no panics");
        for (i, r) in got.iter().enumerate() {
            if dead.contains(&(rank as Rank)) {
                assert_eq!(r, &Err(Error::Failed(rank as Rank)));
            } else {
                let (root, v) = r.as_ref().unwrap_or_else(|e| {
                    panic!("{tree} {correction} dead {dead:?} rank {rank}: {e}")
                });
                assert_eq!(
                    *v,
                    value(*root, i as u32),
                    "{tree} {correction} dead {dead:?} rank {rank} round {i}"
                );
            }
        }
    }
    let mut failed = dead.to_vec();
    failed.sort_unstable();
    failed.dedup();
    assert_eq!(report.failed, failed);
}

#[test]
fn checked_and_delayed_correction_deliver_despite_dead_ranks() {
    let _serial = serial();
    for correction in ["checked", "checked-sync", "delayed:20000"] {
        for tree in TREES {
            // Adversarial: the root's children, and a run of ring neighbours.
            let spec: TreeSpec = tree.parse().unwrap();
            let t = corrected::topology::Tree::build(spec, 64, LogP::PAPER).unwrap();
            let children: Vec<Rank> = t.children(0).iter().copied().take(4).collect();
            assert_live_ranks_deliver(64, tree, correction, &children, 3);
            assert_live_ranks_deliver(64, tree, correction, &[20, 21, 22, 23, 24, 25], 3);
            // Random: up to 4 % of 64, and more of a small team.
            assert_live_ranks_deliver(64, tree, correction, &[5, 17, 40], 3);
            assert_live_ranks_deliver(16, tree, correction, &[3, 4, 9], 3);
            assert_live_ranks_deliver(7, tree, correction, &[2, 3, 4, 5], 3);
        }
    }
}

#[test]
fn ten_thousand_broadcasts_at_16_ranks() {
    let _serial = serial();
    let t = team(16, "binomial", "optimized:4", FaultSchedule::none());
    let report = t.run(|comm| {
        let mut ok = 0u32;
        for i in 0..10_000u32 {
            let root = i % 16;
            let mut v = if comm.rank() == root {
                value(root, i)
            } else {
                0
            };
            comm.broadcast_into(root, &mut v).unwrap();
            assert_eq!(v, value(root, i));
            ok += 1;
        }
        ok
    });
    assert!(report.returned().all(|(_, &n)| n == 10_000));
    assert_eq!(report.ops.len(), 10_000);
    assert!(report.ops.iter().all(|o| o.completed == 16));
}

#[test]
fn a_panicking_rank_does_not_stop_the_others() {
    let _serial = serial();
    let t = team(12, "binomial", "checked", FaultSchedule::none());
    let report = t.run(|comm| {
        let mut got = Vec::new();
        for i in 0..30u32 {
            if comm.rank() == 5 && i == 10 {
                panic!("rank 5 breaks");
            }
            let mut v = if comm.rank() == 0 { value(0, i) } else { 0 };
            comm.broadcast_into(0, &mut v).unwrap();
            got.push(v);
        }
        got
    });
    assert_eq!(report.failed, vec![5]);
    for (rank, outcome) in report.outcomes.iter().enumerate() {
        match outcome {
            RankOutcome::Panicked(why) => {
                assert_eq!(rank, 5);
                assert!(why.contains("rank 5 breaks"));
            }
            RankOutcome::Returned(got) => {
                assert_eq!(got, &(0..30).map(|i| value(0, i)).collect::<Vec<_>>())
            }
        }
    }
}

#[test]
fn dying_mid_operation_and_hanging_leave_the_others_delivering() {
    let _serial = serial();
    for (fault, expect) in [
        (Fault::DieAfterSends(1), Error::Failed(1)),
        (Fault::Hang, Error::Hung(1)),
    ] {
        for victim_root in [false, true] {
            // Rank 1 fails in operation 2; the root is 0 unless it is the victim
            // (then the others' operation 2 has no live root and times out).
            let faults = FaultSchedule::none().at(1, 2, fault);
            let t = Team::builder()
                .ranks(16)
                .correction(Correction::Checked)
                .faults(faults)
                .op_timeout(Duration::from_millis(300))
                .build()
                .unwrap();
            let root = if victim_root { 1 } else { 0 };
            let report = t.run(|comm| {
                (0..5u32)
                    .map(|i| {
                        let r = if i == 2 { root } else { 0 };
                        let mut v = if comm.rank() == r { value(r, i) } else { 0 };
                        comm.broadcast_into(r, &mut v).map(|()| v)
                    })
                    .collect::<Vec<_>>()
            });
            for (rank, outcome) in report.outcomes.iter().enumerate() {
                let got = outcome.returned().unwrap();
                if rank == 1 {
                    assert_eq!(got[2], Err(expect.clone()));
                    continue;
                }
                for (i, r) in got.iter().enumerate() {
                    if i == 2 && victim_root {
                        // The root died (or hung) before sending: no value
                        // anywhere, and no hang either.
                        match fault {
                            Fault::Hang => {
                                assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}")
                            }
                            _ => assert!(
                                r.is_ok() || matches!(r, Err(Error::RootFailed { .. })),
                                "{r:?}"
                            ),
                        }
                    } else {
                        assert_eq!(r, &Ok(value(0, i as u32)), "{fault:?} rank {rank} op {i}");
                    }
                }
            }
            assert_eq!(
                report.hung,
                if fault == Fault::Hang {
                    vec![1]
                } else {
                    vec![]
                }
            );
        }
    }
}

#[test]
fn mismatched_collectives_are_an_error_not_a_hang() {
    let _serial = serial();
    // Rank 3 believes operation 1 is a broadcast from 2, the others from 0.
    // Who must see the mismatch: a rank gets `Mismatch` when a message of its
    // current operation names another collective or root than its own call.
    // Every message of operation 1 is sent by a rank that calls it from 0
    // (rank 3, not being its own root, sends only once it has a value, and
    // no rank ever sends it one from 2): so only rank 3 can get `Mismatch`,
    // and it must, when the tree message of its parent 1 comes. It then
    // tells the team to abort operation 1: the others deliver the value if
    // they had it by then, and get `Mismatch` otherwise. In operation 2 all
    // agree again, and nobody was taken for failed. The timeout only ends a call that hangs:
    // generous, so that a slow scheduler cannot turn the mismatch into one.
    let t = Team::builder()
        .ranks(8)
        .op_timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let report = t.run(|comm| {
        let mut results = Vec::new();
        for i in 0..3u32 {
            let root = if i == 1 && comm.rank() == 3 { 2 } else { 0 };
            let mut v = if comm.rank() == root {
                value(root, i)
            } else {
                0
            };
            results.push(comm.broadcast_into(root, &mut v).map(|()| v));
        }
        results
    });
    for (rank, outcome) in report.outcomes.iter().enumerate() {
        let got = outcome.returned().unwrap();
        assert_eq!(got[0], Ok(value(0, 0)), "rank {rank}");
        if rank == 3 {
            assert!(
                matches!(got[1], Err(Error::Mismatch { op: 1, .. })),
                "rank 3 called another broadcast than the others: {:?}",
                got[1]
            );
        } else {
            // Rank 3 then aborts operation 1 for the team: a rank that has
            // not finished it by then ends it with `Mismatch` too.
            assert!(
                got[1] == Ok(value(0, 1)) || matches!(got[1], Err(Error::Mismatch { op: 1, .. })),
                "rank {rank}: {:?}",
                got[1]
            );
        }
        assert_eq!(got[2], Ok(value(0, 2)), "rank {rank}");
    }
    assert!(report.failed.is_empty(), "{:?}", report.failed);
}

#[test]
fn bad_input_is_a_typed_error() {
    let _serial = serial();
    assert_eq!(
        Team::builder().ranks(0).build().unwrap_err(),
        ConfigError::ZeroRanks
    );
    assert_eq!(
        Team::builder().ranks(100_000).build().unwrap_err(),
        ConfigError::TooManyRanks {
            procs: 100_000,
            max: corrected::runtime::MAX_RANKS as u64
        }
    );
    assert_eq!(
        Team::builder()
            .ranks(4)
            .faults(FaultSchedule::none().kill(4, 0))
            .build()
            .unwrap_err(),
        ConfigError::FaultRank { rank: 4, procs: 4 }
    );
    // A thread cannot be SIGKILLed alone: that fault is for MPI processes.
    assert!(matches!(
        Team::builder()
            .ranks(4)
            .faults(FaultSchedule::none().at(1, 0, Fault::SigkillAfterSends(1)))
            .build()
            .unwrap_err(),
        ConfigError::Unsupported { .. }
    ));
    let t = Team::builder().ranks(4).build().unwrap();
    let report = t.run(|comm| {
        let mut v = 1u8;
        let out_of_range = comm.broadcast_into(4, &mut v);
        // Nine words, once too large for a message: now a shared segment.
        let mut big = if comm.rank() == 0 { [7u64; 9] } else { [0; 9] };
        let big = comm.broadcast_into(0, &mut big).map(|()| big);
        (out_of_range, big)
    });
    for (_, (a, b)) in report.returned() {
        assert!(matches!(
            a,
            Err(Error::RankOutOfRange { rank: 4, procs: 4 })
        ));
        assert_eq!(*b, Ok([7; 9]));
    }
}

#[test]
fn threads_and_simulator_agree_on_messages() {
    let _serial = serial();
    // Both count every send, including those to dead ranks. Plain trees and
    // plain, relaying or forwarding opportunistic correction send the same messages
    // whatever the timing; checked and optimized correction depend on
    // timing by design.
    for tree in ["binomial", "lame:2", "kary:3", "optimal"] {
        for correction in [
            "none",
            "opportunistic:1",
            "opportunistic:3",
            "relaying:2",
            "forwarding:2",
        ] {
            for (procs, dead) in [
                (33u32, vec![]),
                (33, vec![1u32, 5]),
                (64, vec![2, 3, 30, 31, 32]),
            ] {
                let spec: TreeSpec = tree.parse().unwrap();
                let corr: Correction = correction.parse().unwrap();
                let sc = BcastScenario::new(
                    spec,
                    procs,
                    corr,
                    LogP::PAPER,
                    FaultPlan::dead(dead.iter().copied()),
                )
                .unwrap();
                let sim = BcastSim::new(&sc).run(0);
                let sim_total = (sim.messages_per_process * procs as f64).round() as u64;
                // Without a guarantee some live ranks never get the value and
                // wait out the timeout: keep it short.
                let t = Team::builder()
                    .ranks(procs)
                    .tree(spec)
                    .correction(corr)
                    .faults(FaultSchedule::none().kill_group(dead.iter().copied(), 0))
                    .op_timeout(Duration::from_millis(200))
                    .op_records(true)
                    .build()
                    .unwrap();
                let report = t.run(|comm| {
                    let mut v = if comm.rank() == 0 { 9u64 } else { 0 };
                    let _ = comm.broadcast_into(0, &mut v);
                });
                assert_eq!(
                    report.ops[0].messages, sim_total,
                    "{tree} {correction} P={procs} dead {dead:?}"
                );
            }
        }
    }
}

#[test]
fn unpinned_teams_work_too() {
    let _serial = serial();
    let t = Team::builder()
        .ranks(9)
        .pinning(Pinning::None)
        .build()
        .unwrap();
    let outcomes = every_root(&t);
    assert!(outcomes.iter().all(|o| o
        .returned()
        .unwrap()
        .iter()
        .enumerate()
        .all(|(r, v)| *v == Ok(value(r as Rank, r as u32)))));
}

/// A rank that dies with sends still queued behind a full lane never sends
/// them (fail-stop), and the team still ends: those sends once counted as
/// in flight forever, and every rank waited in its end-of-run loop for a
/// quiet team that never came. What the lane held is delivered; the queued
/// send is lost, and its operation ends in `RootFailed`.
#[test]
fn a_rank_dying_with_queued_sends_lets_the_team_end() {
    let _serial = serial();
    const OPS: u32 = 8;
    const DIES_AT: u32 = 3;
    let t = Team::builder()
        .ranks(3)
        .lane_capacity(2)
        .correction("none".parse().unwrap())
        .faults(FaultSchedule::none().kill(0, DIES_AT))
        // The others' broadcasts from the dead root end by this timeout.
        .op_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let report = t.run(|comm| {
            // Rank 2 takes nothing before rank 0 has died: rank 0, the root
            // of every broadcast, sends to rank 2 (one of its two children)
            // in each operation without waiting for anyone, so the lane
            // 0 -> 2 holds the messages of operations 0 and 1, and that of
            // operation 2 waits in rank 0's outbox; rank 0's call of
            // operation 2 waits for room until its operation timeout, and
            // so does its entry of operation 3, where it dies (a rank with
            // a send waiting neither returns nor starts another operation,
            // see the tests below).
            let waited_for_death = comm.rank() != 2 || {
                let t = std::time::Instant::now();
                while !comm.failed_ranks().contains(&0) && t.elapsed() < Duration::from_secs(20) {
                    std::thread::yield_now();
                }
                comm.failed_ranks().contains(&0)
            };
            let got = (0..OPS)
                .map(|i| {
                    let mut v = if comm.rank() == 0 { i } else { 0 };
                    comm.broadcast_into(0, &mut v).map(|()| v)
                })
                .collect::<Vec<_>>();
            (waited_for_death, got)
        });
        let _ = tx.send(report);
    });
    let report = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the team must end after rank 0 died with queued sends");
    assert_eq!(report.failed, vec![0]);
    let outcome = |r: usize| report.outcomes[r].returned().expect("no panics");
    let (_, root) = outcome(0);
    for (i, got) in root.iter().enumerate() {
        if (i as u32) < DIES_AT {
            assert_eq!(*got, Ok(i as u32), "rank 0 op {i}");
        } else {
            assert_eq!(*got, Err(Error::Failed(0)), "rank 0 op {i}");
        }
    }
    let (waited, got) = outcome(2);
    assert!(waited, "rank 0 never died");
    // Exactly what the full lane held arrived; the queued send never did.
    for (i, got) in got.iter().enumerate() {
        if i < 2 {
            assert_eq!(*got, Ok(i as u32), "rank 2 op {i}");
        } else {
            let op = i as u32;
            assert_eq!(
                *got,
                Err(Error::RootFailed { op, root: 0 }),
                "rank 2 op {i}"
            );
        }
    }
    // Rank 1 took its messages all along: the values of operations 0 and
    // 1, and of 2 unless it comes through rank 2 (the queued send); from
    // the root's death on, nothing. Its operation 3 may time out first:
    // the root holds back for an operation timeout before it enters it.
    let (_, got) = outcome(1);
    for (i, got) in got.iter().enumerate() {
        let op = i as u32;
        let failed = Err(Error::RootFailed { op, root: 0 });
        match op {
            0 | 1 => assert_eq!(*got, Ok(op), "rank 1 op {i}"),
            2 => assert!(*got == Ok(2) || *got == failed, "rank 1 op 2: {got:?}"),
            3 => assert!(
                *got == failed || matches!(got, Err(Error::Timeout { op: 3, .. })),
                "rank 1 op 3: {got:?}"
            ),
            _ => assert_eq!(*got, failed, "rank 1 op {i}"),
        }
    }
}

/// Flow control: a rank with a send waiting for a full lane neither returns
/// from its call nor starts another operation until the lane takes it. So a
/// rank that dies loses at
/// most what its last operation queued: a node team's proxy that ran ten
/// broadcasts ahead of its threads under load, its sends queued behind full
/// lanes, cost them a root wait (1 s) per broadcast when it died
/// (docs/mpi.md).
#[test]
fn a_rank_does_not_run_ahead_of_a_full_lane() {
    let _serial = serial();
    const STALL: Duration = Duration::from_millis(400);
    let t = Team::builder()
        .ranks(3)
        .lane_capacity(2)
        .correction("none".parse().unwrap())
        // Rank 2 takes nothing for STALL as it enters operation 0.
        .faults(FaultSchedule::none().at(2, 0, Fault::Stall(STALL)))
        .build()
        .unwrap();
    let epoch = std::time::Instant::now();
    let report = t.run(|comm| {
        let before = epoch.elapsed();
        let done: Vec<Duration> = (0..6u32)
            .map(|i| {
                let mut v = if comm.rank() == 0 { i } else { 0 };
                comm.broadcast_into(0, &mut v).unwrap();
                assert_eq!(v, i);
                epoch.elapsed()
            })
            .collect();
        (before, done)
    });
    let outcome = |r: usize| report.outcomes[r].returned().expect("no panics").clone();
    let (stalled_from, _) = outcome(2);
    let (_, root) = outcome(0);
    // Rank 0 sends to rank 2 in every operation without waiting for anyone:
    // operations 0 and 1 fill the lane, operation 2's send waits in the
    // outbox, and its call does not return before rank 2 takes a message,
    // which it does only after its stall (until 2026-11-28 the call
    // returned and the next one held back at its start: see
    // `a_root_that_computes_after_its_last_broadcast_has_delivered_it`).
    assert!(
        root[1] < stalled_from + STALL,
        "rank 0 did not run operations 0-1 without rank 2: {root:?}"
    );
    assert!(
        root[2] >= stalled_from + STALL,
        "rank 0 ended operation 2 at {:?}, before rank 2 took anything (stalled from {stalled_from:?} for {STALL:?})",
        root[2]
    );
}

/// A call does not return while its sends wait for room: a root that goes
/// on to compute after its last broadcast, longer than the failure timeout,
/// is not taken for failed by a receiver that was a lane behind (before,
/// the last send waited in the root's outbox until its next call, and the
/// receiver, finding the root returned and its heartbeat still, ended with
/// `RootFailed` on a live root).
#[test]
fn a_root_that_computes_after_its_last_broadcast_has_delivered_it() {
    let _serial = serial();
    const STALL: Duration = Duration::from_millis(300);
    const FAILURE: Duration = Duration::from_millis(100);
    let t = Team::builder()
        .ranks(3)
        .lane_capacity(2)
        .correction("none".parse().unwrap())
        .failure_timeout(FAILURE)
        .faults(FaultSchedule::none().at(2, 0, Fault::Stall(STALL)))
        .build()
        .unwrap();
    let report = t.run(|comm| {
        let values: Vec<Result<u32, Error>> = (0..3u32)
            .map(|i| {
                let mut v = if comm.rank() == 0 { i } else { u32::MAX };
                comm.broadcast_into(0, &mut v).map(|()| v)
            })
            .collect();
        if comm.rank() == 0 {
            // Computes, outside the library, for longer than the receiver
            // that stalled needs to reach the last broadcast plus a
            // failure timeout.
            std::thread::sleep(STALL + 4 * FAILURE);
        }
        values
    });
    for r in 0..3 {
        let values = report.outcomes[r].returned().expect("no panics");
        assert_eq!(
            values,
            &vec![Ok(0), Ok(1), Ok(2)],
            "rank {r} did not get every broadcast"
        );
    }
}

/// Unset, the team's tree is the binomial one, except for the corrected
/// broadcast where ranks outnumber the cores: the flat tree, whose root
/// reaches every rank itself (`TeamBuilder::tree`). A tree set is kept
/// as set, `adapt_to_machine(false)` picks as if the cores sufficed, and a
/// broadcast on the flat tree survives dead ranks as on any
/// other (the correction makes up for the tree).
#[test]
fn the_team_picks_a_flat_broadcast_tree_where_ranks_outnumber_cores() {
    let _serial = serial();
    let cores = corrected::runtime::pin::available_cores().len() as u32;
    let binomial = TreeSpec::interleaved(Shape::Binomial);
    let few = Team::builder().ranks(cores.max(1)).build().unwrap();
    assert_eq!(few.broadcast_tree(), binomial);
    let crowd = 4 * cores.max(1) + 1;
    let many = Team::builder()
        .ranks(crowd)
        .faults(FaultSchedule::none().kill(1, 0).kill(crowd - 1, 3))
        .build()
        .unwrap();
    assert_eq!(
        many.broadcast_tree(),
        TreeSpec::interleaved(Shape::KAry(crowd - 1))
    );
    assert_eq!(many.allreduce_algorithm(), AllreduceAlgorithm::Star);
    // One setting makes the picks the same on every machine.
    let alike = Team::builder()
        .ranks(crowd)
        .adapt_to_machine(false)
        .build()
        .unwrap();
    assert_eq!(alike.broadcast_tree(), binomial);
    assert_eq!(alike.allreduce_algorithm(), AllreduceAlgorithm::Tree);
    let lame = TreeSpec::lame(2);
    let set = Team::builder().ranks(crowd).tree(lame).build().unwrap();
    assert_eq!(set.broadcast_tree(), lame);
    let report = many.run(|comm| {
        (0..8u32)
            .map(|i| {
                let mut v = if comm.rank() == 0 { i + 1 } else { 0 };
                comm.broadcast_into(0, &mut v).map(|()| v)
            })
            .collect::<Vec<_>>()
    });
    for (rank, got) in report.returned() {
        for (i, got) in got.iter().enumerate() {
            let i = i as u32;
            if rank == 1 || (rank == crowd - 1 && i >= 3) {
                assert_eq!(*got, Err(Error::Failed(rank)), "rank {rank} op {i}");
            } else {
                assert_eq!(*got, Ok(i + 1), "rank {rank} op {i}");
            }
        }
    }
}

/// The flat tree sends no correction (`BcastPlan::corrects`): a root that
/// dies after its n-th send has reached its first n children, which
/// deliver, and every other live rank ends in `RootFailed` as soon as it
/// learns of the death, not after the failure timeout (nothing but the
/// root's message could bring the value). The team goes on with the next
/// root.
#[test]
fn a_flat_tree_whose_root_dies_while_it_sends_fails_the_rest_at_once() {
    let _serial = serial();
    let cores = corrected::runtime::pin::available_cores().len() as u32;
    let crowd = 4 * cores.max(1) + 1;
    // Far above anything the test waits for: a rank that waited the
    // failure timeout out, or the operation timeout, fails the bound.
    let failure_timeout = Duration::from_secs(60);
    for sends in [0u32, 1, crowd / 2, crowd - 1] {
        let team = Team::builder()
            .ranks(crowd)
            .failure_timeout(failure_timeout)
            .op_timeout(failure_timeout * 2)
            .faults(FaultSchedule::none().at(0, 1, Fault::DieAfterSends(sends)))
            .build()
            .unwrap();
        assert_eq!(
            team.broadcast_tree(),
            TreeSpec::interleaved(Shape::KAry(crowd - 1))
        );
        let report = team.run(|comm| {
            let me = comm.rank();
            let mut got = Vec::new();
            for (op, root) in [(0u32, 0u32), (1, 0), (2, 1)] {
                let mut v = if me == root { op + 10 } else { 0 };
                let started = Instant::now();
                let r = comm.broadcast_into(root, &mut v).map(|()| v);
                got.push((r, started.elapsed()));
            }
            got
        });
        assert_eq!(report.failed, vec![0], "sends {sends}");
        // The root sends to its children in ring order: 1, 2, ...
        for (rank, got) in report.returned() {
            let name = format!("sends {sends}, rank {rank}");
            assert_eq!(got[0].0, Ok(10), "{name}");
            if rank == 0 {
                assert_eq!(got[1].0, Err(Error::Failed(0)), "{name}");
                continue;
            }
            if rank <= sends {
                assert_eq!(got[1].0, Ok(11), "{name}");
            } else {
                assert_eq!(
                    got[1].0,
                    Err(Error::RootFailed { op: 1, root: 0 }),
                    "{name}"
                );
            }
            assert!(got[1].1 < failure_timeout / 4, "{name}: {:?}", got[1].1);
            assert_eq!(got[2].0, Ok(12), "{name}");
        }
    }
}

#[test]
fn lane_capacity_and_doorbell_fence_resolve_their_defaults() {
    use corrected::runtime::{membarrier_status, DoorbellFence};
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let membarrier = if membarrier_status().is_ok() {
        DoorbellFence::Membarrier
    } else {
        DoorbellFence::SeqCst
    };
    // One rank never outnumbers the cores: shallow lanes, and the
    // asymmetric fence where the kernel offers it.
    let alone = Team::builder().ranks(1).build().unwrap();
    assert_eq!(alone.lane_capacity(), 64);
    assert_eq!(alone.doorbell_fence(), membarrier);
    // 64 ranks outnumber the cores of any machine that runs this suite
    // with fewer than 64: deep lanes, the symmetric fence.
    if cores < 64 {
        let crowded = Team::builder().ranks(64).build().unwrap();
        assert_eq!(crowded.lane_capacity(), 256);
        assert_eq!(crowded.doorbell_fence(), DoorbellFence::SeqCst);
        let many = Team::builder().ranks(65).build().unwrap();
        assert_eq!(many.lane_capacity(), 64, "deep lanes only up to 64 ranks");
    }
    // What the user sets wins (the fence falls back where refused).
    let set = Team::builder()
        .ranks(64)
        .lane_capacity(8)
        .doorbell_fence(DoorbellFence::Membarrier)
        .build()
        .unwrap();
    assert_eq!(set.lane_capacity(), 8);
    assert_eq!(set.doorbell_fence(), membarrier);
}
