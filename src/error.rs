//! The crate's two error types.
//!
//! * [`ConfigError`]: a configuration or a description that cannot be used,
//!   found before anything runs. Parsers (`FromStr::Err` of
//!   [`TreeSpec`](crate::topology::TreeSpec),
//!   [`Correction`](crate::protocol::bcast::Correction),
//!   [`FailureScheme`](crate::protocol::reduce::FailureScheme),
//!   [`Policy`](crate::placement::Policy),
//!   [`DomainRef`](crate::placement::DomainRef) and
//!   [`Level`](crate::placement::Level)), [`LogP::new`](crate::types::LogP::new),
//!   tree and plan constructors ([`Tree::build`](crate::topology::Tree::build),
//!   [`BcastPlan::for_logp`](crate::protocol::bcast::BcastPlan::for_logp),
//!   [`ReducePlan::new`](crate::protocol::reduce::ReducePlan::new),
//!   [`AllreducePlan::new`](crate::protocol::allreduce::AllreducePlan::new)),
//!   [`TeamBuilder::build`](crate::runtime::TeamBuilder::build), the
//!   simulator's scenario constructors and fault plans, and the machine,
//!   placement and domain-fault functions of [`placement`](crate::placement)
//!   return `Result<_, ConfigError>`. Fix the input and try again; nothing
//!   has started.
//! * [`Error`]: what a collective call returns: the outcome of the
//!   operation when it did not deliver ([`Error::Failed`],
//!   [`Error::Timeout`], [`Error::RootFailed`], [`Error::Mismatch`], ...)
//!   and the errors of the call's own arguments ([`Error::RankOutOfRange`],
//!   [`Error::LengthMismatch`], ...). The [`Collectives`](crate::Collectives)
//!   methods, the protocol cores' constructors, the driver and
//!   [`Operation::check`](crate::op::Operation::check) return
//!   `Result<_, Error>`.
//!
//! `Error::Config` wraps a [`ConfigError`] (`From` is implemented), so a
//! program's `fn main() -> Result<(), corrected::Error>` can `?` both.
//!
//! Messages say what is wrong and which values are valid; they name no
//! command-line option (the `corrected` binary adds its own hints).

use std::time::Duration;

use crate::types::{OpId, Rank, Tick};

