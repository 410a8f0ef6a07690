//! The FTCO broadcast ([`crate::protocol::ftco`]; *Tree-based
//! Fault-Tolerant Collective Operations*, Sections 3-4) in the simulator:
//! the same runner, fault draws and broadcast metrics as BIG and corrected
//! gossip ([`crate::sim::gossip`]), plus the timeouts the cores fired and
//! the false suspicions among them (a suspected node that was alive when
//! suspected, from the engine's death times). The engine's failure
//! detector stays off: FTCO detects failures by its own timeouts.

use crate::error::ConfigError;
use crate::protocol::ftco::{Ftco, FtcoPlan};
use crate::sim::bcast::{Token, ROOT};
use crate::sim::engine::Trace;
use crate::sim::faults::FaultPlan;
use crate::sim::gossip::{GossipRun, RootedBroadcast};
use crate::topology::TreeSpec;
use crate::types::{LogP, Rank, Tick};

/// An FTCO experiment: tree, timeout, model, faults. Root 0.
#[derive(Clone, Debug)]
pub struct FtcoScenario {
    plan: FtcoPlan,
    logp: LogP,
    faults: FaultPlan,
}

impl FtcoScenario {
    /// The tree `spec` over `procs` nodes in `logp`, timeout unit `timeout`
    /// ticks (`None`: [`FtcoPlan::default_timeout`]), nodes dead by
    /// `faults` (never the root).
    pub fn new(
        spec: TreeSpec,
        procs: u32,
        logp: LogP,
        timeout: Option<Tick>,
        faults: FaultPlan,
    ) -> Result<Self, ConfigError> {
        let plan = ftco_plan(spec, procs, logp, timeout, &faults)?;
        Ok(FtcoScenario { plan, logp, faults })
    }

    /// The plan every node shares.
    pub fn plan(&self) -> &FtcoPlan {
        &self.plan
    }
}

/// The plan of an FTCO experiment over `procs` nodes, root 0, and the
/// check of its `faults` (never the root dead from the start).
pub(crate) fn ftco_plan(
    spec: TreeSpec,
    procs: u32,
    logp: LogP,
    timeout: Option<Tick>,
    faults: &FaultPlan,
) -> Result<FtcoPlan, ConfigError> {
    let plan = FtcoPlan::new(spec, procs, logp, timeout)?;
    faults.validate(procs, ROOT)?;
    Ok(plan)
}

/// Of `suspicions` (real rank, tick), those of a rank alive at the time
/// (by the engine's `death` times): false suspicions.
pub(crate) fn false_suspicions(
    suspicions: impl Iterator<Item = (Rank, Tick)>,
    death: &[Tick],
) -> u32 {
    suspicions
        .filter(|&(rank, at)| death[rank as usize] > at)
        .count() as u32
}

/// A simulated node's FTCO core.
pub type SimFtco<'s> = Ftco<'s, Token>;

/// Reusable state to simulate FTCO broadcasts of one scenario.
#[derive(Debug)]
pub struct FtcoSim<'s> {
    sim: RootedBroadcast<'s, FtcoPlan, SimFtco<'s>>,
}

impl<'s> FtcoSim<'s> {
    /// A simulator for `scenario`.
    pub fn new(scenario: &'s FtcoScenario) -> Self {
        let sc = scenario;
        let core =
            |plan, r, value| Ftco::new(plan, ROOT, r, 0, value).expect("ranks come from the plan");
        FtcoSim {
            sim: RootedBroadcast::new(&sc.plan, sc.plan.procs(), sc.logp, &sc.faults, core),
        }
    }

    /// One run, the dead set drawn from `seed`.
    pub fn run(&mut self, seed: u64) -> GossipRun {
        let out = self.sim.run(seed);
        self.with_timeouts(out)
    }

    /// One run with the given death times and send budgets.
    pub fn run_with(&mut self, death: &[Tick], budget: &[u32]) -> GossipRun {
        let out = self.sim.run_with(death, budget);
        self.with_timeouts(out)
    }

    /// `out`, the last run's metrics, with the timeouts its cores fired and
    /// the false suspicions among them.
    fn with_timeouts(&self, mut out: GossipRun) -> GossipRun {
        let death = &self.sim.runner().trace().death;
        for core in self.cores() {
            out.timeouts += core.timeouts();
            out.false_suspicions += false_suspicions(core.suspicions(), death);
        }
        out
    }

    /// The cores of the last run, in rank order.
    pub fn cores(&self) -> &[SimFtco<'s>] {
        self.sim.runner().cores()
    }

    /// The engine's record of the last run.
    pub fn last_trace(&self) -> &Trace<Token> {
        self.sim.runner().trace()
    }
}
