//! Up-correction reduce in the simulator: Theorem 5's message count and the
//! semantics of Section 4.1, exhaustively over small teams, fault sets and
//! kill points.

mod common;

use corrected::protocol::reduce::FailureScheme;
use corrected::sim::engine::NEVER;
use corrected::sim::reduce::{fault_free_sends, ReduceConfig, ReduceScenario, ReduceSim};
use corrected::sim::FaultPlan;
use corrected::types::Tick;

fn scenario(procs: u32, f: u32, scheme: FailureScheme, detector: Tick) -> ReduceScenario {
    ReduceScenario::new(ReduceConfig {
        scheme,
        detector,
        ..ReduceConfig::new(procs, f)
    })
    .unwrap()
}

#[test]
fn theorem_5_fault_free_message_count() {
    for procs in (1..=70).chain([127, 128, 129, 1000, 4097]) {
        for f in 0..=5.min(procs - 1) {
            let sc = scenario(procs, f, FailureScheme::Bit, 3);
            let n = procs as u64;
            let f64_ = f as u64;
            let a = (n - 1) % (f64_ + 1) + 1;
            let expected = f64_ * (f64_ + 1) * ((n - 1) / (f64_ + 1)) + a * (a - 1) + (n - 1);
            assert_eq!(sc.plan().fault_free_messages(), expected);
            let run = ReduceSim::new(&sc).run(0);
            assert_eq!(run.messages, expected, "P={procs} f={f}");
            assert_eq!(run.violations, 0, "P={procs} f={f}");
            assert!(run.result_consistent);
        }
    }
}

/// Section 4.1 for every P in 2..=17, f in 1..=3, every set of at most f
/// failed ranks (root included), every kill point of each (before the
/// operation, after each of its sends), three failure schemes and detector
/// delays: the root's result holds every live input once and each dying
/// rank's input once or not at all; every live rank delivers once; nothing
/// hangs. (`ReduceSim` counts any breach as a violation.)
#[test]
fn section_4_1_exhaustive_small_teams() {
    let schemes = [
        FailureScheme::Bit,
        FailureScheme::Count,
        FailureScheme::List,
    ];
    let mut runs = 0u64;
    for procs in 2..=17u32 {
        for f in 1..=3u32.min(procs - 1) {
            for (i, detector) in [1, 4, 17].into_iter().enumerate() {
                let sc = scenario(procs, f, schemes[(procs as usize + i) % 3], detector);
                let sends = fault_free_sends(&sc);
                let mut sim = ReduceSim::new(&sc);
                let death = vec![NEVER; procs as usize];
                for set in common::subsets(procs, f) {
                    // Odometer over each member's kill point 0..=sends.
                    common::for_each_kill_point(procs, &set, &sends, 1, |points, budget| {
                        let run = sim.run_with(&death, budget);
                        runs += 1;
                        assert_eq!(
                            run.violations, 0,
                            "P={procs} f={f} detector={detector} killed {set:?} after {points:?} sends"
                        );
                        let root_lives = sim.last_trace().death[0] == NEVER;
                        assert_eq!(run.result_consistent, root_lives);
                    });
                }
            }
        }
    }
    assert!(runs > 100_000, "{runs} runs");
}

#[test]
fn more_failures_than_f_never_give_a_partial_result() {
    // f = 1, both root children dead: no complete subtree; the root says so.
    let sc = scenario(9, 1, FailureScheme::Count, 2);
    let death = common::dead_from_start(9, &[1, 2]);
    let run = ReduceSim::new(&sc).run_with(&death, &[]);
    assert!(!run.result_consistent);
    assert_eq!(run.violations, 0);
}

#[test]
fn random_dead_sets_within_budget_at_scale() {
    let sc = ReduceScenario::new(ReduceConfig {
        scheme: FailureScheme::List,
        faults: FaultPlan::rate(4.0 / 4096.0),
        detector: 10,
        ..ReduceConfig::new(4096, 4)
    })
    .unwrap();
    let mut sim = ReduceSim::new(&sc);
    for seed in 0..50 {
        let run = sim.run(seed);
        assert_eq!(run.failed, 4);
        assert_eq!(run.violations, 0, "seed {seed}");
        assert!(run.result_consistent, "seed {seed}");
    }
}
