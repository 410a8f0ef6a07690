//! Corrected gossip in the simulator (Hoefler et al., IPDPS 2017): one run
//! of the gossip phase and its correction (GOS, OCG and CCG on the
//! [`Gossip`] core, FCG on the [`Fcg`] core, chosen by the plan's
//! correction), and its metrics, named as in the paper's Section IV:
//! latency, messages per node, consistency (the share of live nodes
//! reached), the g-nodes the phase colored, and (FCG) the nodes in SOS.
//! The baseline BIG ([`crate::sim::big`]) reports the same metrics.

use serde::Serialize;

use crate::error::ConfigError;
use crate::protocol::gossip::{Fcg, Gossip, GossipCorrection, GossipPlan, SosCause};
use crate::protocol::random::RandomStream;
use crate::protocol::Protocol;
use crate::sim::bcast::{Token, ROOT, ROOT_VALUE};
use crate::sim::engine::{Trace, NEVER};
use crate::sim::faults::FaultPlan;
use crate::sim::runner::{CollectiveRun, Runner};
use crate::types::{LogP, MessageSize, Rank, Tick};

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
    /// Nodes colored in the gossip phase (the root included; 0 for BIG,
    /// which has no gossip phase).
    pub gossip_colored: u32,
    /// Nodes that entered SOS (FCG, Algorithm 3 lines 8-10; 0 otherwise),
    /// dead ones included.
    pub sos_nodes: u32,
    /// Of those, c-nodes that entered it at their timeout (line 14).
    pub sos_timeouts: u32,
    /// Of those, g-nodes that entered it after a full loop of the ring
    /// (line 28).
    pub sos_loops: u32,
    /// Timeouts fired (FTCO, Section 4 Algorithm 4: a DATA or KEEPALIVE
    /// unanswered past f_timeout; 0 for algorithms without timeouts).
    pub timeouts: u32,
    /// Of the suspicions those timeouts raised, those of a node alive at
    /// the time (FTCO; 0 otherwise).
    pub false_suspicions: u32,
    /// Broken guarantees: a value other than the root's, a value delivered
    /// twice, a live node still busy when nothing was left to happen, a
    /// live node with the value whose core has not finished (not exited,
    /// for FCG).
    pub violations: u32,
}

/// A simulated node's gossip core (GOS, OCG, CCG).
pub type SimGossip<'s> = Gossip<'s, Token>;

/// A simulated node's FCG core.
pub type SimFcg<'s> = Fcg<'s, Token>;

/// What a run asks of a gossip core beyond the protocol contract: how to
/// build it, and what the metrics count.
trait GossipNode<'s>: Protocol<Output = Token> + Sized {
    /// Node `me`'s core, given the root's value (none elsewhere) and its
    /// random stream.
    fn build(plan: &'s GossipPlan, me: Rank, value: Option<Token>, rng: RandomStream) -> Self;
    fn is_g_node(&self) -> bool;
    /// Why the node entered SOS (FCG), if it did: never, for the cores
    /// without SOS.
    fn sos_cause(&self) -> Option<SosCause> {
        None
    }
}

impl<'s> GossipNode<'s> for SimGossip<'s> {
    fn build(plan: &'s GossipPlan, me: Rank, value: Option<Token>, rng: RandomStream) -> Self {
        Gossip::new(plan, ROOT, me, 0, value, rng).expect("ranks come from the plan")
    }

    fn is_g_node(&self) -> bool {
        Gossip::is_g_node(self)
    }
}

impl<'s> GossipNode<'s> for SimFcg<'s> {
    fn build(plan: &'s GossipPlan, me: Rank, value: Option<Token>, rng: RandomStream) -> Self {
        Fcg::new(plan, ROOT, me, 0, value, rng).expect("ranks and correction come from the plan")
    }

    fn is_g_node(&self) -> bool {
        Fcg::is_g_node(self)
    }

    fn sos_cause(&self) -> Option<SosCause> {
        Fcg::sos_cause(self)
    }
}

/// The engine and buffers of the core the plan's correction runs on.
#[derive(Debug)]
enum Runners<'s> {
    Plain(Runner<SimGossip<'s>>),
    Fcg(Runner<SimFcg<'s>>),
}

/// Reusable state to simulate gossip broadcasts of one scenario.
#[derive(Debug)]
pub struct GossipSim<'s> {
    scenario: &'s GossipScenario,
    runner: Runners<'s>,
}

