//! BIG, the binomial graph broadcast (Hoefler et al., *Corrected Gossip*,
//! IPDPS 2017, Section IV-B.3), in the LogP simulator: its fault-free
//! latency against the paper's T_BIG, its work, and its weak consistency
//! under fewer than log2 N failures, exhaustively at N = 16.

mod common;

use corrected::protocol::gossip::big::ceil_log2;
use corrected::protocol::gossip::{bfb_latency, big_latency, big_messages};
use corrected::sim::{BigScenario, BigSim, FaultPlan, NEVER};
use corrected::types::LogP;

const PAPER: LogP = LogP::PAPER;

/// Fault-free, our simulator gives (2O + L)⌈log2 N⌉ for N a power of two:
/// the binomial tree's latency, which is BFB's formula, O⌈log2 N⌉ below
/// the paper's T_BIG = (2O + L) log2 P + O log2 P. The first sends of all
/// nodes form a binomial tree, and in our LogP engine a node receives
/// while it sends and delivers on its first receive: the last node's tree
/// message is its first (none of the other log2 N - 1 copies arrives
/// before it), so the copies it receives after it cost it nothing. The
/// paper charges one O for each of them. For other N, at most T_BIG. The
/// work is exactly N⌈log2 N⌉ messages, and every node is reached.
#[test]
fn fault_free_latency_and_work() {
    for logp in [PAPER, LogP::new(1, 1).unwrap(), LogP::new(5, 2).unwrap()] {
        for procs in (2..=64).chain([100, 1000, 1024, 4096, 5000, 16384]) {
            let sc = BigScenario::new(procs, logp, FaultPlan::none()).unwrap();
            let mut sim = BigSim::new(&sc);
            let run = sim.run(1);
            let m = u64::from(ceil_log2(procs));
            assert_eq!(run.messages, big_messages(procs).unwrap(), "N = {procs}");
            assert_eq!(run.messages, u64::from(procs) * m);
            assert_eq!(run.consistency, 1.0);
            assert_eq!(run.violations, 0);
            let paper = big_latency(procs, logp).unwrap();
            assert!(run.latency <= paper, "N = {procs}: {run:?}");
            if procs.is_power_of_two() {
                assert_eq!(
                    run.latency,
                    bfb_latency(procs, logp).unwrap(),
                    "N = {procs}, {logp:?}"
                );
                assert_eq!(paper - run.latency, logp.overhead * m);
            }
        }
    }
}

/// Weak consistency (Section IV-B.3: "can tolerate up to log2 P - 1
/// failures"): at N = 16 every dead set of 1, 2 and 3 nodes (not the
/// root) leaves every live node reached; so does every dead set of 1, 2
/// and 3 at N = 12 and 13 (m = ⌈log2 N⌉ = 4 there too).
#[test]
fn consistent_under_fewer_than_log2_n_failures_exhaustively() {
    for procs in [16u32, 12, 13] {
        let sc = BigScenario::new(procs, PAPER, FaultPlan::none()).unwrap();
        let mut sim = BigSim::new(&sc);
        let most = 3;
        let mut sets = 0;
        for mask in 1u32..(1 << (procs - 1)) {
            if mask.count_ones() > most {
                continue;
            }
            // Bit i kills node i + 1: never the root.
            let run = sim.run_with(&common::dead_set(procs, mask), &[]);
            assert_eq!(run.consistency, 1.0, "N = {procs}, dead mask {mask:#b}");
            assert_eq!(run.violations, 0);
            assert_eq!(run.failed, mask.count_ones());
            sets += 1;
        }
        let k = procs - 1;
        let expected = k + k * (k - 1) / 2 + k * (k - 1) * (k - 2) / 6;
        assert_eq!(sets, expected, "N = {procs}");
    }
}

/// Failures during the run (a node dies right after its first send) are
/// survived too while fewer than log2 N fail, and with log2 N dead, the
/// right ones, a node is cut off: the bound is tight.
#[test]
fn failures_during_the_run_and_a_tight_bound() {
    let procs = 16;
    let sc = BigScenario::new(procs, PAPER, FaultPlan::none()).unwrap();
    let mut sim = BigSim::new(&sc);
    let never = vec![NEVER; procs as usize];
    for a in 1..procs {
        for b in a + 1..procs {
            let mut budget = vec![u32::MAX; procs as usize];
            budget[a as usize] = 1;
            budget[b as usize] = 1;
            let run = sim.run_with(&never, &budget);
            assert_eq!(run.consistency, 1.0, "{a} and {b} die after one send");
            assert_eq!(run.failed, 2);
        }
    }
    // Node 15's in-neighbours are 14, 13, 11 and 7: with all four dead it
    // cannot be reached.
    let mut death = never.clone();
    for r in [14, 13, 11, 7] {
        death[r] = 0;
    }
    let run = sim.run_with(&death, &[]);
    assert_eq!(run.consistency, 11.0 / 12.0);
}

/// Random dead sets of 3 at N = 4096 (the table of Figure 7's f = 3):
/// always consistent, and the work drops only by the dead nodes' sends.
#[test]
fn three_random_failures_at_4096() {
    let procs = 4096;
    let sc = BigScenario::new(procs, PAPER, FaultPlan::rate(3.0 / 4096.0)).unwrap();
    let mut sim = BigSim::new(&sc);
    for seed in 0..20 {
        let run = sim.run(seed);
        assert_eq!(run.failed, 3);
        assert_eq!(run.consistency, 1.0, "seed {seed}");
        assert_eq!(run.messages, (4096 - 3) * 12, "seed {seed}");
        assert!(
            run.latency <= big_latency(procs, PAPER).unwrap() + 8,
            "{run:?}"
        );
    }
}

#[test]
fn bad_scenarios_are_typed_errors() {
    assert!(BigScenario::new(1, PAPER, FaultPlan::none()).is_err());
    assert!(BigScenario::new(8, PAPER, FaultPlan::dead([0])).is_err());
    assert!(BigScenario::new(8, PAPER, FaultPlan::dead([8])).is_err());
    let bad = LogP {
        latency: 0,
        overhead: 1,
    };
    assert!(BigScenario::new(8, bad, FaultPlan::none()).is_err());
}
