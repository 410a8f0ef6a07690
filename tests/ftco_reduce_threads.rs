//! FTCO reduce, allreduce and barrier on threads
//! ([`ReduceAlgorithm::Ftco`]; *Tree-based Fault-Tolerant Collective
//! Operations*, Sections 3-4, Algorithms 1-4, Appendix D), driven by the
//! one driver with real-time timeouts. Definition 3.2 with the root alive:
//! every live rank delivers, an allreduce's result is the same on every
//! rank, no input is counted twice, a rank dead before the operation is
//! out, one that failed during it is in or out, and every rank that never
//! failed is in (unless a timeout suspected it while it lived). Inputs are
//! count vectors (rank r contributes 1 at index r), so the result shows
//! exactly which ranks it counts and how often.

mod common;

use corrected::Collectives;
use std::time::Duration;

use common::{
    bad_timeouts_are_refused, fault_free_message_counts, for_each_dead_set_before,
    for_each_death_in_the_first_operation, only_the_hung_rank_3_was_suspected, recorded_team,
    serial, short_timeouts_suspect_live_ranks, the_hung_rank_was_remembered,
};
use corrected::runtime::{
    Fault, FaultSchedule, ReduceAlgorithm, SystemOperation, Team, TeamBuilder, TeamReport,
    FTCO_ALLREDUCE_ROOT,
};
use corrected::types::Rank;
use corrected::{Contributors, Error};

fn ftco(timeout: Duration) -> ReduceAlgorithm {
    ReduceAlgorithm::Ftco {
        timeout: Some(timeout),
    }
}

/// A team of `procs` with FTCO's reduce, timeout unit `timeout`; the
/// caller adds the rest and builds.
fn ftco_builder(procs: u32, timeout: Duration) -> TeamBuilder {
    Team::builder().ranks(procs).reduce(ftco(timeout))
}

/// A [`recorded_team`] of `procs` on `tree` with FTCO's reduce, timeout
/// unit `timeout`; the caller adds the rest and builds.
fn ftco_team(procs: u32, tree: &str, timeout: Duration, faults: FaultSchedule) -> TeamBuilder {
    recorded_team(procs, faults)
        .tree(tree.parse().expect("a tree"))
        .reduce(ftco(timeout))
}

fn team(procs: u32, tree: &str, timeout: Duration, faults: FaultSchedule) -> Team {
    ftco_team(procs, tree, timeout, faults)
        .build()
        .expect("a team")
}

/// Rank `me`'s input: 1 at index `me` of `procs` counts.
fn counts_of(me: Rank, procs: u32) -> Vec<u64> {
    (0..procs).map(|r| u64::from(r == me)).collect()
}

/// What a call returned: the counts and the contributors (an allreduce; a
/// reduce's root), or none (a reduce's other ranks, a barrier).
type Got = Result<Option<(Vec<u64>, Contributors)>, Error>;

/// `ops` operations in turn: allreduce, reduce to `reduce_root`, barrier,
/// and again; per rank, what each returned.
fn mixed(team: &Team, ops: u32, reduce_root: Rank) -> TeamReport<Vec<Got>> {
    team.run(|comm| {
        let (me, procs) = (comm.rank(), comm.size());
        let send = counts_of(me, procs);
        (0..ops)
            .map(|i| {
                let mut recv = vec![0u64; procs as usize];
                match i % 3 {
                    0 => comm
                        .all_reduce_into_contributors(
                            &send[..],
                            &mut recv[..],
                            SystemOperation::sum(),
                        )
                        .map(|who| Some((recv, who))),
                    1 => comm
                        .reduce_into_contributors(
                            reduce_root,
                            &send[..],
                            &mut recv[..],
                            SystemOperation::sum(),
                        )
                        .map(|who| who.map(|who| (recv, who))),
                    _ => comm.barrier().map(|()| None),
                }
            })
            .collect()
    })
}

