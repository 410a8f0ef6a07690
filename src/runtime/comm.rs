//! A rank's handle inside [`crate::runtime::Team::run`]: the collectives, and
//! the driver loop that runs any protocol core over the mailboxes.
//!
//! Operation fencing: every message carries its operation number, kind and
//! root. A message of the current operation goes to its core; one of an
//! older operation goes to that operation's core if the rank still keeps it
//! (see *lingering* below) and is dropped otherwise; one of a later
//! operation waits in the fence until the rank gets there. A message of the
//! current operation whose kind (or, for rooted collectives, root) differs
//! from the rank's own call ends the call with [`Error::Mismatch`] instead
//! of a hang.
//!
//! A call returns once the rank has its result and nothing to send right
//! now. Its core may still have work that depends on messages yet to come
//! (a tree message after an early correction, a stop reply of delayed
//! correction, an allreduce round started because a root died), so it
//! *lingers*: it is served whenever the rank is inside a later call or has
//! finished its closure, until it can never send again or [`LINGER`] newer
//! cores push it out.
//!
//! Failure detection: the liveness registry tells every core of every
//! failure ([`Event::PeerFailed`]) as soon as a rank is killed, panics or
//! leaves. A rank that is alive but silent inside an operation is caught by
//! the timeout detector: a core that has waited on the same peer for the
//! team's failure timeout, while that peer is inside the same operation,
//! marks it failed in the registry for everyone. A rank so marked is failed
//! for good: its next step returns [`Error::Failed`]. A rank whose closure
//! has ended counts as failed for every operation it never entered (no
//! timeout needed: the ranks waiting on it see it within a nap).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::mailbox::Endpoint;
use crate::protocol::allreduce::{Allreduce, AllreduceCore, AllreduceOutput};
use crate::protocol::bcast::Bcast;
use crate::protocol::reduce::{Contribution, Reduce, ReduceOutput};
use crate::protocol::{Event, Msg, Protocol, Transmit};
use crate::runtime::faults::Fault;
use crate::runtime::fence::{Fence, Route};
use crate::runtime::op::Operation;
use crate::runtime::team::{Counters, Shared};
use crate::runtime::wire::{self, Wire, Words};
use crate::sync::Ordering;
use crate::types::{Collective, OpId, Rank, Tick};

/// What travels in a mailbox slot: a payload of words plus the reduce's
/// failure information (unused by broadcasts).
pub(crate) type Packet = Contribution<Words>;

// A lane slot is the message and an 8-byte stamp, 64-byte aligned: keep it
// two cache lines, one fewer transfer per message than three.
const _: () = assert!(std::mem::size_of::<Msg<Packet>>() <= 120);

/// The longest a rank sleeps in one wait before it looks again.
const MAX_SLEEP: Duration = Duration::from_millis(1);

/// How long a rank colored by a correction message waits for its tree
/// message before it returns and leaves the forwarding to a lingering core.
const TREE_GRACE: Duration = Duration::from_millis(50);

/// Messages a rank may keep waiting for full lanes before it holds back
/// from starting another operation.
const OUTBOX_LIMIT: usize = 64;

/// Cores of past operations a rank keeps serving at most.
pub const LINGER: usize = 32;

/// The reduction function of a core kept after its call: a decided
/// allreduce never combines again, so it is never called.
type Absorb = fn(&mut Words, &Words);

fn never_combines(_: &mut Words, _: &Words) {}

/// One operation as one rank saw it.
#[derive(Clone, Debug)]
pub(crate) struct OpRecord {
    pub(crate) op: OpId,
    pub(crate) sends: u64,
    /// Time inside the call, if the call succeeded.
    pub(crate) latency_ns: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Alive,
    Failed,
    Hung,
}

