//! Fault emulation (fail-stop) for every engine: a plan of what goes wrong,
//! for which rank, at which operation. The call layer applies it as each
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

/// What fails where. Operations are numbered from 0 in the order each rank
/// calls collectives within one [`crate::runtime::Team::run`].
#[derive(Clone, Debug, Default)]
pub struct FaultSchedule {
    entries: Vec<(Rank, OpId, Fault)>,
}

impl FaultSchedule {
    /// No faults.
    pub fn none() -> Self {
        FaultSchedule::default()
    }

    /// `rank` fails in the way `fault` says at operation `op`.
    pub fn at(mut self, rank: Rank, op: OpId, fault: Fault) -> Self {
        self.entries.push((rank, op, fault));
        self
    }

    /// `rank` is dead from operation `op` on.
    pub fn kill(self, rank: Rank, op: OpId) -> Self {
        self.at(rank, op, Fault::Dead)
    }

    /// Every rank of `group` dies at once, before operation `op` (a failure
    /// domain: a core, a cache, a socket).
    pub fn kill_group(mut self, group: impl IntoIterator<Item = Rank>, op: OpId) -> Self {
        for r in group {
            self = self.kill(r, op);
        }
        self
    }

    /// The fault `rank` suffers at `op`, if any (the first one listed).
    pub fn lookup(&self, rank: Rank, op: OpId) -> Option<Fault> {
        self.entries
            .iter()
            .find(|&&(r, o, _)| r == rank && o == op)
            .map(|&(_, _, f)| f)
    }

    /// True if the schedule has `rank` silent for good from the start of
    /// operation `op`: dead, dying before its first send, or hung at `op`
    /// or at an earlier operation, or dying during an earlier one (a
    /// stall is not: the rank goes on). How the runtime tells a timeout
    /// that suspected a silent rank from a false suspicion (FTCO,
    /// Section 4: a rank suspected while alive).
    pub fn silent_from_start(&self, rank: Rank, op: OpId) -> bool {
        self.entries.iter().any(|&(r, o, f)| {
            r == rank
                && match f {
                    Fault::Stall(_) => false,
                    Fault::Dead
                    | Fault::Hang
                    | Fault::DieAfterSends(0)
                    | Fault::SigkillAfterSends(0) => o <= op,
                    Fault::DieAfterSends(_) | Fault::SigkillAfterSends(_) => o < op,
                }
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
