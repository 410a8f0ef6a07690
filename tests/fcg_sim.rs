//! Failure-proof corrected gossip in the simulator (Hoefler et al., IPDPS
//! 2017, Section III-D, Algorithm 3): fault-free it colors every node
//! without SOS and every node exits; Claim 4 (all live nodes deliver or
//! none, with at most f failures during the correction) exhaustively at
//! small N for f = 1 and over pairs of victims for f = 2; Corollary 3 (any
//! dead set fixed before the operation); the SOS path.

use corrected::protocol::gossip::{
    gossip_time, sos_timeout, GossipCorrection, GossipPlan, GossipVariant,
};
use corrected::sim::engine::UNLIMITED;
use corrected::sim::{FaultPlan, GossipRun, GossipScenario, GossipSim, NEVER};
use corrected::types::{LogP, Tick};

const UNIT: LogP = LogP {
    latency: 1,
    overhead: 1,
};

/// L = 2, O = 1, as the paper's N = 4096 case study.
const L2: LogP = LogP {
    latency: 2,
    overhead: 1,
};

fn fcg(procs: u32, logp: LogP, stop: Tick, f: u8, faults: FaultPlan) -> GossipScenario {
    let correction = GossipCorrection::FailureProof {
        f,
        timeout: sos_timeout(procs, logp),
    };
    let plan = GossipPlan::new(procs, logp, stop, correction).unwrap();
    GossipScenario::new(plan, logp, faults).unwrap()
}

/// Claim 4's outcome: no violation (integrity, no duplicate, nobody left
/// busy or unexited) and all live nodes reached or none; all of them if the
/// root lives (nonfaulty liveness).
fn assert_all_or_none(run: &GossipRun, root_alive: bool, what: &str) {
    assert_eq!(run.violations, 0, "{what}: {run:?}");
    assert!(
        run.consistency == 1.0 || (run.consistency == 0.0 && !root_alive),
        "{what}: {run:?}"
    );
}

/// Fault-free, T from Appendix B (Eq. 5) plus one O: every node is
/// colored, nobody enters SOS, every node exits (a live node that has not
/// would be a violation), and no node sends more than the 4(N - 1)
/// correction messages plus its gossip.
#[test]
fn fault_free_fcg_colors_everyone_without_sos() {
    for (procs, logp) in [(1024, UNIT), (4096, L2), (100, L2), (16, UNIT)] {
        for f in [1u8, 2, 3] {
            let stop = gossip_time(procs, logp, 6.93e-7, GossipVariant::Fcg { f }).unwrap();
            let sc = fcg(procs, logp, stop, f, FaultPlan::none());
            let mut sim = GossipSim::new(&sc);
            for seed in 0..20 {
                let run = sim.run(seed);
                let what = format!("N = {procs}, f = {f}, T = {stop}, seed {seed}");
                assert_eq!(run.violations, 0, "{what}: {run:?}");
                assert_eq!(run.consistency, 1.0, "{what}: {run:?}");
                assert_eq!(run.sos_nodes, 0, "{what}: {run:?}");
                let most = sim
                    .last_trace()
                    .sends_by_rank
                    .iter()
                    .max()
                    .copied()
                    .unwrap();
                assert!(
                    Tick::from(most) <= stop + 4 * Tick::from(procs - 1),
                    "{what}: {most} sends"
                );
            }
        }
    }
}

/// The fault-free sends of every rank in run `seed` of `sim`, and when it
/// ended.
fn fault_free(sim: &mut GossipSim, procs: u32, seed: u64) -> (Vec<u32>, Tick) {
    let run = sim.run_with(seed, &vec![NEVER; procs as usize], &[]);
    assert_eq!(run.consistency, 1.0, "seed {seed}: {run:?}");
    (
        sim.last_trace().sends_by_rank.clone(),
        run.quiescence_latency,
    )
}

/// Claim 4 exhaustively, f = 1: N = 8 to 12, L = 2, O = 1, T from 0 (the
/// root alone is a g-node: SOS) to past the gossip's saturation, three
/// seeds each; every victim (the root too) dies after its k-th send for
/// every k up to all its sends, and at every tick up to the fault-free run's
/// end. Every run ends with all live nodes colored, or none, and no
/// violation.
#[test]
fn claim_4_f_1_every_victim_every_death_point() {
    let mut runs = 0u64;
    let mut sos_runs = 0u64;
    for procs in 8..=12u32 {
        for stop in [0, 1, 3, 6, 10] {
            let sc = fcg(procs, L2, stop, 1, FaultPlan::none());
            let mut sim = GossipSim::new(&sc);
            for seed in 0..3 {
                let (sends, end) = fault_free(&mut sim, procs, seed);
                for victim in 0..procs {
                    let v = victim as usize;
                    for k in 1..=sends[v] {
                        let mut budget = vec![UNLIMITED; procs as usize];
                        budget[v] = k;
                        let run = sim.run_with(seed, &vec![NEVER; procs as usize], &budget);
                        let what =
                            format!("N {procs} T {stop} seed {seed}: {victim} after send {k}");
                        assert_all_or_none(&run, victim != 0, &what);
                        runs += 1;
                        sos_runs += u64::from(run.sos_nodes > 0);
                    }
                    for t in 1..=end + 1 {
                        let mut death = vec![NEVER; procs as usize];
                        death[v] = t;
                        let run = sim.run_with(seed, &death, &[]);
                        let what = format!("N {procs} T {stop} seed {seed}: {victim} dies at {t}");
                        assert_all_or_none(&run, victim != 0, &what);
                        runs += 1;
                        sos_runs += u64::from(run.sos_nodes > 0);
                    }
                }
            }
        }
    }
    assert!(runs > 10_000, "{runs} runs");
    assert!(sos_runs > 0, "T = 0 forces SOS");
}
