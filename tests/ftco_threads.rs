//! The timeout/ACK baselines on threads, driven by the one driver: the
//! FTCO broadcast (*Tree-based Fault-Tolerant Collective Operations*,
//! Sections 3-4, Definition 3.2 read for a broadcast: with the root alive
//! every live rank delivers the root's value exactly once, whatever fails
//! before or during the operation) with real-time timeouts, and the ack
//! tree (Corrected Trees, Section 5: 2 messages per non-root rank, no fault
//! tolerance).

mod common;

use std::time::Duration;

use common::{
    bad_timeouts_are_refused, broadcast_team, broadcasts, fault_free_message_counts,
    for_each_dead_set_before, for_each_death_in_the_first_operation,
    only_the_hung_rank_3_was_suspected, serial, short_timeouts_suspect_live_ranks,
    the_hung_rank_was_remembered, value,
};
use corrected::runtime::{BroadcastAlgorithm, Fault, FaultSchedule, Team, TeamReport};
use corrected::topology::TreeSpec;
use corrected::types::Rank;
use corrected::{Collectives, Error};

fn ftco(timeout: Duration) -> BroadcastAlgorithm {
    BroadcastAlgorithm::Ftco {
        timeout: Some(timeout),
    }
}

fn tree(name: &str) -> TreeSpec {
    name.parse().expect("a tree")
}

fn team(ranks: u32, tree: TreeSpec, algorithm: BroadcastAlgorithm, faults: FaultSchedule) -> Team {
    broadcast_team(ranks, algorithm, faults)
        .tree(tree)
        .build()
        .unwrap()
}

/// Every rank not in `failed` returned operation i's own value in call i:
/// each call delivers exactly once, and no call gets another operation's
/// value (stale or early) or none.
fn every_live_rank_delivers(
    report: &TeamReport<Vec<Result<u64, Error>>>,
    roots: &[Rank],
    case: &str,
) {
    let mut live = 0;
    for (rank, results) in report.returned() {
        if report.failed.contains(&rank) {
            continue;
        }
        live += 1;
        for (i, got) in results.iter().enumerate() {
            let root = roots[i % roots.len()];
            assert_eq!(
                got.as_ref().ok(),
                Some(&value(root, i as u32)),
                "{case}: rank {rank} op {i}"
            );
        }
    }
    assert!(live > 0, "{case}: no live rank");
}

/// Dead sets fixed before the operations (sampled: inner ranks, leaves,
/// siblings, a parent with its child, at P up to 17), binomial and kary:2
/// trees, 3 operations from rotating live roots: every live rank gets each
/// operation's value exactly once. The dead are known to the team
/// (`Fault::Dead`): routed around from the start, no timeout suspects one
/// (a timeout that fires suspects a live rank, T = 5 ms being near the
/// scheduling noise).
#[test]
fn ftco_delivers_to_every_live_rank_with_ranks_dead_before() {
    for_each_dead_set_before(|name, procs, dead, faults| {
        let team = team(procs, tree(name), ftco(Duration::from_millis(5)), faults);
        let roots: Vec<Rank> = (0..procs).filter(|r| !dead.contains(r)).take(3).collect();
        let report = broadcasts(&team, 3, &roots);
        let case = format!("{name} P={procs} dead={dead:?}");
        every_live_rank_delivers(&report, &roots, &case);
        assert_eq!(report.failed, dead.to_vec(), "{case}");
        assert_eq!(report.timeouts, report.false_suspicions, "{case}");
    });
}

/// A hung rank nobody is told of (`Fault::Hang`) is found by FTCO's
/// timeouts and routed around in each operation, until the team's failure
/// detector, watching the rank FTCO suspected (`Protocol::awaiting`),
/// finds it silent for the failure timeout (50 ms) and reports it failed.
/// From then on every operation routes around it from the start, as an
/// implementation keeping a communicator's failed set would: the last 20
/// of 40 operations fire no timeout (the first 20 take at least 20 × T =
/// 400 ms, eight failure timeouts). Every live rank delivers every value.
/// 40 FTCO broadcasts from rank 0 among 8 ranks, rank 3 hung from the
/// start, timeout unit `t`, the detector's `failure_timeout`; every live
/// rank delivers every value.
fn broadcasts_with_a_hung_rank(
    t: Duration,
    failure_timeout: Duration,
) -> TeamReport<Vec<Result<u64, corrected::Error>>> {
    let _serial = serial();
    let faults = FaultSchedule::none().at(3, 0, Fault::Hang);
    let team = broadcast_team(8, ftco(t), faults)
        .tree(tree("binomial"))
        .failure_timeout(failure_timeout)
        .build()
        .unwrap();
    let report = broadcasts(&team, 40, &[0]);
    every_live_rank_delivers(&report, &[0], "a hung rank");
    report
}

