//! The ack tree broadcast ([`crate::protocol::ack_tree`]; Corrected Trees,
//! Section 5, the acknowledged baseline of Figures 6-7) in the simulator:
//! the same runner, fault draws and broadcast metrics as BIG and corrected
//! gossip ([`crate::sim::gossip`]). Its `quiescence_latency` is the
//! completion: when the root holds the last ACK (fault-free; with a dead
//! node the root never completes and quiescence is when activity ended).

use crate::error::ConfigError;
use crate::protocol::ack_tree::{AckTree, AckTreePlan};
use crate::protocol::Protocol;
use crate::sim::bcast::{Token, ROOT};
use crate::sim::engine::Trace;
use crate::sim::faults::FaultPlan;
use crate::sim::gossip::{GossipRun, RootedBroadcast};
use crate::topology::TreeSpec;
use crate::types::{LogP, Tick};

/// An ack tree experiment: tree, model, faults. Root 0.
#[derive(Clone, Debug)]
pub struct AckTreeScenario {
    plan: AckTreePlan,
    logp: LogP,
    faults: FaultPlan,
}

impl AckTreeScenario {
    /// The tree `spec` over `procs` nodes in `logp` with nodes dead by
    /// `faults` (never the root).
    pub fn new(
        spec: TreeSpec,
        procs: u32,
        logp: LogP,
        faults: FaultPlan,
    ) -> Result<Self, ConfigError> {
        let plan = AckTreePlan::new(spec, procs, logp)?;
        faults.validate(procs, ROOT)?;
        Ok(AckTreeScenario { plan, logp, faults })
    }

    /// The plan every node shares.
    pub fn plan(&self) -> &AckTreePlan {
        &self.plan
    }
}

/// A simulated node's ack tree core.
pub type SimAckTree<'s> = AckTree<'s, Token>;

/// Reusable state to simulate ack tree broadcasts of one scenario.
#[derive(Debug)]
pub struct AckTreeSim<'s> {
    sim: RootedBroadcast<'s, AckTreePlan, SimAckTree<'s>>,
}

impl<'s> AckTreeSim<'s> {
    /// A simulator for `scenario`.
    pub fn new(scenario: &'s AckTreeScenario) -> Self {
        let sc = scenario;
        let core = |plan, r, value| {
            AckTree::new(plan, ROOT, r, 0, value).expect("ranks come from the plan")
        };
        AckTreeSim {
            sim: RootedBroadcast::new(&sc.plan, sc.plan.procs(), sc.logp, &sc.faults, core),
        }
    }

    /// One run, the dead set drawn from `seed`.
    pub fn run(&mut self, seed: u64) -> GossipRun {
        self.sim.run(seed)
    }

    /// One run with the given death times and send budgets.
    pub fn run_with(&mut self, death: &[Tick], budget: &[u32]) -> GossipRun {
        self.sim.run_with(death, budget)
    }

    /// Whether the root completed in the last run (every child acked).
    pub fn root_completed(&self) -> bool {
        self.sim.runner().cores()[ROOT as usize].is_finished()
    }

    /// The engine's record of the last run.
    pub fn last_trace(&self) -> &Trace<Token> {
        self.sim.runner().trace()
    }
}