/// A core kept after its call.
enum Lingering<'t> {
    Bcast(Bcast<'t, Packet>),
    Allreduce(Box<Allreduce<'t, Words, Absorb>>),
}

impl<'t> Lingering<'t> {
    fn op(&self) -> OpId {
        match self {
            Lingering::Bcast(c) => c.op(),
            Lingering::Allreduce(c) => c.op(),
        }
    }

    fn handle(&mut self, now: u64, event: Event<Msg<Packet>>) {
        match self {
            Lingering::Bcast(c) => c.handle(now, event),
            Lingering::Allreduce(c) => c.handle(now, event),
        }
    }

    fn poll_transmit(&mut self, now: u64) -> Option<Transmit<Msg<Packet>>> {
        match self {
            Lingering::Bcast(c) => c.poll_transmit(now),
            Lingering::Allreduce(c) => c.poll_transmit(now),
        }
    }

    /// Can be dropped: it will never send again. An allreduce core is kept
    /// until a later allreduce completes (see [`Comm::retire_allreduces`]):
    /// its root may still fail and start a round it must join.
    fn is_finished(&self) -> bool {
        match self {
            Lingering::Bcast(c) => c.is_finished(),
            Lingering::Allreduce(_) => false,
        }
    }
}

/// What the driver needs of a core beyond [`Protocol`].
trait Driven: Protocol<Payload = Packet> {
    /// The collective this rank called, for mismatch errors.
    fn describe(&self) -> String;
    /// Whether a message of the same operation belongs to the same call.
    fn same_call(&self, msg: &Msg<Packet>) -> bool;
    /// Whether the call may return (the core has its output and has sent
    /// what it could). `since` tells how long the call has been ready to
    /// return but for this core; ask it only if needed (it reads the clock).
    /// What is left is served by the lingering core.
    fn may_return(&self, _since: &mut dyn FnMut() -> Duration) -> bool {
        self.is_quiescent()
    }
    /// Whether the core acts on the time it is handed; if not, the driver
    /// need not read the clock for it.
    fn uses_time(&self) -> bool {
        false
    }
}

impl Driven for Bcast<'_, Packet> {
    fn describe(&self) -> String {
        format!("broadcast from {}", self.root())
    }
    fn same_call(&self, msg: &Msg<Packet>) -> bool {
        msg.kind == Collective::Broadcast && msg.root == self.root()
    }
    fn may_return(&self, since: &mut dyn FnMut() -> Duration) -> bool {
        bcast_may_return(self, since)
    }
    fn uses_time(&self) -> bool {
        Bcast::uses_time(self)
    }
}

impl<O: crate::protocol::reduce::Combine<Words>> Driven for Reduce<'_, Words, O> {
    fn describe(&self) -> String {
        format!("reduce to {}", self.root())
    }
    fn same_call(&self, msg: &Msg<Packet>) -> bool {
        msg.kind == Collective::Reduce && msg.root == self.root()
    }
}

impl<O: crate::protocol::reduce::Combine<Words> + Clone> Driven for AllreduceCore<'_, Words, O> {
    fn describe(&self) -> String {
        format!("{:?}", self.kind())
    }
    // Rounds differ in their root: only the kind must agree.
    fn same_call(&self, msg: &Msg<Packet>) -> bool {
        msg.kind == self.kind()
    }
    fn may_return(&self, since: &mut dyn FnMut() -> Duration) -> bool {
        match self {
            AllreduceCore::Rooted(core) => {
                core.reduce_phase().is_quiescent()
                    && bcast_may_return(core.broadcast_phase(), since)
            }
            AllreduceCore::Pair(core) => core.is_quiescent(),
        }
    }
    fn uses_time(&self) -> bool {
        match self {
            AllreduceCore::Rooted(core) => core.broadcast_phase().uses_time(),
            AllreduceCore::Pair(_) => false,
        }
    }
}

/// A broadcast lets its rank return once it has nothing left to send
/// without news: its tree sends are done and its correction sweep has heard
/// from both sides (or covered the ring). Returning earlier would leave the
/// ranks a dead or hung neighbour cut off to sweeps that only progress when
/// their ranks call again: a deadlock if user code waits on something
/// outside the library. A rank colored only by correction still owes its
/// subtree the tree message: it waits for it (or for its ancestor's
/// failure) up to TREE_GRACE, so that no rank returns while its children
/// depend on it, yet a hung ancestor cannot hold it for long.
fn bcast_may_return(core: &Bcast<'_, Packet>, since: &mut dyn FnMut() -> Duration) -> bool {
    core.is_quiescent()
        && !core.owes_tree_sends()
        && (core.colored_by_tree() || core.is_finished() || since() >= TREE_GRACE)
}

/// A rank's handle: its number, the team size, and the collectives.
pub struct Comm<'t> {
    shared: &'t Shared<'t>,
    rank: Rank,
    endpoint: Endpoint<'t, Msg<Packet>>,
    state: State,
    /// The operation this rank is in, and messages of later ones.
    fence: Fence<Msg<Packet>>,
    lingering: VecDeque<Lingering<'t>>,
    /// Sends a full lane refused, in order; retried before any new send.
    outbox: VecDeque<(Rank, Msg<Packet>)>,
    /// The liveness registry's epoch whose failures every core has been told.
    seen_epoch: u64,
    /// The failed ranks as of `seen_epoch`.
    known_failed: Vec<Rank>,
    records: Vec<OpRecord>,
    /// Sends left before an emulated death in the current operation.
    send_budget: Option<u32>,
}

