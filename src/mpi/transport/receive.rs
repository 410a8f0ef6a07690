//! The MPI transport's receiving side: completed receives, frames landed
//! from MPI or read from the node's frame rings, probes.

use mpi::point_to_point::Source;
use mpi::topology::Communicator;

use crate::driver::{PeerView, Transport};
use crate::mpi::wire::{self, Decoded, Frame};
use crate::protocol::Msg;
use crate::types::Rank;
use crate::value::data::{Data, INLINE_BYTES};
use crate::value::Packet;

use super::outgoing::*;
use super::*;

impl MpiTransport {
    /// The first message that receives in progress have completed, each
    /// peer's in order; receives from a peer found failed are abandoned.
    pub(super) fn completed(&mut self) -> Option<(Rank, Msg<Packet>)> {
        for peer in 0..self.receiving.len() {
            while let Some(front) = self.receiving[peer].pop_front() {
                match front.request.test() {
                    Ok(_) => {
                        self.receives -= 1;
                        if let Some(msg) = self.landed(peer as Rank, front.into) {
                            return Some(msg);
                        }
                    }
                    Err(request) => {
                        self.receiving[peer].push_front(Receiving { request, ..front });
                        if self.is_failed(peer as Rank) {
                            // Never completed, never dropped (rsmpi panics
                            // on a dropped request, and MPI may still write
                            // the memory): a leak bounded by what the
                            // failed sender had started.
                            self.receives -= self.receiving[peer].len();
                            for r in self.receiving[peer].drain(..) {
                                std::mem::forget(r);
                            }
                            self.awaiting[peer] = None;
                        }
                        break;
                    }
                }
            }
        }
        None
    }

    /// A completed receive from `from`: the message it makes whole, if it
    /// is one (a notice is taken here, a frame that awaits its detached
    /// value is kept until it comes).
    pub(super) fn landed(&mut self, from: Rank, into: Landing) -> Option<(Rank, Msg<Packet>)> {
        let frame = match into {
            Landing::Frame(lent) => {
                // SAFETY: the receive into it has completed: MPI no longer
                // touches it.
                let bytes = unsafe { lent.reclaim() };
                let len = bytes.len();
                let header = self.awaiting.get_mut(from as usize).and_then(Option::take);
                let Some(header) = header.filter(|_| len > INLINE_BYTES) else {
                    return self.landed_frame(from, bytes);
                };
                // A detached value matched before its frame had landed (an
                // earlier receive from `from` was still in progress): it
                // came as bytes; one copy into a segment.
                let value = Data::filled(len, &self.segments, |b| b.copy_from_slice(&bytes));
                self.inboxes.push(bytes);
                wire::decode_parts(&header, &self.segments, Some(value))
            }
            Landing::Value { value, header } => {
                let frame = wire::decode_parts(&header, &self.segments, Some(value));
                self.inboxes.push(header);
                frame
            }
        };
        self.take_frame(from, frame, false)
    }

    /// The frame received from `from` through MPI into `inbox` (which goes
    /// back to the spare ones, unless the frame awaits its detached value).
    pub(super) fn landed_frame(
        &mut self,
        from: Rank,
        inbox: Vec<u8>,
    ) -> Option<(Rank, Msg<Packet>)> {
        let decoded = wire::decode_parts(&inbox, &self.segments, None);
        if let Some(Decoded::Awaits(_)) = decoded {
            if let Some(slot) = self.awaiting.get_mut(from as usize) {
                *slot = Some(inbox);
            }
            return None;
        }
        self.inboxes.push(inbox);
        self.take_frame(from, decoded, false)
    }

    /// A decoded frame from `from`, which came through its ring
    /// (`via_ring`) or MPI: put in the pair's one order first (a frame of a
    /// peer on this node that came through MPI is handed on where the
    /// ring's [`Frame::ViaMpi`] stands), then [`MpiTransport::deliver`]ed.
    pub(super) fn take_frame(
        &mut self,
        from: Rank,
        frame: Option<Decoded>,
        via_ring: bool,
    ) -> Option<(Rank, Msg<Packet>)> {
        let peer = from as usize;
        if peer >= self.rings_in.len() || self.rings_in[peer].is_none() {
            return self.deliver(from, frame);
        }
        if via_ring {
            if !matches!(frame, Some(Decoded::Frame(Frame::ViaMpi))) {
                return self.deliver(from, frame);
            }
            self.frames_from[peer] += 1;
            match self.early[peer].pop_front() {
                Some(early) => self.deliver(from, early),
                None => {
                    self.owed[peer] += 1;
                    self.owed_total += 1;
                    None
                }
            }
        } else if self.owed[peer] > 0 {
            self.owed[peer] -= 1;
            self.owed_total -= 1;
            self.deliver(from, frame)
        } else {
            self.early[peer].push_back(frame);
            None
        }
    }

