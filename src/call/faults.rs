//! Fault emulation (fail-stop) for every engine: a plan of what goes wrong,
//! for which rank, at which of its calls (or, inside a call, at which
//! operation). The call layer applies it as each
//! call begins (`Caller::begin`), the same way on threads and between
//! MPI processes.

use crate::types::{OpId, Rank};

/// How a rank fails at an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Dead before the operation starts: it never sends again, and messages
    /// to it vanish. The registry knows at once.
    Dead,
    /// Dies right after its n-th send in the operation (n = 0: before it
    /// enters it). If the operation takes fewer sends, the rank dies when
    /// its call ends, after its last send: the point always fires.
    DieAfterSends(u32),
    /// Stays alive but silent from the operation on: sends nothing, answers
    /// nothing, and nobody is told. Its own call returns
    /// [`crate::Error::Hung`] when the rest of the team has finished.
    Hang,
    /// Stops inside the operation for a while, as a descheduled or frozen
    /// thread would, then goes on: no heartbeat, no message in between.
    /// Longer than the failure timeout, the rank is declared failed
    /// meanwhile (a zombie): it then gets [`crate::Error::Failed`] for this
    /// and every later operation, and nothing it would send enters a result.
    Stall(std::time::Duration),
    /// Between MPI processes, one rank each: the process SIGKILLs itself
    /// right after its n-th send in the operation (n = 0: before it enters
    /// it; at its call's end if it sends fewer): a real death that nobody
    /// is told of, at a chosen point inside an operation. A thread team
    /// refuses it ([`crate::ConfigError::Unsupported`]): its ranks share
    /// one process.
    SigkillAfterSends(u32),
}

/// When a planned fault fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum At {
    /// At the rank's n-th collective call (from 0), each call counted once
    /// whatever it takes inside: its first operation.
    Call(u32),
    /// At the engine's operation `op`: one per broadcast, reduce,
    /// allreduce and barrier, two per `broadcast_value`, one per rank of
    /// `agree_failed` (and of the agreement of `shrink`), two per node
    /// team's collective.
    Op(OpId),
}

/// What fails where. A fault is placed at a rank's n-th collective call
/// (counted from 0 within one [`crate::runtime::Team::run`] or one MPI
/// communicator's life: every collective, `broadcast_value`,
/// `agree_failed` and `shrink` included, counts as one), or, for a test
/// that places it inside a call of several operations, at the engine's
/// operation number (the `_op` forms).
#[derive(Clone, Debug, Default)]
pub struct FaultSchedule {
    entries: Vec<(Rank, At, Fault)>,
}

impl FaultSchedule {
    /// No faults.
    pub fn none() -> Self {
        FaultSchedule::default()
    }

    /// `rank` fails in the way `fault` says at its `call`-th collective
    /// call (from 0).
    pub fn at(mut self, rank: Rank, call: u32, fault: Fault) -> Self {
        self.entries.push((rank, At::Call(call), fault));
        self
    }

    /// `rank` is dead from its `call`-th collective call on.
    pub fn kill(self, rank: Rank, call: u32) -> Self {
        self.at(rank, call, Fault::Dead)
    }

    /// Every rank of `group` dies at once, before its `call`-th call (a
    /// failure domain: a core, a cache, a socket).
    pub fn kill_group(mut self, group: impl IntoIterator<Item = Rank>, call: u32) -> Self {
        for r in group {
            self = self.kill(r, call);
        }
        self
    }

    /// [`FaultSchedule::at`] the engine's operation `op`, which may lie
    /// inside a call of several operations.
    pub fn at_op(mut self, rank: Rank, op: OpId, fault: Fault) -> Self {
        self.entries.push((rank, At::Op(op), fault));
        self
    }

    /// [`FaultSchedule::kill`] at the engine's operation `op`.
    pub fn kill_at_op(self, rank: Rank, op: OpId) -> Self {
        self.at_op(rank, op, Fault::Dead)
    }

    /// The fault `rank` suffers as it begins operation `op`, the first of
    /// its `call`-th call (`call`: `None` for a later operation of a call
    /// in progress), if any (the first one listed).
    pub fn lookup(&self, rank: Rank, op: OpId, call: Option<u32>) -> Option<Fault> {
        self.entries
            .iter()
            .find(|&&(r, at, _)| {
                r == rank
                    && match at {
                        At::Op(o) => o == op,
                        At::Call(c) => Some(c) == call,
                    }
            })
            .map(|&(_, _, f)| f)
    }

    /// True if the schedule has `rank` silent for good from the start of
    /// operation `op`: dead, dying before its first send, or hung at `op`
    /// or at an earlier operation, or dying during an earlier one (a
    /// stall is not: the rank goes on). A fault placed at a call counts
    /// from the operation it fired at, `fired_at(rank)` (the engine's
    /// record; `None` if it has not fired). How the runtime tells a
    /// timeout that suspected a silent rank from a false suspicion (FTCO,
    /// Section 4: a rank suspected while alive).
    pub fn silent_from_start(
        &self,
        rank: Rank,
        op: OpId,
        fired_at: impl Fn(Rank) -> Option<OpId>,
    ) -> bool {
        self.entries.iter().any(|&(r, at, f)| {
            let from = match at {
                At::Op(o) => Some(o),
                At::Call(_) => fired_at(r),
            };
            r == rank
                && from.is_some_and(|o| match f {
                    Fault::Stall(_) => false,
                    Fault::Dead
                    | Fault::Hang
                    | Fault::DieAfterSends(0)
                    | Fault::SigkillAfterSends(0) => o <= op,
                    Fault::DieAfterSends(_) | Fault::SigkillAfterSends(_) => o < op,
                })
        })
    }

    /// Whether the schedule has a process SIGKILL itself
    /// ([`Fault::SigkillAfterSends`]).
    pub fn kills_processes(&self) -> bool {
        self.entries
            .iter()
            .any(|&(_, _, f)| matches!(f, Fault::SigkillAfterSends(_)))
    }

    /// Every rank the schedule mentions.
    pub fn ranks(&self) -> impl Iterator<Item = Rank> + '_ {
        self.entries.iter().map(|&(r, _, _)| r)
    }
}
