//! The FTCO broadcast (*Tree-based Fault-Tolerant Collective Operations*,
//! Sections 3-4, Appendices A and D) in the LogP simulator, L = 2, o = 1
//! unless said: fault-free latency, completion and work; Definition 3.2
//! (every live node gets the root's value, and the run ends) under every
//! dead set of up to 2 nodes (and a sample of 3) before the operation and
//! every single death after each send during it; false suspicions with a
//! timeout below the network latency.

mod common;

use common::{for_each_death_time, for_each_send_death, one_ack_wave};
use corrected::protocol::Tag;
use corrected::sim::{FaultPlan, FtcoScenario, FtcoSim, NEVER};
use corrected::topology::{Shape, TreeSpec};
use corrected::types::{LogP, Tick};

const BINOMIAL: TreeSpec = TreeSpec::interleaved(Shape::Binomial);
const BINARY: TreeSpec = TreeSpec::interleaved(Shape::KAry(2));
const TREES: [TreeSpec; 4] = [
    BINOMIAL,
    BINARY,
    TreeSpec::interleaved(Shape::KAry(4)),
    TreeSpec::interleaved(Shape::Lame(2)),
];

fn paper() -> LogP {
    LogP::new(2, 1).unwrap()
}

/// Each tree (binomial, binary) and number of nodes of `procs`: the
/// simulator of FTCO's broadcast with timeout `t` (`None`: the default),
/// handed to `f`.
fn each_sim(
    procs: impl IntoIterator<Item = u32> + Clone,
    t: Option<Tick>,
    mut f: impl FnMut(TreeSpec, u32, &mut FtcoSim),
) {
    for spec in [BINOMIAL, BINARY] {
        for procs in procs.clone() {
            let sc = FtcoScenario::new(spec, procs, paper(), t, FaultPlan::none()).unwrap();
            let mut sim = FtcoSim::new(&sc);
            f(spec, procs, &mut sim);
        }
    }
}

/// Fault-free, with the default timeout (2(2o + L)): delivery exactly the
/// plain tree's, completion exactly one ACK hop wave after, exactly
/// P - 1 DATA and P - 1 ACK messages, no KEEPALIVE, no timeout.
#[test]
fn fault_free_latency_completion_and_messages() {
    for logp in [paper(), LogP::new(5, 2).unwrap()] {
        for spec in TREES {
            for procs in (1..=40).chain([100, 1000]) {
                let sc = FtcoScenario::new(spec, procs, logp, None, FaultPlan::none()).unwrap();
                let mut sim = FtcoSim::new(&sc);
                let run = sim.run(5);
                let tree = sc.plan().tree();
                let what = format!("{spec} P = {procs} {logp:?}");
                assert_eq!(run.latency, tree.dissemination_time(logp), "{what}");
                assert_eq!(run.quiescence_latency, one_ack_wave(tree, logp), "{what}");
                let by_tag = sim.last_trace().sends_by_tag;
                let n = u64::from(procs - 1);
                assert_eq!(by_tag[Tag::Tree as usize], n, "{what}");
                assert_eq!(by_tag[Tag::Ack as usize], n, "{what}");
                assert_eq!(by_tag[Tag::KeepAlive as usize], 0, "{what}");
                assert_eq!(run.messages, 2 * n, "{what}");
                assert_eq!((run.timeouts, run.false_suspicions), (0, 0), "{what}");
                assert_eq!((run.consistency, run.violations), (1.0, 0), "{what}");
            }
        }
    }
}

/// Definition 3.2 for one run: every live node delivered the root's value
/// (consistency 1, no wrong value or duplicate, nobody left busy).
fn definition_3_2(sim: &mut FtcoSim, death: &[Tick], budget: &[u32], what: &str) -> u32 {
    let run = sim.run_with(death, budget);
    assert_eq!(run.consistency, 1.0, "{what}: {run:?}");
    assert_eq!(run.violations, 0, "{what}: {run:?}");
    assert!(run.quiescence_latency < 10_000, "{what}: {run:?}");
    run.timeouts
}

/// Every dead set of 1 and 2 non-root nodes, and every 5th of 3, dead
/// before the operation, P = 2..=17, binomial and binary trees: every live
/// node gets the value, and a timeout fired whenever someone was dead.
#[test]
fn dead_before_the_operation() {
    let mut runs = 0u32;
    each_sim(2..=17u32, None, |spec, procs, sim| {
        let mut triples = 0u32;
        for mask in 1u32..(1 << (procs - 1)) {
            let size = mask.count_ones();
            if size > 3 {
                continue;
            }
            if size == 3 {
                triples += 1;
                if triples % 5 != 0 {
                    continue;
                }
            }
            let death: Vec<Tick> = (0..procs)
                .map(|r| {
                    if r > 0 && mask >> (r - 1) & 1 == 1 {
                        0
                    } else {
                        NEVER
                    }
                })
                .collect();
            let what = format!("{spec} P = {procs} dead mask {mask:#b}");
            let timeouts = definition_3_2(sim, &death, &[], &what);
            assert!(timeouts > 0, "{what}");
            runs += 1;
        }
    });
    assert_eq!(runs, 2578);
}

