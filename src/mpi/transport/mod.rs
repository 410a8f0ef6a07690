//! The MPI [`Transport`]: one rank per process, point-to-point messages on
//! a duplicate of the world communicator, so the driver and every protocol
//! core run between processes exactly as between threads.
//!
//! * **Sends never block and never wait on a peer.** Each message is framed
//!   ([`super::wire`]) into a buffer the transport owns and sent with
//!   `MPI_Isend`. Completed sends give their buffers back for reuse; at
//!   most [`MAX_IN_FLIGHT`] sends per peer are pending (a lane's capacity:
//!   past it the driver keeps the message in its outbox). Sends to a peer
//!   found failed are abandoned: never waited for, their buffers never
//!   freed (MPI may still read them), at most [`MAX_IN_FLIGHT`] per peer
//!   and the notice that tells it it was declared failed.
//! * **Receives are probe-driven** (`MPI_Improbe`, then `MPI_Imrecv` into
//!   one reused buffer, or for a detached value into a segment), tested
//!   until complete: a message above MPI's eager size completes only with
//!   its sender's help, so a blocking receive would wait on a peer that may
//!   be dead. Receives in progress are kept per peer, in MPI's matching
//!   order, so a slow or dead sender holds up only its own messages; a
//!   receive from a peer found failed is abandoned. No MPI
//!   collective and no blocking call is ever made on a peer that may be
//!   dead.
//! * **One tag, one frame kind byte**: protocol messages and the
//!   transport's notices travel in one FIFO per pair of ranks (MPI's
//!   non-overtaking rule), so a notice that a rank left or failed never
//!   overtakes that rank's last messages.
//! * **Failures**: this Open MPI reports none (no ULFM; see docs/mpi.md).
//!   A rank marked failed here (by this process's driver: the timeout
//!   detector, or its own emulated death) is announced to every other rank
//!   with a [`Frame::Failed`], the failed rank included (a live rank
//!   taken for failed learns it and fails its next call); a SIGKILLed
//!   process is known to nobody until a detector says so (or, on this
//!   node, its exit, `exited`). Corrected broadcast needs no notice.
//! * **Time**: nanoseconds since the transport was made.
//!
//! Not `Send` in substance: the communicator that owns this transport
//! ([`super::MpiComm`]) is not `Send`, so the transport is used by one
//! thread at a time: the one that made it, or (in the hierarchy,
//! [`super::hier`]) the proxy thread of the moment, under a mutex, with MPI
//! at `Threading::Serialized` or `Multiple` (see the `SAFETY` note on its
//! `Send`).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mpi::point_to_point::{Message, Source, Status};
use mpi::request::StaticScope;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::Equivalence;

use crate::driver::{unpack_call, PeerView, Transport};
use crate::mpi::shm::{EntryWords, NodeRings};
use crate::mpi::wire::{Decoded, Frame};
use crate::protocol::{Header, Msg};
use crate::types::{OpId, Rank, Tick};
use crate::value::data::{Data, INLINE_BYTES};
use crate::value::segment::SegmentPool;
use crate::value::Packet;

mod exited;
mod heartbeat;
mod lent_frame;
mod outgoing;
mod receive;

use exited::Exited;
use lent_frame::LentFrame;

use outgoing::*;

/// The MPI tag of every frame.
const TAG: i32 = 0x636f;

/// A waiting rank polls and yields the core this long after the last
/// message came, then sleeps 20 µs between polls (nanoseconds).
const YIELD_FOR: Tick = 2_000_000;

/// Messages this small are received with a blocking `MPI_Mrecv`: every
/// MPI sends them eagerly (Open MPI's smallest eager limit, vader's, is
/// 4 KiB; tcp's 64 KiB), so once matched they are whole here and the
/// receive waits on nobody. Larger ones are received nonblocking
/// ([`Receiving`]).
const SURELY_EAGER_BYTES: usize = 1024;

/// The largest frame that goes through a frame ring; a larger one goes
/// through MPI, announced in the ring by a [`Frame::ViaMpi`] (one cache
/// line per slot crosses between the cores, and a frame larger than the
/// ring needs both ends running to stream through it: measured in
/// docs/mpi.md, *Frames through the node's shared memory*).
pub const RING_FRAME_MAX: usize = 4096;

