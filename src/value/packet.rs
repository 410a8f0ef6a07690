//! What a mailbox slot carries: one wire type for every core the thread
//! runtime runs, each core's own payload inside.

use crate::driver::Carries;
use crate::protocol::ftco::FtcoData;
use crate::protocol::gossip::{FcgPayload, Stamped};
use crate::protocol::reduce::Contribution;
use crate::protocol::Msg;
use crate::value::data::Data;

/// The thread runtime's wire payload. A broadcast carries its value alone;
/// reduce, allreduce and barrier carry a partial result with the reduce's
/// failure information. Values of any length: inline or a shared segment
/// ([`Data`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Packet {
    /// A broadcast's value.
    Value(Data),
    /// A reduce-like core's partial result.
    Contribution(Contribution<Data>),
    /// A gossip broadcast's value with the logical time it was sent at
    /// ([`crate::protocol::gossip::SlotClock`]).
    Stamped(Stamped<Data>),
    /// A failure-proof gossip broadcast's (FCG) value, SOS flag and known
    /// g-nodes, with the logical time it was sent at.
    Fcg(Stamped<FcgPayload<Data>>),
    /// A value or none: an FTCO broadcast's DATA carries the value, its
    /// KEEPALIVE and ACK none (FTCO, Section 3).
    Optional(Option<Data>),
    /// An FTCO reduce's or allreduce's DATA, KEEPALIVE or ACK (FTCO,
    /// Section 3). Boxed: an up-phase DATA holds two values and a list,
    /// more than a lane slot's two cache lines; FTCO is the baseline, and
    /// its allocation per message is part of what it costs here.
    Ftco(Box<FtcoData<Data>>),
}

// A lane slot is the message and an 8-byte stamp, 64-byte aligned: keep it
// two cache lines, one fewer transfer per message than three (and a
// message of a short value moves one: `runtime/one_line.rs`).
const _: () = assert!(std::mem::size_of::<Msg<Packet>>() <= 120);
// The enum's tag costs nothing: it sits in a niche of its largest
// payloads (a contribution, 112 bytes with its header; an FCG message, 120).
const _: () = {
    let contribution = std::mem::size_of::<Msg<Contribution<Data>>>();
    let fcg = std::mem::size_of::<Msg<Stamped<FcgPayload<Data>>>>();
    let largest = if contribution > fcg {
        contribution
    } else {
        fcg
    };
    assert!(std::mem::size_of::<Msg<Packet>>() == largest);
};

impl Carries<Data> for Packet {
    #[inline]
    fn wrap(payload: Data) -> Self {
        Packet::Value(payload)
    }
    #[inline]
    fn unwrap(self) -> Result<Data, Self> {
        match self {
            Packet::Value(w) => Ok(w),
            other => Err(other),
        }
    }
}

impl Carries<Contribution<Data>> for Packet {
    #[inline]
    fn wrap(payload: Contribution<Data>) -> Self {
        Packet::Contribution(payload)
    }
    #[inline]
    fn unwrap(self) -> Result<Contribution<Data>, Self> {
        match self {
            Packet::Contribution(c) => Ok(c),
            other => Err(other),
        }
    }
}

impl Carries<Stamped<Data>> for Packet {
    #[inline]
    fn wrap(payload: Stamped<Data>) -> Self {
        Packet::Stamped(payload)
    }
    #[inline]
    fn unwrap(self) -> Result<Stamped<Data>, Self> {
        match self {
            Packet::Stamped(s) => Ok(s),
            other => Err(other),
        }
    }
}

impl Carries<Option<Data>> for Packet {
    #[inline]
    fn wrap(payload: Option<Data>) -> Self {
        Packet::Optional(payload)
    }
    #[inline]
    fn unwrap(self) -> Result<Option<Data>, Self> {
        match self {
            Packet::Optional(v) => Ok(v),
            other => Err(other),
        }
    }
}

impl Carries<Stamped<FcgPayload<Data>>> for Packet {
    #[inline]
    fn wrap(payload: Stamped<FcgPayload<Data>>) -> Self {
        Packet::Fcg(payload)
    }
    #[inline]
    fn unwrap(self) -> Result<Stamped<FcgPayload<Data>>, Self> {
        match self {
            Packet::Fcg(s) => Ok(s),
            other => Err(other),
        }
    }
}

impl Carries<FtcoData<Data>> for Packet {
    #[inline]
    fn wrap(payload: FtcoData<Data>) -> Self {
        Packet::Ftco(Box::new(payload))
    }
    #[inline]
    fn unwrap(self) -> Result<FtcoData<Data>, Self> {
        match self {
            Packet::Ftco(f) => Ok(*f),
            other => Err(other),
        }
    }
}
