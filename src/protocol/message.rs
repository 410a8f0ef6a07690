//! The wire message shared by all cores: a small fixed header, so that
//! engines can fence operations, and a payload of the core's own type.

use std::fmt;

use crate::types::{Collective, OpId, Rank};

/// Which operation a core serves: its number, its collective and (for a
/// rooted collective) its root. Engines fence messages by it and name it in
/// mismatch errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// The operation number.
    pub op: OpId,
    /// The collective.
    pub kind: Collective,
    /// The root every message must name; `None` for collectives whose
    /// messages may name any root (an allreduce's rounds each have their
    /// own).
    pub root: Option<Rank>,
}

impl Header {
    /// The header of broadcast `op` from `root`, which every broadcast core
    /// (corrected tree, gossip, BIG, ack tree, FTCO) names its operation by.
    #[inline]
    pub fn broadcast(op: OpId, root: Rank) -> Self {
        Header::rooted(op, Collective::Broadcast, root)
    }

    /// The header of operation `op` of the rooted collective `kind` from or
    /// to `root`, which every message names (a broadcast or a reduce, on
    /// its own or as a phase of an allreduce round).
    #[inline]
    pub(crate) fn rooted(op: OpId, kind: Collective, root: Rank) -> Self {
        Header {
            op,
            kind,
            root: Some(root),
        }
    }

    /// The header of operation `op` of `kind`, an allreduce (or barrier)
    /// whose messages may name any root: each round has its own (Küttler,
    /// Härtig, Section 5), and a pair or a scatter has none.
    #[inline]
    pub(crate) fn any_root(op: OpId, kind: Collective) -> Self {
        Header {
            op,
            kind,
            root: None,
        }
    }

    /// A message of this operation (root 0 for a collective without one)
    /// with `tag` and `payload`: what a core stamps on what it sends.
    #[inline]
    pub fn msg<P>(&self, tag: Tag, payload: P) -> Msg<P> {
        Msg {
            op: self.op,
            kind: self.kind,
            root: self.root.unwrap_or(0),
            tag,
            payload,
        }
    }

    /// True when `msg`, a message of the same operation, belongs to the same
    /// call: same collective and, if the call has one, same root.
    #[inline]
    pub fn accepts<P>(&self, msg: &Msg<P>) -> bool {
        msg.kind == self.kind && self.root.map_or(true, |r| r == msg.root)
    }

    /// True unless `other`, another rank's call, is of the same operation
    /// but could send nothing this call [`accepts`](Header::accepts):
    /// another collective, or another root where both name one. Calls of
    /// other operations agree (they are not this one's business).
    #[inline]
    pub fn agrees(&self, other: &Header) -> bool {
        other.op != self.op
            || (other.kind == self.kind
                && match (self.root, other.root) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                })
    }
}

impl fmt::Display for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.kind, self.root) {
            (Collective::Broadcast, Some(r)) => write!(f, "broadcast from {r}"),
            (Collective::Reduce, Some(r)) => write!(f, "reduce to {r}"),
            (kind, Some(r)) => write!(f, "{kind} (root {r})"),
            (kind, None) => write!(f, "{kind}"),
        }
    }
}

/// What role a message plays in its algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Tag {
    /// Dissemination along the tree (parent to child).
    Tree = 0,
    /// Correction travelling left on the ring (to a lower rank).
    Leftward = 1,
    /// Correction travelling right on the ring (to a higher rank).
    Rightward = 2,
    /// Delayed correction: a process colored by dissemination tells a
    /// rightward sender on its left to stop.
    Stop = 3,
    /// Up-correction (reduce, Section 4.2): a rank's input to a member of
    /// its group.
    UpCorrection = 4,
    /// Tree phase of reduce: a partial result from a child to its parent.
    Upward = 5,
    /// Not a core's: an engine tells the team that the operation is
    /// aborted, because the sender met a message of another call in it (a
    /// mismatch). Engines never hand it to a core.
    Abort = 6,
    /// Corrected gossip's gossip phase: a colored node to a random other
    /// node.
    Gossip = 7,
    /// An acknowledgement from a child to its parent: the ack tree's
    /// gather ([`crate::protocol::ack_tree`]) and FTCO's ACK (Tree-based
    /// Fault-Tolerant Collective Operations, Section 3, "Message Flow").
    Ack = 8,
    /// FTCO's KEEPALIVE (Section 3): a node waiting for DATA past its
    /// expected arrival asks a suspected node whether it lives.
    KeepAlive = 9,
    /// An allreduce by blocks ([`crate::protocol::scatter`]): a rank's
    /// input block to the block's owner.
    Scatter = 10,
    /// An allreduce by blocks: an owner's reduced block (or none: it
    /// cannot be computed) to every other rank.
    Gather = 11,
}

