//! The ack tree broadcast (Corrected Trees, Section 5: the acknowledged
//! tree baseline of Figures 6-7) in the LogP simulator: fault-free it
//! delivers as fast as the plain tree, completes one ACK gather later, and
//! sends exactly 2(P - 1) messages; a dead node blocks the root's
//! completion.

use corrected::sim::{AckTreeScenario, AckTreeSim, FaultPlan, NEVER};
use corrected::topology::{Shape, Tree, TreeSpec};
use corrected::types::{LogP, Tick};

const TREES: [TreeSpec; 4] = [
    TreeSpec::interleaved(Shape::Binomial),
    TreeSpec::interleaved(Shape::KAry(2)),
    TreeSpec::interleaved(Shape::KAry(4)),
    TreeSpec::interleaved(Shape::Lame(2)),
];

/// When the root holds the last ACK, computed apart from the engine: a
/// node acks once its sends are out (colored at t, k children: t + k·o)
/// and its children's ACKs are received; an ACK arrives o + L after its
/// send starts and each receive takes o, one at a time, in arrival order.
fn gather(tree: &Tree, logp: LogP) -> Tick {
    let at = tree.coloring_times(logp);
    let o = logp.overhead;
    // Children have higher depth; process nodes deepest first.
    let mut order: Vec<u32> = (0..tree.procs()).collect();
    let depth = |mut r: u32| {
        let mut d = 0;
        while let Some(p) = tree.parent(r) {
            r = p;
            d += 1;
        }
        d
    };
    order.sort_by_key(|&r| std::cmp::Reverse(depth(r)));
    let mut done = vec![0; tree.procs() as usize];
    for &r in &order {
        let kids = tree.children(r);
        let mut arrivals: Vec<Tick> = kids
            .iter()
            .map(|&c| done[c as usize] + o + logp.latency)
            .collect();
        arrivals.sort_unstable();
        let mut recv = at[r as usize];
        for a in arrivals {
            recv = recv.max(a) + o;
        }
        let sends_out = at[r as usize] + kids.len() as Tick * o;
        // `done` of a non-root: when its ACK send starts; of the root: its
        // last receive.
        done[r as usize] = if r == 0 { recv } else { sends_out.max(recv) };
    }
    done[0]
}

#[test]
fn fault_free_latency_completion_and_messages() {
    for logp in [LogP::new(2, 1).unwrap(), LogP::new(5, 2).unwrap()] {
        for spec in TREES {
            for procs in (1..=40).chain([100, 1000, 4096]) {
                let sc = AckTreeScenario::new(spec, procs, logp, FaultPlan::none()).unwrap();
                let mut sim = AckTreeSim::new(&sc);
                let run = sim.run(3);
                let tree = sc.plan().tree();
                let what = format!("{spec} P = {procs} {logp:?}");
                assert_eq!(run.messages, 2 * u64::from(procs - 1), "{what}");
                assert_eq!(run.latency, tree.dissemination_time(logp), "{what}");
                assert_eq!(run.quiescence_latency, gather(tree, logp), "{what}");
                if procs > 1 {
                    assert!(run.quiescence_latency >= run.latency + logp.hop(), "{what}");
                }
                assert_eq!((run.consistency, run.violations), (1.0, 0), "{what}");
                assert!(sim.root_completed(), "{what}");
            }
        }
    }
}

/// A dead inner node: its subtree is not reached and the root never
/// completes (no fault tolerance, by design); a dead leaf alone: every
/// live node is reached, still no completion.
#[test]
fn a_dead_node_blocks_completion() {
    let logp = LogP::new(2, 1).unwrap();
    let sc = AckTreeScenario::new(
        TreeSpec::interleaved(Shape::KAry(2)),
        15,
        logp,
        FaultPlan::none(),
    )
    .unwrap();
    let tree = sc.plan().tree();
    let inner = tree.children(0)[0];
    let leaf = (1..15).find(|&r| tree.children(r).is_empty()).unwrap();
    let mut sim = AckTreeSim::new(&sc);
    for (victim, reached_all) in [(inner, false), (leaf, true)] {
        let mut death = vec![NEVER; 15];
        death[victim as usize] = 0;
        let run = sim.run_with(&death, &[]);
        assert_eq!(run.consistency == 1.0, reached_all, "victim {victim}");
        assert!(!sim.root_completed(), "victim {victim}");
        assert_eq!(run.violations, 0);
    }
}
