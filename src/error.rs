//! The one error type of the crate. Every message says what to change.

use crate::types::{OpId, Rank};

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
    #[error("bad correction '{spec}': {why} (expected none, opportunistic:D, optimized:D, relaying:D, forwarding:D, checked, checked-sync or delayed:DELAY)")]
    BadCorrection {
        /// The text given.
        spec: String,
        /// What is wrong with it.
        why: String,
    },
    /// The fault budget f leaves no rank to survive.
    #[error("a fault budget of f={f} is too large for {procs} ranks: f must be at most {} (at least one rank must survive)", procs.saturating_sub(1))]
    FaultBudget {
        /// The budget asked for.
        f: u32,
        /// The team size.
        procs: u32,
    },
    /// More ranks failed during a reduce than its fault budget covers: the
    /// root found no subtree with a complete result.
    #[error("operation {op}: more than f={f} ranks failed, no complete result reached the root; raise f (TeamBuilder::fault_budget / --f)")]
    TooManyFailures {
        /// The operation number.
        op: OpId,
        /// The fault budget.
        f: u32,
    },
    /// An allreduce was given reduce and broadcast plans for different teams.
    #[error("the reduce plan is for {reduce} ranks but the broadcast plan for {bcast}; build both for one team")]
    PlanSizes {
        /// Ranks of the reduce plan.
        reduce: u32,
        /// Ranks of the broadcast plan.
        bcast: u32,
    },
    /// A LogP parameter is out of its domain.
    #[error("bad LogP parameter: {0}")]
    BadLogP(String),
    /// A fault description is out of its domain.
    #[error("bad fault plan: {0}")]
    BadFaults(String),
    /// A feature asked for is not available (yet).
    #[error("{0}")]
    Unsupported(String),
    /// A topology could not be read or is inconsistent (sysfs, hwloc).
    #[error("bad topology: {0} (use --synthetic DESC to plan for a machine described by hand)")]
    BadTopology(String),
    /// A synthetic machine description could not be parsed.
    #[error("bad synthetic machine '{spec}': {why} (expected levels outermost first with counts, e.g. 'package:2 l3:4 core:8 pu:2'; a count list such as l3:4,3 is cycled over the parents)")]
    BadSynthetic {
        /// The text given.
        spec: String,
        /// What is wrong with it.
        why: String,
    },
    /// A domain name does not name a domain of the machine.
    #[error("unknown domain '{domain}': {why}")]
    UnknownDomain {
        /// The text given.
        domain: String,
        /// What is wrong with it, and which domains exist.
        why: String,
    },
    /// A placement was asked for more ranks than the machine has PUs.
    #[error("{ranks} ranks do not fit on {pus} processing units (one rank per PU); pass --ranks <= {pus} or a larger machine")]
    NotEnoughPus {
        /// Ranks asked for.
        ranks: u32,
        /// PUs the machine has.
        pus: usize,
    },
    /// A placement policy name could not be parsed.
    #[error("bad placement '{0}' (expected compact, scatter or separated)")]
    BadPlacement(String),
    /// A placed pinning does not have one cpu per rank.
    #[error("the placement has {placed} cpus but the team has {ranks} ranks; place exactly as many ranks as the team has")]
    PlacementSize {
        /// Cpus in the placement.
        placed: usize,
        /// Ranks in the team.
        ranks: u32,
    },
    /// A value does not fit in one message.
    #[error(
        "a value of {words} words does not fit in a message of {max} words; send it in pieces"
    )]
    PayloadTooLarge {
        /// Words the value needs.
        words: usize,
        /// Words a message carries.
        max: usize,
    },
    /// This rank has failed (killed by the fault plan, or died after a
    /// number of sends); it takes part in no more collectives.
    #[error("rank {0} has failed and takes part in no more collectives")]
    Failed(Rank),
    /// This rank hung (alive but silent) by the fault plan.
    #[error("rank {0} hung and took no part while the rest of the team ran")]
    Hung(Rank),
    /// Ranks called different collectives (or the same with different roots)
    /// as the same operation.
    #[error("operation {op}: this rank called {mine} but another rank called {theirs}; every rank must call the same collectives in the same order")]
    Mismatch {
        /// The operation number.
        op: OpId,
        /// What this rank called.
        mine: String,
        /// What a message from another rank says it called.
        theirs: String,
    },
    /// The root of a broadcast failed before this rank got the value.
    #[error("operation {op}: the root {root} failed before this rank got its value")]
    RootFailed {
        /// The operation number.
        op: OpId,
        /// The root.
        root: Rank,
    },
    /// Nothing completed the operation within the team's timeout.
    #[error("operation {op}: no result after {waited:?}; a rank may hang, or ranks called different collectives")]
    Timeout {
        /// The operation number.
        op: OpId,
        /// How long the rank waited.
        waited: std::time::Duration,
    },
}
