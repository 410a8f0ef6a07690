//! What every simulated experiment (broadcast, reduce, allreduce) shares:
//! an engine and buffers kept across runs, the seeded draw of the dead set,
//! and the metrics every run of a collective reports.

use serde::Serialize;

use crate::protocol::Protocol;
use crate::sim::engine::{Engine, Trace, NEVER};
use crate::sim::faults::FaultPlan;
use crate::types::{LogP, MessageSize, Rank, Tick};

/// `with_message_size` and `message_size` for a scenario with a `message:
/// MessageSize` field (or the field at the path given, such as
/// `conditions.message`): every experiment has them alike.
macro_rules! message_size_methods {
    () => {
        $crate::sim::runner::message_size_methods!(message);
    };
    ($($field:ident).+) => {
        /// The same scenario with every message of `size` (LogGP): a send
        /// occupies its process o + (bytes - 1) G. The plans (tree shapes,
        /// the synchronized correction's start) stay those of plain LogP.
        pub fn with_message_size(mut self, size: MessageSize) -> Self {
            self.$($field).+ = size;
            self
        }

        /// Every message's size.
        pub fn message_size(&self) -> MessageSize {
            self.$($field).+
        }
    };
}
pub(crate) use message_size_methods;

/// Reusable state to run cores of one kind many times: the engine's queues,
/// the cores and the trace keep their capacity between runs.
#[derive(Debug)]
pub(crate) struct Runner<C: Protocol> {
    engine: Engine<C::Payload>,
    cores: Vec<C>,
    trace: Trace<C::Output>,
}

impl<C: Protocol> Runner<C> {
    /// A runner for the model `logp`, with a failure detector that tells
    /// every live rank of a death `detector` ticks after it (`None`: no
    /// detector, as corrected broadcast needs none).
    pub(crate) fn new(logp: LogP, detector: Option<Tick>, size: MessageSize) -> Self {
        let mut engine = Engine::new(logp);
        engine.set_detector(detector);
        engine.set_message_size(size);
        Runner {
            engine,
            cores: Vec::new(),
            trace: Trace::default(),
        }
    }

    /// Messages of sizes of their own ([`Engine::set_message_bytes`]).
    pub(crate) fn set_message_bytes(&mut self, bytes: fn(&C::Payload) -> u64, gap_per_byte: Tick) {
        self.engine.set_message_bytes(bytes, gap_per_byte);
    }

    /// The death times of one run of `procs` ranks, drawn from `faults`
    /// with `seed`. Rank `exempt` is never dead before the operation
    /// (`procs` exempts nobody).
    pub(crate) fn draw(faults: &FaultPlan, procs: u32, exempt: Rank, seed: u64) -> Vec<Tick> {
        faults.draw(procs, exempt, seed)
    }

    /// Runs `cores` (one per rank) with the given death times and send
    /// budgets (rank `r` dies right after its `budget[r]`-th send; empty:
    /// no budgets). Returns the trace and the metrics it alone gives:
    /// quiescence, messages, failed ranks, and as violations the duplicate
    /// outputs and cores left unquiescent. Latency, rounds and the result's
    /// checks are the caller's.
    pub(crate) fn simulate(
        &mut self,
        cores: impl Iterator<Item = C>,
        death: &[Tick],
        budget: &[u32],
    ) -> (&Trace<C::Output>, CollectiveRun) {
        self.cores.clear();
        self.cores.extend(cores);
        self.engine
            .run_budgeted(&mut self.cores, death, budget, &mut self.trace);
        let trace = &self.trace;
        let messages: u64 = trace.sends_by_tag.iter().sum();
        let run = CollectiveRun {
            quiescence_latency: trace.quiescence,
            messages,
            messages_per_process: messages as f64 / self.cores.len().max(1) as f64,
            failed: trace.death.iter().filter(|&&d| d != NEVER).count() as u32,
            violations: trace.duplicates as u32 + trace.unquiescent,
            ..CollectiveRun::default()
        };
        (trace, run)
    }

    /// The engine's record of the last run.
    pub(crate) fn trace(&self) -> &Trace<C::Output> {
        &self.trace
    }

    /// The cores of the last run, in rank order.
    pub(crate) fn cores(&self) -> &[C] {
        &self.cores
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
    /// Timeouts fired (FTCO, Algorithm 4: a DATA or KEEPALIVE unanswered
    /// past f_timeout; 0 for algorithms without timeouts).
    pub timeouts: u32,
    /// Of the suspicions those timeouts raised, those of a rank alive at
    /// the time (FTCO; 0 otherwise).
    pub false_suspicions: u32,
    /// Failed checks: a live rank that did not deliver, a duplicate, a
    /// wrong or missing result while at most f ranks failed, a core not
    /// quiescent at the end. Must be 0.
    pub violations: u32,
}
