//! The thread runtime's one-line messages: a broadcast's value, a reduce's
//! partial result with no failure to report, or an FTCO broadcast's
//! message, with a value of at most [`SHORT_BYTES`] bytes, and a gossip
//! message with one of at most 32 bytes (the other word holds its logical
//! time), travel in a lane slot's first cache line
//! ([`crate::mailbox::Compact`]); everything else travels whole (two
//! lines). A small collective's every message is of this kind while no
//! rank fails, whichever algorithm runs it, so the comparisons between
//! them (FTCO, gossip, trees) stay like with like. Not in the papers: a
//! property of this engine.

use crate::mailbox::Compact;
use crate::protocol::gossip::Stamped;
use crate::protocol::reduce::{Contribution, FailureInfo};
use crate::protocol::{Msg, Tag};
use crate::types::{Collective, OpId, Rank};
use crate::value::data::{Data, SHORT_BYTES};
use crate::value::Packet;

/// The codec of the runtime's mailboxes: one-line forms as the module doc
/// says, so that `expand(compact(m)) == m` for every message it takes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OneLine;

/// A message in 56 bytes: the header, which payload it is, and the value's
/// five words and inline marker. Written and read as whole words and
/// fields, never byte by byte across them.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct Short {
    words: [u64; 5],
    op: OpId,
    root: Rank,
    kind: Collective,
    tag: Tag,
    form: Form,
    marker: u8,
}

/// Which payload a [`Short`] stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Form {
    /// `Packet::Value`.
    Value,
    /// `Packet::Contribution` with no failure information, not decided.
    Contribution,
    /// The same, decided (an allreduce retry's delivered result).
    Decided,
    /// `Packet::Optional(None)`: an FTCO KEEPALIVE or ACK.
    Nothing,
    /// `Packet::Optional(Some(_))`: an FTCO broadcast's DATA.
    Something,
    /// `Packet::Stamped`: a gossip message, its logical time in the fifth
    /// word (so its value has at most four).
    Stamped,
}

const _: () = assert!(std::mem::size_of::<Short>() <= 56);
const _: () = assert!(SHORT_BYTES <= 5 * 8);

impl Compact<Msg<Packet>> for OneLine {
    type Small = Short;

    #[inline]
    fn compact(msg: &Msg<Packet>) -> Option<Short> {
        let (form, value) = match &msg.payload {
            Packet::Value(value) => (Form::Value, value),
            Packet::Contribution(c) if c.info == FailureInfo::default() => (
                if c.decided {
                    Form::Decided
                } else {
                    Form::Contribution
                },
                &c.value,
            ),
            Packet::Optional(None) => (Form::Nothing, &Data::EMPTY),
            Packet::Optional(Some(value)) => (Form::Something, value),
            Packet::Stamped(Stamped { value, .. }) => (Form::Stamped, value),
            _ => return None,
        };
        let (mut words, marker) = value.short()?;
        if let Packet::Stamped(Stamped { sent, .. }) = msg.payload {
            if words[4] != 0 {
                return None; // a value longer than four words
            }
            words[4] = sent;
        }
        Some(Short {
            words,
            op: msg.op,
            root: msg.root,
            kind: msg.kind,
            tag: msg.tag,
            form,
            marker,
        })
    }

    #[inline]
    fn expand(short: Short) -> Msg<Packet> {
        let mut words = short.words;
        let sent = std::mem::take(&mut words[4]);
        if short.form != Form::Stamped {
            words[4] = sent;
        }
        let value = Data::from_short(words, short.marker);
        let payload = match short.form {
            Form::Value => Packet::Value(value),
            Form::Contribution | Form::Decided => Packet::Contribution(Contribution {
                value,
                info: FailureInfo::default(),
                decided: short.form == Form::Decided,
            }),
            Form::Nothing => Packet::Optional(None),
            Form::Something => Packet::Optional(Some(value)),
            Form::Stamped => Packet::Stamped(Stamped { sent, value }),
        };
        Msg {
            op: short.op,
            kind: short.kind,
            root: short.root,
            tag: short.tag,
            payload,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::reduce::FailureScheme;
    use crate::value::segment::SegmentPool;
    use proptest::prelude::*;

    fn msg(payload: Packet) -> Msg<Packet> {
        Msg {
            op: 0xdead_beef,
            kind: Collective::Allreduce,
            root: 7,
            tag: Tag::Upward,
            payload,
        }
    }

    fn through(m: &Msg<Packet>) -> Option<Msg<Packet>> {
        <OneLine as Compact<Msg<Packet>>>::compact(m).map(<OneLine as Compact<_>>::expand)
    }

    fn contribution(value: Data, info: FailureInfo, decided: bool) -> Packet {
        Packet::Contribution(Contribution {
            value,
            info,
            decided,
        })
    }

    proptest! {
        /// Every short value of every one-line payload comes back equal;
        /// longer ones travel whole.
        #[test]
        fn short_values_come_back_equal_and_longer_ones_travel_whole(
            bytes in proptest::collection::vec(any::<u8>(), 0..=55),
            form in 0..5u8,
            sent in any::<u64>(),
        ) {
            let pool = SegmentPool::new();
            let value = Data::encode(&bytes[..], &pool);
            let room = if form == 4 { 32 } else { SHORT_BYTES };
            let m = msg(match form {
                0 => Packet::Value(value),
                1 => contribution(value, FailureInfo::default(), false),
                2 => contribution(value, FailureInfo::default(), true),
                3 => Packet::Optional(Some(value)),
                _ => Packet::Stamped(Stamped { sent, value }),
            });
            match through(&m) {
                Some(back) => {
                    // (A gossip value of 33-40 bytes whose fifth word is
                    // zero fits too: the time takes the word's place.)
                    prop_assert!(bytes.len() <= SHORT_BYTES);
                    prop_assert_eq!(back, m);
                }
                None => prop_assert!(bytes.len() > room),
            }
        }
    }

    #[test]
    fn the_common_messages_travel_in_one_line() {
        let pool = SegmentPool::new();
        let eight = Data::encode(&[1.5f64], &pool);
        for m in [
            msg(Packet::Value(eight.clone())),
            msg(Packet::Value(Data::EMPTY)),
            msg(contribution(eight.clone(), FailureInfo::default(), false)),
            msg(Packet::Optional(None)),
            msg(Packet::Optional(Some(eight.clone()))),
            msg(Packet::Stamped(Stamped {
                sent: u64::MAX,
                value: eight.clone(),
            })),
        ] {
            assert_eq!(through(&m), Some(m.clone()), "{m:?}");
        }
    }

    #[test]
    fn failures_mismatches_and_shared_values_travel_whole() {
        let pool = SegmentPool::new();
        let eight = Data::encode(&[1.5f64], &pool);
        let mut failed = FailureInfo::default();
        failed.note_failed(3, true, FailureScheme::Bit);
        let mut counted = FailureInfo::default();
        counted.note_failed(3, false, FailureScheme::List);
        for m in [
            msg(contribution(eight.clone(), failed, false)),
            msg(contribution(eight.clone(), counted, false)),
            msg(Packet::Value(Data::mismatch([8, 16]))),
            msg(Packet::Value(Data::encode(&[0u8; 4096][..], &pool))),
            msg(Packet::Stamped(Stamped {
                sent: 3,
                value: Data::encode(&[1u8; 33][..], &pool),
            })),
        ] {
            assert_eq!(through(&m), None, "{m:?}");
        }
    }
}
