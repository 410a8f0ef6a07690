//! Every simulated algorithm draws a run's faults alike: on one fault plan
//! and seed, the corrected tree, corrected gossip (CCG, FCG), BIG, FTCO
//! (broadcast, reduce, allreduce), the ack tree and the up-correction
//! reduce run with exactly the death times
//! `FaultPlan::draw` gives (the same dead ranks, the same ranks dying during
//! the operation at the same ticks), so comparisons across algorithms see
//! the same faults (docs/comparison.md).

use corrected::protocol::bcast::Correction;
use corrected::protocol::gossip::{CorrectionChoice, GossipSpec};
use corrected::sim::reduce::ReduceConfig;
use corrected::sim::{
    AckTreeScenario, AckTreeSim, BcastScenario, BcastSim, BigScenario, BigSim, Dying, FaultPlan,
    FtcoReduceScenario, FtcoReduceSim, FtcoScenario, FtcoSim, GossipScenario, GossipSim,
    ReduceScenario, ReduceSim, NEVER,
};
use corrected::topology::{Shape, TreeSpec};
use corrected::types::{Collective, LogP, Tick};

const P: u32 = 512;
const TREE: TreeSpec = TreeSpec::interleaved(Shape::Binomial);

/// One algorithm: runs seed `seed` of `plan` and returns the death times
/// its engine ran with.
type Deaths = Box<dyn Fn(&FaultPlan, u64) -> Vec<Tick>>;

fn algorithms() -> Vec<(&'static str, Deaths)> {
    let logp = LogP::PAPER;
    let tree = |correction: Correction| -> Deaths {
        Box::new(move |plan, seed| {
            let sc = BcastScenario::new(TREE, P, correction, logp, plan.clone()).unwrap();
            let mut sim = BcastSim::new(&sc);
            sim.run(seed);
            sim.last_trace().death.clone()
        })
    };
    let gossip = |correction: CorrectionChoice| -> Deaths {
        Box::new(move |plan, seed| {
            let spec = GossipSpec {
                correction,
                ..GossipSpec::default()
            };
            let chosen = spec.choose(P, logp).unwrap();
            let sc = GossipScenario::new(chosen.plan, logp, plan.clone()).unwrap();
            let mut sim = GossipSim::new(&sc);
            sim.run(seed);
            sim.last_trace().death.clone()
        })
    };
    // FTCO's reduce and allreduce on the binomial tree: one root (0), which
    // the draw spares, so `run(seed)` keeps the plan's draw as it is.
    let ftco_reduction = |kind: Collective| -> Deaths {
        Box::new(move |plan, seed| {
            let sc = FtcoReduceScenario::new(kind, TREE, P, logp, None, plan.clone()).unwrap();
            let mut sim = FtcoReduceSim::new(&sc);
            sim.run(seed);
            sim.last_trace().death.clone()
        })
    };
    vec![
        ("tree checked-sync", tree(Correction::CheckedSync)),
        (
            "tree optimized:4",
            tree(Correction::Optimized { distance: 4 }),
        ),
        ("tree none", tree(Correction::None)),
        ("gossip ccg", gossip(CorrectionChoice::Checked)),
        ("gossip fcg:1", gossip(CorrectionChoice::FailureProof(1))),
        (
            "big",
            Box::new(move |plan, seed| {
                let sc = BigScenario::new(P, logp, plan.clone()).unwrap();
                let mut sim = BigSim::new(&sc);
                sim.run(seed);
                sim.last_trace().death.clone()
            }),
        ),
        (
            "ftco",
            Box::new(move |plan, seed| {
                let sc = FtcoScenario::new(TREE, P, logp, None, plan.clone()).unwrap();
                let mut sim = FtcoSim::new(&sc);
                sim.run(seed);
                sim.last_trace().death.clone()
            }),
        ),
        (
            "ack tree",
            Box::new(move |plan, seed| {
                let sc = AckTreeScenario::new(TREE, P, logp, plan.clone()).unwrap();
                let mut sim = AckTreeSim::new(&sc);
                sim.run(seed);
                sim.last_trace().death.clone()
            }),
        ),
        ("ftco reduce", ftco_reduction(Collective::Reduce)),
        ("ftco allreduce", ftco_reduction(Collective::Allreduce)),
        (
            "reduce f=3",
            Box::new(move |plan, seed| {
                let config = ReduceConfig {
                    faults: plan.clone(),
                    ..ReduceConfig::new(P, 3)
                };
                let sc = ReduceScenario::new(config).unwrap();
                let mut sim = ReduceSim::new(&sc);
                sim.run(seed);
                sim.last_trace().death.clone()
            }),
        ),
    ]
}

#[test]
fn every_algorithm_runs_with_the_death_times_the_plan_draws() {
    let plans = [
        FaultPlan::rate(0.02),
        FaultPlan::dying(3, 30),
        FaultPlan {
            dying: Dying {
                count: 1,
                within: 12,
            },
            ..FaultPlan::rate(0.01)
        },
    ];
    let algorithms = algorithms();
    for plan in &plans {
        for seed in [1, 2, 77] {
            let want = plan.draw(P, 0, seed);
            let failed = want.iter().filter(|&&d| d != NEVER).count();
            let dying = want.iter().filter(|&&d| d != 0 && d != NEVER).count();
            assert_eq!(
                failed,
                plan.random_count(P) as usize + plan.dying.count as usize
            );
            assert_eq!(dying, plan.dying.count as usize);
            for (name, run) in &algorithms {
                assert!(
                    run(plan, seed) == want,
                    "{name}: other deaths, {plan:?} seed {seed}"
                );
            }
        }
    }
}