impl<'s> GossipSim<'s> {
    /// A simulator for `scenario`.
    pub fn new(scenario: &'s GossipScenario) -> Self {
        let logp = scenario.logp;
        let runner = match scenario.plan.correction() {
            GossipCorrection::FailureProof { .. } => {
                Runners::Fcg(Runner::new(logp, None, MessageSize::SMALL))
            }
            _ => Runners::Plain(Runner::new(logp, None, MessageSize::SMALL)),
        };
        GossipSim { scenario, runner }
    }

    /// One run: the dead set and every node's peers drawn from `seed`.
    pub fn run(&mut self, seed: u64) -> GossipRun {
        let procs = self.scenario.plan.procs();
        let death = Runner::<SimGossip>::draw(&self.scenario.faults, procs, ROOT, seed);
        self.run_with(seed, &death, &[])
    }

    /// One run with the given death times and send budgets (rank `r` dies
    /// right after its `budget[r]`-th send; empty: none), peers drawn from
    /// `seed`.
    pub fn run_with(&mut self, seed: u64, death: &[Tick], budget: &[u32]) -> GossipRun {
        let plan = &self.scenario.plan;
        match &mut self.runner {
            Runners::Plain(runner) => run_on(runner, plan, seed, death, budget),
            Runners::Fcg(runner) => run_on(runner, plan, seed, death, budget),
        }
    }

    /// The engine's record of the last run.
    pub fn last_trace(&self) -> &Trace<Token> {
        match &self.runner {
            Runners::Plain(runner) => runner.trace(),
            Runners::Fcg(runner) => runner.trace(),
        }
    }
}

/// One run of the cores `C` of `plan`, and its metrics.
fn run_on<'s, C: GossipNode<'s>>(
    runner: &mut Runner<C>,
    plan: &'s GossipPlan,
    seed: u64,
    death: &[Tick],
    budget: &[u32],
) -> GossipRun {
    let cores = (0..plan.procs()).map(|r| {
        let value = (r == ROOT).then_some(ROOT_VALUE);
        C::build(plan, r, value, RandomStream::for_rank(seed, r, 0))
    });
    let run = runner.simulate(cores, death, budget).1;
    let (trace, cores) = (runner.trace(), runner.cores());
    let mut out = broadcast_run(trace, run);
    // A live node with the value must have finished its part.
    out.violations += trace
        .outputs
        .iter()
        .zip(cores)
        .zip(&trace.death)
        .filter(|((o, c), &d)| d == NEVER && o.is_some() && !c.is_finished())
        .count() as u32;
    out.gossip_colored = cores.iter().filter(|c| c.is_g_node()).count() as u32;
    for cause in cores.iter().filter_map(|c| c.sos_cause()) {
        out.sos_nodes += 1;
        out.sos_timeouts += u32::from(cause == SosCause::Timeout);
        out.sos_loops += u32::from(cause == SosCause::Loop);
    }
    out
}

/// The metrics of one simulated broadcast of [`ROOT_VALUE`] from its trace
/// and the runner's base metrics, shared by gossip and BIG: latency (the
/// last live node's delivery), consistency, and a value other than the
/// root's as a violation. `gossip_colored` is left 0 for the caller.
pub(crate) fn broadcast_run(trace: &Trace<Token>, mut run: CollectiveRun) -> GossipRun {
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
    out.violations = run.violations;
    out
}

/// Reusable state to simulate broadcasts of [`ROOT_VALUE`] from [`ROOT`]
/// on one plan, as the baselines (BIG, the ack tree, FTCO) run them: the
/// dead set drawn from the scenario's faults (never the root), every node's
/// core built by `core`, the run measured by [`broadcast_run`].
pub(crate) struct RootedBroadcast<'s, P, C: Protocol> {
    plan: &'s P,
    procs: u32,
    faults: &'s FaultPlan,
    /// Node `me`'s core on the plan, given the root's value (none
    /// elsewhere).
    core: fn(&'s P, Rank, Option<Token>) -> C,
    runner: Runner<C>,
}

