//! The bytes an MPI message carries: one frame per message, a protocol
//! message ([`Msg`] of the thread runtime's [`Packet`]) or one of the
//! transport's own notices (a rank found failed, a rank whose program has
//! ended).
//!
//! Little-endian, no padding, no schema: the header is 11 bytes, a value
//! its length and its bytes. A value of [`DETACH_MIN_BYTES`] or more is
//! *detached* ([`encode_parts`]): the frame carries only its length, and
//! its bytes travel as the sender's next MPI message, sent straight from
//! the value's segment and received straight into one
//! ([`decode_parts`]), so that a large value is copied by MPI alone.
//! Every broadcast payload is framed: a gossip message's logical send time
//! (a [`Stamped`] value), FCG's SOS flag and its up to [`KNOWN_CAPACITY`]
//! distinct known g-nodes (more, or repeated, are refused), FTCO's value
//! or none, and an FTCO reduce's DATA (its partial, which alone may be
//! detached, the sender's own input, the nodes the partial misses), result
//! or empty KEEPALIVE/ACK. A value that refers to this process's memory
//! (a lazy sum, a lent buffer) is never put in a frame: the MPI
//! communicator only builds values from bytes ([`Data::encode`]). Decoding
//! checks every length and returns `None` for a frame it cannot read (the
//! transport drops and counts it); it never panics on bad input.

use crate::protocol::ftco::FtcoData;
use crate::protocol::gossip::{FcgPayload, Known, Stamped, KNOWN_CAPACITY};
use crate::protocol::reduce::{Contribution, FailureInfo};
use crate::protocol::{Msg, Tag};
use crate::types::{Collective, OpId, Rank};
use crate::value::data::{Data, Wire};
use crate::value::segment::SegmentPool;
use crate::value::Packet;

/// One frame: what travels in one MPI message.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    /// A protocol message.
    Msg(Msg<Packet>),
    /// The sender found `Rank` failed (its timeout detector's verdict, or
    /// its own death); the receiver marks it failed too.
    Failed(Rank),
    /// The sender's program has ended: it takes part in no later
    /// operation (it still answers for the ones it finished).
    Left,
    /// The sender's heartbeat while it waits inside the library, for the
    /// receivers' timeout detectors ([`crate::driver::PeerView`]).
    Beat {
        /// One more than the last operation it entered.
        entered: OpId,
        /// One more than the last operation it returned from.
        returned: OpId,
        /// Its heartbeat count.
        beat: u64,
        /// The call it drives ([`crate::driver::PeerView::call`], packed).
        call: u64,
    },
    /// In a frame ring: the sender's next frame to this receiver is too
    /// large for the ring and travels through MPI; the ring's next frames
    /// come after it (`src/mpi/transport.rs`).
    ViaMpi,
}

const FRAME_MSG: u8 = 0;
const FRAME_FAILED: u8 = 1;
const FRAME_LEFT: u8 = 2;
const FRAME_BEAT: u8 = 3;
const FRAME_VIA_MPI: u8 = 4;

const PACKET_VALUE: u8 = 0;
const PACKET_CONTRIBUTION: u8 = 1;
const PACKET_STAMPED: u8 = 2;
const PACKET_OPTIONAL: u8 = 3;
const PACKET_FCG: u8 = 4;
const PACKET_FTCO: u8 = 5;

const FTCO_PART: u8 = 0;
const FTCO_RESULT: u8 = 1;
const FTCO_EMPTY: u8 = 2;

const DATA_BYTES: u8 = 0;
const DATA_MISMATCH: u8 = 1;
const DATA_DETACHED: u8 = 2;
const DATA_ELSEWHERE: u8 = 3;

/// Values this large travel detached from their frame (see the module
/// doc). The crossover measured on this machine (2 processes, an f64 sum
/// allreduce, `examples/mpi_timing` built detached and framed, interleaved
/// in one run, docs/benchmarks.md): framed is faster at
/// 16 and 64 KiB (4.95 against 5.3 µs, 12.0 against 13.2 µs), even at
/// 128 KiB, detached faster from 256 KiB (37 against 43 µs) and at 1 MiB
/// (150 against 186 µs).
pub const DETACH_MIN_BYTES: usize = 128 * 1024;

/// What a frame's bytes are.
#[derive(Clone, Debug, PartialEq)]
pub enum Decoded {
    /// A whole frame.
    Frame(Frame),
    /// A frame whose value of this many bytes is detached: its bytes are
    /// the sender's next message; decode the frame again with them.
    Awaits(usize),
}

/// Why a message cannot be framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unframeable {
    /// Its value refers to this process's memory.
    LocalValue,
}

