//! A deterministic, single-threaded, in-memory [`Transport`] for tests of
//! the driver and of cores run through it: no threads, a virtual clock.
//!
//! Every rank's channel is a queue in one [`MemoryNet`]; a test drives one
//! rank's [`Driver`](super::Driver) and plays the others by hand: it
//! [injects](MemoryNet::inject) their messages, reads what the driven rank
//! [sent](MemoryNet::take_sent), and [fails](MemoryNet::fail) ranks. The
//! clock moves only when the driver reads it (each read costs
//! [`MemoryNet::new`]'s `step` ticks, as a real clock moves while a rank
//! works) or waits (a wait jumps to its deadline: nothing else can happen
//! while the only thread waits). A driver waiting for a rank nobody plays
//! therefore times out at once in virtual time, never hangs.
//!
//! Waits can also play what other ranks' threads do meanwhile: messages
//! [that arrive while a rank waits](MemoryNet::arrive_while_waiting), and a
//! [helper](MemoryNet::help_waiting) that pumps the waiting rank's lent
//! call once per wait, as a core mate's thread would ([`crate::helping`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::driver::transport::{PeerView, Progress, Transport};
use crate::protocol::{Header, Msg};
use crate::types::{OpId, Rank, Tick};

#[derive(Debug)]
struct Net<P> {
    procs: u32,
    clock: Tick,
    step: Tick,
    /// Per receiver: (sender, message), in arrival order.
    inbox: Vec<VecDeque<(Rank, Msg<P>)>>,
    /// Everything sent, in order: (sender, receiver, message).
    sent: VecDeque<(Rank, Rank, Msg<P>)>,
    /// Messages a receiver's channel holds before sends are refused.
    capacity: usize,
    failed: Vec<bool>,
    epoch: u64,
    peers: Vec<PeerView>,
    /// Per rank: whether its view's `entered` may lag behind
    /// ([`Transport::entries_exact`] false).
    lagging: Vec<bool>,
    /// Per receiver: messages delivered at its next wait.
    arrivals: Vec<VecDeque<(Rank, Msg<P>)>>,
    /// A helper pumps each waiting rank's lendable call once per wait.
    helping: bool,
    /// After each helper's pump: (rank, messages left in its channel).
    helped: Vec<(Rank, usize)>,
    /// Per rank: its waits so far.
    waits: Vec<u64>,
}

/// The network of a memory team: channels, clock, failures. Cheap to clone
/// (a shared handle).
#[derive(Debug)]
pub struct MemoryNet<P>(Arc<Mutex<Net<P>>>);

impl<P> Clone for MemoryNet<P> {
    fn clone(&self) -> Self {
        MemoryNet(Arc::clone(&self.0))
    }
}

impl<P> MemoryNet<P> {
    /// How many times `rank` has waited.
    pub fn waits(&self, rank: Rank) -> u64 {
        self.net().waits[rank as usize]
    }

    /// The network, locked (one thread drives a memory team; the lock only
    /// makes the handle `Send`, as the driver's transports must be).
    fn net(&self) -> MutexGuard<'_, Net<P>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<P: Clone + Send + 'static> MemoryNet<P> {
    /// A network of `procs` ranks whose clock starts at 0 and advances by
    /// `step` ticks on every read; channels hold `capacity` messages.
    pub fn new(procs: u32, step: Tick, capacity: usize) -> Self {
        MemoryNet(Arc::new(Mutex::new(Net {
            procs,
            clock: 0,
            step,
            inbox: (0..procs).map(|_| VecDeque::new()).collect(),
            sent: VecDeque::new(),
            capacity: capacity.max(1),
            failed: vec![false; procs as usize],
            epoch: 0,
            peers: vec![PeerView::START; procs as usize],
            lagging: vec![false; procs as usize],
            arrivals: (0..procs).map(|_| VecDeque::new()).collect(),
            helping: false,
            helped: Vec::new(),
            waits: vec![0; procs as usize],
        })))
    }

    /// Delivers `msg` from `from` to `to` (bypassing the capacity) when
    /// `to` next waits: a message that comes while the rank's thread is
    /// not running.
    pub fn arrive_while_waiting(&self, from: Rank, to: Rank, msg: Msg<P>) {
        self.net().arrivals[to as usize].push_back((from, msg));
    }

    /// With `on`, a helper pumps the call of every rank that waits in a
    /// call worth lending, once per wait, after that wait's arrivals.
    pub fn help_waiting(&self, on: bool) {
        self.net().helping = on;
    }

    /// After each helper's pump so far: the rank helped and how many
    /// messages its pump left in the rank's channel.
    pub fn helped(&self) -> Vec<(Rank, usize)> {
        self.net().helped.clone()
    }

    /// The transport of `rank`.
    pub fn transport(&self, rank: Rank) -> MemoryTransport<P> {
        assert!(rank < self.net().procs, "rank {rank} out of range");
        MemoryTransport {
            net: self.clone(),
            rank,
        }
    }

    /// Delivers `msg` from `from` to `to` (bypassing the capacity).
    pub fn inject(&self, from: Rank, to: Rank, msg: Msg<P>) {
        self.net().inbox[to as usize].push_back((from, msg));
    }

    /// Takes everything sent so far: (sender, receiver, message), in order.
    pub fn take_sent(&self) -> Vec<(Rank, Rank, Msg<P>)> {
        self.net().sent.drain(..).collect()
    }

    /// Takes `rank`'s pending received messages out of its channel (a test
    /// playing that rank reads them).
    pub fn take_inbox(&self, rank: Rank) -> Vec<(Rank, Msg<P>)> {
        self.net().inbox[rank as usize].drain(..).collect()
    }

    /// Marks `rank` failed (news for every driver).
    pub fn fail(&self, rank: Rank) {
        let mut net = self.net();
        if !net.failed[rank as usize] {
            net.failed[rank as usize] = true;
            net.epoch += 1;
        }
    }

    /// Sets what the detector sees of `rank`.
    pub fn set_peer(&self, rank: Rank, view: PeerView) {
        self.net().peers[rank as usize] = view;
    }

    /// Whether what the detector sees of `rank` may lag behind what it
    /// entered, as a heartbeat between processes does (default: exact).
    pub fn set_entries_lag(&self, rank: Rank, lagging: bool) {
        self.net().lagging[rank as usize] = lagging;
    }

    /// The virtual clock.
    pub fn clock(&self) -> Tick {
        self.net().clock
    }
}

/// One rank's end of a [`MemoryNet`].
#[derive(Debug)]
pub struct MemoryTransport<P> {
    net: MemoryNet<P>,
    rank: Rank,
}

impl<P: Clone + Send + Default + 'static> Transport for MemoryTransport<P> {
    type Payload = P;