/// Definition 3.2 over every live rank's results of `report` (operation i
/// of [`mixed`]): each call returned; the results of an operation are the
/// same on every rank that has one, and its contributors name exactly the
/// ranks it counts; no rank counted twice; `dead` (ranks
/// dead from the start) out; in the first `live_in` operations, every rank
/// that never failed in.
///
/// Why only the first ones: after an operation in which a rank waited out
/// timeouts, ranks enter the next at times further apart than T (the
/// paper's process imbalance). A rank still in the previous operation is
/// then suspected by a rank already in the next, and may be left out as if
/// it had failed; docs/algorithms.md, *FTCO on threads*.
fn definition_3_2(
    report: &TeamReport<Vec<Got>>,
    ops: u32,
    reduce_root: Rank,
    dead: &[Rank],
    live_in: u32,
    case: &str,
) {
    let mut per_op: Vec<Option<Vec<u64>>> = vec![None; ops as usize];
    let mut returned = 0;
    for (rank, results) in report.returned() {
        if report.failed.contains(&rank) {
            continue;
        }
        returned += 1;
        assert_eq!(results.len(), ops as usize, "{case}: rank {rank}");
        for (i, got) in results.iter().enumerate() {
            let got = got
                .as_ref()
                .unwrap_or_else(|e| panic!("{case}: rank {rank} op {i}: {e}"));
            let expects_value = match i % 3 {
                0 => true,
                1 => rank == reduce_root,
                _ => false,
            };
            assert_eq!(got.is_some(), expects_value, "{case}: rank {rank} op {i}");
            let Some((counts, who)) = got else { continue };
            let first = per_op[i].get_or_insert_with(|| counts.clone());
            assert_eq!(first, counts, "{case}: op {i}, rank {rank} disagrees");
            for (r, &n) in counts.iter().enumerate() {
                let r = r as Rank;
                // The contributors name exactly the ranks counted.
                assert_eq!(who.contains(r), Some(n == 1), "{case}: op {i}: rank {r}");
                if dead.contains(&r) {
                    assert_eq!(n, 0, "{case}: op {i}: dead rank {r} counted");
                } else if report.failed.contains(&r) {
                    assert!(n <= 1, "{case}: op {i}: rank {r} counted {n} times");
                } else if (i as u32) < live_in {
                    assert_eq!(n, 1, "{case}: op {i}: live rank {r} counted {n} times");
                } else {
                    assert!(n <= 1, "{case}: op {i}: rank {r} counted {n} times");
                }
            }
        }
    }
    assert!(returned > 0, "{case}: no live rank");
}

/// Fault-free with a timeout no scheduling delay reaches (5 s): every
/// rank's input exactly once, on every tree and size, no timeout, and the
/// exact message counts: a reduce 2(P - 1) (a DATA up and its ACK per
/// non-root rank), an allreduce and a barrier 4(P - 1) (a DATA down and
/// its ACK too).
#[test]
fn fault_free_every_input_once_and_the_exact_message_counts() {
    let teams = [
        (1, "binomial"),
        (2, "binomial"),
        (8, "binomial"),
        (13, "kary:2"),
        (16, "knomial:4"),
        (17, "lame:2"),
    ];
    // Allreduce, reduce, barrier, and again.
    fault_free_message_counts(&teams, &[4, 2, 4], |procs, tree| {
        let team = team(procs, tree, Duration::from_secs(5), FaultSchedule::none());
        let ops = 9;
        let root = procs / 2;
        let report = mixed(&team, ops, root);
        let case = format!("{tree} P={procs}");
        definition_3_2(&report, ops, root, &[], ops, &case);
        assert_eq!(report.false_suspicions, 0, "{case}");
        report
    });
}

/// The multi-root k-nomial tree (Section 5.2.1): an allreduce's roots
/// exchange their partials; a reduce goes to root 0 over the K-nomial
/// tree. Every input once, fault-free and with non-root ranks dead.
#[test]
fn the_multi_root_tree_reduces_every_live_input_once() {
    let _serial = serial();
    for (procs, tree, dead) in [
        (8u32, "multiroot:2", &[][..]),
        (17, "multiroot:4", &[][..]),
        (17, "multiroot:4", &[5, 9][..]),
    ] {
        let faults = FaultSchedule::none().kill_group(dead.iter().copied(), 0);
        let timeout = Duration::from_millis(if dead.is_empty() { 5000 } else { 100 });
        let team = team(procs, tree, timeout, faults);
        let report = mixed(&team, 6, 0);
        let case = format!("{tree} P={procs} dead {dead:?}");
        definition_3_2(
            &report,
            6,
            0,
            dead,
            if dead.is_empty() { 6 } else { 1 },
            &case,
        );
        assert_eq!(report.failed, dead.to_vec(), "{case}");
    }
}