/// Where [`encode_parts`] writes a frame: a growable buffer, or a
/// [`SmallFrame`] for a frame that fits one slot of a frame ring.
pub trait FrameOut {
    /// Empties it.
    fn clear(&mut self);
    /// Appends one byte.
    fn push(&mut self, byte: u8);
    /// Appends `bytes`.
    fn extend_from_slice(&mut self, bytes: &[u8]);
}

impl FrameOut for Vec<u8> {
    #[inline]
    fn clear(&mut self) {
        Vec::clear(self)
    }
    #[inline]
    fn push(&mut self, byte: u8) {
        Vec::push(self, byte)
    }
    #[inline]
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        Vec::extend_from_slice(self, bytes)
    }
}

/// A frame of at most `N` bytes, on the stack: a small message encoded
/// here goes into a ring's slot with no buffer taken from a pool (most
/// frames: a header, a tag and a value of a few words). A longer frame
/// marks it [overflowed](SmallFrame::bytes) and is encoded again into a
/// buffer.
pub struct SmallFrame<const N: usize> {
    bytes: [u8; N],
    len: usize,
    overflowed: bool,
}

impl<const N: usize> SmallFrame<N> {
    /// An empty frame.
    #[inline]
    pub fn new() -> Self {
        SmallFrame {
            bytes: [0; N],
            len: 0,
            overflowed: false,
        }
    }

    /// The frame's bytes, or `None` if it did not fit.
    #[inline]
    pub fn bytes(&self) -> Option<&[u8]> {
        (!self.overflowed).then(|| &self.bytes[..self.len])
    }
}

impl<const N: usize> Default for SmallFrame<N> {
    fn default() -> Self {
        SmallFrame::new()
    }
}

impl<const N: usize> FrameOut for SmallFrame<N> {
    #[inline]
    fn clear(&mut self) {
        self.len = 0;
        self.overflowed = false;
    }
    #[inline]
    fn push(&mut self, byte: u8) {
        self.extend_from_slice(&[byte]);
    }
    #[inline]
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        match self.bytes.get_mut(self.len..self.len + bytes.len()) {
            Some(room) if !self.overflowed => {
                room.copy_from_slice(bytes);
                self.len += bytes.len();
            }
            _ => self.overflowed = true,
        }
    }
}

/// Writes `frame` into `out` (cleared first), values included.
pub fn encode(frame: &Frame, out: &mut Vec<u8>) -> Result<(), Unframeable> {
    encode_parts(frame, out, usize::MAX).map(|_| ())
}

/// Writes `frame` into `out` (cleared first); a value of `detach_min`
/// bytes or more is detached: returned, to be sent as the next message.
pub fn encode_parts<O: FrameOut>(
    frame: &Frame,
    out: &mut O,
    detach_min: usize,
) -> Result<Option<Data>, Unframeable> {
    out.clear();
    let mut detached = None;
    let mut data = |d: &Data, out: &mut O| data(d, out, detach_min, &mut detached);
    match frame {
        Frame::Failed(r) => {
            out.push(FRAME_FAILED);
            out.extend_from_slice(&r.to_le_bytes());
        }
        Frame::Left => out.push(FRAME_LEFT),
        Frame::ViaMpi => out.push(FRAME_VIA_MPI),
        Frame::Beat {
            entered,
            returned,
            beat,
            call,
        } => {
            out.push(FRAME_BEAT);
            out.extend_from_slice(&entered.to_le_bytes());
            out.extend_from_slice(&returned.to_le_bytes());
            out.extend_from_slice(&beat.to_le_bytes());
            out.extend_from_slice(&call.to_le_bytes());
        }
        Frame::Msg(msg) => {
            out.push(FRAME_MSG);
            out.extend_from_slice(&msg.op.to_le_bytes());
            out.push(msg.kind as u8);
            out.push(msg.tag as u8);
            out.extend_from_slice(&msg.root.to_le_bytes());
            match &msg.payload {
                Packet::Value(d) => {
                    out.push(PACKET_VALUE);
                    data(d, out)?;
                }
                Packet::Contribution(c) => {
                    out.push(PACKET_CONTRIBUTION);
                    out.push(u8::from(c.info.subtree_failed));
                    out.push(u8::from(c.decided));
                    out.extend_from_slice(&c.info.count.to_le_bytes());
                    let ranks = c.info.ranks();
                    out.push(ranks.len() as u8);
                    for r in ranks {
                        out.extend_from_slice(&r.to_le_bytes());
                    }
                    data(&c.value, out)?;
                }
                Packet::Stamped(s) => {
                    out.push(PACKET_STAMPED);
                    out.extend_from_slice(&s.sent.to_le_bytes());
                    data(&s.value, out)?;
                }
                Packet::Optional(v) => {
                    out.push(PACKET_OPTIONAL);
                    out.push(u8::from(v.is_some()));
                    if let Some(d) = v {
                        data(d, out)?;
                    }
                }
                Packet::Fcg(s) => {
                    out.push(PACKET_FCG);
                    out.extend_from_slice(&s.sent.to_le_bytes());
                    out.push(u8::from(s.value.sos));
                    let known = s.value.known.as_slice();
                    out.push(known.len() as u8);
                    for r in known {
                        out.extend_from_slice(&r.to_le_bytes());
                    }
                    data(&s.value.value, out)?;
                }
                Packet::Ftco(f) => {
                    out.push(PACKET_FTCO);
                    match &**f {
                        FtcoData::Part {
                            value,
                            own,
                            missing,
                        } => {
                            out.push(FTCO_PART);
                            data(value, out)?;
                            // One value per frame is detached at most.
                            self::data(own, out, usize::MAX, &mut None)?;
                            ranks(missing, out);
                        }
                        FtcoData::Result { value, missing } => {
                            out.push(FTCO_RESULT);
                            data(value, out)?;
                            ranks(missing, out);
                        }
                        FtcoData::Empty => out.push(FTCO_EMPTY),
                    }
                }
            }
        }
    }
    Ok(detached)
}

