//! What the MPI transport has in flight: sends pending per peer with the
//! memory they read, receives in progress with where they land, and the
//! frames queued for the node's frame rings.

use std::collections::VecDeque;

use mpi::point_to_point::Destination;
use mpi::request::{Request, StaticScope};
use mpi::topology::{Communicator, SimpleCommunicator};

use crate::mailbox::frames::{FrameReader, FrameWriter, FIRST_BYTES};
use crate::mpi::wire::{self, Frame};
use crate::types::{Rank, Tick};
use crate::value::data::{Data, Wire};

use super::*;

/// One pending send and what it reads.
pub(super) struct InFlight {
    pub(super) request: Request<'static, [u8], StaticScope>,
    pub(super) reads: Reads,
}

/// The memory a pending send reads, kept from reuse until it completes.
pub(super) enum Reads {
    /// A frame's buffer, lent to MPI.
    Frame(LentFrame),
    /// A detached value (`wire::encode_parts`): its segment, held (never
    /// read: holding it keeps the pool from writing it).
    Value { _held: Data },
}

/// A receive in progress: `MPI_Imrecv` of a probed message, tested until
/// it completes. A message above MPI's eager size completes only with its
/// sender's help (a rendezvous), so a blocking `MPI_Mrecv` would wait on a
/// peer that may be dead; this one is abandoned once the peer is failed.
pub(super) struct Receiving {
    pub(super) request: Request<'static, [u8], StaticScope>,
    pub(super) into: Landing,
}

/// Where a receive lands.
pub(super) enum Landing {
    /// A frame: a receive buffer, lent to MPI.
    Frame(LentFrame),
    /// A detached value: a segment nobody else holds until it is whole,
    /// and the frame that awaits it.
    Value { value: Data, header: Vec<u8> },
}

/// The frame ring to a process of this node, and the frames not yet wholly
/// written into it (each with how many of its slots are), oldest first.
pub(super) struct RingOut {
    pub(super) writer: FrameWriter,
    pub(super) queue: VecDeque<(Vec<u8>, usize)>,
}

/// The frame ring from a process of this node, and the frame being read.
pub(super) struct RingIn {
    pub(super) reader: FrameReader,
    pub(super) frame: Vec<u8>,
}

/// Sends in progress and spare buffers.
pub(super) struct Outgoing {
    /// Per peer, oldest first.
    pub(super) pending: Vec<VecDeque<InFlight>>,
    /// Per peer on this node: its frame ring (every frame to it goes
    /// there, none through MPI, so they stay in one order).
    pub(super) rings: Vec<Option<RingOut>>,
    /// Frames queued for rings, over all peers.
    pub(super) queued: usize,
    /// MPI sends pending, over all peers: while there are, waits call MPI
    /// (its progress engine moves them) even if every peer has a ring.
    pub(super) in_mpi: usize,
    /// Sends to failed peers: never completed by us, never dropped.
    pub(super) abandoned: Vec<InFlight>,
    pub(super) spare: Vec<Vec<u8>>,
    /// Per peer: since when its sends have been at [`MAX_IN_FLIGHT`].
    pub(super) full_since: Vec<Option<Tick>>,
    /// Frames that could not be written (a value of this process's memory).
    pub(super) unframeable: u64,
}

impl Outgoing {
    /// Writes what fits of the frames queued for `to`'s ring, and
    /// reclaims the buffers of `to`'s completed MPI sends, oldest first.
    pub(super) fn reap(&mut self, to: usize) {
        self.write_ring(to);
        while let Some(front) = self.pending[to].pop_front() {
            match front.request.test() {
                Ok(_) => {
                    self.in_mpi -= 1;
                    // A detached value's segment is let go: MPI no longer
                    // reads it.
                    if let Reads::Frame(lent) = front.reads {
                        // SAFETY: a successful test consumed the request
                        // that read the frame: MPI no longer reads it.
                        self.spare.push(unsafe { lent.reclaim() });
                    }
                }
                Err(request) => {
                    self.pending[to].push_front(InFlight { request, ..front });
                    return;
                }
            }
        }
    }

    /// Writes what fits of the frames queued for `to`'s ring, oldest first
    /// (a frame larger than the ring streams through it as the reader
    /// frees slots).
    pub(super) fn write_ring(&mut self, to: usize) {
        let Some(ring) = self.rings[to].as_mut() else {
            return;
        };
        while let Some((frame, done)) = ring.queue.front_mut() {
            *done = ring.writer.write(frame, *done);
            if *done < FrameWriter::slots_for(frame.len()) {
                return;
            }
            let (frame, _) = ring.queue.pop_front().expect("a front");
            self.spare.push(frame);
            self.queued -= 1;
        }
    }

    /// [`Outgoing::write_ring`] for every peer with frames queued.
    #[inline]
    pub(super) fn flush_rings(&mut self) {
        if self.queued == 0 {
            return;
        }
        for to in 0..self.rings.len() {
            self.write_ring(to);
        }
    }

    /// Reclaims the completed MPI sends to every peer (for a transport that
    /// otherwise calls MPI only while some are pending).
    pub(super) fn reap_mpi(&mut self) {
        for to in 0..self.pending.len() {
            if !self.pending[to].is_empty() {
                self.reap(to);
            }
        }
    }