/// Sends pending per peer at most (as a thread lane's capacity).
pub const MAX_IN_FLIGHT: usize = 64;

/// One process's MPI transport.
pub struct MpiTransport {
    comm: SimpleCommunicator,
    rank: Rank,
    procs: u32,
    started: Instant,
    out: RefCell<Outgoing>,
    /// Per peer: its receives in progress, in the order MPI matched them
    /// (its messages' order). A slow or dead sender holds up only its own.
    receiving: Vec<VecDeque<Receiving>>,
    /// Receives in progress, over all peers.
    receives: usize,
    /// Per peer on this node: the frame ring it writes to this rank (empty
    /// if no peer has one).
    rings_in: Vec<Option<RingIn>>,
    /// The words of the node's shared memory that tell which operations
    /// this process and every other of the node entered, if it has them:
    /// written as this process enters each operation
    /// (`crate::mpi::shared_broadcast`), read in [`Transport::peer`].
    entries: Option<EntryWords>,
    /// The peer whose ring is read first next (one frame per ring per turn).
    ring_turn: usize,
    /// Whether some peer talks through MPI (not every one is on this node).
    through_mpi: bool,
    /// Per peer on this node: [`Frame::ViaMpi`]s read from its ring whose
    /// frames have not come through MPI yet (its ring is read no further
    /// until they have).
    owed: Vec<u32>,
    /// Over all peers.
    owed_total: u32,
    /// Give the core up after every empty poll ([`MpiTransport::yield_when_idle`]).
    yield_when_idle: bool,
    /// Per peer on this node: frames that came through MPI before the ring
    /// announced them, in order.
    early: Vec<VecDeque<Option<Decoded>>>,
    /// A message a wait matched ([`MpiTransport::probe`]), for the next
    /// `try_recv` to receive: matched once, not probed again.
    probed: Option<(Message, Status)>,
    /// Receive buffers not in use, for reuse (one, unless receives from
    /// several peers are in progress).
    inboxes: Vec<Vec<u8>>,
    /// Per peer: a frame whose detached value is its next message.
    awaiting: Vec<Option<Vec<u8>>>,
    /// Segments of values too large to travel inline, once received.
    segments: Arc<SegmentPool>,
    failed: RefCell<Vec<bool>>,
    epoch: Cell<u64>,
    /// Ranks whose program has ended (a [`Frame::Left`] came).
    left: Vec<bool>,
    /// Frames received that could not be read (must stay 0).
    malformed: u64,
    /// What this rank tells others of its progress (its beat counts the
    /// heartbeats it sent).
    mine: Cell<PeerView>,
    /// What the others last told.
    views: Vec<PeerView>,
    /// Which peers' processes have exited, for those on this node.
    exited: Exited,
    /// Frames received from each peer: counted on receipt (no clock read
    /// on the receive path); a rank whose program has ended serves a peer
    /// that still speaks (see `team_quiet`).
    frames_from: Vec<u64>,
    /// Per peer, the frame count `team_quiet` last saw and since when (this
    /// rank's clock): when the peer was last heard from, as far as the
    /// ending rank needs to know.
    heard: RefCell<Vec<(u64, Tick)>>,
    /// When a wait last saw a message come.
    last_message: Cell<Tick>,
    /// When this rank last sent a heartbeat.
    last_beat: Cell<Tick>,
    /// A heartbeat went out during the current call (so its return is
    /// told at once: see `publish_returned`).
    beat_in_call: Cell<bool>,
    /// Heartbeats go out this often while this rank waits.
    beat_every: Tick,
    /// When this rank's own program ended, if it has.
    leaving: Cell<Option<Tick>>,
    /// How long a rank that has ended waits for ranks that have not, when
    /// nothing tells it they failed; also how long a peer may leave
    /// [`MAX_IN_FLIGHT`] sends pending before it is taken for failed.
    leave_wait: Tick,
    /// The same for a rank that still has sends of ours pending: its
    /// operation timeout (it may be busy outside MPI, failing over a
    /// thread level, and still need them).
    owed_wait: Tick,
    stuck_after: Tick,
}