impl Tag {
    /// Number of tags, for per-tag counters.
    pub const COUNT: usize = 12;

    /// Every tag, in the order of its number.
    pub const ALL: [Tag; Tag::COUNT] = [
        Tag::Tree,
        Tag::Leftward,
        Tag::Rightward,
        Tag::Stop,
        Tag::UpCorrection,
        Tag::Upward,
        Tag::Abort,
        Tag::Gossip,
        Tag::Ack,
        Tag::KeepAlive,
        Tag::Scatter,
        Tag::Gather,
    ];

    /// True for messages of a broadcast's ring correction phase.
    pub fn is_correction(self) -> bool {
        matches!(self, Tag::Leftward | Tag::Rightward | Tag::Stop)
    }

    /// True for messages of a broadcast (dissemination or correction).
    pub fn is_broadcast(self) -> bool {
        matches!(self, Tag::Tree | Tag::Leftward | Tag::Rightward | Tag::Stop)
    }

    /// True for messages that reach their receiver from its right-hand side.
    pub fn from_right(self) -> bool {
        matches!(self, Tag::Leftward | Tag::Stop)
    }
}

/// A message: operation number and collective kind (for fencing), role, payload.
///
/// The header fields are the sending core's [`Header`]; the payload is the
/// core's own type (a broadcast carries its value, a reduce a partial result
/// with failure information).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Msg<P> {
    /// The operation this message belongs to.
    pub op: OpId,
    /// The collective of that operation.
    pub kind: Collective,
    /// Its root (0 for collectives without one). Ranks that disagree on the
    /// root disagree on the operation.
    pub root: Rank,
    /// Its role within the algorithm.
    pub tag: Tag,
    /// The data.
    pub payload: P,
}

impl<P> Msg<P> {
    /// A message of broadcast `op` from `root` (the header every broadcast
    /// core stamps on what it sends).
    #[inline]
    pub fn broadcast(op: OpId, root: Rank, tag: Tag, payload: P) -> Self {
        Msg {
            op,
            kind: Collective::Broadcast,
            root,
            tag,
            payload,
        }
    }

    /// The same message with its payload mapped (an engine wraps a core's
    /// payload into its wire type and back).
    #[inline]
    pub fn map<Q>(self, f: impl FnOnce(P) -> Q) -> Msg<Q> {
        Msg {
            op: self.op,
            kind: self.kind,
            root: self.root,
            tag: self.tag,
            payload: f(self.payload),
        }
    }

    /// The same message with its payload mapped by `f`, or the message
    /// back if `f` gives its payload back.
    #[inline]
    pub fn try_map<Q>(self, f: impl FnOnce(P) -> Result<Q, P>) -> Result<Msg<Q>, Msg<P>> {
        let Msg {
            op,
            kind,
            root,
            tag,
            payload,
        } = self;
        match f(payload) {
            Ok(payload) => Ok(Msg {
                op,
                kind,
                root,
                tag,
                payload,
            }),
            Err(payload) => Err(Msg {
                op,
                kind,
                root,
                tag,
                payload,
            }),
        }
    }

    /// What the message says of its sender's call, as the receiver's
    /// mismatch error names it.
    pub fn describe(&self) -> String {
        if matches!(self.tag, Tag::Scatter | Tag::Gather) {
            return format!(
                "allreduce by blocks (a value of {} KiB or more, between processes)",
                crate::protocol::scatter::BLOCKS_MIN_BYTES / 1024
            );
        }
        match self.kind {
            Collective::Broadcast => format!("broadcast from {}", self.root),
            Collective::Reduce => format!("reduce to {}", self.root),
            kind => format!("{kind} (round of root {})", self.root),
        }
    }
}