/// Dead sets fixed before the operations (inner ranks, leaves, siblings, a
/// parent with its child), binomial and kary:2 trees, P up to 17, the
/// reduce to a non-zero root: the dead out, no input twice, the same
/// result everywhere, every live rank's input in the first operation; no
/// timeout (the dead are known).
#[test]
fn ranks_dead_before_are_left_out_and_every_live_input_is_in_once() {
    for_each_dead_set_before(|tree, procs, dead, faults| {
        // T far above the scheduling noise: no live rank is suspected in
        // the first operation, where all start together.
        let team = team(procs, tree, Duration::from_millis(100), faults);
        let root = (0..procs).rev().find(|r| !dead.contains(r)).unwrap_or(0);
        let report = mixed(&team, 3, root);
        let case = format!("{tree} P={procs} dead={dead:?}");
        definition_3_2(&report, 3, root, dead, 1, &case);
        assert_eq!(report.failed, dead.to_vec(), "{case}");
        // The team knows them (`Fault::Dead`): routed around without a
        // timeout, none suspected.
        assert_eq!((report.timeouts, report.false_suspicions), (0, 0), "{case}");
    });
}

/// A rank that hangs (alive, silent, nobody told) is found by FTCO's
/// timeouts in each operation until the team's failure detector, watching
/// the rank FTCO suspected (`Protocol::awaiting`), finds it silent for
/// the failure timeout (50 ms) and reports it failed; from then on the
/// reduce, allreduce and barrier route around it from the start: the last
/// 15 of 30 operations fire no timeout (the first 15 take at least 15 × T
/// = 300 ms, six failure timeouts). Definition 3.2 in every operation.
#[test]
fn a_hung_rank_is_remembered_once_the_detector_reports_it() {
    let report = mixed_with_a_hung_rank(Duration::from_millis(20), Duration::from_millis(50));
    the_hung_rank_was_remembered(&report, 15);
}

/// 30 operations (`mixed`) of a team of 8 whose rank 3 hangs from the
/// start, FTCO's reduce with timeout unit `t`, and the detector's
/// `failure_timeout`; Definition 3.2 in every operation.
fn mixed_with_a_hung_rank(t: Duration, failure_timeout: Duration) -> TeamReport<Vec<Got>> {
    let _serial = serial();
    let hung = FaultSchedule::none().at(3, 0, Fault::Hang);
    let team = ftco_team(8, "binomial", t, hung)
        .failure_timeout(failure_timeout)
        .build()
        .expect("a team");
    let report = mixed(&team, 30, 5);
    definition_3_2(&report, 30, 5, &[], 1, "a hung rank");
    report
}

/// The same hung rank with `corrected run`'s timeouts (T = 50 ms, failure
/// timeout 1 s): its parent waits out a timeout on it in each operation
/// until the detector declares it, while the ranks above are in the next
/// one; their DATA and KEEPALIVEs get the parent's ACK on its behalf
/// (`Protocol::answer_ahead`), so no live rank is suspected, in the reduce,
/// the allreduce or the barrier.
#[test]
fn a_hung_rank_costs_no_false_suspicion_of_a_live_rank() {
    let report = mixed_with_a_hung_rank(Duration::from_millis(50), Duration::from_secs(1));
    only_the_hung_rank_3_was_suspected(&report);
}

/// A rank killed during the operation after its n-th send (n = 0 to 3:
/// before its DATA up, after it, after an ACK or a DATA down), inner ranks
/// and a leaf, at P = 12 and 17, then two more operations with it dead:
/// Definition 3.2 in each (the victim in or out, every other rank in the
/// first).
#[test]
fn a_rank_killed_during_the_operation_is_in_or_out_and_live_inputs_are_in() {
    for_each_death_in_the_first_operation(|procs, victim, faults, case| {
        let team = team(procs, "binomial", Duration::from_millis(100), faults);
        let report = mixed(&team, 3, 0);
        definition_3_2(&report, 3, 0, &[], 1, &case);
        assert_eq!(report.failed, vec![victim], "{case}");
    });
}

