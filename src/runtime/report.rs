//! What a [`Team::run`](crate::runtime::Team::run) reports: each rank's
//! outcome, the failures, and the counters of its operations.

use crate::types::{OpId, Rank};

/// The bytes a rank keeps per operation with operation records on
/// ([`TeamBuilder::op_records`]), until the run ends.
pub const OP_RECORD_BYTES: usize = std::mem::size_of::<crate::driver::OpRecord>();
#[allow(unused_imports)]
use crate::{call::config::BroadcastAlgorithm, runtime::TeamBuilder};

/// What a rank's closure ended with.
#[derive(Debug)]
pub enum RankOutcome<R> {
    /// It returned this.
    Returned(R),
    /// It panicked with this message; the rank was marked failed.
    Panicked(String),
}

impl<R> RankOutcome<R> {
    /// The returned value, if any.
    pub fn returned(&self) -> Option<&R> {
        match self {
            RankOutcome::Returned(r) => Some(r),
            RankOutcome::Panicked(_) => None,
        }
    }
}

/// Counters of one operation over the whole team.
#[derive(Clone, Debug, Default)]
pub struct OpStats {
    /// Operation number.
    pub op: OpId,
    /// Messages sent for it by all ranks (including late ones).
    pub messages: u64,
    /// Ranks that completed it successfully.
    pub completed: u32,
    /// Each completing rank's time inside the call, in nanoseconds.
    pub latency_ns: Vec<u64>,
    /// FTCO timeouts fired in it by all ranks (FTCO, Appendix A: a DATA or
    /// KEEPALIVE unanswered past its timeout); 0 for other algorithms. A
    /// failure the team knows of is routed around without one.
    pub timeouts: u64,
}

/// What happened in one [`Team::run`](crate::runtime::Team::run).
#[derive(Debug)]
pub struct TeamReport<R> {
    /// Each rank's outcome, by rank.
    pub outcomes: Vec<RankOutcome<R>>,
    /// Ranks that failed (killed, died, panicked), in order.
    pub failed: Vec<Rank>,
    /// Ranks that hung (alive but silent) at some point.
    pub hung: Vec<Rank>,
    /// Per-operation counters, by operation number; empty unless the team
    /// was built with [`TeamBuilder::op_records`] on.
    pub ops: Vec<OpStats>,
    /// Pumps of a lent call by another rank's thread that moved something
    /// (`helping`; 0 with helping off).
    pub helped: u64,
    /// Shared segments the run's pool allocated or grew
    /// (`value::segment`): values above 55 bytes live in them.
    /// Segments are reused once free, so a loop of same-sized operations
    /// adds none after its first rounds.
    pub segment_allocations: u64,
    /// Over all gossip broadcasts ([`BroadcastAlgorithm::Gossip`]) and
    /// ranks: the times a rank was a g-node (colored by the gossip phase,
    /// or the root). Divided by the operations, the paper's mean g-node
    /// count.
    pub gossip_colored: u64,
    /// Over all FTCO broadcasts ([`BroadcastAlgorithm::Ftco`]) and ranks:
    /// the timeouts that fired (a DATA or KEEPALIVE unanswered past its
    /// timeout; FTCO, Appendix A), each suspecting one rank.
    pub timeouts: u64,
    /// Of those suspicions, the ones of a rank that was alive (FTCO,
    /// Section 4: a suspected node that had not failed): neither silent
    /// from the operation's start by the fault schedule (dead, hung, or
    /// dead in an earlier operation) nor marked failed in the liveness
    /// registry by the time of the suspicion.
    pub false_suspicions: u64,
    /// With [`TeamBuilder::op_records`] on, over all FTCO broadcasts (FTCO,
    /// Appendix A: what a timeout must cover): for every DATA acknowledged, the time from its send to the moment its
    /// sender took the ACK, in nanoseconds (what FTCO's timeout must
    /// cover; [`crate::protocol::op_clock::OpClock::answer_delays`]), in no
    /// particular order. Empty otherwise.
    pub answer_delays_ns: Vec<u64>,
    /// Ranks whose closure returned while others went on calling
    /// collectives, each with the first operation it never entered. From
    /// that operation on it counts as failed for the others' collectives
    /// (a rank whose program has ended takes part in nothing more: those
    /// collectives leave its input out, or end in `RootFailed` where it
    /// was the root), though it did not fail: it is not in
    /// [`TeamReport::failed`].
    pub returned_early: Vec<(Rank, OpId)>,
}

impl<R> TeamReport<R> {
    /// The values returned by ranks that did not panic (a panicked rank is
    /// in [`TeamReport::failed`]; [`TeamReport::results`] gives every rank).
    pub fn returned(&self) -> impl Iterator<Item = (Rank, &R)> {
        self.outcomes
            .iter()
            .enumerate()
            .filter_map(|(r, o)| o.returned().map(|v| (r as Rank, v)))
    }

    /// Every rank's outcome, by rank, as a `Result`: what its closure
    /// returned, or the message of its panic. Nothing is left out.
    pub fn results(&self) -> impl Iterator<Item = (Rank, Result<&R, &str>)> {
        self.outcomes.iter().enumerate().map(|(r, o)| {
            let got = match o {
                RankOutcome::Returned(v) => Ok(v),
                RankOutcome::Panicked(message) => Err(message.as_str()),
            };
            (r as Rank, got)
        })
    }
}

impl<T, E> TeamReport<Result<T, E>> {
    /// The survivors' values: the ranks whose closure returned `Ok` (a
    /// closure that returns its collectives' errors with `?` returns `Ok`
    /// exactly on the ranks that got every result), by rank.
    pub fn survivors(&self) -> impl Iterator<Item = (Rank, &T)> {
        self.returned()
            .filter_map(|(r, got)| got.as_ref().ok().map(|v| (r, v)))
    }

    /// The one value every survivor returned, if there is at least one
    /// survivor and they all returned the same: what the guarantees promise
    /// a closure of collectives whose results it returns. `None` if no rank
    /// survived or two survivors differ.
    pub fn agreed(&self) -> Option<&T>
    where
        T: PartialEq,
    {
        let mut values = self.survivors().map(|(_, v)| v);
        let first = values.next()?;
        values.all(|v| v == first).then_some(first)
    }
}
