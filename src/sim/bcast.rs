//! Corrected-tree broadcast in the simulator: one run and its metrics, named
//! as in the paper (Section 4).

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;

use crate::error::ConfigError;
use crate::protocol::bcast::{Bcast, BcastPlan, Correction};
use crate::protocol::correction::Dissemination;
use crate::protocol::Tag;
use crate::sim::engine::{Trace, NEVER};
use crate::sim::faults::FaultPlan;
use crate::sim::runner::{CollectiveRun, Runner};
use crate::sim::stats::Stats;
use crate::topology::{ring, TreeSpec};
use crate::types::{LogP, MessageSize, Rank, Tick};

/// What a simulated broadcast carries: a token, enough to tell the root's
/// value from any other. Small on purpose: at 64K ranks the cores and the
/// messages in flight are megabytes, and each byte of them costs cache
/// misses (a `u64` made a broadcast about 8 % slower).
pub type Token = u16;

// The simulated core's size is the simulator's speed at 64K ranks (see
// docs/benchmarks.md): grow it knowingly.
const _: () = assert!(std::mem::size_of::<Bcast<'static, Token>>() <= 80);

/// The value the root broadcasts in the simulator; any other value delivered
/// is an integrity violation.
pub const ROOT_VALUE: Token = 0xc0de;

/// The root of every simulated broadcast, as in the paper.
pub const ROOT: Rank = 0;

/// A broadcast experiment: plan, model and faults.
#[derive(Clone, Debug)]
pub struct BcastScenario {
    plan: BcastPlan,
    logp: LogP,
    faults: FaultPlan,
    dissemination_time: Tick,
    /// Every message's size (LogGP's G; plain LogP by default).
    message: MessageSize,
}

impl BcastScenario {
    /// A scenario with root 0, as in the paper. Errors on bad parameters.
    pub fn new(
        spec: TreeSpec,
        procs: u32,
        correction: Correction,
        logp: LogP,
        faults: FaultPlan,
    ) -> Result<Self, ConfigError> {
        LogP::new(logp.latency, logp.overhead)?;
        let plan = BcastPlan::for_logp(spec, procs, correction, logp)?;
        faults.validate(procs, ROOT)?;
        Ok(BcastScenario {
            dissemination_time: plan.sync_start(),
            plan,
            logp,
            faults,
            message: MessageSize::SMALL,
        })
    }

    crate::sim::runner::message_size_methods!();

    /// The plan every rank shares.
    pub fn plan(&self) -> &BcastPlan {
        &self.plan
    }

    /// The model.
    pub fn logp(&self) -> LogP {
        self.logp
    }

    /// The fault plan.
    pub fn faults(&self) -> &FaultPlan {
        &self.faults
    }

    /// The tree's fault-free dissemination time, from which correction
    /// latency is measured.
    pub fn dissemination_time(&self) -> Tick {
        self.dissemination_time
    }
}

/// The metrics of one simulated broadcast.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BcastRun {
    /// From the root's first send to the last live rank colored (Section 4).
    pub coloring_latency: Tick,
    /// From the root's first send to the end of all activity.
    pub quiescence_latency: Tick,
    /// Quiescence minus the tree's fault-free dissemination time: the
    /// paper's L_SCC for synchronized checked correction (Table 1).
    pub correction_latency: i64,
    /// All messages sent, divided by P.
    pub messages_per_process: f64,
    /// Correction messages sent, divided by P.
    pub correction_messages_per_process: f64,
    /// Longest run of ranks on the ring not colored by dissemination (dead
    /// ranks included): g_max.
    pub max_gap: u32,
    /// Ranks dead before the operation.
    pub dead: u32,
    /// Live ranks (alive to the end) that never got the value.
    pub uncolored_live: u32,
    /// Live ranks colored over live ranks (1 when none is live): the
    /// Corrected Gossip paper's consistency.
    pub consistency: f64,
    /// Failed semantic checks: wrong value, duplicate delivery, a live rank
    /// left uncolored by a correction that guarantees delivery, a core not
    /// quiescent at the end. Must be 0.
    pub violations: u32,
}

/// Reusable state to simulate broadcasts of one scenario.
#[derive(Debug)]
pub struct BcastSim<'s> {
    scenario: &'s BcastScenario,
    runner: Runner<Bcast<'s, Token>>,
    death: Vec<Tick>,
}

impl<'s> BcastSim<'s> {
    /// A simulator for `scenario`.
    pub fn new(scenario: &'s BcastScenario) -> Self {
        BcastSim {
            scenario,
            // Corrected broadcast needs no failure detector.
            runner: Runner::new(scenario.logp, None, scenario.message),
            death: Vec::new(),
        }
    }

    /// Runs one broadcast; the random dead set is drawn from `seed`.
    pub fn run(&mut self, seed: u64) -> BcastRun {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let sc = self.scenario;
        let procs = sc.plan.procs();
        sc.faults.realize(procs, ROOT, &mut rng, &mut self.death);
        self.run_with_death_times()
    }

    /// Runs one broadcast with the given death times (`NEVER` for live ranks).
    pub fn run_with(&mut self, death: &[Tick]) -> BcastRun {
        self.death.clear();
        self.death.extend_from_slice(death);
        self.run_with_death_times()
    }