#[test]
fn ftco_remembers_a_hung_rank_once_the_detector_reports_it() {
    let report = broadcasts_with_a_hung_rank(Duration::from_millis(20), Duration::from_millis(50));
    the_hung_rank_was_remembered(&report, 20);
    assert!(
        report.ops[0].timeouts > 0,
        "the hang was not found by a timeout"
    );
}

/// A hung rank's parent waits out a timeout on it in each operation until
/// the detector declares it, while the ranks above are in the next one
/// already: their DATA and KEEPALIVEs of that operation get the parent's
/// ACK on its behalf (`Protocol::answer_ahead`), so no live rank is
/// suspected, only the hung one (FTCO counts every suspicion of a rank
/// that was alive as false). The timeouts of `corrected run --algorithm
/// ftco --hang 3` (T = 50 ms, failure timeout 1 s), 40 operations.
#[test]
fn a_hung_rank_costs_ftco_no_false_suspicion_of_a_live_rank() {
    let report = broadcasts_with_a_hung_rank(Duration::from_millis(50), Duration::from_secs(1));
    only_the_hung_rank_3_was_suspected(&report);
}

/// A rank killed during the operation (after its n-th send, n = 0 to 3:
/// before it forwards, between its DATA sends, before or after its ACK),
/// inner ranks and a leaf, at P = 12 and 17, and a second operation with
/// the rank dead: every other live rank delivers both values exactly once.
#[test]
fn ftco_delivers_to_every_live_rank_with_a_rank_killed_during_the_operation() {
    let t = ftco(Duration::from_millis(5));
    for_each_death_in_the_first_operation(|procs, victim, faults, case| {
        let team = team(procs, tree("binomial"), t, faults);
        let report = broadcasts(&team, 2, &[0]);
        every_live_rank_delivers(&report, &[0], &case);
        assert_eq!(report.failed, vec![victim], "{case}");
    });
}

/// With generous T (5 s) and no rank dead: no timeout, and exactly one DATA
/// and one ACK per non-root rank, 2(P - 1) messages per operation (each
/// non-root rank gets its DATA from its parent and acks it; nothing is
/// circumvented and no rank asks with a KEEPALIVE). Then one operation
/// with ranks dead before it (`Fault::Dead`: the team is told) and T =
/// 200 ms, far above the scheduling noise measured here: the dead are
/// routed around as they are reported, no timeout fires, nobody is
/// suspected.
#[test]
fn ftco_fault_free_sends_two_messages_per_rank_and_suspects_only_the_dead() {
    let teams = [(8, "binomial"), (16, "kary:2"), (17, "kary:4")];
    let t = ftco(Duration::from_secs(5));
    fault_free_message_counts(&teams, &[2], |procs, name| {
        let team = team(procs, tree(name), t, FaultSchedule::none());
        let report = broadcasts(&team, 20, &[0, 3]);
        every_live_rank_delivers(&report, &[0, 3], name);
        assert_eq!(report.false_suspicions, 0, "{name}");
        report
    });
    let _serial = serial();
    let dead = [2u32, 5, 6];
    let faults = FaultSchedule::none().kill_group(dead, 0);
    let team = team(
        13,
        tree("binomial"),
        ftco(Duration::from_millis(200)),
        faults,
    );
    let report = broadcasts(&team, 1, &[0]);
    every_live_rank_delivers(&report, &[0], "13 ranks, 3 dead");
    // Known failed from the start: routed around without a timeout.
    assert_eq!((report.timeouts, report.false_suspicions), (0, 0));
}

/// A timeout far below a hop's round trip (1 µs): live ranks are suspected
/// (false suspicions counted), their children get the DATA twice, yet every
/// live rank delivers each operation's value exactly once, fault-free and
/// with ranks dead before and during: every call returns its value (so
/// within the operation timeout: no hang).
#[test]
fn a_very_short_timeout_suspects_live_ranks_yet_delivers_exactly_once() {
    let short = ftco(Duration::from_micros(1));
    short_timeouts_suspect_live_ranks(|procs, faults| {
        let team = team(procs, tree("binomial"), short, faults);
        let report = broadcasts(&team, 10, &[0]);
        let case = format!("P={procs} dead {:?}", report.failed);
        every_live_rank_delivers(&report, &[0], &case);
        report
    });
}