impl<'t> Comm<'t> {
    pub(crate) fn new(
        shared: &'t Shared<'t>,
        rank: Rank,
        endpoint: Endpoint<'t, Msg<Packet>>,
    ) -> Self {
        Comm {
            shared,
            rank,
            endpoint,
            state: State::Alive,
            fence: Fence::new(),
            lingering: VecDeque::new(),
            outbox: VecDeque::new(),
            seen_epoch: u64::MAX,
            known_failed: Vec::new(),
            records: Vec::new(),
            send_budget: None,
        }
    }

    /// This rank.
    pub fn rank(&self) -> Rank {
        self.rank
    }

    /// The team size.
    pub fn size(&self) -> u32 {
        self.shared.ranks()
    }

    /// True while this rank is alive (not killed, not hung, not declared
    /// failed by a timeout).
    pub fn is_alive(&self) -> bool {
        self.state == State::Alive && !self.shared.liveness.is_failed(self.rank)
    }

    /// Ranks known to have failed so far.
    pub fn failed_ranks(&self) -> Vec<Rank> {
        self.shared.liveness.failed()
    }

    /// Broadcasts `value` from `root` (corrected-tree broadcast with the
    /// team's tree and correction): on return, every rank's `value` holds the
    /// root's. Survives any number of ranks dead before the call (with
    /// checked or delayed correction), as long as the root lives.
    ///
    /// Errors: `root` out of range, a value too large for a message, this
    /// rank failed or hung, the ranks disagree on the operation
    /// ([`Error::Mismatch`]), or no value within the team's timeout
    /// ([`Error::RootFailed`] if the root is known failed, [`Error::Timeout`]
    /// otherwise).
    pub fn broadcast_into<T: Wire>(&mut self, root: Rank, value: &mut T) -> Result<(), Error> {
        self.check_root(root)?;
        let words = if root == self.rank {
            Some(Contribution::input(wire::encode(value)?))
        } else {
            None
        };
        let op = self.begin_op()?;
        let started = self.call_started();
        let shared = self.shared;
        let mut core = Bcast::new(&shared.plans.bcast, root, self.rank, op, words)?;
        let result = self.drive(op, started, &mut core);
        let got = match result {
            Ok(got) => got,
            Err(Error::Timeout { .. }) if shared.liveness.is_failed(root) => {
                return Err(Error::RootFailed { op, root })
            }
            Err(e) => return Err(e),
        };
        if !core.is_finished() {
            self.linger(Lingering::Bcast(core));
        }
        *value = T::decode(&got.value);
        self.record_latency(started);
        Ok(())
    }

    /// Reduces every rank's `send` with `op` to `root` (up-correction
    /// reduce with the team's fault budget f): on return at the root,
    /// `recv` holds the reduction of the inputs of every live rank, and of
    /// each rank that failed during the call either its input or nothing
    /// (never part of it). `recv` is untouched elsewhere. `op` must be
    /// associative and commutative; if it panics, this rank fails.
    ///
    /// Errors: `root` out of range, a value too large for a message, an
    /// operation that does not apply to `T`, this rank failed or hung,
    /// ranks disagree on the operation ([`Error::Mismatch`]), more than f
    /// ranks failed ([`Error::TooManyFailures`], at the root), or no result
    /// within the team's timeout ([`Error::Timeout`]; [`Error::RootFailed`]
    /// if the root failed: then nobody gets a result, as the paper says).
    pub fn reduce_into<T: Wire>(
        &mut self,
        root: Rank,
        send: &T,
        recv: &mut T,
        op: impl Operation<T>,
    ) -> Result<(), Error> {
        self.check_root(root)?;
        op.check()?;
        let input = Contribution::input(wire::encode(send)?);
        let combine = words_op(&op);
        let id = self.begin_op()?;
        let started = self.call_started();
        let shared = self.shared;
        let mut core = Reduce::new(
            &shared.plans.reduce,
            root,
            self.rank,
            id,
            Collective::Reduce,
            input,
            &combine,
        )?;
        match self.drive(id, started, &mut core) {
            Ok(ReduceOutput::Sent) => {}
            Ok(ReduceOutput::Root { value, .. }) => *recv = T::decode(&value),
            Ok(ReduceOutput::TooManyFailures { .. }) => {
                return Err(Error::TooManyFailures {
                    op: id,
                    f: shared.plans.reduce.f(),
                })
            }
            Err(Error::Timeout { .. }) if shared.liveness.is_failed(root) => {
                return Err(Error::RootFailed { op: id, root })
            }
            Err(e) => return Err(e),
        }
        self.record_latency(started);
        Ok(())
    }

