//! What a mailbox slot carries: one wire type for every core the thread
//! runtime runs, each core's own payload inside.

use crate::driver::Carries;
use crate::protocol::reduce::Contribution;
use crate::protocol::Msg;
use crate::wire::Words;

/// The thread runtime's wire payload. A broadcast carries its value alone;
/// reduce, allreduce and barrier carry a partial result with the reduce's
/// failure information.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Packet {
    /// A broadcast's value.
    Value(Words),
    /// A reduce-like core's partial result.
    Contribution(Contribution<Words>),
}

// A lane slot is the message and an 8-byte stamp, 64-byte aligned: keep it
// two cache lines, one fewer transfer per message than three.
const _: () = assert!(std::mem::size_of::<Msg<Packet>>() <= 120);
// The enum's tag costs nothing: it sits in a niche of the contribution.
const _: () =
    assert!(std::mem::size_of::<Msg<Packet>>() == std::mem::size_of::<Msg<Contribution<Words>>>());

impl Carries<Words> for Packet {
    #[inline]
    fn wrap(payload: Words) -> Self {
        Packet::Value(payload)
    }
    #[inline]
    fn unwrap(self) -> Option<Words> {
        match self {
            Packet::Value(w) => Some(w),
            Packet::Contribution(_) => None,
        }
    }
}

impl Carries<Contribution<Words>> for Packet {
    #[inline]
    fn wrap(payload: Contribution<Words>) -> Self {
        Packet::Contribution(payload)
    }
    #[inline]
    fn unwrap(self) -> Option<Contribution<Words>> {
        match self {
            Packet::Contribution(c) => Some(c),
            Packet::Value(_) => None,
        }
    }
}
