//! The one error type of the crate. Every message says what to change.

use crate::types::Rank;

/// Everything a caller of `corrected` can get wrong, or that can go wrong in
/// an operation. No public function panics on bad input; it returns one of these.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A team or simulation was asked for with no ranks.
    #[error("a team needs at least one rank; got 0 (pass --procs/--ranks >= 1)")]
    ZeroRanks,
    /// More ranks than the implementation can number.
    #[error("{procs} ranks is more than the supported maximum of {max}")]
    TooManyRanks {
        /// What was asked for.
        procs: u64,
        /// The limit.
        max: u64,
    },
    /// A root (or another rank argument) is not a member of the team.
    #[error("rank {rank} is out of range for a team of {procs} ranks (valid: 0..={})", procs.saturating_sub(1))]
    RankOutOfRange {
        /// The offending rank.
        rank: Rank,
        /// The team size.
        procs: u32,
    },
    /// The root of a broadcast was listed as dead: the papers assume it alive,
    /// since it initiates the operation.
    #[error(
        "rank {0} is the root and cannot be dead before the operation; pick other ranks to kill"
    )]
    DeadRoot(Rank),
    /// The root of a broadcast did not pass the value to broadcast.
    #[error("rank {0} is the root of the broadcast and must pass the value to send")]
    NoRootValue(Rank),
    /// A tree description could not be parsed or has a bad parameter.
    #[error("bad tree '{spec}': {why} (expected binomial, lame:K, kary:K or optimal, optionally prefixed with inorder-)")]
    BadTree {
        /// The text given.
        spec: String,
        /// What is wrong with it.
        why: String,
    },
    /// A correction description could not be parsed or has a bad parameter.
    #[error("bad correction '{spec}': {why} (expected none, opportunistic:D, optimized:D, checked, checked-sync or delayed:DELAY)")]
    BadCorrection {
        /// The text given.
        spec: String,
        /// What is wrong with it.
        why: String,
    },
    /// A LogP parameter is out of its domain.
    #[error("bad LogP parameter: {0}")]
    BadLogP(String),
    /// A fault description is out of its domain.
    #[error("bad fault plan: {0}")]
    BadFaults(String),
}
