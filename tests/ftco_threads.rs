//! The timeout/ACK baselines on threads, driven by the one driver: the
//! FTCO broadcast (*Tree-based Fault-Tolerant Collective Operations*,
//! Sections 3-4, Definition 3.2 read for a broadcast: with the root alive
//! every live rank delivers the root's value exactly once, whatever fails
//! before or during the operation) with real-time timeouts, and the ack
//! tree (Corrected Trees, Section 5: 2 messages per non-root rank, no fault
//! tolerance).

mod common;

use std::time::{Duration, Instant};

use common::{broadcast_team, broadcasts, serial, value};
use corrected::runtime::{BroadcastAlgorithm, Fault, FaultSchedule, Team, TeamReport};
use corrected::topology::TreeSpec;
use corrected::types::Rank;
use corrected::{ConfigError, Error};

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
/// operation's value exactly once, and timeouts fired for the dead.
#[test]
fn ftco_delivers_to_every_live_rank_with_ranks_dead_before() {
    let _serial = serial();
    let cases: [(u32, &[Rank]); 7] = [
        (2, &[1]),
        (5, &[1]),
        (8, &[1, 2]),
        (8, &[3, 4, 5]),
        (13, &[1, 3, 7]),
        (17, &[1, 2, 4]),
        (17, &[5, 9, 12, 16]),
    ];
    for name in ["binomial", "kary:2"] {
        for (procs, dead) in cases {
            let faults = FaultSchedule::none().kill_group(dead.iter().copied(), 0);
            let team = team(procs, tree(name), ftco(Duration::from_millis(5)), faults);
            let roots: Vec<Rank> = (0..procs).filter(|r| !dead.contains(r)).take(3).collect();
            let report = broadcasts(&team, 3, &roots);
            let case = format!("{name} P={procs} dead={dead:?}");
            every_live_rank_delivers(&report, &roots, &case);
            assert_eq!(report.failed, dead.to_vec(), "{case}");
            assert!(report.timeouts > 0, "{case}: no timeout fired");
        }
    }
}

/// A rank killed during the operation (after its n-th send, n = 0 to 3:
/// before it forwards, between its DATA sends, before or after its ACK),
/// inner ranks and a leaf, at P = 12 and 17, and a second operation with
/// the rank dead: every other live rank delivers both values exactly once.
#[test]
fn ftco_delivers_to_every_live_rank_with_a_rank_killed_during_the_operation() {
    let _serial = serial();
    for (procs, victims) in [(12u32, [1u32, 2, 11]), (17, [1, 3, 16])] {
        for victim in victims {
            for sends in 0..4 {
                let faults = FaultSchedule::none().at(victim, 0, Fault::DieAfterSends(sends));
                let team = team(
                    procs,
                    tree("binomial"),
                    ftco(Duration::from_millis(5)),
                    faults,
                );
                let report = broadcasts(&team, 2, &[0]);
                let case = format!("P={procs} rank {victim} dies after {sends} sends");
                every_live_rank_delivers(&report, &[0], &case);
                assert_eq!(report.failed, vec![victim], "{case}");
            }
        }
    }
}

/// With generous T (5 s) and no rank dead: no timeout, and exactly one DATA
/// and one ACK per non-root rank, 2(P - 1) messages per operation (each
/// non-root rank gets its DATA from its parent and acks it; nothing is
/// circumvented and no rank asks with a KEEPALIVE). Then one operation
/// with ranks dead before it and T = 200 ms, far above the scheduling
/// noise measured here: the timeouts fire, and every suspect is a dead rank
/// (no false suspicion; with several operations in a row a rank still
/// waiting out a timeout in the previous one is falsely suspected by the
/// next, see docs/algorithms.md).
#[test]
fn ftco_fault_free_sends_two_messages_per_rank_and_suspects_only_the_dead() {
    let _serial = serial();
    for (procs, name) in [(8u32, "binomial"), (16, "kary:2"), (17, "kary:4")] {
        let team = team(
            procs,
            tree(name),
            ftco(Duration::from_secs(5)),
            FaultSchedule::none(),
        );
        let report = broadcasts(&team, 20, &[0, 3]);
        every_live_rank_delivers(&report, &[0, 3], name);
        assert_eq!((report.timeouts, report.false_suspicions), (0, 0), "{name}");
        for op in &report.ops {
            assert_eq!(op.messages, 2 * u64::from(procs - 1), "{name} op {}", op.op);
        }
    }
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
    assert!(report.timeouts >= dead.len() as u64, "{}", report.timeouts);
    assert_eq!(report.false_suspicions, 0);
}