    fn run_with_death_times(&mut self) -> BcastRun {
        let sc = self.scenario;
        let plan = &sc.plan;
        let cores = (0..plan.procs()).map(|r| {
            Bcast::new(plan, ROOT, r, 0, (r == ROOT).then_some(ROOT_VALUE))
                .expect("ranks come from the plan")
        });
        let base = self.runner.simulate(cores, &self.death, &[]).1;
        let must_deliver = plan.correction().guarantees_delivery() && sc.faults.static_only();
        measure(
            self.runner.trace(),
            &base,
            self.runner.cores(),
            sc.dissemination_time,
            must_deliver,
        )
    }

    /// The engine's record of the last run (outputs, sends per rank and tag).
    pub fn last_trace(&self) -> &Trace<Token> {
        self.runner.trace()
    }

    /// The cores of the last run, in rank order.
    pub fn cores(&self) -> &[Bcast<'s, Token>] {
        self.runner.cores()
    }
}

/// The metrics of a broadcast run of any core with a dissemination phase
/// ended by correction, from its trace, the runner's base metrics and the
/// cores as they ended. `dissemination_time` is the fault-free
/// dissemination time correction latency is counted from; `must_deliver`
/// says the algorithm guarantees every live rank the value in this run
/// (while the root lives), so a live rank left uncolored is a violation.
pub fn measure<C: Dissemination>(
    trace: &Trace<Token>,
    base: &CollectiveRun,
    cores: &[C],
    dissemination_time: Tick,
    must_deliver: bool,
) -> BcastRun {
    let procs = cores.len() as u32;
    let death = &trace.death;
    let live = |r: Rank| death[r as usize] == NEVER;
    let mut run = BcastRun {
        quiescence_latency: base.quiescence_latency,
        correction_latency: base.quiescence_latency as i64 - dissemination_time as i64,
        messages_per_process: base.messages_per_process,
        correction_messages_per_process: Tag::ALL
            .iter()
            .filter(|t| t.is_correction())
            .map(|&t| trace.sends_by_tag[t as usize])
            .sum::<u64>() as f64
            / procs as f64,
        max_gap: ring::max_gap(procs, |r| {
            death[r as usize] > 0 && cores[r as usize].colored_by_dissemination()
        }),
        dead: death.iter().filter(|&&d| d == 0).count() as u32,
        ..BcastRun::default()
    };
    let mut wrong = 0;
    let mut live_ranks = 0u32;
    for r in 0..procs {
        live_ranks += u32::from(live(r));
        match trace.outputs[r as usize] {
            Some((at, value)) => {
                wrong += u32::from(value != ROOT_VALUE);
                if live(r) {
                    run.coloring_latency = run.coloring_latency.max(at);
                }
            }
            None if live(r) => run.uncolored_live += 1,
            None => {}
        }
    }
    run.consistency = if live_ranks == 0 {
        1.0
    } else {
        f64::from(live_ranks - run.uncolored_live) / f64::from(live_ranks)
    };
    let must_deliver = must_deliver && live(ROOT);
    run.violations = wrong + base.violations + if must_deliver { run.uncolored_live } else { 0 };
    run
}

/// Metrics of many runs, as `corrected sim --json` prints them.
#[derive(Clone, Debug, Serialize)]
pub struct BcastSummary {
    /// P.
    pub procs: u32,
    /// Number of runs.
    pub runs: u64,
    /// Runs completed per second of wall time (all threads).
    pub sims_per_second: f64,
    /// See [`BcastRun`].
    pub coloring_latency: Stats,
    /// See [`BcastRun`].
    pub quiescence_latency: Stats,
    /// See [`BcastRun`].
    pub correction_latency: Stats,
    /// See [`BcastRun`].
    pub messages_per_process: Stats,
    /// See [`BcastRun`].
    pub correction_messages_per_process: Stats,
    /// See [`BcastRun`].
    pub max_gap: Stats,
    /// See [`BcastRun`].
    pub consistency: Stats,
    /// Runs that left a live rank uncolored.
    pub incomplete_runs: u64,
    /// Live ranks left uncolored, over all runs.
    pub uncolored_live_total: u64,
    /// Semantic checks failed, over all runs (must be 0).
    pub violations: u64,
}

impl BcastSummary {
    /// Summarizes `runs` that took `seconds` of wall time.
    pub fn of(procs: u32, runs: &[BcastRun], seconds: f64) -> Self {
        let stat = |f: &dyn Fn(&BcastRun) -> f64| Stats::of(runs.iter().map(f));
        BcastSummary {
            procs,
            runs: runs.len() as u64,
            sims_per_second: runs.len() as f64 / seconds.max(1e-9),
            coloring_latency: stat(&|r| r.coloring_latency as f64),
            quiescence_latency: stat(&|r| r.quiescence_latency as f64),
            correction_latency: stat(&|r| r.correction_latency as f64),
            messages_per_process: stat(&|r| r.messages_per_process),
            correction_messages_per_process: stat(&|r| r.correction_messages_per_process),
            max_gap: stat(&|r| r.max_gap as f64),
            consistency: stat(&|r| r.consistency),
            incomplete_runs: runs.iter().filter(|r| r.uncolored_live > 0).count() as u64,
            uncolored_live_total: runs.iter().map(|r| r.uncolored_live as u64).sum(),
            violations: runs.iter().map(|r| r.violations as u64).sum(),
        }
    }
}
