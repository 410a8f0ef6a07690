//! FTCO reduce and allreduce ([`crate::protocol::ftco::FtcoReduce`]; *Tree-
//! based Fault-Tolerant Collective Operations*, Sections 3-4) in the
//! simulator: the runner and metrics of every reduce and allreduce
//! ([`CollectiveRun`]), plus the timeouts the cores fired and the false
//! suspicions among them, and Definition 3.2 checked on a [`Tally`] that
//! shows which ranks a result counts, and how often. The engine's failure
//! detector stays off: FTCO detects failures by its own timeouts. Root 0,
//! which never fails (Section 2).

use crate::check::{includes_exactly, input_of};
use crate::error::ConfigError;
use crate::protocol::ftco::{FtcoCollective, FtcoOutput, FtcoPlan, FtcoReduce};
use crate::sim::engine::{Trace, NEVER};
use crate::sim::faults::FaultPlan;
use crate::sim::ftco::{false_suspicions, ftco_plan};
use crate::sim::runner::{CollectiveRun, Runner};
use crate::topology::TreeSpec;
use crate::types::{Collective, LogP, MessageSize, Rank, Tick};

/// The root of every simulated FTCO reduce and allreduce.
pub const ROOT: Rank = 0;

/// A simulated rank's input, and a reduction of inputs: the wrapping sum
/// of [`input_of`] (the check of every simulated reduce, [`includes_exactly`])
/// and, for ranks below [`Tally::EXACT`], how many times each rank is
/// counted (4 bits a rank), so that a rank left out or counted twice
/// shows exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// The wrapping sum of the inputs.
    pub sum: u64,
    /// Rank r's count in bits 4r..4r+4, for r < [`Tally::EXACT`].
    pub counts: u128,
}

impl Tally {
    /// Ranks counted exactly.
    pub const EXACT: u32 = 32;

    /// Rank `rank`'s input.
    pub fn input(rank: Rank) -> Self {
        Tally {
            sum: input_of(rank),
            counts: if rank < Self::EXACT {
                1u128 << (4 * rank)
            } else {
                0
            },
        }
    }

    /// The reduction: adds `other` into `acc`.
    pub fn add(acc: &mut Tally, other: &Tally) {
        acc.sum = acc.sum.wrapping_add(other.sum);
        acc.counts = acc.counts.wrapping_add(other.counts);
    }

    /// True if this is the sum of every one of `procs` ranks' inputs but
    /// those of `missing`, each counted once (up to [`Tally::EXACT`]
    /// ranks; the sum alone above).
    pub fn holds_all_but(&self, missing: &[Rank], procs: u32) -> bool {
        let all = (0..procs).fold(0u64, |s, r| s.wrapping_add(input_of(r)));
        let lacks = missing
            .iter()
            .fold(0u64, |s, &r| s.wrapping_add(input_of(r)));
        let sum = all.wrapping_sub(lacks);
        let counted =
            (0..procs.min(Self::EXACT)).all(|r| self.count(r) == u32::from(!missing.contains(&r)));
        sum == self.sum && counted
    }

    /// How many times rank `rank` (< [`Tally::EXACT`]) is counted.
    pub fn count(&self, rank: Rank) -> u32 {
        (self.counts >> (4 * rank) & 0xf) as u32
    }

    /// Definition 3.2 for a result over `death.len()` ranks: no rank
    /// counted twice, nobody dead from the start, and (if `all_live`)
    /// every rank that never failed. Exact up to [`Tally::EXACT`] ranks;
    /// above, the sum must be every live rank's plus some of those that
    /// died during the operation (which cannot tell which part failed).
    pub fn check(&self, death: &[Tick], all_live: bool) -> bool {
        if death.len() as u32 > Self::EXACT {
            return includes_exactly(self.sum, death);
        }
        (0..death.len()).all(|r| {
            let n = self.count(r as Rank);
            match death[r] {
                0 => n == 0,
                NEVER if all_live => n == 1,
                _ => n <= 1,
            }
        })
    }
}

/// An FTCO reduce or allreduce experiment: tree, timeout, model, faults.
#[derive(Clone, Debug)]
pub struct FtcoReduceScenario {
    plan: FtcoPlan,
    kind: FtcoCollective,
    logp: LogP,
    faults: FaultPlan,
}

impl FtcoReduceScenario {
    /// `kind` ([`Collective::Reduce`] or [`Collective::Allreduce`]) over the
    /// tree `spec` of `procs` nodes in `logp`, timeout unit `timeout` ticks
    /// (`None`: [`FtcoPlan::default_timeout`]), nodes failing by `faults`
    /// (never the root, which the paper assumes immune, nor for an allreduce
    /// on `multiroot:K` any of the K roots). Errors on another collective,
    /// bad parameters or a failing root.
    pub fn new(
        kind: Collective,
        spec: TreeSpec,
        procs: u32,
        logp: LogP,
        timeout: Option<Tick>,
        faults: FaultPlan,
    ) -> Result<Self, ConfigError> {
        let kind = match kind {
            Collective::Reduce => FtcoCollective::Reduce,
            Collective::Allreduce => FtcoCollective::Allreduce,
            other => {
                return Err(ConfigError::BadFaults(format!(
                    "FTCO reduce simulates reduce or allreduce, not {other}"
                )))
            }
        };
        let plan = ftco_plan(spec, procs, logp, timeout, &faults)?;
        // The root never fails (Section 2); on the multi-root tree an
        // allreduce's roots are all roots (Section 5.2.1), immune alike.
        let roots = match kind {
            FtcoCollective::Allreduce | FtcoCollective::Barrier => plan.roots(),
            FtcoCollective::Reduce => 1,
        };
        let fixed = faults
            .dead
            .iter()
            .chain(faults.die_at.iter().map(|(r, _)| r));
        if let Some(&r) = fixed.into_iter().find(|&&r| r < roots) {
            return Err(ConfigError::DeadRoot(r));
        }
        Ok(FtcoReduceScenario {
            plan,
            kind,
            logp,
            faults,
        })
    }

