//! BIG, the binomial graph broadcast (Hoefler et al., *Corrected Gossip*,
//! IPDPS 2017, Section IV-B.3), in the simulator: the same runner, fault
//! draws and metrics as corrected gossip ([`crate::sim::gossip`]), so the
//! baseline and the gossip variants are measured alike (the paper models
//! BIG analytically; we simulate it too).

use crate::error::ConfigError;
use crate::protocol::gossip::{Big, BigPlan};
use crate::sim::bcast::{Token, ROOT};
use crate::sim::engine::Trace;
use crate::sim::faults::FaultPlan;
use crate::sim::gossip::{GossipRun, RootedBroadcast};
use crate::types::{LogP, Tick};

/// A BIG experiment: N nodes, model, faults. Root 0.
#[derive(Clone, Debug)]
pub struct BigScenario {
    plan: BigPlan,
    logp: LogP,
    faults: FaultPlan,
}

impl BigScenario {
    /// A scenario of `procs >= 2` nodes in `logp` with nodes dead by
    /// `faults` (never the root).
    pub fn new(procs: u32, logp: LogP, faults: FaultPlan) -> Result<Self, ConfigError> {
        let plan = BigPlan::new(procs)?;
        LogP::new(logp.latency, logp.overhead)?;
        faults.validate(procs, ROOT)?;
        Ok(BigScenario { plan, logp, faults })
    }

    /// The graph every node shares.
    pub fn plan(&self) -> &BigPlan {
        &self.plan
    }
}

/// A simulated node's BIG core.
pub type SimBig<'s> = Big<'s, Token>;

/// Reusable state to simulate BIG broadcasts of one scenario.
#[derive(Debug)]
pub struct BigSim<'s> {
    sim: RootedBroadcast<'s, BigPlan, SimBig<'s>>,
}

impl<'s> BigSim<'s> {
    /// A simulator for `scenario`.
    pub fn new(scenario: &'s BigScenario) -> Self {
        let sc = scenario;
        let core =
            |plan, r, value| Big::new(plan, ROOT, r, 0, value).expect("ranks come from the plan");
        BigSim {
            sim: RootedBroadcast::new(&sc.plan, sc.plan.procs(), sc.logp, &sc.faults, core),
        }
    }

    /// One run, the dead set drawn from `seed`. `gossip_colored` is 0.
    pub fn run(&mut self, seed: u64) -> GossipRun {
        self.sim.run(seed)
    }

    /// One run with the given death times and send budgets (BIG draws
    /// nothing else).
    pub fn run_with(&mut self, death: &[Tick], budget: &[u32]) -> GossipRun {
        self.sim.run_with(death, budget)
    }

    /// The engine's record of the last run.
    pub fn last_trace(&self) -> &Trace<Token> {
        self.sim.runner().trace()
    }
}