// SAFETY: an `MpiTransport` holds MPI handles and raw pointers to buffers
// MPI reads or writes, none of which may be used from two threads at once.
// It is owned by an `MpiComm`, which is `!Send` (it holds a raw-pointer
// marker): it stays on the thread that made it, unless the hierarchy moves
// it, inside a `Mutex` whose holder alone uses it, with MPI initialized at
// `Threading::Serialized` or `Multiple` (`hier::Process`). The driver asks
// `T: Send` only so that thread engines can lend a call to other threads
// (`Transport::block_call`), which this transport never does (it keeps the
// default).
unsafe impl Send for MpiTransport {}

impl MpiTransport {
    /// A transport on a duplicate of `world` (so no message of the
    /// program's own MPI traffic is ever taken for ours); values too large
    /// to travel inline are received into segments of `segments`.
    /// `failure_timeout` sets the heartbeat (four per timeout while this
    /// rank waits), how long a peer may leave [`MAX_IN_FLIGHT`] sends
    /// pending before it is taken for failed, and how long a rank whose
    /// program has ended waits for silent others to end too (`op_timeout`
    /// for one to which sends are still pending).
    ///
    /// With `rings` (the node's shared memory, [`NodeRings`]), every frame
    /// to a peer that has a ring goes through it instead of MPI.
    pub fn new(
        world: &SimpleCommunicator,
        segments: Arc<SegmentPool>,
        failure_timeout: Duration,
        op_timeout: Duration,
        rings: Option<NodeRings>,
    ) -> Self {
        let comm = world.duplicate();
        let exited = Exited::new(&comm);
        let (rank, procs) = (comm.rank() as Rank, comm.size() as u32);
        let (writers, readers, entries) = match rings {
            Some(r) if r.writers.len() == procs as usize && r.readers.len() == procs as usize => {
                (r.writers, r.readers, Some(r.entries))
            }
            _ => (
                (0..procs).map(|_| None).collect(),
                (0..procs).map(|_| None).collect(),
                None,
            ),
        };
        let through_mpi = (0..procs as usize).any(|p| p != rank as usize && writers[p].is_none());
        MpiTransport {
            comm,
            rank,
            procs,
            started: Instant::now(),
            out: RefCell::new(Outgoing {
                pending: (0..procs).map(|_| VecDeque::new()).collect(),
                rings: writers
                    .into_iter()
                    .map(|w| {
                        w.map(|writer| RingOut {
                            writer,
                            queue: VecDeque::new(),
                        })
                    })
                    .collect(),
                queued: 0,
                in_mpi: 0,
                abandoned: Vec::new(),
                spare: Vec::new(),
                full_since: vec![None; procs as usize],
                unframeable: 0,
            }),
            receiving: (0..procs).map(|_| VecDeque::new()).collect(),
            receives: 0,
            entries,
            // Empty without rings, so that the MPI-only path pays nothing
            // for them.
            rings_in: if readers.iter().any(Option::is_some) {
                readers
                    .into_iter()
                    .map(|r| {
                        r.map(|reader| RingIn {
                            reader,
                            frame: Vec::new(),
                        })
                    })
                    .collect()
            } else {
                Vec::new()
            },
            ring_turn: 0,
            through_mpi,
            owed: vec![0; procs as usize],
            owed_total: 0,
            yield_when_idle: false,
            early: (0..procs).map(|_| VecDeque::new()).collect(),
            probed: None,
            inboxes: Vec::new(),
            awaiting: vec![None; procs as usize],
            segments,
            failed: RefCell::new(vec![false; procs as usize]),
            epoch: Cell::new(0),
            left: vec![false; procs as usize],
            malformed: 0,
            leaving: Cell::new(None),
            mine: Cell::new(PeerView::START),
            views: vec![PeerView::START; procs as usize],
            exited,
            frames_from: vec![0; procs as usize],
            heard: RefCell::new(vec![(0, 0); procs as usize]),
            last_beat: Cell::new(0),
            last_message: Cell::new(0),
            beat_in_call: Cell::new(false),
            beat_every: crate::driver::nanos(failure_timeout) / 4,
            leave_wait: crate::driver::nanos(failure_timeout),
            owed_wait: crate::driver::nanos(op_timeout.max(failure_timeout)),
            stuck_after: crate::driver::nanos(failure_timeout),
        }
    }

