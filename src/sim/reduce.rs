//! Up-correction reduce in the simulator: one run, its metrics and the
//! semantic checks of Section 4.1 of the reduce paper.
//!
//! Rank `r` contributes [`input_of`]`(r)`, a 64-bit pseudo-random number,
//! and the operation is wrapping addition: a result is right if it equals
//! the sum over every live rank plus some subset of the ranks that died
//! during the operation. A missing or doubled input changes the sum, so the
//! check catches both (with probability 1 - 2^-64 per run).

use serde::Serialize;

use crate::error::Error;
use crate::protocol::reduce::{Contribution, FailureScheme, Reduce, ReduceOutput, ReducePlan};
use crate::sim::engine::{Trace, NEVER, UNLIMITED};
use crate::sim::faults::FaultPlan;
use crate::sim::runner::Runner;
use crate::topology::TreeSpec;
use crate::types::{Collective, LogP, Rank, Tick};

/// The root of every simulated reduce.
pub const ROOT: Rank = 0;

/// Rank `r`'s input in simulated reduces and allreduces (splitmix64 of r).
pub fn input_of(rank: Rank) -> u64 {
    let mut z = (rank as u64)
        .wrapping_add(1)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The simulator's reduction: wrapping addition.
pub fn add(acc: &mut u64, other: &u64) {
    *acc = acc.wrapping_add(*other);
}

/// True if `value` is the sum of every rank with `death == NEVER` plus a
/// subset of those that died during the operation (`0 < death < NEVER`):
/// the inclusion property of reduce (Section 4.1, properties 3 and 4).
pub fn includes_exactly(value: u64, death: &[Tick]) -> bool {
    let live: u64 = (0..death.len())
        .filter(|&r| death[r] == NEVER)
        .fold(0u64, |s, r| s.wrapping_add(input_of(r as Rank)));
    let dying: Vec<u64> = (0..death.len())
        .filter(|&r| death[r] != NEVER && death[r] > 0)
        .map(|r| input_of(r as Rank))
        .collect();
    let rest = value.wrapping_sub(live);
    if dying.len() > 20 {
        // Too many subsets to try: only the two extremes.
        return rest == 0 || rest == dying.iter().fold(0u64, |s, &w| s.wrapping_add(w));
    }
    (0u32..1 << dying.len()).any(|mask| {
        let sum = (0..dying.len())
            .filter(|i| mask >> i & 1 == 1)
            .fold(0u64, |s, i| s.wrapping_add(dying[i]));
        sum == rest
    })
}

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

/// A reduce experiment: plan, model, faults, detector delay.
#[derive(Clone, Debug)]
pub struct ReduceScenario {
    plan: ReducePlan,
    logp: LogP,
    faults: FaultPlan,
    detector: Tick,
}

impl ReduceScenario {
    /// A reduce to root 0 as `config` says. Errors on bad parameters (the
    /// root may not be dead before the operation).
    pub fn new(config: ReduceConfig) -> Result<Self, Error> {
        let c = config;
        LogP::new(c.logp.latency, c.logp.overhead)?;
        let plan = ReducePlan::new(c.tree, c.procs, c.f, c.scheme, c.logp)?;
        c.faults.validate(c.procs, ROOT)?;
        Ok(ReduceScenario {
            plan,
            logp: c.logp,
            faults: c.faults,
            detector: c.detector,
        })
    }

    /// The plan every rank shares.
    pub fn plan(&self) -> &ReducePlan {
        &self.plan
    }

    /// The model.
    pub fn logp(&self) -> LogP {
        self.logp
    }

    /// The detector delay.
    pub fn detector(&self) -> Tick {
        self.detector
    }
}

/// The metrics of one simulated reduce or allreduce.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CollectiveRun {
    /// When the result was known: at the root (reduce), or at the last live
    /// rank (allreduce). If a reduce's root died: the last live rank's part.
    pub latency: Tick,
    /// When all activity ended.
    pub quiescence_latency: Tick,
    /// All messages sent.
    pub messages: u64,
    /// All messages sent, divided by P.
    pub messages_per_process: f64,
    /// Ranks that failed (before or during the operation).
    pub failed: u32,
    /// Rounds (roots) an allreduce took: 1 if the first root lived; 1 for
    /// a reduce.
    pub rounds: u32,
    /// The result satisfies Section 4.1 (reduce: at the root) or 5.1
    /// (allreduce: the same value on every live rank).
    pub result_consistent: bool,
    /// Failed checks: a live rank that did not deliver, a duplicate, a
    /// wrong or missing result while at most f ranks failed, a core not
    /// quiescent at the end. Must be 0.
    pub violations: u32,
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
            runner: Runner::new(scenario.logp, scenario.detector),
        }
    }

    /// Runs one reduce; the random dead set is drawn from `seed`.
    pub fn run(&mut self, seed: u64) -> ReduceRun {
        let sc = self.scenario;
        let death = Runner::<SimReduce>::draw(&sc.faults, sc.plan.procs(), ROOT, seed);
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
                Some((t, ReduceOutput::Root { value, .. })) => {
                    run.latency = *t;
                    run.result_consistent = includes_exactly(*value, &trace.death);
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