/// The ack tree fault-free: every non-root rank receives the value once
/// from its parent and sends one ACK to it, so an operation sends exactly
/// 2(P - 1) messages; every rank delivers each operation's value.
#[test]
fn the_ack_tree_sends_exactly_two_messages_per_non_root_rank() {
    let teams = [
        (2, "binomial"),
        (7, "kary:2"),
        (16, "binomial"),
        (17, "lame:2"),
    ];
    fault_free_message_counts(&teams, &[2], |procs, name| {
        let team = team(
            procs,
            tree(name),
            BroadcastAlgorithm::AckTree,
            FaultSchedule::none(),
        );
        let roots = [0, procs - 1];
        let report = broadcasts(&team, 10, &roots);
        every_live_rank_delivers(&report, &roots, name);
        assert_eq!(report.ops.len(), 10);
        report
    });
}

/// A leaf that hangs (alive, silent, nobody told) in an ack tree: its
/// parent waits for its ACK, and the team's failure detector, watching the
/// child whose ACK is missing (`Protocol::awaiting`), finds it silent for
/// the failure timeout (100 ms) and reports it failed; the parent stops
/// waiting, and every other rank delivers, none waiting out the operation
/// timeout (20 s: `Error::Timeout` for each ancestor).
#[test]
fn the_ack_tree_stops_waiting_for_a_hung_leaf_once_the_detector_reports_it() {
    let _serial = serial();
    let faults = FaultSchedule::none().at(7, 0, Fault::Hang);
    let team = broadcast_team(8, BroadcastAlgorithm::AckTree, faults)
        .tree(tree("binomial"))
        .failure_timeout(Duration::from_millis(100))
        .build()
        .unwrap();
    let report = broadcasts(&team, 3, &[0]);
    for (rank, results) in report.returned().filter(|&(r, _)| r != 7) {
        for (i, got) in results.iter().enumerate() {
            assert_eq!(got, &Ok(value(0, i as u32)), "rank {rank} op {i}");
        }
    }
    assert_eq!(
        (report.hung.clone(), report.failed.clone()),
        (vec![7], vec![7])
    );
}

/// A rank the team knows failed (`Fault::Dead`, found by every live rank
/// in a first operation, a barrier) is left out of the ack tree as a
/// communicator's failed set would leave it: its children take the value
/// from its parent and ack to it. Every broadcast after delivers to every
/// live rank with exactly 2 messages per live non-root rank: nobody waits
/// for the dead rank's ACK.
#[test]
fn the_ack_tree_routes_around_a_known_failure() {
    let _serial = serial();
    for (procs, dead) in [(8u32, 1u32), (8, 2), (13, 3), (16, 4)] {
        let faults = FaultSchedule::none().kill(dead, 0);
        let team = broadcast_team(procs, BroadcastAlgorithm::AckTree, faults)
            .tree(tree("binomial"))
            .op_timeout(Duration::from_secs(20))
            .build()
            .unwrap();
        let report = team.run(|comm| {
            comm.barrier()?;
            (1..=10)
                .map(|i| {
                    let mut v = if comm.rank() == 0 { value(0, i) } else { 0 };
                    comm.broadcast_into(0, &mut v).map(|()| v)
                })
                .collect::<Result<Vec<u64>, Error>>()
        });
        let case = format!("P={procs} dead={dead}");
        for (rank, got) in report.returned().filter(|&(r, _)| r != dead) {
            let want: Vec<u64> = (1..=10).map(|i| value(0, i)).collect();
            assert_eq!(got, &Ok(want), "{case}: rank {rank}");
        }
        for op in &report.ops[1..] {
            assert_eq!(
                op.messages,
                2 * u64::from(procs - 2),
                "{case}: op {}",
                op.op
            );
            assert_eq!(op.completed, procs - 1, "{case}: op {}", op.op);
        }
    }
}

/// Bad FTCO timeouts are typed configuration errors when the team is built.
#[test]
fn bad_ftco_timeouts_are_typed_errors() {
    bad_timeouts_are_refused(|bad| Team::builder().ranks(4).broadcast(ftco(bad)).build());
}