    /// Reduces every rank's `send` with `op` and gives the result to every
    /// rank in `recv` (up-correction reduce to a root, corrected broadcast
    /// from it, retried on the next root if that root fails). Every live rank
    /// gets the same value, holding every live rank's input and each failed
    /// rank's either everywhere or nowhere, as long as at most f ranks fail.
    /// `op` must be associative and commutative; if it panics, this rank fails.
    ///
    /// Errors: a value too large for a message, an operation that does not
    /// apply to `T`, this rank failed or hung, ranks disagree on the
    /// operation ([`Error::Mismatch`]), more than f ranks failed
    /// ([`Error::TooManyFailures`]), or no result within the team's timeout.
    pub fn all_reduce_into<T: Wire>(
        &mut self,
        send: &T,
        recv: &mut T,
        op: impl Operation<T>,
    ) -> Result<(), Error> {
        op.check()?;
        let input = wire::encode(send)?;
        let combine = words_op(&op);
        let value = self.allreduce(Collective::Allreduce, input, &combine)?;
        *recv = T::decode(&value);
        Ok(())
    }

    /// Returns once every live rank has entered the barrier (an allreduce of
    /// nothing, with its fault tolerance: up to f ranks may fail in it).
    ///
    /// Errors: this rank failed or hung, ranks disagree on the operation,
    /// more than f failures, or the team's timeout.
    pub fn barrier(&mut self) -> Result<(), Error> {
        self.allreduce(Collective::Barrier, [0; wire::WORDS], &never_combines)
            .map(|_| ())
    }

    fn allreduce(
        &mut self,
        kind: Collective,
        input: Words,
        combine: &dyn Fn(&mut Words, &Words),
    ) -> Result<Words, Error> {
        let id = self.begin_op()?;
        let started = self.call_started();
        let shared = self.shared;
        let mut core =
            AllreduceCore::new(&shared.plans.allreduce, self.rank, id, kind, input, combine)?;
        let out = self.drive(id, started, &mut core)?;
        let value = match out {
            AllreduceOutput::Value { value, .. } => value,
            AllreduceOutput::TooManyFailures { .. } => {
                return Err(Error::TooManyFailures {
                    op: id,
                    f: shared.plans.reduce.f(),
                })
            }
        };
        // Everyone has entered this operation, so every older allreduce is
        // complete everywhere (Section 5.1, property 1).
        self.retire_allreduces(id);
        // A pair exchange is over once delivered; a rooted core may have to
        // join a later round.
        if let AllreduceCore::Rooted(core) = core {
            self.linger(Lingering::Allreduce(Box::new(
                core.with_op(never_combines as Absorb),
            )));
        }
        self.record_latency(started);
        Ok(value)
    }

    /// Flow control: a rank whose lanes are full (its receivers are far
    /// behind, e.g. a root broadcasting in a loop) does not start another
    /// operation until its outbox is short again. Meanwhile it keeps taking
    /// messages, so two ranks waiting on each other's lanes both drain.
    fn backpressure(&mut self) {
        if self.outbox.len() <= OUTBOX_LIMIT {
            return;
        }
        let deadline = Instant::now() + self.shared.op_timeout();
        while self.outbox.len() > OUTBOX_LIMIT && Instant::now() < deadline {
            self.flush_outbox();
            while self.receive_with(|comm, from, msg| comm.route_other(from, msg)) {}
            let _ = self.serve_lingering();
            if self.outbox.len() > OUTBOX_LIMIT {
                self.endpoint
                    .wait(Some(Instant::now() + Duration::from_micros(50)));
            }
        }
    }

    fn check_root(&self, root: Rank) -> Result<(), Error> {
        let procs = self.size();
        if root >= procs {
            return Err(Error::RankOutOfRange { rank: root, procs });
        }
        Ok(())
    }

