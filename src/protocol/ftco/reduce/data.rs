//! What an FTCO reduce or allreduce carries and delivers, and which
//! collective it runs (FTCO, Sections 3-4).

use crate::types::Rank;

/// What an FTCO reduce or allreduce message carries (Section 3, "Message
/// Flow").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FtcoData<P> {
    /// Up-phase DATA ([`Tag::Upward`](crate::protocol::Tag::Upward)): the sender's partial `value`, which
    /// includes its subtree but `missing` (virtual ranks, nodes it or a node
    /// below it circumvented), and its `own` input alone, for a receiver
    /// that holds part of that subtree already (the module doc's rule
    /// against counting a node twice).
    Part {
        /// The partial reduction.
        value: P,
        /// The sender's input alone.
        own: P,
        /// Nodes of the sender's subtree the partial does not include.
        missing: Vec<Rank>,
    },
    /// Down-phase DATA ([`Tag::Tree`](crate::protocol::Tag::Tree)): the
    /// result, and the nodes (virtual ranks) whose inputs it lacks: those
    /// the up phase circumvented.
    Result {
        /// The result.
        value: P,
        /// Nodes whose inputs the result does not include.
        missing: Vec<Rank>,
    },
    /// KEEPALIVE and ACK carry nothing.
    Empty,
}

/// Which collective an [`FtcoReduce`](super::FtcoReduce) core runs (Section 4: Algorithm 3's
/// up phase alone, or both phases).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FtcoCollective {
    /// The up phase: the result at the root (Figure 1).
    Reduce,
    /// The up phase, then the result down the tree (Figures 1-2).
    Allreduce,
    /// An allreduce of nothing, whose messages say barrier, so that an
    /// engine tells a barrier from an allreduce called at the same
    /// operation ([`crate::Error::Mismatch`]).
    Barrier,
}

/// What an FTCO reduce or allreduce core delivers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FtcoOutput<P> {
    /// The result (the root of a reduce; every node of an allreduce), and
    /// the nodes (real ranks, ascending) whose inputs it lacks: the failed
    /// or suspected nodes the up phase circumvented, whose own inputs no
    /// partial carried (the same list on every node of an allreduce).
    Value {
        /// The result.
        value: P,
        /// Nodes whose inputs the result does not include.
        missing: Vec<Rank>,
    },
    /// A reduce's non-root: its DATA was acknowledged (Figure 1).
    Contributed,
}