/// A timeout far below a hop's round trip (1 µs): live ranks are suspected
/// (false suspicions counted), their children get the DATA twice, yet every
/// live rank delivers each operation's value exactly once, fault-free and
/// with ranks dead before and during: every call returns its value (so
/// within the operation timeout: no hang).
#[test]
fn a_very_short_timeout_suspects_live_ranks_yet_delivers_exactly_once() {
    let _serial = serial();
    let short = ftco(Duration::from_micros(1));
    let mut false_suspicions = 0;
    for (procs, faults) in [
        (8u32, FaultSchedule::none()),
        (16, FaultSchedule::none()),
        (16, FaultSchedule::none().kill_group([3, 6], 0)),
        (
            12,
            FaultSchedule::none()
                .kill(5, 0)
                .at(1, 0, Fault::DieAfterSends(1)),
        ),
    ] {
        let team = team(procs, tree("binomial"), short, faults);
        let report = broadcasts(&team, 10, &[0]);
        let case = format!("P={procs} dead {:?}", report.failed);
        every_live_rank_delivers(&report, &[0], &case);
        assert!(report.timeouts >= report.false_suspicions, "{case}");
        false_suspicions += report.false_suspicions;
    }
    assert!(false_suspicions > 0, "1 µs never suspected a live rank");
}

/// The ack tree fault-free: every non-root rank receives the value once
/// from its parent and sends one ACK to it, so an operation sends exactly
/// 2(P - 1) messages; every rank delivers each operation's value.
#[test]
fn the_ack_tree_sends_exactly_two_messages_per_non_root_rank() {
    let _serial = serial();
    for (procs, name) in [
        (2u32, "binomial"),
        (7, "kary:2"),
        (16, "binomial"),
        (17, "lame:2"),
    ] {
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
        for op in &report.ops {
            assert_eq!(op.messages, 2 * u64::from(procs - 1), "{name} op {}", op.op);
        }
        assert_eq!(report.timeouts, 0);
    }
}

/// The ack tree has no fault tolerance: with a leaf dead its ancestors
/// wait for its ACK until the operation timeout and get a typed
/// [`Error::Timeout`], not a hang; the ranks off that path deliver.
#[test]
fn the_ack_tree_with_a_dead_rank_times_out_its_ancestors() {
    let _serial = serial();
    let timeout = Duration::from_millis(150);
    let faults = FaultSchedule::none().kill(7, 0);
    let team = broadcast_team(8, BroadcastAlgorithm::AckTree, faults)
        .tree(tree("binomial"))
        .op_timeout(timeout)
        .build()
        .unwrap();
    let started = Instant::now();
    let report = broadcasts(&team, 1, &[0]);
    let mut timed_out = 0;
    for (rank, results) in report.returned() {
        match (rank, &results[0]) {
            (7, got) => assert!(matches!(got, Err(Error::Failed(7))), "{got:?}"),
            (_, Err(Error::Timeout { .. })) => timed_out += 1,
            (rank, got) => assert_eq!(got, &Ok(value(0, 0)), "rank {rank}"),
        }
    }
    // The root and at least the dead leaf's parent.
    assert!(timed_out >= 2, "{timed_out} ranks timed out");
    assert!(started.elapsed() < timeout * 20);
}

/// Bad FTCO timeouts are typed configuration errors when the team is built.
#[test]
fn bad_ftco_timeouts_are_typed_errors() {
    for bad in [Duration::ZERO, Duration::from_secs(3601)] {
        let built = Team::builder().ranks(4).broadcast(ftco(bad)).build();
        assert!(
            matches!(built, Err(ConfigError::BadTimeout { .. })),
            "{bad:?}: {built:?}"
        );
    }
}