/// A configuration or description that cannot be used: a team, plan, tree,
/// simulation, fault plan, machine or placement. Returned before anything
/// runs; no public function panics on bad input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A team, plan, tree, simulation or placement was asked for with no ranks.
    #[error("a team needs at least one rank; got 0")]
    ZeroRanks,
    /// More ranks than the implementation can number (or, for a thread
    /// team, than it runs).
    #[error("{procs} ranks is more than the supported maximum of {max}")]
    TooManyRanks {
        /// What was asked for.
        procs: u64,
        /// The limit.
        max: u64,
    },
    /// The root of a broadcast was listed as dead before the operation: the
    /// papers assume it alive, since it initiates the operation.
    #[error("rank {0} is the root and must be alive when the operation starts")]
    DeadRoot(Rank),
    /// A fault plan or schedule names a rank that is not a member of the team.
    #[error("the faults name rank {rank}, which is out of range for a team of {procs} ranks (valid: 0..={})", procs.saturating_sub(1))]
    FaultRank {
        /// The rank named.
        rank: Rank,
        /// The team size.
        procs: u32,
    },
    /// A tree description could not be parsed or has a bad parameter.
    #[error("bad tree '{spec}': {why} (expected binomial, lame:K, kary:K, knomial:K, multiroot:K or optimal, optionally prefixed with inorder-)")]
    BadTree {
        /// The text given.
        spec: String,
        /// What is wrong with it.
        why: String,
    },
    /// A correction description could not be parsed or has a bad parameter,
    /// or the correction does not suit the collective.
    #[error("bad correction '{spec}': {why} (expected none, opportunistic:D, optimized:D, relaying:D, forwarding:D, checked, checked-sync or delayed:DELAY)")]
    BadCorrection {
        /// The text given.
        spec: String,
        /// What is wrong with it.
        why: String,
    },
    /// A gossip model or its parameters are out of range (nodes, active
    /// nodes, the probability δ).
    #[error("bad gossip model: {why}")]
    BadGossip {
        /// What is wrong.
        why: String,
    },
    /// FTCO's timeout is not usable (Tree-based Fault-Tolerant Collective
    /// Operations, Appendix A: a timeout must be at least one tick).
    #[error("bad FTCO timeout: {why}")]
    BadTimeout {
        /// What is wrong.
        why: String,
    },
    /// An allreduce algorithm could not be parsed.
    #[error("unknown allreduce algorithm '{spec}' (expected auto, tree or star)")]
    BadAllreduce {
        /// The text given.
        spec: String,
    },
    /// A failure-information scheme of reduce could not be parsed.
    #[error("unknown failure information '{spec}' (expected list, count or bit)")]
    BadFailureScheme {
        /// The text given.
        spec: String,
    },
    /// The fault budget f leaves no rank to survive.
    #[error("a fault budget of f={f} is too large for {procs} ranks: f must be at most {} (at least one rank must survive)", procs.saturating_sub(1))]
    FaultBudget {
        /// The budget asked for.
        f: u32,
        /// The team size.
        procs: u32,
    },
    /// An allreduce was given reduce and broadcast plans for different teams.
    #[error("the reduce plan is for {reduce} ranks but the broadcast plan for {bcast}; both must be for one team")]
    PlanSizes {
        /// Ranks of the reduce plan.
        reduce: u32,
        /// Ranks of the broadcast plan.
        bcast: u32,
    },
    /// A LogP parameter is out of its domain.
    #[error("bad LogP parameters L={latency}, o={overhead}: both must be at least one tick and at most 2^32 ticks")]
    BadLogP {
        /// The latency L given.
        latency: Tick,
        /// The overhead o given.
        overhead: Tick,
    },
    /// A LogGP message cost out of its domain: (bytes - 1) x G above 2^32
    /// ticks.
    #[error("bad message size: {bytes} bytes at a gap of {gap_per_byte} ticks per byte cost more than 2^32 ticks")]
    BadMessageSize {
        /// Bytes per message.
        bytes: u64,
        /// LogGP's G, ticks per byte.
        gap_per_byte: Tick,
    },
    /// A fault plan is out of its domain (a fault rate outside [0, 1), a
    /// domain fault that leaves no rank alive).
    #[error("bad fault plan: {0}")]
    BadFaults(String),
    /// A topology could not be read or is inconsistent (sysfs, hwloc).
    #[error("bad topology: {0}")]
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
    #[error(
        "{ranks} ranks do not fit on {pus} processing units (one rank per PU): at most {pus} ranks"
    )]
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
    #[error("the placement has {placed} cpus but the team has {ranks} ranks; a placement needs exactly one cpu per rank")]
    PlacementSize {
        /// Cpus in the placement.
        placed: usize,
        /// Ranks in the team.
        ranks: u32,
    },
    /// A team of threads per process whose processes have different numbers
    /// of threads (the hierarchy numbers ranks `process × threads + thread`).
    #[error("the processes have between {least} and {most} threads each; a node team needs the same number in every process")]
    UnevenNodes {
        /// The fewest threads of a process.
        least: u32,
        /// The most threads of a process.
        most: u32,
    },
    /// An operation this engine cannot offer (say, agreement on failures
    /// where nothing detects them).
    #[error("{what} is not available here: {why}")]
    Unsupported {
        /// The operation.
        what: &'static str,
        /// Why not.
        why: &'static str,
    },
    /// Something asked for needs a cargo feature this build of `corrected`
    /// was compiled without.
    #[error("this build of corrected lacks the '{feature}' feature")]
    FeatureNotBuilt {
        /// The cargo feature.
        feature: &'static str,
    },
}