    /// A decoded frame from `from`, in its order: a message to hand out, or
    /// a notice taken here.
    pub(super) fn deliver(
        &mut self,
        from: Rank,
        frame: Option<Decoded>,
    ) -> Option<(Rank, Msg<Packet>)> {
        if let Some(count) = self.frames_from.get_mut(from as usize) {
            *count += 1;
        }
        match frame {
            Some(Decoded::Frame(Frame::Msg(msg))) => return Some((from, msg)),
            Some(Decoded::Frame(Frame::Failed(r))) => {
                self.mark_failed(r);
            }
            Some(Decoded::Frame(Frame::Left)) => {
                if let Some(l) = self.left.get_mut(from as usize) {
                    *l = true;
                }
            }
            Some(Decoded::Frame(Frame::Beat {
                entered,
                returned,
                beat,
                call,
            })) => {
                if let Some(v) = self.views.get_mut(from as usize) {
                    // Frames of one sender arrive in order: the last is the
                    // newest.
                    *v = PeerView {
                        entered,
                        returned,
                        beat,
                        left: false,
                        exited: false,
                        call: unpack_call(call),
                    };
                }
            }
            Some(Decoded::Awaits(_) | Decoded::Frame(Frame::ViaMpi)) | None => {
                self.malformed += 1;
            }
        }
        None
    }

    /// Whether a message is waiting. One that is is matched here and kept
    /// for the next `try_recv` (a probe that finds a message, then a
    /// matched probe that finds it again, cost two passes of MPI's
    /// progress engine where one does).
    pub(super) fn probe(&mut self) -> bool {
        self.out.get_mut().flush_rings();
        if self.ring_has_next() {
            return true;
        }
        if !self.mpi_in_use() {
            return false;
        }
        if self.probed.is_none() {
            self.probed = self
                .comm
                .any_process()
                .immediate_matched_probe_with_tag(TAG);
        }
        self.probed.is_some()
    }

    /// Whether MPI has anything to do here: a peer without a ring, a frame
    /// a ring announced, or a send of ours in progress (MPI moves a large
    /// one only while we call it). Else every peer has a ring and MPI is
    /// not called at all.
    pub(super) fn mpi_in_use(&mut self) -> bool {
        if self.through_mpi {
            return true;
        }
        let out = self.out.get_mut();
        if out.in_mpi > 0 {
            // Nothing else tests them here: a completed send would keep MPI
            // polled until the next send to its peer.
            out.reap_mpi();
        }
        out.in_mpi > 0
            || (self.owed_total > 0 && {
                // Not for a frame a failed peer announced: it may never come.
                let failed = self.failed.borrow();
                self.owed
                    .iter()
                    .zip(failed.iter())
                    .any(|(&o, &f)| o > 0 && !f)
            })
    }

    /// Whether a ring not held up by a frame through MPI has a frame (or
    /// part of one) to read.
    pub(super) fn ring_has_next(&self) -> bool {
        self.rings_in
            .iter()
            .zip(&self.owed)
            .any(|(r, &owed)| owed == 0 && r.as_ref().is_some_and(|r| r.reader.has_next()))
    }

    /// The next message from the rings, one frame per ring per turn; a
    /// notice is taken here. What a peer found failed wrote whole is still
    /// read, as through MPI and between threads; a frame it left half
    /// written is never handed on, and a frame it announced through MPI
    /// that never came holds up its ring for good (nothing after it is
    /// handed on out of order).
    pub(super) fn read_rings(&mut self) -> Option<(Rank, Msg<Packet>)> {
        let n = self.rings_in.len();
        for k in 0..n {
            let peer = (self.ring_turn + k) % n;
            loop {
                if self.rings_in[peer].is_none() || self.owed[peer] > 0 {
                    break;
                }
                let ring = self.rings_in[peer].as_mut().expect("checked");
                if !ring.reader.read(&mut ring.frame) {
                    break;
                }
                self.ring_turn = peer + 1;
                // Most frames: a protocol message, handed out as it is
                // decoded (what `take_frame` and `deliver` do for it).
                if let Some(msg) = wire::decode_msg(&ring.frame, &self.segments) {
                    ring.frame.clear();
                    self.frames_from[peer] += 1;
                    return Some((peer as Rank, msg));
                }
                // Never detached: a ring's frame is whole (`Awaits` would
                // be malformed, and is counted so).
                let decoded = wire::decode_parts(&ring.frame, &self.segments, None);
                ring.frame.clear();
                if let Some(msg) = self.take_frame(peer as Rank, decoded, true) {
                    return Some(msg);
                }
            }
        }
        None
    }
}
