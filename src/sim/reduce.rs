//! Up-correction reduce in the simulator: one run, its metrics and the
//! semantic checks of Section 4.1 of the reduce paper.
//!
//! Rank `r` contributes [`input_of`]`(r)`, a 64-bit pseudo-random number,
//! and the operation is wrapping addition; [`crate::check`] says when a
//! result is right (the same checks serve the thread runtime's tests and
//! CLI).

use crate::error::ConfigError;
use crate::protocol::reduce::{Contribution, FailureScheme, Reduce, ReduceOutput, ReducePlan};
use crate::protocol::Protocol;
use crate::sim::engine::{Trace, NEVER, UNLIMITED};
use crate::sim::faults::FaultPlan;
use crate::sim::runner::{CollectiveRun, Runner};
use crate::topology::TreeSpec;
use crate::types::{Collective, LogP, MessageSize, Rank, Tick};

/// The root of every simulated reduce.
pub const ROOT: Rank = 0;

use crate::check::lacks_exactly;
pub use crate::check::{add, includes_exactly, input_of};

/// What a reduce or allreduce experiment is made of. [`ReduceConfig::new`]
/// gives the defaults: binomial subtrees, single-bit failure information,
/// the paper's LogP model, no faults, a detector delay of two hops (8 ticks).
#[derive(Clone, Debug)]
pub struct ReduceConfig {
    /// Shape of the I(f)-tree's subtrees (and of an allreduce's broadcast tree).
    pub tree: TreeSpec,
    /// Number of ranks.
    pub procs: u32,
    /// Fault budget.
    pub f: u32,
    /// Failure information sent up the tree.
    pub scheme: FailureScheme,
    /// The LogP model.
    pub logp: LogP,
    /// Which ranks fail, and when.
    pub faults: FaultPlan,
    /// Ticks after a rank dies until every rank is told.
    pub detector: Tick,
}

impl ReduceConfig {
    /// `procs` ranks tolerating `f` failures, everything else default.
    pub fn new(procs: u32, f: u32) -> Self {
        ReduceConfig {
            tree: TreeSpec::interleaved(crate::topology::Shape::Binomial),
            procs,
            f,
            scheme: FailureScheme::Bit,
            logp: LogP::PAPER,
            faults: FaultPlan::none(),
            detector: 8,
        }
    }
}

/// What a reduce or allreduce experiment runs under, beside its plan: the
/// model, the faults, the detector delay and the message size.
#[derive(Clone, Debug)]
pub(crate) struct Conditions {
    pub(crate) logp: LogP,
    pub(crate) faults: FaultPlan,
    pub(crate) detector: Tick,
    /// Every message's size (LogGP's G; plain LogP by default).
    pub(crate) message: MessageSize,
}

impl Conditions {
    /// `config`'s model, faults and detector, every message small (plain
    /// LogP). Checks nothing: the scenario does, in its own order.
    pub(crate) fn of(config: ReduceConfig) -> Self {
        Conditions {
            logp: config.logp,
            faults: config.faults,
            detector: config.detector,
            message: MessageSize::SMALL,
        }
    }

    /// A runner of cores `C` under these conditions, its failure detector
    /// on.
    pub(crate) fn runner<C: Protocol>(&self) -> Runner<C> {
        Runner::new(self.logp, Some(self.detector), self.message)
    }
}

/// A reduce experiment: plan, model, faults, detector delay.
#[derive(Clone, Debug)]
pub struct ReduceScenario {
    plan: ReducePlan,
    conditions: Conditions,
}

impl ReduceScenario {
    /// A reduce to root 0 as `config` says. Errors on bad parameters (the
    /// root may not be dead before the operation).
    pub fn new(config: ReduceConfig) -> Result<Self, ConfigError> {
        let c = config;
        LogP::new(c.logp.latency, c.logp.overhead)?;
        let plan = ReducePlan::new(c.tree, c.procs, c.f, c.scheme, c.logp)?;
        c.faults.validate(c.procs, ROOT)?;
        Ok(ReduceScenario {
            plan,
            conditions: Conditions::of(c),
        })
    }