/// A list of ranks: its length, then each rank (four bytes each).
fn ranks<O: FrameOut>(ranks: &[Rank], out: &mut O) {
    out.extend_from_slice(&(ranks.len() as u32).to_le_bytes());
    for r in ranks {
        out.extend_from_slice(&r.to_le_bytes());
    }
}

fn data<O: FrameOut>(
    d: &Data,
    out: &mut O,
    detach_min: usize,
    detached: &mut Option<Data>,
) -> Result<(), Unframeable> {
    match d.to_wire().ok_or(Unframeable::LocalValue)? {
        Wire::Bytes(bytes) if bytes.len() >= detach_min => {
            out.push(DATA_DETACHED);
            out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            *detached = Some(d.clone());
        }
        Wire::Bytes(bytes) => {
            out.push(DATA_BYTES);
            out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        Wire::Mismatch(lens) => {
            out.push(DATA_MISMATCH);
            out.extend_from_slice(&lens[0].to_le_bytes());
            out.extend_from_slice(&lens[1].to_le_bytes());
        }
        Wire::Elsewhere(name) => {
            out.push(DATA_ELSEWHERE);
            for word in name {
                out.extend_from_slice(&word.to_le_bytes());
            }
        }
    }
    Ok(())
}

/// A cursor over a frame's bytes; every read checks the length.
struct Reader<'a> {
    bytes: &'a [u8],
    /// The detached value's bytes, if they came.
    payload: Option<Data>,
    /// The length of a detached value whose bytes have not come.
    awaits: Option<usize>,
}

