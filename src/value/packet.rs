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

/// What an abort carries when no message showed the mismatch: nothing.
impl Default for Packet {
    fn default() -> Self {
        Packet::Optional(None)
    }
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

/// `Packet` carries each core's payload in its own variant: wrapping puts
/// it there, unwrapping takes it out of that variant only.
macro_rules! carries {
    ($($payload:ty => $variant:ident;)*) => {$(
        impl Carries<$payload> for Packet {
            #[inline]
            fn wrap(payload: $payload) -> Self {
                Packet::$variant(payload)
            }
            #[inline]
            fn unwrap(self) -> Result<$payload, Self> {
                match self {
                    Packet::$variant(p) => Ok(p),
                    other => Err(other),
                }
            }
            #[inline]
            fn holds(&self) -> bool {
                matches!(self, Packet::$variant(_))
            }
        }
    )*};
}

carries! {
    Data => Value;
    Contribution<Data> => Contribution;
    Stamped<Data> => Stamped;
    Option<Data> => Optional;
    Stamped<FcgPayload<Data>> => Fcg;
}

/// Boxed in its variant (see [`Packet::Ftco`]).
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
    #[inline]
    fn holds(&self) -> bool {
        matches!(self, Packet::Ftco(_))
    }
}