    /// Writes `frame` into `to`'s ring, or what fits of it behind the
    /// frames queued there, and queues the rest.
    pub(super) fn queue_for_ring(&mut self, to: usize, frame: Vec<u8>) {
        let ring = self.rings[to].as_mut().expect("a peer with a ring");
        let mut done = 0;
        if ring.queue.is_empty() {
            done = ring.writer.write(&frame, 0);
            if done == FrameWriter::slots_for(frame.len()) {
                self.spare.push(frame);
                return;
            }
        }
        ring.queue.push_back((frame, done));
        self.queued += 1;
    }

    /// A frame that fits one slot, to a peer whose ring has nothing
    /// queued: encoded on the stack and written straight into the ring, or
    /// queued if the ring is full. False if it is not such a frame (the
    /// caller sends it the general way).
    #[inline]
    fn start_small(&mut self, to: usize, frame: &Frame) -> bool {
        let Some(ring) = self.rings[to].as_mut().filter(|r| r.queue.is_empty()) else {
            return false;
        };
        let mut small = wire::SmallFrame::<FIRST_BYTES>::new();
        let framed = wire::encode_parts(frame, &mut small, wire::DETACH_MIN_BYTES);
        let Some(bytes) = small.bytes().filter(|_| matches!(framed, Ok(None))) else {
            return false;
        };
        if ring.writer.write(bytes, 0) == 0 {
            let mut queued = self.spare.pop().unwrap_or_default();
            queued.clear();
            queued.extend_from_slice(bytes);
            ring.queue.push_back((queued, 0));
            self.queued += 1;
        }
        true
    }

    /// Sends to `to` not yet complete: through MPI, and for a peer on this
    /// node frames not yet wholly written into its ring.
    pub(super) fn in_flight(&self, to: usize) -> usize {
        let ring = self.rings[to].as_ref().map_or(0, |r| r.queue.len());
        ring + self.pending[to].len()
    }

    /// Gives up the sends to `to`, a peer found failed: its ring's queue is
    /// dropped (nobody else reads those buffers); its MPI sends are kept,
    /// never completed by us, never dropped.
    pub(super) fn abandon(&mut self, to: usize) {
        if let Some(ring) = self.rings[to].as_mut() {
            self.queued -= ring.queue.len();
            ring.queue.clear();
        }
        let dropped: Vec<InFlight> = self.pending[to].drain(..).collect();
        self.in_mpi -= dropped.len();
        self.abandoned.extend(dropped);
    }

    /// Tells `to`, just marked failed, that it was: one try, never waited
    /// for. Through its ring if there is room now (a notice takes one
    /// slot, so it is written whole or not at all), else through MPI,
    /// abandoned at once (a dead peer never completes it).
    pub(super) fn tell_failed(&mut self, comm: &SimpleCommunicator, to: Rank) {
        self.start(comm, to, &Frame::Failed(to));
        self.write_ring(to as usize);
        self.abandon(to as usize);
    }

    /// Starts sending `frame` to `to` (no capacity check): through its
    /// ring, whole, if it is on this node; else through MPI, the frame,
    /// then its detached value if it has one (MPI keeps the two in order).
    pub(super) fn start(&mut self, comm: &SimpleCommunicator, to: Rank, frame: &Frame) -> bool {
        if self.start_small(to as usize, frame) {
            return true;
        }
        let mut bytes = self.spare.pop().unwrap_or_default();
        let detached = match wire::encode_parts(frame, &mut bytes, wire::DETACH_MIN_BYTES) {
            Ok(detached) => detached,
            Err(_) => {
                self.unframeable += 1;
                self.spare.push(bytes);
                return false;
            }
        };
        if self.rings[to as usize].is_some() {
            if detached.is_none() && bytes.len() <= RING_FRAME_MAX {
                self.queue_for_ring(to as usize, bytes);
                return true;
            }
            // Too large for the ring: MPI carries it, and the ring says so
            // where it stands in the order.
            let mut marker = self.spare.pop().unwrap_or_default();
            wire::encode_parts(&Frame::ViaMpi, &mut marker, usize::MAX)
                .expect("a notice always frames");
            self.queue_for_ring(to as usize, marker);
        }
        // Put together again in `reap`, once sent.
        let (lent, slice) = LentFrame::lend(bytes);
        let dest = comm.process_at_rank(to as i32);
        let request = dest.immediate_send_with_tag(StaticScope, &*slice, TAG);
        self.pending[to as usize].push_back(InFlight {
            request,
            reads: Reads::Frame(lent),
        });
        self.in_mpi += 1;
        // `encode_parts` detaches only values of bytes.
        if let Some((value, Some(Wire::Bytes(bytes)))) = detached.as_ref().map(|v| (v, v.to_wire()))
        {
            // SAFETY: the bytes are a segment's storage, on the heap behind
            // the segment's `Arc`: moving the value into the `InFlight`
            // below does not move them, and the `InFlight` holds it until
            // the request tested complete (or forever, if abandoned or
            // still pending when the transport is dropped). A held segment
            // is never written: the pool writes only blocks it alone holds
            // (`SegmentPool::fill`).
            let slice: &'static [u8] =
                unsafe { std::slice::from_raw_parts(bytes.as_ptr(), bytes.len()) };
            let request = dest.immediate_send_with_tag(StaticScope, slice, TAG);
            self.pending[to as usize].push_back(InFlight {
                request,
                reads: Reads::Value {
                    _held: value.clone(),
                },
            });
            self.in_mpi += 1;
        }
        true
    }
}