    /// Whether a wait gives the core up after every poll that finds
    /// nothing through the rings, instead of polling 64 times first: for
    /// processes that outnumber their node's cores, where the peer a wait
    /// needs may be waiting for this core. (Through MPI, Open MPI's own
    /// `mpi_yield_when_idle` does it inside each probe.)
    pub fn yield_when_idle(mut self, yes: bool) -> Self {
        self.yield_when_idle = yes;
        self
    }

    /// Frames received that could not be read, and messages that could not
    /// be framed (both stay 0 unless something is wrong).
    pub fn bad_frames(&self) -> (u64, u64) {
        (self.malformed, self.out.borrow().unframeable)
    }

    /// Marks `rank` failed here; true if it was news. Its pending sends are
    /// abandoned.
    fn mark_failed(&self, rank: Rank) -> bool {
        let mut failed = self.failed.borrow_mut();
        let Some(slot) = failed.get_mut(rank as usize) else {
            return false;
        };
        if *slot {
            return false;
        }
        *slot = true;
        self.epoch.set(self.epoch.get() + 1);
        self.out.borrow_mut().abandon(rank as usize);
        true
    }

    /// Sends a notice to every other rank not known failed (notices are
    /// few and bypass the per-peer cap).
    fn announce(&self, frame: &Frame) {
        let failed = self.failed.borrow().clone();
        let mut out = self.out.borrow_mut();
        for to in (0..self.procs).filter(|&r| r != self.rank && !failed[r as usize]) {
            out.reap(to as usize);
            out.start(&self.comm, to, frame);
        }
    }

    /// True once every send to a rank not known failed has completed.
    fn sends_done(&self) -> bool {
        let failed = self.failed.borrow();
        let mut out = self.out.borrow_mut();
        (0..self.procs as usize).all(|to| {
            out.reap(to);
            failed[to] || out.in_flight(to) == 0
        })
    }
}

impl Drop for MpiTransport {
    fn drop(&mut self) {
        // A pending request may not be dropped (rsmpi panics), and its
        // buffer may still be read: forget both (bounded: at most
        // MAX_IN_FLIGHT per peer, and only for peers that never took them).
        let out = self.out.get_mut();
        for to in 0..out.pending.len() {
            out.reap(to);
        }
        // A matched message never received (rsmpi panics on its drop).
        std::mem::forget(self.probed.take());
        // Receives in progress: MPI may still write their memory.
        for r in self.receiving.iter_mut().flat_map(|q| q.drain(..)) {
            std::mem::forget(r);
        }
        // Both whole: a held segment must not go back to the pool either.
        for f in out.pending.iter_mut().flat_map(|q| q.drain(..)) {
            std::mem::forget(f);
        }
        for f in out.abandoned.drain(..) {
            std::mem::forget(f);
        }
    }
}

impl Transport for MpiTransport {
    type Payload = Packet;

    fn rank(&self) -> Rank {
        self.rank
    }

    /// A real SIGKILL of this process: what was sent is sent, nothing else
    /// happens (no notice, no flush of MPI's buffers, no exit handler).
    fn vanish(&self) {
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
        // The signal is taken before the call returns; never goes on.
        loop {
            std::thread::park();
        }
    }

    fn procs(&self) -> u32 {
        self.procs
    }

    fn now(&self) -> Tick {
        crate::driver::nanos(self.started.elapsed())
    }

    fn send(&mut self, to: Rank, msg: Msg<Packet>) -> Result<(), Msg<Packet>> {
        if self.is_failed(to) {
            // Fail-stop: a message to a failed rank vanishes.
            return Ok(());
        }
        let out = self.out.get_mut();
        out.reap(to as usize);
        let peer = to as usize;
        if out.in_flight(peer) >= MAX_IN_FLIGHT {
            // The clock is read only here, not on every send.
            let now = crate::driver::nanos(self.started.elapsed());
            let since = *out.full_since[peer].get_or_insert(now);
            let exited = self.exited.has_exited(to, now);
            if now.saturating_sub(since) <= self.stuck_after && !exited {
                return Err(msg);
            }
            // The peer has left MAX_IN_FLIGHT messages pending for the
            // failure timeout, or its process exited: failed (see the
            // module doc), unless its
            // program has ended: then it takes no more messages, and is
            // not failed (what it sent before it left is still heard; a
            // process declared failed after it left made its peer drop
            // the broadcasts it had sent, caught under load). Either way
            // the message vanishes.
            if !self.left[peer] {
                self.declare_failed(to);
            }
            return Ok(());
        }
        out.full_since[peer] = None;
        out.start(&self.comm, to, &Frame::Msg(msg));
        Ok(())
    }