    /// The plan every node shares.
    pub fn plan(&self) -> &FtcoPlan {
        &self.plan
    }

    /// Reduce or allreduce.
    pub fn kind(&self) -> FtcoCollective {
        self.kind
    }
}

/// A simulated node's FTCO reduce or allreduce core.
pub type SimFtcoReduce<'s> = FtcoReduce<'s, Tally, fn(&mut Tally, &Tally)>;

/// Reusable state to simulate FTCO reduces or allreduces of one scenario.
#[derive(Debug)]
pub struct FtcoReduceSim<'s> {
    scenario: &'s FtcoReduceScenario,
    runner: Runner<SimFtcoReduce<'s>>,
    result: Option<Tally>,
}

impl<'s> FtcoReduceSim<'s> {
    /// A simulator for `scenario`.
    pub fn new(scenario: &'s FtcoReduceScenario) -> Self {
        FtcoReduceSim {
            scenario,
            runner: Runner::new(scenario.logp, None, MessageSize::SMALL),
            result: None,
        }
    }

    /// One run, the dead set drawn from `seed`. On the multi-root tree an
    /// allreduce's roots never fail: a draw that fails one is drawn again
    /// from a seed derived from `seed` (so the dead set is uniform among
    /// those that spare the roots; it is then not the one other algorithms
    /// draw from `seed`), up to 10^4 times, after which the roots are
    /// spared by hand.
    pub fn run(&mut self, seed: u64) -> CollectiveRun {
        let procs = self.scenario.plan.procs();
        let roots = self.roots();
        let faults = &self.scenario.faults;
        let mut death = Runner::<SimFtcoReduce>::draw(faults, procs, ROOT, seed);
        let mut attempt = 0u64;
        while death[1..roots as usize].iter().any(|&d| d != NEVER) {
            attempt += 1;
            if attempt > 10_000 {
                death[..roots as usize].fill(NEVER);
                break;
            }
            let again = seed ^ attempt.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            death = Runner::<SimFtcoReduce>::draw(faults, procs, ROOT, again);
        }
        self.run_with(&death, &[])
    }

    /// The roots that never fail: those of the multi-root tree in an
    /// allreduce (Section 5.2.1), else the root alone.
    fn roots(&self) -> u32 {
        match self.scenario.kind {
            FtcoCollective::Allreduce | FtcoCollective::Barrier => self.scenario.plan.roots(),
            FtcoCollective::Reduce => 1,
        }
    }

    /// One run with the given death times and send budgets (rank `r` dies
    /// right after its `budget[r]`-th send; empty: no budgets). Latency:
    /// when the root has the result (reduce) or the last live node has it
    /// (allreduce). `result_consistent`: Definition 3.2 ([`Tally::check`])
    /// and, for an allreduce, the same value on every live node. A
    /// violation: a live node without output, a duplicate, a node left
    /// busy, two values, a rank counted twice, or a live rank left out
    /// though no live rank was suspected.
    pub fn run_with(&mut self, death: &[Tick], budget: &[u32]) -> CollectiveRun {
        let sc = self.scenario;
        let plan = &sc.plan;
        let add = Tally::add as fn(&mut Tally, &Tally);
        let cores = (0..plan.procs()).map(|r| {
            FtcoReduce::new(plan, ROOT, r, 0, sc.kind, Tally::input(r), add)
                .expect("ranks come from the plan")
        });
        let (trace, mut run) = self.runner.simulate(cores, death, budget);
        run.rounds = 1;
        let mut result: Option<Tally> = None;
        let mut lacking: Option<&Vec<Rank>> = None;
        let mut agree = true;
        for (r, output) in trace.outputs.iter().enumerate() {
            let live = trace.death[r] == NEVER;
            match output {
                Some((t, FtcoOutput::Value { value: v, missing })) => {
                    if live || r == ROOT as usize {
                        run.latency = run.latency.max(*t);
                        agree &= *result.get_or_insert(*v) == *v;
                        // The same list everywhere, naming exactly the
                        // inputs the result lacks (checked once: every
                        // other node's value and list must equal these).
                        if lacking.is_none() {
                            agree &= v.holds_all_but(missing, plan.procs());
                        }
                        agree &= *lacking.get_or_insert(missing) == missing;
                    }
                }
                Some((_, FtcoOutput::Contributed)) => {}
                None => run.violations += u32::from(live),
            }
        }
        let cores = self.runner.cores();
        let death = &self.runner.trace().death;
        run.timeouts = cores.iter().map(|c| c.timeouts()).sum();
        run.false_suspicions = cores
            .iter()
            .map(|c| false_suspicions(c.suspicions(), death))
            .sum();
        let all_live = run.false_suspicions == 0;
        let once = result.is_some_and(|v| v.check(death, false));
        run.result_consistent = agree && result.is_some_and(|v| v.check(death, true));
        run.violations += u32::from(!agree || !once && death.len() as u32 <= Tally::EXACT);
        run.violations += u32::from(all_live && !run.result_consistent);
        self.result = result;
        run
    }

    /// The result of the last run (the root's).
    pub fn result(&self) -> Option<Tally> {
        self.result
    }

    /// The cores of the last run, in rank order.
    pub fn cores(&self) -> &[SimFtcoReduce<'s>] {
        self.runner.cores()
    }

    /// The engine's record of the last run.
    pub fn last_trace(&self) -> &Trace<FtcoOutput<Tally>> {
        self.runner.trace()
    }
}