/// What a collective call returns when it does not deliver: the outcome of
/// the operation, or an error in the call's own arguments. A configuration
/// error arrives as [`Error::Config`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// This rank has failed (killed by the fault plan, or died after a
    /// number of sends), in this call or before it; it takes part in no
    /// more collectives. Every later call returns this again: the rank's
    /// program should stop calling collectives and end.
    #[error("rank {0} has failed and takes part in no more collectives")]
    Failed(Rank),
    /// This rank hung (alive but silent) by the fault plan; the rest of the
    /// team has finished without it. Like [`Error::Failed`], the rank takes
    /// part in no more collectives: its program should end.
    #[error("rank {0} hung and took no part while the rest of the team ran")]
    Hung(Rank),
    /// Ranks called different collectives (or the same with different roots)
    /// as the same operation. A bug in the calling program: every rank must
    /// call the same collectives in the same order with the same roots. The
    /// rank that meets the mismatch aborts the operation for the team: every
    /// rank ends it with this error (or, a rank that returned before the
    /// mismatch showed, with a result that holds no input of a rank that got
    /// the error), nobody is declared failed, and the next operation, called
    /// alike on every rank, works (`after_a_mismatch_the_team_goes_on` in
    /// `tests/edges.rs`, `tests/mismatch.rs`).
    #[error("operation {op}: this rank called {mine} but another rank called {theirs}; every rank must call the same collectives in the same order")]
    Mismatch {
        /// The operation number.
        op: OpId,
        /// What this rank called.
        mine: String,
        /// What a message from another rank says it called.
        theirs: String,
    },
    /// The root of a broadcast (or reduce) failed before this rank got its
    /// value. The operation has no result; the caller may pick a live rank
    /// as root and repeat the operation.
    #[error("operation {op}: the root {root} failed before this rank got its value")]
    RootFailed {
        /// The operation number.
        op: OpId,
        /// The root.
        root: Rank,
    },
    /// A broadcast whose correction does not guarantee delivery (none or
    /// opportunistic, Corrected Trees Section 3.3) did not reach this rank:
    /// `cut_by`, on its tree path from the root, failed, and no correction
    /// brought the value (at once where none could: without correction,
    /// the rank's tree parent failed; otherwise after the failure timeout,
    /// counted from when this rank learned of the failure). The root
    /// lives, and the ranks it reached delivered; the caller may repeat
    /// with a correction that guarantees delivery
    /// ([`Correction::Checked`](crate::protocol::bcast::Correction::Checked)).
    #[error("operation {op}: the broadcast from rank {root} did not reach this rank: rank {cut_by} on its path from the root failed, and the team's correction does not guarantee delivery (use checked correction)")]
    NotReached {
        /// The operation number.
        op: OpId,
        /// The root.
        root: Rank,
        /// The nearest failed rank on this rank's tree path from the root.
        cut_by: Rank,
    },
    /// Nothing completed the operation within the team's operation timeout,
    /// and nothing explains why: failures, dead roots, budgets exceeded and
    /// mismatched calls end calls with their own errors, and a rank that
    /// never arrives is declared failed after one timeout. The caller may
    /// treat the team as broken, or raise the timeout
    /// ([`TeamBuilder::op_timeout`](crate::runtime::TeamBuilder::op_timeout))
    /// if the machine is only slow.
    #[error("operation {op}: no result after {waited:?}")]
    Timeout {
        /// The operation number.
        op: OpId,
        /// How long the rank waited.
        waited: Duration,
    },
    /// More ranks failed during a reduce (or allreduce, barrier) than its
    /// fault budget f covers: no complete result reached the root. In an
    /// allreduce or barrier every live rank gets this error (the root
    /// broadcasts its finding); in a reduce, the root. The team's later
    /// operations fail the same way, promptly, for as long as the failed
    /// ranks leave some up-correction group without a live member (the tree
    /// allreduce; the star allreduce has no groups and goes on while some
    /// root it tries lives, see
    /// [`AllreduceAlgorithm`](crate::runtime::AllreduceAlgorithm)); the
    /// caller may go on among the survivors with a fresh budget
    /// ([`Collectives::shrink`](crate::Collectives::shrink)), or build the team
    /// with a larger fault budget
    /// ([`TeamBuilder::fault_budget`](crate::runtime::TeamBuilder::fault_budget)).
    #[error(
        "operation {op}: more than f={f} ranks failed (known failed: {failed:?}), so no complete result reached the root"
    )]
    TooManyFailures {
        /// The operation number.
        op: OpId,
        /// The fault budget.
        f: u32,
        /// The ranks this rank knew failed when it returned.
        failed: Vec<Rank>,
    },
    /// A rank argument of the call (a root, or the calling rank of a
    /// protocol core) is not a member of the team. Nothing was sent.
    #[error("rank {rank} is out of range for a team of {procs} ranks (valid: 0..={})", procs.saturating_sub(1))]
    RankOutOfRange {
        /// The offending rank.
        rank: Rank,
        /// The team size.
        procs: u32,
    },
    /// The root of a broadcast did not pass the value to broadcast (a
    /// protocol core built without it). Nothing was sent.
    #[error("rank {0} is the root of the broadcast and must pass the value to send")]
    NoRootValue(Rank),
    /// Buffers of different lengths (in elements) met in one operation:
    /// this rank's output buffer and the operation's data (a broadcast's
    /// root value, a reduction's result), or the inputs of two ranks of a
    /// reduction. In the first case only this rank fails: it took part in
    /// full (what it forwarded and contributed reached the others) and its
    /// buffer is untouched. In the second, every rank that gets the result
    /// gets this error instead, as no element-by-element result exists.
    #[error("length mismatch in operation {op}: this rank's buffer holds {mine} elements, the operation's data {theirs}")]
    LengthMismatch {
        /// The operation.
        op: OpId,
        /// This rank's length (its output, or for mismatched inputs its
        /// input).
        mine: usize,
        /// The other length.
        theirs: usize,
    },
    /// A reduce-scatter's input does not split into one equal block per
    /// rank. Nothing was sent.
    #[error("an input of {len} elements does not split into {size} equal blocks: pass size × block elements")]
    BlockLength {
        /// The input's length (elements).
        len: usize,
        /// The team's size.
        size: u32,
    },
    /// A request waited or tested on a communicator that has no operation
    /// pending by its number: it was started on another communicator, or
    /// its result was taken already (a request is completed once, by
    /// `wait` or a `test` that returned it).
    #[error("no request of operation {op} is pending on this communicator: wait on a request once, on the communicator that started it")]
    UnknownRequest {
        /// The request's operation number.
        op: OpId,
    },
    /// The level between processes of a hierarchical team failed for this
    /// thread's process (its proxy's error, or the process left that level
    /// after an earlier one; feature `mpi`).
    #[error("the process level failed: {0}")]
    UpperLevel(String),
    /// A value could not be encoded to bytes or decoded from them
    /// ([`crate::Collectives::broadcast_value`]).
    #[error("encoding: {message}")]
    Encoding {
        /// What went wrong.
        message: String,
    },
    /// A reduction operation does not apply to the values' type (e.g. a
    /// bitwise operation on floats). Every rank checks the same before the
    /// operation starts, so all fail alike and nothing was sent; the caller
    /// may use a type the operation applies to, or pass a closure.
    #[error("the reduction operation {op} does not apply to values of type {ty}")]
    OperationType {
        /// The operation's name.
        op: &'static str,
        /// The values' type.
        ty: &'static str,
    },
    /// The team, plan or another configuration the call needs is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every message, one value per variant.
    fn messages() -> Vec<String> {
        let s = || "x".to_string();
        let config = [
            ConfigError::ZeroRanks,
            ConfigError::TooManyRanks { procs: 9, max: 8 },
            ConfigError::DeadRoot(0),
            ConfigError::FaultRank { rank: 4, procs: 4 },
            ConfigError::BadTree {
                spec: s(),
                why: s(),
            },
            ConfigError::BadCorrection {
                spec: s(),
                why: s(),
            },
            ConfigError::BadFailureScheme { spec: s() },
            ConfigError::BadAllreduce { spec: s() },
            ConfigError::BadGossip { why: s() },
            ConfigError::BadTimeout { why: s() },
            ConfigError::FaultBudget { f: 4, procs: 4 },
            ConfigError::PlanSizes {
                reduce: 2,
                bcast: 3,
            },
            ConfigError::BadLogP {
                latency: 0,
                overhead: 1,
            },
            ConfigError::BadMessageSize {
                bytes: 1 << 40,
                gap_per_byte: 1 << 40,
            },
            ConfigError::BadFaults(s()),
            ConfigError::BadTopology(s()),
            ConfigError::BadSynthetic {
                spec: s(),
                why: s(),
            },
            ConfigError::UnknownDomain {
                domain: s(),
                why: s(),
            },
            ConfigError::NotEnoughPus { ranks: 5, pus: 4 },
            ConfigError::BadPlacement(s()),
            ConfigError::PlacementSize {
                placed: 4,
                ranks: 5,
            },
            ConfigError::FeatureNotBuilt { feature: "hwloc" },
            ConfigError::UnevenNodes { least: 2, most: 4 },
            ConfigError::Unsupported {
                what: "x",
                why: "y",
            },
        ];
        let outcomes = [
            Error::Failed(1),
            Error::Hung(1),
            Error::Mismatch {
                op: 0,
                mine: s(),
                theirs: s(),
            },
            Error::RootFailed { op: 0, root: 0 },
            Error::NotReached {
                op: 0,
                root: 0,
                cut_by: 1,
            },
            Error::Timeout {
                op: 0,
                waited: Duration::from_secs(1),
            },
            Error::TooManyFailures {
                op: 0,
                f: 1,
                failed: vec![3, 4],
            },
            Error::RankOutOfRange { rank: 4, procs: 4 },
            Error::NoRootValue(0),
            Error::LengthMismatch {
                op: 2,
                mine: 3,
                theirs: 4,
            },
            Error::BlockLength { len: 7, size: 2 },
            Error::UnknownRequest { op: 3 },
            Error::OperationType {
                op: "bitwise_and",
                ty: "f64",
            },
            Error::UpperLevel(s()),
        ];
        config
            .iter()
            .map(ToString::to_string)
            .chain(outcomes.iter().map(ToString::to_string))
            .collect()
    }

    #[test]
    fn messages_name_no_command_line_option() {
        for m in messages() {
            assert!(!m.contains("--"), "{m}");
            assert!(!m.contains("TeamBuilder"), "{m}");
        }
    }

    #[test]
    fn a_config_error_keeps_its_message_inside_error() {
        let e: Error = ConfigError::FaultBudget { f: 4, procs: 4 }.into();
        assert_eq!(
            e.to_string(),
            ConfigError::FaultBudget { f: 4, procs: 4 }.to_string()
        );
        fn main_like() -> Result<(), Error> {
            Err(ConfigError::ZeroRanks)?
        }
        assert_eq!(main_like(), Err(Error::Config(ConfigError::ZeroRanks)));
    }
}