    /// When the call started, if the team keeps operation records (for
    /// their latency); otherwise the clock is read only if the call waits.
    fn call_started(&self) -> Option<Instant> {
        self.shared.config.op_records.then(Instant::now)
    }

    fn record_latency(&mut self, started: Option<Instant>) {
        if let (Some(rec), Some(started)) = (self.records.last_mut(), started) {
            rec.latency_ns = Some(started.elapsed().as_nanos() as u64);
        }
    }

    /// Numbers the next operation and applies this rank's planned fault.
    fn begin_op(&mut self) -> Result<OpId, Error> {
        self.check_alive()?;
        self.backpressure();
        let op = self.fence.enter();
        self.shared.counters[self.rank as usize]
            .entered
            .store(op + 1, Ordering::Release);
        if self.shared.config.op_records {
            self.records.push(OpRecord {
                op,
                sends: 0,
                latency_ns: None,
            });
        }
        self.send_budget = None;
        match self.shared.faults().lookup(self.rank, op) {
            Some(Fault::Dead) | Some(Fault::DieAfterSends(0)) => {
                self.die();
                Err(Error::Failed(self.rank))
            }
            Some(Fault::Hang) => {
                self.hang();
                Err(Error::Hung(self.rank))
            }
            Some(Fault::DieAfterSends(n)) => {
                self.send_budget = Some(n);
                Ok(op)
            }
            None => Ok(op),
        }
    }

    /// Fails if this rank has failed, hung, or been declared failed.
    fn check_alive(&mut self) -> Result<(), Error> {
        if self.state == State::Alive && self.shared.liveness.is_failed(self.rank) {
            // Declared failed by another rank's timeout detector.
            self.state = State::Failed;
        }
        match self.state {
            State::Failed => Err(Error::Failed(self.rank)),
            State::Hung => Err(Error::Hung(self.rank)),
            State::Alive => Ok(()),
        }
    }

    fn die(&mut self) {
        self.state = State::Failed;
        self.shared.fail(self.rank);
    }

    /// Silent until the rest of the team is done: nobody is told. What
    /// arrives is taken and dropped.
    fn hang(&mut self) {
        self.state = State::Hung;
        self.counters()
            .epoch_seen
            .store(u64::MAX, Ordering::Release);
        self.shared.finished.fetch_add(1, Ordering::AcqRel);
        while !self.shared.all_finished() {
            self.endpoint
                .wait(Some(Instant::now() + Duration::from_millis(2)));
            while self.receive_with(|_, _, _| {}) {}
        }
    }

    /// Runs `core` (operation `op`) until it has its output and nothing to
    /// send, or fails.
    ///
    /// `started` is when the call began, if known: the operation times out
    /// [`op_timeout`](crate::runtime::TeamBuilder::op_timeout) after it (or
    /// after the call first waits).
    fn drive<C: Driven>(
        &mut self,
        op: OpId,
        started: Option<Instant>,
        core: &mut C,
    ) -> Result<C::Output, Error> {
        let result = self.drive_loop(op, started, core);
        self.counters().awaiting.store(0, Ordering::Release);
        result
    }

