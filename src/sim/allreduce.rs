//! Allreduce in the simulator: up-correction reduce, corrected broadcast,
//! root retry (or the star); one run, its metrics and the checks of
//! Section 5.1.

use crate::check::{add, includes_exactly, input_of, lacks_exactly};
use crate::error::ConfigError;
use crate::protocol::allreduce::{AllreduceCore, AllreduceOutput, AllreducePlan};
use crate::protocol::bcast::{BcastPlan, Correction};
use crate::protocol::reduce::{FailureScheme, ReducePlan};
use crate::sim::engine::{Trace, NEVER};
use crate::sim::reduce::{Conditions, ReduceConfig};
use crate::sim::runner::{CollectiveRun, Runner};
use crate::types::{Collective, LogP, MessageSize, Tick};

/// An allreduce experiment.
#[derive(Clone, Debug)]
pub struct AllreduceScenario {
    plan: AllreducePlan,
    conditions: Conditions,
}

impl AllreduceScenario {
    /// An allreduce as `config` says, its broadcast corrected by
    /// `correction` (which must guarantee delivery). Any rank may fail,
    /// including the first roots.
    pub fn new(config: ReduceConfig, correction: Correction) -> Result<Self, ConfigError> {
        let c = config;
        LogP::new(c.logp.latency, c.logp.overhead)?;
        let reduce = ReducePlan::new(c.tree, c.procs, c.f, c.scheme, c.logp)?;
        let bcast = BcastPlan::for_logp(c.tree, c.procs, correction, c.logp)?;
        Self::with_plan(AllreducePlan::new(reduce, bcast)?, c)
    }

    /// The [star allreduce](AllreducePlan::star) `config` describes (its
    /// tree is not used): every input straight to the round's root, the
    /// result straight back, root retry.
    pub fn star(config: ReduceConfig) -> Result<Self, ConfigError> {
        let c = config;
        LogP::new(c.logp.latency, c.logp.overhead)?;
        Self::with_plan(AllreducePlan::star(c.procs, c.f, c.scheme)?, c)
    }

    /// The scenario of `plan` with `config`'s model, faults and detector.
    fn with_plan(plan: AllreducePlan, config: ReduceConfig) -> Result<Self, ConfigError> {
        let c = config;
        // No rank is special to allreduce: validate as if the root were none.
        c.faults.validate(c.procs, c.procs)?;
        Ok(AllreduceScenario {
            plan,
            conditions: Conditions::of(c),
        })
    }

    crate::sim::runner::message_size_methods!(conditions.message);

    /// The plans every rank shares.
    pub fn plan(&self) -> &AllreducePlan {
        &self.plan
    }
}

/// The metrics of one simulated allreduce.
pub type AllreduceRun = CollectiveRun;

/// A simulated rank's allreduce core.
pub type SimAllreduce<'s> = AllreduceCore<'s, u64, fn(&mut u64, &u64)>;

/// Reusable state to simulate allreduces of one scenario.
#[derive(Debug)]
pub struct AllreduceSim<'s> {
    scenario: &'s AllreduceScenario,
    runner: Runner<SimAllreduce<'s>>,
}

impl<'s> AllreduceSim<'s> {
    /// A simulator for `scenario`.
    pub fn new(scenario: &'s AllreduceScenario) -> Self {
        AllreduceSim {
            scenario,
            runner: scenario.conditions.runner(),
        }
    }

    /// Runs one allreduce; the random dead set is drawn from `seed`.
    pub fn run(&mut self, seed: u64) -> AllreduceRun {
        let sc = self.scenario;
        let procs = sc.plan.procs();
        // Rank `procs` does not exist: every rank may be drawn.
        let death = Runner::<SimAllreduce>::draw(&sc.conditions.faults, procs, procs, seed);
        self.run_with(&death, &[])
    }

    /// Runs one allreduce with the given death times and send budgets.
    pub fn run_with(&mut self, death: &[Tick], budget: &[u32]) -> AllreduceRun {
        let plan = &self.scenario.plan;
        let cores = (0..plan.procs()).map(|r| {
            AllreduceCore::new(
                plan,
                r,
                0,
                Collective::Allreduce,
                input_of(r),
                add as fn(&mut u64, &u64),
            )
            .expect("ranks come from the plan")
        });
        let (trace, mut run) = self.runner.simulate(cores, death, budget);
        let mut agreed: Option<u64> = None;
        let mut agreed_missing = None;
        let mut consistent = true;
        for (r, output) in trace.outputs.iter().enumerate() {
            if trace.death[r] != NEVER {
                continue;
            }
            match output {
                Some((
                    t,
                    AllreduceOutput::Value {
                        value,
                        root,
                        missing,
                    },
                )) => {
                    run.latency = run.latency.max(*t);
                    run.rounds = run.rounds.max(root + 1);
                    consistent &= *agreed.get_or_insert(*value) == *value;
                    // The list, checked against the dead set once (O(P));
                    // every other rank's value and list must equal these.
                    let first = agreed_missing.is_none();
                    consistent &= *agreed_missing.get_or_insert(*missing) == *missing;
                    if first && plan.reduce().scheme() == FailureScheme::List {
                        consistent &=
                            lacks_exactly(*value, missing.count, missing.ranks(), &trace.death);
                    }
                }
                Some((t, AllreduceOutput::TooManyFailures { .. })) => {
                    run.latency = run.latency.max(*t);
                    consistent = false;
                }
                None => consistent = false,
            }
        }
        consistent &= agreed.is_some_and(|v| includes_exactly(v, &trace.death));
        run.result_consistent = consistent;
        if run.failed <= plan.reduce().f() {
            run.violations += u32::from(!consistent);
        }
        run
    }

    /// The engine's record of the last run.
    pub fn last_trace(&self) -> &Trace<AllreduceOutput<u64>> {
        self.runner.trace()
    }
}