    crate::sim::runner::message_size_methods!(conditions.message);

    /// The plan every rank shares.
    pub fn plan(&self) -> &ReducePlan {
        &self.plan
    }

    /// The model.
    pub fn logp(&self) -> LogP {
        self.conditions.logp
    }

    /// The detector delay.
    pub fn detector(&self) -> Tick {
        self.conditions.detector
    }
}

/// The metrics of one simulated reduce.
pub type ReduceRun = CollectiveRun;

/// A simulated rank's reduce core: `u64` inputs, wrapping addition.
pub type SimReduce<'s> = Reduce<'s, u64, fn(&mut u64, &u64)>;

/// Reusable state to simulate reduces of one scenario.
#[derive(Debug)]
pub struct ReduceSim<'s> {
    scenario: &'s ReduceScenario,
    runner: Runner<SimReduce<'s>>,
}

impl<'s> ReduceSim<'s> {
    /// A simulator for `scenario`.
    pub fn new(scenario: &'s ReduceScenario) -> Self {
        ReduceSim {
            scenario,
            runner: scenario.conditions.runner(),
        }
    }

    /// Runs one reduce; the random dead set is drawn from `seed`.
    pub fn run(&mut self, seed: u64) -> ReduceRun {
        let sc = self.scenario;
        let death = Runner::<SimReduce>::draw(&sc.conditions.faults, sc.plan.procs(), ROOT, seed);
        self.run_with(&death, &[])
    }

    /// Runs one reduce with the given death times and send budgets (rank
    /// `r` dies right after its `budget[r]`-th send; empty: no budgets).
    pub fn run_with(&mut self, death: &[Tick], budget: &[u32]) -> ReduceRun {
        let plan = &self.scenario.plan;
        let cores = (0..plan.procs()).map(|r| {
            Reduce::new(
                plan,
                ROOT,
                r,
                0,
                Collective::Reduce,
                Contribution::input(input_of(r)),
                add as fn(&mut u64, &u64),
            )
            .expect("ranks come from the plan")
        });
        let (trace, mut run) = self.runner.simulate(cores, death, budget);
        run.rounds = 1;
        let within_budget = run.failed <= plan.f();
        for (r, output) in trace.outputs.iter().enumerate() {
            let live = trace.death[r] == NEVER;
            match output {
                Some((t, ReduceOutput::Root { value, info, .. })) => {
                    run.latency = *t;
                    run.result_consistent = includes_exactly(*value, &trace.death);
                    if plan.scheme() == FailureScheme::List {
                        run.result_consistent &=
                            lacks_exactly(*value, info.count, info.ranks(), &trace.death);
                    }
                    run.violations += u32::from(!run.result_consistent);
                }
                Some((t, ReduceOutput::TooManyFailures { .. })) => {
                    run.latency = *t;
                    run.violations += u32::from(within_budget);
                }
                Some((t, ReduceOutput::Sent)) => {
                    if trace.death[ROOT as usize] != NEVER {
                        run.latency = run.latency.max(*t);
                    }
                }
                None => run.violations += u32::from(live),
            }
        }
        run
    }

    /// The engine's record of the last run.
    pub fn last_trace(&self) -> &Trace<ReduceOutput<u64>> {
        self.runner.trace()
    }
}

/// Sends each rank makes in a fault-free run of `plan`, by rank: the kill
/// points "after each of its sends" of an exhaustive test are `0..=sends[r]`.
pub fn fault_free_sends(scenario: &ReduceScenario) -> Vec<u32> {
    let mut sim = ReduceSim::new(scenario);
    let procs = scenario.plan.procs() as usize;
    sim.run_with(&vec![NEVER; procs], &vec![UNLIMITED; procs]);
    sim.last_trace().sends_by_rank.clone()
}
