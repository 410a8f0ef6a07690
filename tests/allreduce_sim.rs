//! Allreduce in the simulator: the semantics of Section 5.1 over small teams,
//! every fault set of at most f ranks and their kill points, including roots
//! that die before and during the operation.

mod common;

use corrected::protocol::bcast::Correction;
use corrected::protocol::reduce::FailureScheme;
use corrected::sim::allreduce::{AllreduceScenario, AllreduceSim};
use corrected::sim::engine::{NEVER, UNLIMITED};
use corrected::sim::ReduceConfig;
use corrected::types::Tick;

fn scenario(procs: u32, f: u32, correction: Correction, detector: Tick) -> AllreduceScenario {
    AllreduceScenario::new(
        ReduceConfig {
            detector,
            // The list scheme: every check also holds each result's list
            // of missing inputs against the dead set, rank by rank.
            scheme: FailureScheme::List,
            ..ReduceConfig::new(procs, f)
        },
        correction,
    )
    .unwrap()
}

#[test]
fn fault_free_is_one_round_of_reduce_plus_broadcast() {
    for procs in 1..=40 {
        for f in 0..=3.min(procs - 1) {
            let sc = scenario(procs, f, Correction::Checked, 5);
            let run = AllreduceSim::new(&sc).run(0);
            assert_eq!(run.violations, 0, "P={procs} f={f}");
            assert!(run.result_consistent);
            assert_eq!(run.rounds, 1);
            if sc.plan().is_pair() {
                // The pair exchange: one message each way.
                assert_eq!(run.messages, 2, "P={procs} f={f}");
            } else {
                // Theorem 7: reduce's messages plus the broadcast's.
                let reduce = sc.plan().reduce().fault_free_messages();
                assert!(run.messages >= reduce + procs as u64 - 1);
            }
        }
    }
}

/// Section 5.1 for P in 2..=17, f in 1..=3, every fault set of at most f
/// ranks (the first roots included) and every kill point of each: every
/// live rank delivers once, the same value, holding every live input and
/// each failed rank's input everywhere or nowhere, and the same list of the
/// inputs it lacks, exactly those (`check::lacks_exactly`).
#[test]
fn section_5_1_exhaustive_small_teams() {
    let mut runs = 0u64;
    let corrections = [Correction::Checked, Correction::CheckedSync];
    for procs in 2..=17u32 {
        for f in 1..=3u32.min(procs - 1) {
            let detector = [1, 6, 20][(procs + f) as usize % 3];
            let sc = scenario(procs, f, corrections[(procs % 2) as usize], detector);
            let mut sim = AllreduceSim::new(&sc);
            let procs_us = procs as usize;
            sim.run_with(&vec![NEVER; procs_us], &[]);
            let sends = sim.last_trace().sends_by_rank.clone();
            let death = vec![NEVER; procs_us];
            for set in common::subsets(procs, f) {
                // Every kill point with one or two victims; with three, each
                // victim's points are stepped by a stride to keep it fast.
                let stride = if set.len() == 3 { 3 } else { 1 };
                common::for_each_kill_point(procs, &set, &sends, stride, |points, budget| {
                    let run = sim.run_with(&death, budget);
                    runs += 1;
                    assert_eq!(
                        run.violations, 0,
                        "P={procs} f={f} detector={detector} killed {set:?} after {points:?} sends"
                    );
                });
            }
        }
    }
    assert!(runs > 50_000, "{runs} runs");
}

#[test]
fn a_dead_first_root_costs_one_retry() {
    let sc = scenario(16, 1, Correction::Checked, 4);
    let death = common::dead_from_start(16, &[0]);
    let run = AllreduceSim::new(&sc).run_with(&death, &[]);
    assert_eq!(run.violations, 0);
    assert_eq!(run.rounds, 2);
    assert!(run.result_consistent);
}

#[test]
fn a_root_dying_during_its_broadcast_still_gives_one_value() {
    // Root 0's sends: none in up-correction (P - 1 = 15 is a multiple of
    // f + 1 = 3? no: 15 = 5·3, so the root is in no group), then its
    // broadcast. Kill it after each number of broadcast sends.
    let sc = scenario(16, 2, Correction::Checked, 9);
    let mut sim = AllreduceSim::new(&sc);
    sim.run_with(&[NEVER; 16], &[]);
    let root_sends = sim.last_trace().sends_by_rank[0];
    assert!(root_sends >= 4);
    let mut retried = 0;
    for after in 1..=root_sends {
        let mut budget = vec![UNLIMITED; 16];
        budget[0] = after;
        let run = sim.run_with(&[NEVER; 16], &budget);
        assert_eq!(run.violations, 0, "root dies after {after} sends");
        assert!(run.result_consistent);
        retried += u32::from(run.rounds > 1);
    }
    assert!(retried > 0, "some kill point must force a second round");
}