    fn rank(&self) -> Rank {
        self.rank
    }

    fn procs(&self) -> u32 {
        self.net.net().procs
    }

    fn now(&self) -> Tick {
        let mut net = self.net.net();
        net.clock += net.step;
        net.clock
    }

    fn send(&mut self, to: Rank, msg: Msg<P>) -> Result<(), Msg<P>> {
        let mut net = self.net.net();
        if net.inbox[to as usize].len() >= net.capacity {
            return Err(msg);
        }
        net.inbox[to as usize].push_back((self.rank, msg.clone()));
        net.sent.push_back((self.rank, to, msg));
        Ok(())
    }

    fn try_recv(&mut self) -> Option<(Rank, Msg<P>)> {
        self.net.net().inbox[self.rank as usize].pop_front()
    }

    /// A wait jumps to its end unless a message is there: nothing else
    /// happens while the only thread waits.
    fn woken_by_every_event(&self) -> bool {
        true
    }

    fn spin(&mut self) -> bool {
        !self.net.net().inbox[self.rank as usize].is_empty()
    }

    fn block(&mut self, until: Tick) {
        let mut net = self.net.net();
        net.waits[self.rank as usize] += 1;
        if net.inbox[self.rank as usize].is_empty() {
            net.clock = net.clock.max(until);
        }
    }

    /// The wait's arrivals, then the helper's pump (see
    /// [`MemoryNet::help_waiting`]), then [`block`](Transport::block).
    fn block_call<C: Progress<Self>>(call: &mut C, until: Tick) {
        let (net, me) = (call.transport().net.clone(), call.transport().rank);
        let helping = {
            let mut n = net.net();
            let arrivals = std::mem::take(&mut n.arrivals[me as usize]);
            n.inbox[me as usize].extend(arrivals);
            n.helping
        };
        if helping && call.worth_lending() {
            call.pump();
            let mut n = net.net();
            let left = n.inbox[me as usize].len();
            n.helped.push((me, left));
        }
        call.transport().block(until);
    }

    fn failure_epoch(&self) -> u64 {
        self.net.net().epoch
    }

    fn failed(&self) -> Vec<Rank> {
        let net = self.net.net();
        (0..net.procs).filter(|&r| net.failed[r as usize]).collect()
    }

    fn is_failed(&self, rank: Rank) -> bool {
        self.net.net().failed[rank as usize]
    }

    fn declare_failed(&self, rank: Rank) {
        self.net.fail(rank);
    }

    fn peer(&self, peer: Rank) -> Option<PeerView> {
        Some(self.net.net().peers[peer as usize])
    }

    fn entries_exact(&self, peer: Rank) -> bool {
        !self.net.net().lagging[peer as usize]
    }

    fn publish_entered(&self, op: OpId) {
        self.net.net().peers[self.rank as usize].entered = op + 1;
    }

    fn publish_returned(&self, op: OpId) {
        self.net.net().peers[self.rank as usize].returned = op + 1;
    }

    fn publish_call(&self, header: Header) {
        self.net.net().peers[self.rank as usize].call = Some(header);
    }

    fn beat(&mut self) {
        self.net.net().peers[self.rank as usize].beat += 1;
    }
}
