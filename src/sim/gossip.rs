//! Corrected gossip in the simulator (Hoefler et al., IPDPS 2017): one run
//! of the gossip phase and its correction, and its metrics, named as in
//! the paper's Section IV: latency, messages per node, consistency (the
//! share of live nodes reached) and the g-nodes the phase colored.

use serde::Serialize;

use crate::error::ConfigError;
use crate::protocol::gossip::{Gossip, GossipPlan};
use crate::protocol::random::RandomStream;
use crate::sim::bcast::{Token, ROOT, ROOT_VALUE};
use crate::sim::engine::{Trace, NEVER};
use crate::sim::faults::FaultPlan;
use crate::sim::runner::Runner;
use crate::types::{LogP, MessageSize, Tick};

/// A gossip experiment: plan, model, faults. Root 0, as in the paper.
#[derive(Clone, Debug)]
pub struct GossipScenario {
    plan: GossipPlan,
    logp: LogP,
    faults: FaultPlan,
}

impl GossipScenario {
    /// A scenario of `plan` in `logp` with nodes dead by `faults` (never the
    /// root).
    pub fn new(plan: GossipPlan, logp: LogP, faults: FaultPlan) -> Result<Self, ConfigError> {
        LogP::new(logp.latency, logp.overhead)?;
        faults.validate(plan.procs(), ROOT)?;
        Ok(GossipScenario { plan, logp, faults })
    }

    /// The plan every node shares.
    pub fn plan(&self) -> &GossipPlan {
        &self.plan
    }
}

/// The metrics of one simulated gossip broadcast.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GossipRun {
    /// When the last live node reached got the value.
    pub latency: Tick,
    /// When all activity ended.
    pub quiescence_latency: Tick,
    /// Messages sent.
    pub messages: u64,
    /// Messages per node.
    pub messages_per_process: f64,
    /// Nodes dead (before or during the run).
    pub failed: u32,
    /// Live nodes reached, over live nodes.
    pub consistency: f64,
    /// Nodes colored in the gossip phase (the root included).
    pub gossip_colored: u32,
    /// Broken guarantees: a value other than the root's, a value delivered
    /// twice, a live node still busy when nothing was left to happen.
    pub violations: u32,
}

/// A simulated node's gossip core.
pub type SimGossip<'s> = Gossip<'s, Token>;

/// Reusable state to simulate gossip broadcasts of one scenario.
#[derive(Debug)]
pub struct GossipSim<'s> {
    scenario: &'s GossipScenario,
    runner: Runner<SimGossip<'s>>,
}

impl<'s> GossipSim<'s> {
    /// A simulator for `scenario`.
    pub fn new(scenario: &'s GossipScenario) -> Self {
        GossipSim {
            scenario,
            runner: Runner::new(scenario.logp, None, MessageSize::SMALL),
        }
    }

    /// One run: the dead set and every node's peers drawn from `seed`.
    pub fn run(&mut self, seed: u64) -> GossipRun {
        let procs = self.scenario.plan.procs();
        let death = Runner::<SimGossip>::draw(&self.scenario.faults, procs, ROOT, seed);
        self.run_with(seed, &death, &[])
    }

    /// One run with the given death times and send budgets, peers drawn
    /// from `seed`.
    pub fn run_with(&mut self, seed: u64, death: &[Tick], budget: &[u32]) -> GossipRun {
        let plan = &self.scenario.plan;
        let cores = (0..plan.procs()).map(|r| {
            let value = (r == ROOT).then_some(ROOT_VALUE);
            let rng = RandomStream::for_rank(seed, r, 0);
            Gossip::new(plan, ROOT, r, 0, value, rng).expect("ranks come from the plan")
        });
        let (trace, mut run) = self.runner.simulate(cores, death, budget);
        let mut out = GossipRun {
            quiescence_latency: run.quiescence_latency,
            messages: run.messages,
            messages_per_process: run.messages_per_process,
            failed: run.failed,
            ..GossipRun::default()
        };
        let (mut live, mut reached) = (0u32, 0u32);
        for (r, output) in trace.outputs.iter().enumerate() {
            if trace.death[r] != NEVER {
                continue;
            }
            live += 1;
            if let Some((t, value)) = output {
                reached += 1;
                out.latency = out.latency.max(*t);
                run.violations += u32::from(*value != ROOT_VALUE);
            }
        }
        out.consistency = f64::from(reached) / f64::from(live.max(1));
        out.gossip_colored = self.runner.cores().iter().filter(|c| c.is_g_node()).count() as u32;
        out.violations = run.violations;
        out
    }

    /// The engine's record of the last run.
    pub fn last_trace(&self) -> &Trace<Token> {
        self.runner.trace()
    }
}