/// A pair (f = 1) needs no root: whichever rank dies, at any point, the
/// survivor delivers its own input with the other's whole or not at all,
/// one message delay after the start if both live.
#[test]
fn a_pair_exchanges_once_and_survives_either_death() {
    let sc = scenario(2, 1, Correction::Checked, 3);
    assert!(sc.plan().is_pair());
    let mut sim = AllreduceSim::new(&sc);
    let run = sim.run_with(&[NEVER, NEVER], &[]);
    assert_eq!((run.messages, run.violations), (2, 0));
    assert!(run.result_consistent);
    let logp = ReduceConfig::new(2, 1).logp;
    // One send overhead, the wire, one receive overhead.
    assert_eq!(run.latency, 2 * logp.overhead + logp.latency);
    for victim in 0..2usize {
        for budget in [0u32, 1] {
            let mut budgets = [UNLIMITED; 2];
            budgets[victim] = budget;
            let run = sim.run_with(&[NEVER; 2], &budgets);
            assert_eq!(run.failed, 1);
            assert_eq!(run.violations, 0, "rank {victim} dies after {budget} sends");
            assert!(run.result_consistent, "rank {victim} after {budget} sends");
        }
    }
}

fn star(procs: u32, f: u32, detector: Tick) -> AllreduceScenario {
    AllreduceScenario::star(ReduceConfig {
        detector,
        ..ReduceConfig::new(procs, f)
    })
    .unwrap()
}

/// The star: 2(P - 1) messages fault-free, one round; in LogP the root
/// takes the P - 1 inputs one overhead apart and sends the result one
/// overhead apart, so the last rank has it at o + L (first input in),
/// plus (P - 1) o (inputs taken), plus (P - 1) o (results sent), plus
/// L + o (last result taken). A pair with f >= 1 exchanges instead, as
/// under the tree.
#[test]
fn star_fault_free_sends_two_messages_per_rank() {
    assert!(star(2, 1, 5).plan().is_pair());
    for procs in 3..=40u32 {
        let sc = star(procs, 1, 5);
        assert!(sc.plan().is_star());
        let run = AllreduceSim::new(&sc).run(0);
        assert_eq!(run.violations, 0, "P={procs}");
        assert!(run.result_consistent, "P={procs}");
        assert_eq!(run.rounds, 1);
        assert_eq!(run.messages, 2 * (procs as u64 - 1), "P={procs}");
        let logp = ReduceConfig::new(procs, 1).logp;
        let (o, l, n) = (logp.overhead, logp.latency, procs as Tick - 1);
        assert_eq!(run.latency, o + l + 2 * n * o + l + o, "P={procs}");
    }
}

/// Section 5.1's guarantees for the star, beyond any budget: for P up to
/// 16, every set of up to three victims at every kill point, the first
/// roots included, every live rank delivers the same
/// value, holding every live input and each failed rank's everywhere or
/// nowhere. (The star has no up-correction group a failure could empty.)
#[test]
fn star_survives_any_failures_that_leave_a_rank() {
    let mut runs = 0u64;
    for procs in 2..=16u32 {
        let detector = [1, 6, 20][procs as usize % 3];
        let sc = star(procs, 1, detector);
        let mut sim = AllreduceSim::new(&sc);
        let procs_us = procs as usize;
        sim.run_with(&vec![NEVER; procs_us], &[]);
        let sends = sim.last_trace().sends_by_rank.clone();
        let death = vec![NEVER; procs_us];
        for set in common::subsets(procs, 3.min(procs - 1)) {
            common::for_each_kill_point(procs, &set, &sends, 1, |points, budget| {
                let run = sim.run_with(&death, budget);
                runs += 1;
                assert!(
                    run.result_consistent,
                    "P={procs} detector={detector} killed {set:?} after {points:?} sends"
                );
            });
        }
    }
    assert!(runs > 20_000, "{runs} runs");
}