impl<'a> Reader<'a> {
    /// A protocol message's header and payload (a frame's body after its
    /// kind byte).
    fn msg(&mut self, pool: &SegmentPool) -> Option<Msg<Packet>> {
        let r = self;
        let op = r.u32()?;
        let kind = Collective::from_u8(r.u8()?)?;
        let tag = *Tag::ALL.get(usize::from(r.u8()?))?;
        let root = r.u32()?;
        let payload = match r.u8()? {
            PACKET_VALUE => Packet::Value(r.data(pool)?),
            PACKET_CONTRIBUTION => {
                let subtree_failed = r.u8()? != 0;
                let decided = r.u8()? != 0;
                let count = r.u32()?;
                let n = usize::from(r.u8()?);
                let ranks: Vec<Rank> = (0..n).map(|_| r.u32()).collect::<Option<_>>()?;
                Packet::Contribution(Contribution {
                    value: r.data(pool)?,
                    info: FailureInfo::from_parts(subtree_failed, count, &ranks),
                    decided,
                })
            }
            PACKET_STAMPED => {
                let sent = r.u64()?;
                Packet::Stamped(Stamped {
                    sent,
                    value: r.data(pool)?,
                })
            }
            PACKET_FCG => {
                let sent = r.u64()?;
                let sos = match r.u8()? {
                    0 => false,
                    1 => true,
                    _ => return None,
                };
                let n = usize::from(r.u8()?);
                if n > KNOWN_CAPACITY {
                    return None;
                }
                let ids: Vec<Rank> = (0..n).map(|_| r.u32()).collect::<Option<_>>()?;
                Packet::Fcg(Stamped {
                    sent,
                    value: FcgPayload {
                        value: r.data(pool)?,
                        sos,
                        known: Known::from_slice(&ids)?,
                    },
                })
            }
            PACKET_FTCO => Packet::Ftco(Box::new(match r.u8()? {
                FTCO_PART => {
                    let value = r.data(pool)?;
                    let own = r.data(pool)?;
                    let missing = r.ranks()?;
                    FtcoData::Part {
                        value,
                        own,
                        missing,
                    }
                }
                FTCO_RESULT => {
                    let value = r.data(pool)?;
                    let missing = r.ranks()?;
                    FtcoData::Result { value, missing }
                }
                FTCO_EMPTY => FtcoData::Empty,
                _ => return None,
            })),
            PACKET_OPTIONAL => Packet::Optional(match r.u8()? {
                0 => None,
                1 => Some(r.data(pool)?),
                _ => return None,
            }),
            _ => return None,
        };
        Some(Msg {
            op,
            kind,
            root,
            tag,
            payload,
        })
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.bytes.len() < n {
            return None;
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    /// A list of ranks ([`ranks`]): a count beyond what is left (four bytes
    /// each) is refused before anything is read.
    fn ranks(&mut self) -> Option<Vec<Rank>> {
        let n = self.u32()?;
        if n as usize > self.bytes.len() / 4 {
            return None;
        }
        (0..n).map(|_| self.u32()).collect()
    }

    fn data(&mut self, pool: &SegmentPool) -> Option<Data> {
        match self.u8()? {
            DATA_BYTES => {
                let len = usize::try_from(self.u64()?).ok()?;
                Some(Data::from_wire(Wire::Bytes(self.take(len)?), pool))
            }
            DATA_MISMATCH => Some(Data::from_wire(
                Wire::Mismatch([self.u64()?, self.u64()?]),
                pool,
            )),
            DATA_ELSEWHERE => Some(Data::from_wire(
                Wire::Elsewhere([self.u64()?, self.u64()?, self.u64()?]),
                pool,
            )),
            DATA_DETACHED => {
                let len = usize::try_from(self.u64()?).ok()?;
                match self.payload.take() {
                    Some(d) if matches!(d.to_wire(), Some(Wire::Bytes(b)) if b.len() == len) => {
                        Some(d)
                    }
                    Some(_) => None,
                    None => {
                        self.awaits = Some(len);
                        Some(Data::EMPTY)
                    }
                }
            }
            _ => None,
        }
    }
}

/// Reads a frame written by [`encode`]; values that do not fit inline go
/// into segments of `pool`. `None` for bytes that are not a whole frame
/// (a frame with a detached value included).
pub fn decode(bytes: &[u8], pool: &SegmentPool) -> Option<Frame> {
    match decode_parts(bytes, pool, None)? {
        Decoded::Frame(frame) => Some(frame),
        Decoded::Awaits(_) => None,
    }
}

/// Reads a frame of a protocol message with no detached value (every
/// frame of a ring): the message, or `None` for any other frame, which
/// [`decode_parts`] then reads. The receive path of most frames, without
/// the [`Decoded`] and [`Frame`] around the message.
#[inline]
pub fn decode_msg(bytes: &[u8], pool: &SegmentPool) -> Option<Msg<Packet>> {
    let (&FRAME_MSG, body) = bytes.split_first()? else {
        return None;
    };
    let mut r = Reader {
        bytes: body,
        payload: None,
        awaits: None,
    };
    let msg = r.msg(pool)?;
    (r.bytes.is_empty() && r.awaits.is_none()).then_some(msg)
}

/// Reads a frame written by [`encode_parts`], with its detached value's
/// bytes if they came (`payload`): the frame, or the length of the value
/// it awaits. `None` for bytes that are not a frame, or a `payload` it does
/// not await (or of another length).
pub fn decode_parts(bytes: &[u8], pool: &SegmentPool, payload: Option<Data>) -> Option<Decoded> {
    let mut r = Reader {
        bytes,
        payload,
        awaits: None,
    };
    let frame = match r.u8()? {
        FRAME_FAILED => Frame::Failed(r.u32()?),
        FRAME_LEFT => Frame::Left,
        FRAME_VIA_MPI => Frame::ViaMpi,
        FRAME_BEAT => Frame::Beat {
            entered: r.u32()?,
            returned: r.u32()?,
            beat: r.u64()?,
            call: r.u64()?,
        },
        FRAME_MSG => Frame::Msg(r.msg(pool)?),
        _ => return None,
    };
    // Trailing bytes, or a payload not awaited: not a frame this version
    // wrote.
    if !r.bytes.is_empty() || r.payload.is_some() {
        return None;
    }
    Some(match r.awaits {
        Some(len) => Decoded::Awaits(len),
        None => Decoded::Frame(frame),
    })
}