/// A timeout far below a hop's round trip (1 µs): live ranks are suspected
/// and circumvented, their partials come twice, yet no input is counted
/// twice and the result is the same everywhere; every call returns (no
/// hang), fault-free and with ranks dead.
#[test]
fn a_very_short_timeout_suspects_live_ranks_yet_counts_no_input_twice() {
    short_timeouts_suspect_live_ranks(|procs, faults| {
        let team = team(procs, "binomial", Duration::from_micros(1), faults);
        let report = mixed(&team, 9, 0);
        let dead: Vec<Rank> = report
            .failed
            .iter()
            .copied()
            .filter(|&r| r == 3 || r == 5 || r == 6)
            .collect();
        let case = format!("P={procs} dead {:?}", report.failed);
        definition_3_2(&report, 9, 0, &dead, 0, &case);
        report
    });
}

/// The root never fails in FTCO's model (Section 2). When it does, the
/// others do not hang: an allreduce whose root (rank 0) is dead ends on
/// every other rank with [`Error::RootFailed`] within the operation
/// timeout; a reduce whose root is dead ends so on the ranks whose DATA
/// went to the root (its children, and ranks that walked up to it), and
/// the others return having contributed (their DATA was acknowledged:
/// Figure 1, a non-root's part).
#[test]
fn a_dead_root_is_a_typed_error_on_every_other_rank() {
    let _serial = serial();
    let op_timeout = Duration::from_millis(300);
    for (reduce_root, ops) in [(FTCO_ALLREDUCE_ROOT, 1u32), (3, 2)] {
        let team = ftco_builder(6, Duration::from_millis(5))
            .faults(FaultSchedule::none().kill(reduce_root, 0))
            .op_timeout(op_timeout)
            .build()
            .unwrap();
        let report = team.run(|comm| {
            let send = counts_of(comm.rank(), 6);
            let mut recv = [0u64; 6];
            // Operation 0 is an allreduce; operation 1 a reduce to rank 3.
            let first = comm.all_reduce_into(&send[..], &mut recv[..], SystemOperation::sum());
            if ops == 1 {
                return vec![first];
            }
            let second = comm.reduce_into(3, &send[..], &mut recv[..], SystemOperation::sum());
            vec![first, second]
        });
        let root = reduce_root;
        let mut root_failed = 0;
        for (rank, results) in report.returned() {
            if rank == root {
                continue;
            }
            let last = results.last().expect("a result");
            match last {
                Err(Error::RootFailed { root: r, .. }) if *r == root => root_failed += 1,
                Ok(()) if ops == 2 => {}
                other => panic!("root {root}: rank {rank} got {other:?}"),
            }
        }
        let waiting = if ops == 1 { 5 } else { 1 };
        assert!(
            root_failed >= waiting,
            "root {root}: {root_failed} RootFailed"
        );
    }
}

/// Values of any length: a 100 000-element allreduce and reduce are exact
/// (segments, not chunks), and inputs of different lengths end in
/// [`Error::LengthMismatch`] on every rank that gets a result, never a
/// wrong result.
#[test]
fn large_values_are_exact_and_lengths_that_differ_are_typed_errors() {
    let _serial = serial();
    let procs = 5u32;
    let team = team(
        procs,
        "binomial",
        Duration::from_secs(5),
        FaultSchedule::none(),
    );
    let n = 100_000usize;
    let report = team.run(|comm| {
        let me = comm.rank();
        let send: Vec<u64> = (0..n as u64).map(|i| i * u64::from(me + 1)).collect();
        let mut all = vec![0u64; n];
        comm.all_reduce_into(&send[..], &mut all[..], SystemOperation::sum())?;
        let mut at_root = vec![0u64; n];
        comm.reduce_into(4, &send[..], &mut at_root[..], SystemOperation::sum())?;
        let odd = vec![1u64; if me == 2 { 7 } else { 8 }];
        let mut out = vec![0u64; odd.len()];
        let mismatch = comm.all_reduce_into(&odd[..], &mut out[..], SystemOperation::sum());
        Ok::<_, Error>((all, (me == 4).then_some(at_root), mismatch))
    });
    let factor: u64 = (1..=u64::from(procs)).sum();
    let expected: Vec<u64> = (0..n as u64).map(|i| i * factor).collect();
    for (rank, got) in report.returned() {
        let (all, at_root, mismatch) = got.as_ref().expect("no error");
        assert!(all == &expected, "rank {rank}: allreduce");
        if let Some(at_root) = at_root {
            assert!(at_root == &expected, "rank {rank}: reduce");
        }
        assert!(
            matches!(mismatch, Err(Error::LengthMismatch { .. })),
            "rank {rank}: {mismatch:?}"
        );
    }
}