    fn try_recv(&mut self) -> Option<(Rank, Msg<Packet>)> {
        self.out.get_mut().flush_rings();
        if let Some(msg) = self.read_rings() {
            return Some(msg);
        }
        if !self.mpi_in_use() {
            return None;
        }
        loop {
            if self.receives > 0 {
                if let Some(msg) = self.completed() {
                    return Some(msg);
                }
            }
            let (message, status): (_, Status) = match self.probed.take() {
                Some(probed) => probed,
                None => self
                    .comm
                    .any_process()
                    .immediate_matched_probe_with_tag(TAG)?,
            };
            let from = status.source_rank() as Rank;
            let len = status.count(u8::equivalent_datatype()) as usize;
            let peer = from as usize;
            let in_order = self.receiving[peer].is_empty();
            if in_order && len <= SURELY_EAGER_BYTES && self.awaiting[peer].is_none() {
                // Whole here once matched: a blocking receive waits on
                // nobody (and costs less than a nonblocking one and its
                // test, about 80 ns of a 450 ns allreduce).
                let mut inbox = self.inboxes.pop().unwrap_or_default();
                inbox.resize(len, 0);
                message.matched_receive_into(&mut inbox[..]);
                match self.landed_frame(from, inbox) {
                    Some(msg) => return Some(msg),
                    None => continue,
                }
            }
            let detached = in_order && len > INLINE_BYTES;
            let (buf, into): (&'static mut [u8], Landing) =
                match self.awaiting[peer].take_if(|_| detached) {
                    // The detached value of `from`'s last frame: straight
                    // into a segment.
                    Some(header) => {
                        let mut at = std::ptr::null_mut();
                        let value = Data::filled(len, &self.segments, |bytes| {
                            at = bytes.as_mut_ptr();
                        });
                        // SAFETY: `at` points to the segment's `len` bytes,
                        // on the heap behind the segment's `Arc`, which
                        // `value` keeps alive (in the `Receiving`, or
                        // forever if abandoned). Nobody reads them before
                        // the receive completes: `value` is handed out only
                        // then, and the pool never writes a held block.
                        let buf = unsafe { std::slice::from_raw_parts_mut(at, len) };
                        (buf, Landing::Value { value, header })
                    }
                    None => {
                        let mut inbox = self.inboxes.pop().unwrap_or_default();
                        inbox.resize(len, 0);
                        // Put together again in `landed`, once received.
                        let (lent, buf) = LentFrame::lend(inbox);
                        (buf, Landing::Frame(lent))
                    }
                };
            let request = message.immediate_matched_receive_into(StaticScope, buf);
            self.receiving[peer].push_back(Receiving { request, into });
            self.receives += 1;
        }
    }

    fn spin(&mut self) -> bool {
        // Through MPI, Open MPI's probe yields the core itself when asked to
        // (`mpi_yield_when_idle`, which it sets when it sees the node
        // oversubscribed).
        let polls = if self.yield_when_idle && !self.mpi_in_use() {
            1
        } else {
            64
        };
        for _ in 0..polls {
            if self.probe() {
                return true;
            }
            std::hint::spin_loop();
        }
        false
    }

    fn block(&mut self, until: Tick) {
        // MPI has no wait with a deadline that is not a blocking call on a
        // peer: poll, yielding the core (as Open MPI's own waits do with
        // `mpi_yield_when_idle`) until nothing has come for YIELD_FOR, then
        // sleeping briefly between polls.
        loop {
            let now = self.now();
            if now.saturating_sub(self.last_beat.get()) >= self.beat_every {
                self.send_beat(now);
            }
            if self.probe() {
                self.last_message.set(now);
                return;
            }
            if now >= until {
                return;
            }
            if now.saturating_sub(self.last_message.get()) < YIELD_FOR {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(20));
            }
        }
    }

    fn failure_epoch(&self) -> u64 {
        self.epoch.get()
    }

    fn failed(&self) -> Vec<Rank> {
        let failed = self.failed.borrow();
        (0..self.procs).filter(|&r| failed[r as usize]).collect()
    }