    fn drive_loop<C: Driven>(
        &mut self,
        op: OpId,
        started: Option<Instant>,
        core: &mut C,
    ) -> Result<C::Output, Error> {
        let shared = self.shared;
        // The cores' clock, read again only after this rank waited (or for
        // a core with a deadline): between waits a rank runs for
        // nanoseconds, and each read costs tens.
        let mut tick = match started {
            Some(started) => shared.tick_at(started),
            None if core.uses_time() => shared.now(),
            // Ignored by the core.
            None => 0,
        };
        core.handle(tick, Event::Start);
        // Hand the core what came early, then every failure known so far
        // (the messages a failed rank sent were all taken before its failure
        // entered `known_failed`, see `learn_failures`).
        for (from, msg) in self.fence.release(op) {
            check_same(core, op, &msg)?;
            core.handle(tick, Event::Message { from, msg });
        }
        for &r in self.known_failed.iter().filter(|&&r| r != self.rank) {
            core.handle(tick, Event::PeerFailed(r));
        }
        let mut deadline = started.map(|s| s + shared.op_timeout());
        let mut output = None;
        // When the call could have returned but for the core (read lazily).
        let mut ready_at: Option<Instant> = None;
        let mut suspect = Suspicion::default();
        loop {
            if core.poll_deadline().is_some() {
                // A core that acts on time sees it move between waits too.
                tick = shared.now();
            }
            self.check_alive()?;
            self.learn_failures(core, op)?;
            self.flush_outbox();
            while let Some(tx) = core.poll_transmit(tick) {
                let correction = tx.msg.tag.is_correction();
                self.transmit(op, tx)?;
                if correction {
                    // What arrived meanwhile may stop a checked sweep: look
                    // before the next send (never wait with a send pending:
                    // a park or yield costs a scheduling round, milliseconds
                    // with many ranks per core).
                    while let Some((from, msg)) = self.endpoint.try_recv() {
                        self.take(core, op, tick, from, msg)?;
                    }
                }
            }
            if output.is_none() {
                output = core.take_output();
            }
            if output.is_some()
                && core.may_return(&mut || ready_at.get_or_insert_with(Instant::now).elapsed())
            {
                break;
            }
            if let Some((from, msg)) = self.endpoint.try_recv() {
                self.take(core, op, tick, from, msg)?;
                suspect = Suspicion::default();
                continue;
            }
            self.serve_lingering()?;
            // Spin first, without the clock: a message due within a
            // microsecond or two skips all that follows.
            if self.endpoint.spin().is_some() {
                continue;
            }
            let now = Instant::now();
            let deadline = *deadline.get_or_insert(now + shared.op_timeout());
            let awaiting = core.awaiting();
            self.counters()
                .awaiting
                .store(awaiting.map_or(0, |p| p + 1), Ordering::Release);
            if let Some(p) = awaiting.filter(|&p| shared.left_before(p, op)) {
                // It ended its closure without calling this operation: it
                // will never take part, which for this operation is failure.
                core.handle(tick, Event::PeerFailed(p));
                continue;
            }
            if let Some(peer) = suspect.watch(awaiting, now, shared, op) {
                shared.fail(peer);
                continue;
            }
            if now >= deadline {
                return Err(Error::Timeout {
                    op,
                    waited: shared.op_timeout(),
                });
            }
            // Bounded even without a deadline: a wake-up that never comes
            // (a bug anywhere below) costs a millisecond, not the timeout.
            let wake_at = core
                .poll_deadline()
                .map(|t| shared.started + Duration::from_nanos(t))
                .map_or(deadline, |t| t.min(deadline))
                .min(now + MAX_SLEEP);
            self.endpoint.block(Some(wake_at));
            tick = shared.now();
            if core.poll_deadline().is_some_and(|t| t <= tick) {
                core.handle(tick, Event::Timer);
            }
        }
        Ok(output.expect("loop ends with output"))
    }

    /// Hands a received message to the current core, a lingering one, or the
    /// fence. Counted handled at once: the sends it causes come within this
    /// call, before this rank's closure can end.
    fn take<C: Driven>(
        &mut self,
        core: &mut C,
        op: OpId,
        tick: Tick,
        from: Rank,
        msg: Msg<Packet>,
    ) -> Result<(), Error> {
        self.consumed();
        match self.fence.route(msg.op) {
            Route::Current => {
                debug_assert_eq!(msg.op, op);
                check_same(core, op, &msg)?;
                core.handle(tick, Event::Message { from, msg });
            }
            _ => self.route_other(from, msg),
        }
        Ok(())
    }

    /// When the registry has news, hands the current core and the lingering
    /// ones every failure it lists, after the messages already in the lanes:
    /// a rank marks itself failed after its last push, so what it sent before
    /// it failed is taken before its failure is reported (as over FIFO
    /// channels with a perfect detector). A pair exchange relies on it: a
    /// peer that sent its input and then died in a later operation must not
    /// be left out of the one it completed. Without news it is one load:
    /// the list is kept (`known_failed`) and handed to each new core at its
    /// start.
    fn learn_failures<C: Driven>(&mut self, core: &mut C, op: OpId) -> Result<(), Error> {
        if !self.failure_news() {
            return Ok(());
        }
        let now = self.shared.now();
        while let Some((from, msg)) = self.endpoint.try_recv() {
            self.take(core, op, now, from, msg)?;
        }
        for &r in self.known_failed.iter().filter(|&&r| r != self.rank) {
            core.handle(now, Event::PeerFailed(r));
        }
        self.tell_lingering_failures(now);
        Ok(())
    }

    /// Whether the liveness registry moved since `seen_epoch`; if so, takes
    /// its new list into `known_failed`.
    fn failure_news(&mut self) -> bool {
        let epoch = self.shared.liveness.epoch();
        if epoch == self.seen_epoch {
            return false;
        }
        self.seen_epoch = epoch;
        self.known_failed = self.shared.liveness.failed();
        true
    }