/// Ranks that call different operations at the same operation number (an
/// allreduce on most, a barrier on one) end with [`Error::Mismatch`] on at
/// least one rank, and every rank returns within the operation timeout.
#[test]
fn different_operations_at_one_number_are_a_mismatch_not_a_hang() {
    let _serial = serial();
    let team = ftco_builder(6, Duration::from_millis(50))
        .op_timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let report = team.run(|comm| {
        if comm.rank() == 4 {
            return comm.barrier();
        }
        let mut out = 0u64;
        comm.all_reduce_into(&1u64, &mut out, SystemOperation::sum())
    });
    let mismatches = report
        .returned()
        .filter(|(_, got)| matches!(got, Err(Error::Mismatch { .. })))
        .count();
    assert!(mismatches > 0, "{:?}", report.outcomes);
}

/// FTCO's cores answer after their call returns only while their rank is
/// in the library. Ranks that wait at an application's own barrier between
/// FTCO reduces, calling `Comm::progress` while they wait, keep answering:
/// with rank 1 dying right after its first send of the first reduce, no
/// rank stalls into the operation timeout, and every live rank's input is
/// in the root's first result. (Without `progress`, `LINEUP=each cargo
/// bench --bench compare_threads` shows the stall and live inputs left
/// out.)
#[test]
fn ranks_waiting_outside_the_library_keep_answering_through_progress() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let _serial = serial();
    let procs = 8u32;
    let faults = FaultSchedule::none().at(1, 0, Fault::DieAfterSends(1));
    let team = ftco_builder(procs, Duration::from_millis(100))
        .faults(faults)
        .op_timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    // The application's barrier: every rank, the failed one included
    // (its calls return at once), counts in; a generation counter releases.
    let (arrived, generation) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let report = team.run(|comm| {
        let me = comm.rank();
        let send = counts_of(me, procs);
        (0..3)
            .map(|_| {
                let gen = generation.load(Ordering::Acquire);
                if arrived.fetch_add(1, Ordering::AcqRel) + 1 == procs as usize {
                    arrived.store(0, Ordering::Relaxed);
                    generation.fetch_add(1, Ordering::AcqRel);
                } else {
                    while generation.load(Ordering::Acquire) == gen {
                        // A failed rank's progress is its error: it waits on.
                        let _ = comm.progress();
                        std::thread::yield_now();
                    }
                }
                let mut recv = vec![0u64; procs as usize];
                comm.reduce_into(0, &send[..], &mut recv[..], SystemOperation::sum())
                    .map(|()| (me == 0).then_some(recv))
            })
            .collect::<Vec<_>>()
    });
    for (rank, results) in report.returned() {
        if rank == 1 {
            continue;
        }
        for (i, got) in results.iter().enumerate() {
            let got = got
                .as_ref()
                .unwrap_or_else(|e| panic!("rank {rank} op {i}: {e}"));
            if let Some(counts) = got {
                for (r, &n) in counts.iter().enumerate() {
                    let expected = match (r, i) {
                        (1, 0) => n.min(1),
                        (1, _) => 0,
                        _ => 1,
                    };
                    assert_eq!(n, expected, "op {i}: rank {r} counted {n} times");
                }
            }
        }
    }
}

/// Bad FTCO timeouts are typed configuration errors when the team is built.
#[test]
fn bad_ftco_reduce_timeouts_are_typed_errors() {
    bad_timeouts_are_refused(|bad| ftco_builder(4, bad).build());
}