    #[inline]
    fn is_failed(&self, rank: Rank) -> bool {
        // Several times a call: without failures (the epoch counts them)
        // one load.
        if self.epoch.get() == 0 {
            return false;
        }
        self.failed
            .borrow()
            .get(rank as usize)
            .copied()
            .unwrap_or(false)
    }

    fn declare_failed(&self, rank: Rank) {
        if self.mark_failed(rank) {
            self.announce(&Frame::Failed(rank));
            if rank != self.rank {
                // Told too: a process suspected while alive (stopped,
                // descheduled for a failure timeout) is out for good, and
                // learns it from its next receive, so that its calls end in
                // `Error::Failed` instead of waiting on ranks that no longer
                // hear it. A dead one never reads it (one more abandoned
                // send).
                self.out.borrow_mut().tell_failed(&self.comm, rank);
            }
        }
    }

    fn peer(&self, peer: Rank) -> Option<PeerView> {
        self.view_of(peer)
    }

    fn entries_exact(&self, peer: Rank) -> bool {
        self.view_exact(peer)
    }

    fn publish_entered(&self, op: OpId) {
        if let Some(entries) = &self.entries {
            entries.publish(op);
        }
        let mut view = self.mine.get();
        view.entered = op + 1;
        self.mine.set(view);
    }

    fn publish_call(&self, header: Header) {
        // Told with the next heartbeat: a peer waiting on this rank sees
        // it within a beat interval.
        let mut view = self.mine.get();
        view.call = Some(header);
        self.mine.set(view);
    }

    fn publish_returned(&self, op: OpId) {
        let mut view = self.mine.get();
        view.returned = op + 1;
        self.mine.set(view);
        if self.beat_in_call.get() {
            // Others last heard this rank inside the call: tell them it
            // returned, or its silence while its program computes would
            // look like a hang.
            self.send_beat(self.now());
        }
    }

    fn beat(&mut self) {}

    fn leave(&self, _hung: bool) {
        let now = self.now();
        self.leaving.set(Some(now));
        // Its last view first: every peer knows what it entered exactly.
        self.send_beat(now);
        self.announce(&Frame::Left);
    }

    fn team_quiet(&self) -> bool {
        // Quiet once every other rank has ended its program or is known
        // failed, and our sends to them are complete. Short of that, once
        // `leave_wait` has passed since this rank's program ended and
        // every rank still running has been silent that long: a rank that
        // died unannounced (SIGKILL) or hangs is not waited for longer,
        // but one that still speaks (it lags behind, waiting in a call
        // and beating, or sending) is served, for it may still need late
        // messages of the operations this rank finished (seen under load:
        // a process that left after one failure timeout while another
        // still needed its broadcasts), or, if it still has sends of ours
        // pending, until it has been silent for its operation timeout
        // (busy outside MPI, as a process whose proxy thread fails over).
        let now = self.now();
        let leaving = self.leaving.get().unwrap_or(now);
        // A process of this node that has exited is not waited for: its
        // sends are abandoned now, not after its operation timeout.
        for r in 0..self.procs {
            let running = r != self.rank && !self.left[r as usize] && !self.is_failed(r);
            if running && self.exited.has_exited(r, now) {
                self.mark_failed(r);
            }
        }
        let failed = self.failed.borrow();
        // A failed rank (an emulated death) serves nobody, and the others,
        // which know it failed, send it nothing more (not even their
        // `Left`): it waits only for its own sends.
        let me_failed = failed[self.rank as usize];
        let running = |r: usize| r != self.rank as usize && !self.left[r] && !failed[r];
        if (me_failed || !(0..self.procs as usize).any(running)) && self.sends_done() {
            return true;
        }
        if me_failed {
            return now.saturating_sub(leaving) > self.leave_wait;
        }
        let mut out = self.out.borrow_mut();
        let mut heard = self.heard.borrow_mut();
        let mut silent = |r: usize| {
            if heard[r].0 != self.frames_from[r] {
                heard[r] = (self.frames_from[r], now);
            }
            out.reap(r);
            let wait = if out.in_flight(r) == 0 {
                self.leave_wait
            } else {
                self.owed_wait
            };
            now.saturating_sub(heard[r].1.max(leaving)) > wait
        };
        now.saturating_sub(leaving) > self.leave_wait
            && (0..self.procs as usize)
                .filter(|&r| running(r))
                .all(&mut silent)
    }
}