    /// Hands the lingering cores every failure in `known_failed`.
    fn tell_lingering_failures(&mut self, now: Tick) {
        for &r in self.known_failed.iter().filter(|&&r| r != self.rank) {
            for l in &mut self.lingering {
                l.handle(now, Event::PeerFailed(r));
            }
        }
    }

    /// A message of another operation than the current one (or any message
    /// while the rank is between operations).
    fn route_other(&mut self, from: Rank, msg: Msg<Packet>) {
        if self.fence.route(msg.op) == Route::Early {
            self.fence.hold(from, msg.op, msg);
            return;
        }
        let now = self.shared.now();
        if let Some(core) = self.lingering.iter_mut().find(|c| c.op() == msg.op) {
            core.handle(now, Event::Message { from, msg });
        }
    }

    /// Lets lingering cores send what they have.
    fn serve_lingering(&mut self) -> Result<(), Error> {
        if self.lingering.is_empty() {
            return Ok(());
        }
        let now = self.shared.now();
        let mut i = 0;
        while i < self.lingering.len() {
            while let Some(tx) = self.lingering[i].poll_transmit(now) {
                let op = self.lingering[i].op();
                self.transmit(op, tx)?;
            }
            if self.lingering[i].is_finished() {
                self.lingering.remove(i);
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    fn linger(&mut self, core: Lingering<'t>) {
        if self.lingering.len() == LINGER {
            self.lingering.pop_front();
        }
        self.lingering.push_back(core);
    }

    /// Drops the allreduce cores of operations before `op`: a completed
    /// allreduce means every live rank has entered `op`, so nobody can still
    /// start a round of an older one.
    fn retire_allreduces(&mut self, op: OpId) {
        self.lingering
            .retain(|c| !matches!(c, Lingering::Allreduce(a) if a.op() < op));
    }

    /// Sends one message, or keeps it in the outbox if the lane is full.
    /// Messages to failed ranks vanish, as fail-stop says.
    fn transmit(&mut self, op: OpId, tx: Transmit<Msg<Packet>>) -> Result<(), Error> {
        if self.state != State::Alive {
            // Fail-stop: a rank that died (say, by its send budget while a
            // lingering core was sending) sends nothing more.
            return Err(Error::Failed(self.rank));
        }
        if let Some(rec) = self.records.get_mut(op as usize) {
            rec.sends += 1;
        }
        if !self.shared.liveness.is_failed(tx.to) {
            // Counted in flight from here, even while it waits in the outbox.
            self.pushed();
            if self.outbox.is_empty() {
                if let Err(msg) = self.endpoint.send(tx.to, tx.msg) {
                    self.outbox.push_back((tx.to, msg));
                }
            } else {
                self.outbox.push_back((tx.to, tx.msg));
            }
        }
        if let Some(left) = self.send_budget.as_mut() {
            *left -= 1;
            if *left == 0 {
                self.flush_outbox();
                self.die();
                return Err(Error::Failed(self.rank));
            }
        }
        Ok(())
    }

    /// Fail-stop for the sends a full lane held back: a rank that failed or
    /// hung never sends them. They were counted in flight when queued, so
    /// they are counted handled here; otherwise the team would never be
    /// quiet (a rank that died by its send budget, or panicked, with lanes
    /// full left the others waiting in `finish` for good).
    fn drop_outbox(&mut self) {
        let dropped = self.outbox.len();
        self.outbox.clear();
        for _ in 0..dropped {
            self.consumed();
        }
    }

    fn flush_outbox(&mut self) {
        while let Some((to, msg)) = self.outbox.pop_front() {
            if let Err(msg) = self.endpoint.send(to, msg) {
                self.outbox.push_front((to, msg));
                return;
            }
        }
    }

    fn counters(&self) -> &Counters {
        &self.shared.counters[self.rank as usize]
    }

    // The counters have one writer, this rank: a load and a store count
    // without the locked read-modify-write (two per message otherwise).
    fn pushed(&self) {
        let pushed = &self.counters().pushed;
        pushed.store(pushed.load(Ordering::Relaxed) + 1, Ordering::Release);
    }

    /// Counts a received message as handled, with all it made this rank send.
    fn consumed(&self) {
        let consumed = &self.counters().consumed;
        consumed.store(consumed.load(Ordering::Relaxed) + 1, Ordering::Release);
    }

    /// Takes the next message, if any, counting it handled once `handle` is done.
    fn receive_with(&mut self, handle: impl FnOnce(&mut Self, Rank, Msg<Packet>)) -> bool {
        match self.endpoint.try_recv() {
            Some((from, msg)) => {
                handle(self, from, msg);
                self.consumed();
                true
            }
            None => false,
        }
    }

    /// After the closure: keep serving late messages until the whole team
    /// is quiet. Failed and hung ranks only take messages out of their lanes
    /// (and drop them), so that the count of messages in flight reaches zero.
    pub(crate) fn finish(&mut self) {
        self.counters().left.store(true, Ordering::Release);
        if self.state != State::Hung {
            self.shared.finished.fetch_add(1, Ordering::AcqRel);
        }
        let mut idle_rounds = 0u32;
        loop {
            let serving = self.state == State::Alive && !self.shared.liveness.is_failed(self.rank);
            let mut busy = false;
            if serving {
                self.learn_failures_lingering();
                self.flush_outbox();
                let _ = self.serve_lingering();
            } else {
                self.drop_outbox();
            }
            // A failure can make a lingering core send with no message to
            // answer: the team is quiet only once every serving rank has
            // handled every failure (the sends come first, then this store).
            let seen = if serving { self.seen_epoch } else { u64::MAX };
            self.counters().epoch_seen.store(seen, Ordering::Release);
            while self.receive_with(|comm, from, msg| {
                if serving && comm.state == State::Alive {
                    comm.route_other(from, msg);
                    let _ = comm.serve_lingering();
                }
            }) {
                busy = true;
            }
            if !busy && self.outbox.is_empty() && self.shared.quiet() {
                return;
            }
            idle_rounds = if busy { 0 } else { idle_rounds + 1 };
            let pause = if idle_rounds < 10 { 20 } else { 500 };
            self.endpoint
                .wait(Some(Instant::now() + Duration::from_micros(pause)));
        }
    }

    /// [`Comm::learn_failures`] for the lingering cores alone.
    fn learn_failures_lingering(&mut self) {
        if !self.failure_news() {
            return;
        }
        // Messages first, as in `learn_failures`.
        while self.receive_with(|comm, from, msg| comm.route_other(from, msg)) {}
        let now = self.shared.now();
        self.tell_lingering_failures(now);
    }

    pub(crate) fn hung(&self) -> bool {
        self.state == State::Hung
    }

    pub(crate) fn into_records(self) -> Vec<OpRecord> {
        self.records
    }
}

/// The timeout detector's memory: which peer the core waits on, since when.
#[derive(Default)]
struct Suspicion {
    peer: Option<Rank>,
    since: Option<Instant>,
}

impl Suspicion {
    /// The peer to declare failed: the core has waited on it for the
    /// team's failure timeout while it was inside operation `op` (or later)
    /// and not itself waiting on another rank. A peer that has not reached
    /// `op` yet is late, not hung; one waiting on another is blocked, and the
    /// rank it waits on is the suspect (its own waiters find it).
    fn watch(
        &mut self,
        awaiting: Option<Rank>,
        now: Instant,
        shared: &Shared,
        op: OpId,
    ) -> Option<Rank> {
        let peer = awaiting.filter(|&p| {
            let c = &shared.counters[p as usize];
            !shared.liveness.is_failed(p)
                && c.entered.load(Ordering::Acquire) > op
                && c.awaiting.load(Ordering::Acquire) == 0
        });
        if peer != self.peer {
            self.peer = peer;
            self.since = peer.map(|_| now);
            return None;
        }
        let since = self.since?;
        (now.duration_since(since) >= shared.failure_timeout()).then(|| {
            self.since = Some(now);
            peer.expect("since is set only with a peer")
        })
    }
}

/// The reduction of `T` as a function on message words.
fn words_op<T: Wire>(op: &impl Operation<T>) -> impl Fn(&mut Words, &Words) + '_ {
    move |acc: &mut Words, other: &Words| {
        let r = op.apply(&T::decode(acc), &T::decode(other));
        r.encode(acc);
    }
}

/// Checks that a message of operation `op` belongs to the same collective.
fn check_same<C: Driven>(core: &C, op: OpId, msg: &Msg<Packet>) -> Result<(), Error> {
    if !core.same_call(msg) {
        return Err(Error::Mismatch {
            op,
            mine: core.describe(),
            theirs: format!("{:?} from {}", msg.kind, msg.root),
        });
    }
    Ok(())
}
