//! The wire message shared by all cores: a small fixed header, so that
//! engines can fence operations, and a `Copy` payload of a few words.

use crate::types::{Collective, OpId, Rank};

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
}

impl Tag {
    /// Number of tags, for per-tag counters.
    pub const COUNT: usize = 6;

    /// Every tag, in the order of its number.
    pub const ALL: [Tag; Tag::COUNT] = [
        Tag::Tree,
        Tag::Leftward,
        Tag::Rightward,
        Tag::Stop,
        Tag::UpCorrection,
        Tag::Upward,
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