/// Every non-root victim dying right after each of its fault-free sends,
/// P = 2..=12, binomial and binary trees: Definition 3.2 holds.
#[test]
fn every_single_death_during_the_operation() {
    let mut runs = 0u32;
    each_sim(2..=12u32, None, |spec, procs, sim| {
        let never = vec![NEVER; procs as usize];
        sim.run_with(&never, &[]);
        let sends = sim.last_trace().sends_by_rank.clone();
        for_each_send_death(procs, &sends, &[], |budget, what| {
            let what = format!("{spec} P = {procs}: {what}");
            definition_3_2(sim, &never, budget, &what);
            runs += 1;
        });
    });
    assert_eq!(runs, 210);
}

/// Every non-root victim dying at every tick of the fault-free run, P = 12.
#[test]
fn every_death_time_during_the_operation() {
    each_sim([12], None, |spec, procs, sim| {
        let end = sim.run(0).quiescence_latency;
        for_each_death_time(procs, 0..=end, |death, what| {
            definition_3_2(sim, death, &[], &format!("{spec}: {what}"));
        });
    });
}

/// A timeout unit of 1 tick, below the network latency (L = 2, a round
/// trip is 8): live nodes are suspected, the DATA goes to their children
/// too, and still every live node gets the value exactly once; with a
/// dead node as well.
#[test]
fn short_timeout_suspects_live_nodes_and_stays_correct() {
    each_sim([17u32, 64], Some(1), |spec, procs, sim| {
        let never = vec![NEVER; procs as usize];
        let run = sim.run_with(&never, &[]);
        let what = format!("{spec} P = {procs}");
        assert!(run.false_suspicions > 0, "{what}: {run:?}");
        assert!(run.timeouts >= run.false_suspicions, "{what}: {run:?}");
        assert!(run.messages > 2 * u64::from(procs - 1), "{what}: {run:?}");
        assert_eq!(
            (run.consistency, run.violations),
            (1.0, 0),
            "{what}: {run:?}"
        );
        let refuted: u32 = sim.cores().iter().map(|c| c.refuted()).sum();
        assert!(refuted > 0 && refuted <= run.false_suspicions, "{what}");
        for victim in [1, 2, procs - 1] {
            let mut death = never.clone();
            death[victim as usize] = 0;
            let what = format!("{what}, {victim} dead");
            definition_3_2(sim, &death, &[], &what);
        }
    });
}

/// Random dead sets (10 % of 256 nodes) on the 4-ary tree: Definition 3.2
/// holds in every run.
#[test]
fn random_faults_at_256() {
    let faults = FaultPlan::rate(0.1);
    let sc = FtcoScenario::new(
        TreeSpec::interleaved(Shape::KAry(4)),
        256,
        paper(),
        None,
        faults,
    )
    .unwrap();
    let mut sim = FtcoSim::new(&sc);
    for seed in 0..50 {
        let run = sim.run(seed);
        assert!(run.failed > 0, "seed {seed}");
        assert_eq!(
            (run.consistency, run.violations),
            (1.0, 0),
            "seed {seed}: {run:?}"
        );
    }
}

/// A disruption (Section 4, "Data Propagation Disruptions"): one node dead
/// before the operation and another dying right after each of its sends,
/// P = 2..=12, binomial and binary trees. A parent that forwarded to a
/// dead child, acked and died leaves its grandchildren waiting: only
/// their KEEPALIVE walk up (Appendix D) reaches the value.
#[test]
fn a_dead_node_and_a_death_during_the_operation() {
    let mut walks = 0u32;
    each_sim(3..=12u32, None, |spec, procs, sim| {
        for dead in 1..procs {
            let mut death = vec![NEVER; procs as usize];
            death[dead as usize] = 0;
            sim.run_with(&death, &[]);
            let sends = sim.last_trace().sends_by_rank.clone();
            for_each_send_death(procs, &sends, &[dead], |budget, what| {
                let what = format!("{spec} P = {procs}: {dead} dead, {what}");
                definition_3_2(sim, &death, budget, &what);
                let keepalives = sim.last_trace().sends_by_tag[Tag::KeepAlive as usize];
                walks += u32::from(keepalives > 0);
            });
        }
    });
    assert!(walks > 0);
}