/// Like a derived `Debug`, which would not ask the runner's payload and
/// output to be `Debug`.
impl<P: std::fmt::Debug, C: Protocol> std::fmt::Debug for RootedBroadcast<'_, P, C>
where
    Runner<C>: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RootedBroadcast")
            .field("plan", &self.plan)
            .field("procs", &self.procs)
            .field("faults", &self.faults)
            .field("core", &self.core)
            .field("runner", &self.runner)
            .finish()
    }
}

impl<'s, P, C: Protocol<Output = Token>> RootedBroadcast<'s, P, C> {
    /// Broadcasts over `plan` of `procs` nodes in `logp`, nodes dead by
    /// `faults`, node `me` running `core(plan, me, value)`.
    pub(crate) fn new(
        plan: &'s P,
        procs: u32,
        logp: LogP,
        faults: &'s FaultPlan,
        core: fn(&'s P, Rank, Option<Token>) -> C,
    ) -> Self {
        RootedBroadcast {
            plan,
            procs,
            faults,
            core,
            runner: Runner::new(logp, None, MessageSize::SMALL),
        }
    }

    /// One run, the dead set drawn from `seed`.
    pub(crate) fn run(&mut self, seed: u64) -> GossipRun {
        let death = Runner::<C>::draw(self.faults, self.procs, ROOT, seed);
        self.run_with(&death, &[])
    }

    /// One run with the given death times and send budgets.
    pub(crate) fn run_with(&mut self, death: &[Tick], budget: &[u32]) -> GossipRun {
        let (plan, core) = (self.plan, self.core);
        let cores = (0..self.procs).map(|r| core(plan, r, (r == ROOT).then_some(ROOT_VALUE)));
        let (trace, run) = self.runner.simulate(cores, death, budget);
        broadcast_run(trace, run)
    }

    /// The runner: the trace and the cores of the last run.
    pub(crate) fn runner(&self) -> &Runner<C> {
        &self.runner
    }
}

/// How far a broadcast had got at every tick `0..=until` of one run
/// (Figure 1 of the Corrected Gossip paper): the nodes that had the value
/// by then, and the longest chain of consecutive nodes on the ring that
/// did not (dead nodes count as uncolored, as in Eq. 2).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ColoringCurve {
    /// Nodes with the value at the end of each tick.
    pub colored: Vec<u32>,
    /// The longest uncolored chain on the ring at the end of each tick.
    pub longest_gap: Vec<u32>,
}

impl ColoringCurve {
    /// The curve of the run `trace` records, from when each node got its
    /// output.
    pub fn of<O>(trace: &Trace<O>, until: Tick) -> Self {
        let len = usize::try_from(until).unwrap_or(usize::MAX - 1) + 1;
        let at: Vec<Tick> = trace
            .outputs
            .iter()
            .map(|o| o.as_ref().map_or(NEVER, |(t, _)| *t))
            .collect();
        let mut curve = ColoringCurve {
            colored: Vec::with_capacity(len.min(1 << 20)),
            longest_gap: Vec::with_capacity(len.min(1 << 20)),
        };
        for t in 0..=until {
            let colored = at.iter().filter(|&&a| a <= t).count() as u32;
            curve.colored.push(colored);
            curve.longest_gap.push(longest_gap(&at, t));
        }
        curve
    }
}

/// The longest run of consecutive ring positions (wrapping) whose time in
/// `at` is after `t`: all of them if none is colored.
fn longest_gap(at: &[Tick], t: Tick) -> u32 {
    crate::topology::ring::max_gap(at.len() as u32, |r| at[r as usize] <= t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_gap_wraps_around_the_ring() {
        // Colored at 0, 1 and 2 (ticks); the rest never.
        let at = [NEVER, 0, NEVER, NEVER, 2, NEVER, NEVER, 1, NEVER];
        assert_eq!(longest_gap(&at, 0), 8);
        assert_eq!(longest_gap(&at, 1), 5);
        // 8, 0 wrap: 2 long; 2, 3: 2; 5, 6: 2.
        assert_eq!(longest_gap(&at, 2), 2);
        assert_eq!(longest_gap(&[NEVER; 4], 9), 4);
        assert_eq!(longest_gap(&[0; 4], 9), 0);
    }
}
