//! The one drive loop: runs any protocol core over any [`Transport`].
//!
//! Everything between a core and a transport lives here once: operation
//! fencing, lingering cores, the outbox and flow control, the timeout
//! detector, failure news, quiescence at the end of a program, and the
//! per-operation records. Every engine's calls go through one (the call
//! layer, `crate::call`): the thread runtime's over SPSC mailboxes, the MPI
//! engine's over MPI messages and the node's shared memory.
//!
//! Operation fencing: every message carries its operation number, kind and
//! root. A message of the current operation goes to its core; one of an
//! older operation goes to that operation's core if the rank still keeps it
//! (see *lingering* below) and is dropped otherwise; one of a later
//! operation waits in the fence until the rank gets there. A message of the
//! current operation that the core's [`Header`] does not accept ends the
//! call with [`Error::Mismatch`] instead of a hang.
//!
//! A call returns once the core has its output and
//! [`Protocol::may_return`] says so. Its core may still have work that
//! depends on messages yet to come (a tree message after an early
//! correction, a stop reply of delayed correction, an allreduce round
//! started because a root died), so it *lingers*: it is served whenever
//! the rank is inside a later call or has finished its program, until it is
//! [finished](Protocol::is_finished), [retired](Protocol::retired_by) or
//! [`DriverConfig::linger`] newer cores push it out.
//!
//! Failure detection: the transport's registry tells every core of every
//! failure ([`Event::PeerFailed`]) as soon as it is marked. A rank that is
//! alive but silent inside an operation is caught by the timeout detector:
//! a core that has waited on the same peer for the failure timeout, while
//! that peer is inside the same operation and not itself waiting, marks it
//! failed for everyone. A rank so marked is failed for good: its next step
//! returns [`Error::Failed`]. A rank whose program has ended counts as
//! failed for every operation it never entered.
//!
//! Time: the driver reads the transport's clock when a call starts (if it
//! keeps records), after every wait, and, for a core that
//! [uses time](Protocol::uses_time), before every step and between
//! consecutive sends, as the [`Protocol`] contract promises.

mod call;
mod detector;
pub(crate) mod fence;
mod lingering;
mod members;
pub mod memory;
mod transport;

pub use members::Members;
pub(crate) use transport::{pack_call, unpack_call};
pub use transport::{Carries, PeerView, Progress, Transport};

use std::alloc::Layout;
use std::collections::VecDeque;
use std::time::Duration;

use recycle_box::{coerce_box, RecycleBox};

use crate::error::Error;
use crate::protocol::{Event, Header, Leave, Msg, Protocol, Tag};
use crate::types::{OpId, Rank, Tick};
use call::Call;
use detector::Suspicion;
use fence::{Fence, Route};
use lingering::Lingering;

/// How a driver behaves: timeouts, the grace period, bounds. All times in
/// the transport's ticks (nanoseconds on threads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverConfig {
    /// How long a call waits for its output before [`Error::Timeout`],
    /// counted from its start if known, else from its first wait.
    pub op_timeout: Tick,
    /// How long a core waits on one peer inside the same operation before
    /// the detector declares it failed.
    pub failure_timeout: Tick,
    /// How long a call whose value can only come from a root that failed
    /// inside the operation waits for the ranks the root reached to bring
    /// it (their correction) before [`Error::RootFailed`].
    pub root_wait: Tick,
    /// How long a call whose core says [`Leave::AfterGrace`] waits before
    /// it returns anyway.
    pub grace: Tick,
    /// The longest one wait lasts before the driver looks again (a wake-up
    /// that never comes costs this, not the timeout).
    pub max_sleep: Tick,
    /// Cores of past operations kept at most.
    pub linger: usize,
    /// Sends kept for full channels before the rank holds back from
    /// returning from its call or starting another operation. Default 0: a
    /// rank whose receiver's channel is full (the receiver is a channel's
    /// capacity behind) does neither until that channel takes the rest.
    /// What a rank keeps when it dies is lost (fail-stop), and each
    /// operation whose root's messages were lost costs its receivers the
    /// root wait; at 64 a node team's proxy ran up to 10 broadcasts ahead
    /// of its threads under load, and its death cost them 5-17 s instead
    /// of at most one root wait (docs/mpi.md).
    pub outbox_limit: usize,
    /// Keep a record of each operation (its sends and its time).
    pub op_records: bool,
}

/// Cores of past operations a rank keeps serving at most, by default.
pub const LINGER: usize = 32;

/// Operations whose early messages a new driver's fence has room for, a
/// message from every peer each (up to 64).
const EARLY_OPS: usize = 4;

/// Operations further ahead whose early messages a new driver's fence has
/// room for, two each: as far as a broadcast root that waits for nobody
/// runs ahead of its receivers (a lane's capacity; docs/architecture.md,
/// *Flow control*).
const AHEAD_OPS: usize = 64;

/// How long flow control yields and looks again before it waits (ns of the
/// engine's clock): a receiver drains a full lane of 64 messages in about
/// 20 µs, and a wait, which only a message ends, would sleep its 50 µs
/// out. A root broadcasting in a loop to a rank on its own core did so
/// twice per 64 calls (109 µs per hold, measured): the 4-rank back-to-back
/// broadcast took 2.2 µs per call instead of 0.7-0.9 (docs/benchmarks.md,
/// *Changes to the small collectives, measured*).
const HOLD_PAUSE_NS: Tick = 200_000;

/// Heap blocks of cores no longer kept that a driver holds for the next
/// kept cores (each call keeps at most one core and retires about one).
const SPARE_BLOCKS: usize = 4;

impl Default for DriverConfig {
    /// 10 s operation timeout, 1 s failure timeout, 50 ms grace, 1 ms
    /// longest sleep, 32 lingering cores, no kept sends before holding
    /// back, no records.
    fn default() -> Self {
        DriverConfig {
            op_timeout: nanos(Duration::from_secs(10)),
            failure_timeout: nanos(Duration::from_secs(1)),
            root_wait: nanos(Duration::from_secs(1)),
            grace: nanos(Duration::from_millis(50)),
            max_sleep: nanos(Duration::from_millis(1)),
            linger: LINGER,
            outbox_limit: 0,
            op_records: false,
        }
    }
}

/// A duration as nanosecond ticks (saturating).
pub fn nanos(d: Duration) -> Tick {
    u64::try_from(d.as_nanos()).unwrap_or(Tick::MAX)
}

/// One operation as one rank saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpRecord {
    /// The operation number.
    pub op: OpId,
    /// Messages this rank sent for it (late ones included).
    pub sends: u64,
    /// Time inside the call in ticks, if the call succeeded.
    pub latency: Option<Tick>,
}

/// How an emulated death at a kill point happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Death {
    /// The rank fails and the registry is told ([`Driver::die`]).
    Announced,
    /// The rank's process dies, nobody told ([`Driver::vanish`]).
    Vanish,
}

/// Whether the rank still takes part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankState {
    /// Alive.
    Alive,
    /// Failed (killed, died after its sends, or declared failed).
    Failed,
    /// Alive but silent for good (fault emulation).
    Hung,
}

/// One rank's driver: its transport, the fence, lingering cores, outbox,
/// failure knowledge and records.
pub struct Driver<'t, T: Transport> {
    transport: T,
    config: DriverConfig,
    state: RankState,
    /// The operation this rank is in, and messages of later ones.
    fence: Fence<Msg<T::Payload>>,
    /// The current operation's early messages, while the core takes them
    /// (a list kept between calls, so that taking them allocates nothing).
    early: Vec<(Rank, Msg<T::Payload>)>,
    /// Answers a core gave for this rank to messages of a later operation
    /// ([`Protocol::answer_ahead`]), each sent at its time if the rank has
    /// not entered that operation by then.
    ahead: Vec<(Tick, Rank, Msg<T::Payload>)>,
    lingering: VecDeque<Kept<'t, T::Payload>>,
    /// Heap blocks of cores no longer kept, with the size and alignment
    /// they hold at least, for the next cores kept: in a steady loop,
    /// keeping a core allocates nothing.
    spares: Vec<(Layout, RecycleBox<()>)>,
    /// The communicator's ranks as transport ranks (see [`Members`]): the
    /// cores of calls from now on number ranks so. Every other rank number
    /// the driver holds (outbox, fence, failures, detector) is a transport
    /// rank.
    members: Members<'t>,
    /// This rank in the communicator's numbering.
    me: Rank,
    /// Sends a full channel refused, in order; retried before any new send.
    outbox: VecDeque<(Rank, Msg<T::Payload>)>,
    /// The peers whose channels a flush of the outbox found full (a list
    /// kept between flushes, so that a flush allocates nothing).
    full_lanes: Vec<Rank>,
    /// The registry's epoch whose failures every core has been told.
    seen_epoch: u64,
    /// The failed ranks as of `seen_epoch`.
    known_failed: Vec<Rank>,
    records: Vec<OpRecord>,
    /// Sends left before an emulated death in the current operation, and
    /// whether it is announced.
    send_budget: Option<(u32, Death)>,
    /// The timeout detector's memory (kept across calls).
    suspect: Suspicion,
    /// A message that revealed a mismatch in the current call: the call
    /// ends, and the driver tells the team to abort the operation.
    mismatched: Option<Msg<T::Payload>>,
}

impl<'t, T: Transport> Driver<'t, T> {
    /// A driver for one rank over `transport`.
    pub fn new(transport: T, config: DriverConfig) -> Self {
        let me = transport.rank();
        // Early messages per operation made room for: a message from every
        // peer, up to a bound (more grow the lists once).
        let room = (transport.procs() as usize).min(64);
        Driver {
            transport,
            config,
            state: RankState::Alive,
            fence: Fence::with_room(EARLY_OPS, room, AHEAD_OPS, 2),
            early: Vec::with_capacity(room),
            ahead: Vec::new(),
            lingering: VecDeque::new(),
            spares: Vec::new(),
            members: Members::ALL,
            me,
            outbox: VecDeque::with_capacity(room),
            full_lanes: Vec::with_capacity(room),
            seen_epoch: u64::MAX,
            known_failed: Vec::new(),
            records: Vec::new(),
            send_budget: None,
            suspect: Suspicion::default(),
            mismatched: None,
        }
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The transport, mutably (fault emulation drains it while hung).
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.transport
    }

    /// The configuration.
    pub fn config(&self) -> &DriverConfig {
        &self.config
    }

    /// Whether the rank takes part.
    pub fn state(&self) -> RankState {
        self.state
    }

    /// The records kept so far (empty unless
    /// [`DriverConfig::op_records`]).
    pub fn records(&self) -> &[OpRecord] {
        &self.records
    }

    /// The records, consuming the driver.
    pub fn into_records(self) -> Vec<OpRecord> {
        self.records
    }

    /// The communicator's ranks (see [`Members`]).
    pub fn members(&self) -> Members<'t> {
        self.members
    }

    /// This rank in the communicator's numbering.
    pub fn rank(&self) -> Rank {
        self.me
    }

    /// The communicator's size.
    pub fn size(&self) -> u32 {
        self.members.size(self.transport.procs())
    }

    /// From the next call on, cores number ranks as `members` says (a
    /// shrink). Cores kept from earlier calls keep their numbering.
    ///
    /// # Panics
    ///
    /// If this rank is not a member.
    pub fn set_members(&mut self, members: Members<'t>) {
        self.me = members
            .of_transport(self.transport.rank())
            .expect("a rank shrinks only into a communicator it is in");
        self.members = members;
    }

    /// The failed ranks the registry lists that are members, in the
    /// communicator's numbering.
    pub fn failed_members(&self) -> Vec<Rank> {
        let members = self.members;
        self.transport
            .failed()
            .into_iter()
            .filter_map(|t| members.of_transport(t))
            .collect()
    }

    /// How many cores of past operations are kept.
    pub fn lingering(&self) -> usize {
        self.lingering.len()
    }

    /// True while the rank is alive and not declared failed.
    pub fn is_alive(&self) -> bool {
        self.state == RankState::Alive && !self.transport.is_failed(self.transport.rank())
    }

    /// Fails if this rank has failed, hung, or been declared failed.
    pub fn check_alive(&mut self) -> Result<(), Error> {
        if self.state == RankState::Alive && self.transport.is_failed(self.transport.rank()) {
            // Declared failed by another rank's timeout detector.
            self.state = RankState::Failed;
        }
        match self.state {
            RankState::Failed => Err(Error::Failed(self.me)),
            RankState::Hung => Err(Error::Hung(self.me)),
            RankState::Alive => Ok(()),
        }
    }

    /// The number the next [`enter`](Driver::enter) gives.
    pub fn next_op(&self) -> OpId {
        self.fence.next()
    }

    /// Numbers the next operation: checks the rank is alive, holds back
    /// while the outbox is long (flow control), publishes the entry and
    /// starts its record. The caller applies any emulated fault next.
    pub fn enter(&mut self) -> Result<OpId, Error> {
        self.check_alive()?;
        self.backpressure();
        let op = self.fence.enter();
        self.transport.publish_entered(op);
        self.transport.beat();
        if self.config.op_records {
            self.records.push(OpRecord {
                op,
                sends: 0,
                latency: None,
            });
        }
        self.send_budget = None;
        Ok(op)
    }

    /// Fail-stop emulation: this rank dies right after its `n`-th send in
    /// the current operation (`n > 0`), or, if it sends fewer, when its
    /// call ends (after its last send, before it returns): the kill point
    /// always fires.
    pub fn die_after_sends(&mut self, n: u32) {
        self.send_budget = Some((n, Death::Announced));
    }

    /// [`Driver::die_after_sends`], but the rank vanishes
    /// ([`Driver::vanish`]): nobody is told.
    pub fn vanish_after_sends(&mut self, n: u32) {
        self.send_budget = Some((n, Death::Vanish));
    }

    /// Fail-stop, unannounced: the transport's process dies now
    /// ([`Transport::vanish`], a real SIGKILL between MPI processes); on a
    /// transport that cannot, the rank hangs: silent, nobody told.
    pub fn vanish(&mut self) {
        self.flush_outbox();
        self.transport.vanish();
        self.hang();
    }

    /// The kill point of the current operation fires.
    fn kill_point(&mut self, death: Death) -> Error {
        match death {
            Death::Announced => {
                self.flush_outbox();
                self.die();
                Error::Failed(self.me)
            }
            Death::Vanish => {
                self.vanish();
                Error::Hung(self.me)
            }
        }
    }

    /// Fail-stop: this rank fails now, and the registry is told.
    pub fn die(&mut self) {
        self.state = RankState::Failed;
        self.transport.declare_failed(self.transport.rank());
    }

    /// This rank hangs from now on: it takes part in nothing. Nobody is told.
    pub fn hang(&mut self) {
        self.state = RankState::Hung;
    }

    /// When the call started, if the driver keeps records (for their
    /// latency); otherwise the clock is read only if the call waits.
    pub fn call_started(&self) -> Option<Tick> {
        self.config.op_records.then(|| self.transport.now())
    }

    /// Records the latency of the call that started at `started`.
    pub fn record_latency(&mut self, started: Option<Tick>) {
        if let (Some(rec), Some(started)) = (self.records.last_mut(), started) {
            rec.latency = Some(self.transport.now().saturating_sub(started));
        }
    }

    /// Runs `core` (operation `op`) until it has its output and may return,
    /// or fails. `started` is when the call began, if known: the operation
    /// times out [`DriverConfig::op_timeout`] after it (or after the call
    /// first waits).
    ///
    /// On success the caller may [`keep`](Driver::keep) the core.
    pub fn drive<C>(
        &mut self,
        op: OpId,
        started: Option<Tick>,
        core: &mut C,
    ) -> Result<C::Output, Error>
    where
        T: Send,
        C: Protocol + Send,
        C::Output: Send,
        T::Payload: Carries<C::Payload>,
    {
        let mut result = self.drive_loop(op, started, core);
        if result.is_ok() && self.sends_held() {
            // Not returned while this call's sends wait for room: the rank
            // may compute outside the library next, for longer than a
            // failure timeout, and a receiver that finds it returned with
            // a still heartbeat takes it for failed (for the whole team: a
            // receiver that had not yet taken its broadcast ended with
            // `RootFailed` on a live root). Meanwhile this call's messages
            // go to its core.
            let mut tick = self.transport.now();
            self.hold_back_with(Self::sends_held, |d, from, msg| {
                tick = tick.max(d.transport.now());
                // A mismatch found here is told as any other (below).
                let _ = d.take(core, op, tick, from, msg);
            });
        }
        if result.is_ok() {
            // A rank declared failed while only slow (frozen, descheduled)
            // may complete its call on what it took before it froze, with a
            // result the live ranks, which went on without it, do not share:
            // by decree it failed, and gets no result.
            if let Err(e) = self.check_alive() {
                result = Err(e);
            }
        }
        if let Some(msg) = self.mismatched.take() {
            self.abort_team(op, &core.header(), msg);
        }
        if let Some((_, death)) = self.send_budget.take() {
            if self.state == RankState::Alive {
                // Fewer sends than the kill point: it dies at the call's end.
                result = Err(self.kill_point(death));
            }
        }
        self.returned(op);
        if result.is_ok() {
            let done = core.header();
            let mut i = 0;
            while i < self.lingering.len() {
                if self.lingering[i].core.retired_by(&done) {
                    self.drop_kept(i);
                } else {
                    i += 1;
                }
            }
        }
        result
    }

    /// Publishes that the call of operation `op` returned (a call that
    /// fails before its core is driven says so too: a rank inside a call
    /// whose heartbeat stands still is taken for hung).
    pub fn returned(&mut self, op: OpId) {
        self.transport.publish_returned(op);
        self.transport.beat();
    }

    /// Tells every other rank that operation `op` is aborted: this rank's
    /// call (`mine`) met a message of another call (`theirs`). Each ends
    /// its call of `op` with [`Error::Mismatch`] at once, or on entering
    /// it, instead of waiting for a result that cannot come; ranks past it
    /// drop the core they kept for it.
    fn abort_team(&mut self, op: OpId, mine: &Header, theirs: Msg<T::Payload>) {
        let abort = Msg {
            op,
            kind: mine.kind,
            root: mine.root.unwrap_or(0),
            tag: Tag::Abort,
            payload: theirs.payload,
        };
        let me = self.me;
        for r in (0..self.size()).filter(|&r| r != me) {
            let to = self.members.to_transport(r);
            if self.transmit(op, to, abort.clone()).is_err() {
                return;
            }
        }
        self.flush_outbox();
    }

    /// Keeps a core after its call, unless it is finished: it is served
    /// from then on (see the module's *lingering*).
    pub fn keep<C>(&mut self, core: C)
    where
        C: Protocol + Send + 't,
        T::Payload: Carries<C::Payload>,
    {
        if core.is_finished() {
            return;
        }
        if self.lingering.len() == self.config.linger {
            self.drop_kept(0);
        }
        // The smallest spare block that holds a `C` (cores of several
        // kinds take turns: a barrier's and a broadcast's).
        let need = Layout::new::<C>();
        let fits = self
            .spares
            .iter()
            .enumerate()
            .filter(|(_, (l, _))| l.size() >= need.size() && l.align() >= need.align())
            .min_by_key(|(_, (l, _))| l.size())
            .map(|(i, _)| i);
        let core: RecycleBox<dyn Lingering<T::Payload> + Send + 't> = match fits {
            Some(i) => coerce_box!(RecycleBox::recycle(self.spares.swap_remove(i).1, core)),
            None => coerce_box!(RecycleBox::new(core)),
        };
        self.lingering.push_back(Kept {
            members: self.members,
            core,
        });
    }

    /// Stops keeping the `i`-th lingering core; its heap block is kept
    /// for the next core kept (a few blocks at most).
    fn drop_kept(&mut self, i: usize) {
        if let Some(kept) = self.lingering.remove(i) {
            if self.spares.len() < SPARE_BLOCKS {
                let held = Layout::for_value(&*kept.core);
                self.spares.push((held, RecycleBox::vacate(kept.core)));
            }
        }
    }

    fn drive_loop<C>(
        &mut self,
        op: OpId,
        started: Option<Tick>,
        core: &mut C,
    ) -> Result<C::Output, Error>
    where
        T: Send,
        C: Protocol + Send,
        C::Output: Send,
        T::Payload: Carries<C::Payload>,
    {
        let uses_time = core.uses_time();
        // The cores' clock, read again only after this rank waited (or for
        // a core that uses time): between waits a rank runs for
        // nanoseconds, and each read costs tens.
        let mut tick = match started {
            Some(started) => started,
            None if uses_time => self.transport.now(),
            // Ignored by the core.
            None => 0,
        };
        core.handle(tick, Event::Start);
        // Hand the core what came early, then every failure known so far
        // (the messages a failed rank sent were all taken before its failure
        // entered `known_failed`, see `learn_failures`).
        if !self.fence.is_empty() {
            let mut early = std::mem::take(&mut self.early);
            self.fence.release_into(op, &mut early);
            for (from, msg) in early.drain(..) {
                self.hand(core, op, tick, from, msg)?;
            }
            // Kept for the next call: its capacity stays.
            self.early = early;
        }
        tell_failures::<T::Payload, C>(core, &self.known_failed, self.members, self.me, tick);
        // This operation's early messages are its core's now, to answer.
        self.ahead.retain(|(_, _, m)| m.op > op);
        let me = self.me;
        let members = self.members;
        let mut deadline = started.map(|s| s.saturating_add(self.config.op_timeout));
        let mut output = None;
        // When the call could have returned but for the core's grace.
        let mut ready_at: Option<Tick> = None;
        let header = core.header();
        self.transport.publish_call(header);
        let root = header.root.filter(|&r| r != me);
        // When this rank learned that the root failed after entering the
        // operation (a value may still come from ranks it reached).
        let mut root_lost_at: Option<Tick> = None;
        // Whether the deadline was moved for an awaited peer that waits
        // inside this operation too (once per call).
        let mut chained = false;
        let mut turns = 0u32;
        loop {
            // The heartbeat: on the first turn and every 64th (a rank busy
            // with messages for a whole failure timeout still beats), and
            // before every wait below.
            if turns % 64 == 0 {
                self.transport.beat();
            }
            turns = turns.wrapping_add(1);
            if uses_time {
                // A core that acts on time sees it move between waits too.
                tick = tick.max(self.transport.now());
            }
            self.check_alive()?;
            self.learn_failures(core, op, &mut tick)?;
            self.flush_outbox();
            self.send_all(core, op, &mut tick, uses_time)?;
            if output.is_none() {
                output = core.take_output();
            }
            if output.is_some() && self.may_return(core, &mut ready_at) {
                break;
            }
            if let Some((from, msg)) = self.transport.try_recv() {
                self.take(core, op, tick, from, msg)?;
                // The message may have ended the call (a pair's or a leaf's
                // last step): return now if the core has nothing left to
                // send and the outbox is empty, rather than after one more
                // turn of checks (a two-rank allreduce: 100 instructions of
                // about 2200, docs/benchmarks.md).
                if output.is_none() {
                    output = core.take_output();
                }
                if output.is_some()
                    && self.outbox.is_empty()
                    && self.may_return(core, &mut ready_at)
                {
                    break;
                }
                continue;
            }
            self.serve_lingering()?;
            // Spin first, without the clock: a message due within a
            // microsecond or two skips all that follows.
            if self.transport.spin() {
                continue;
            }
            let now = self.transport.now();
            if self.answer_ahead(now)? {
                continue;
            }
            let limit = *deadline.get_or_insert(now.saturating_add(self.config.op_timeout));
            if let Some(r) = root.filter(|_| core.output_from_root()) {
                if core.root_lost() {
                    return Err(Error::RootFailed { op, root: r });
                }
                if self.root_gone(members.to_transport(r), op, now, &mut root_lost_at) {
                    return Err(Error::RootFailed { op, root: r });
                }
            }
            // The awaited peer, in transport numbering, and its view (four
            // loads of another rank's line: read once per wait, and on one
            // wait in a run of short ones, see `Suspicion::look_due`).
            let failure_timeout = self.config.failure_timeout;
            let awaiting = core.awaiting();
            let watched = awaiting
                .filter(|_| self.suspect.look_due(now, failure_timeout))
                .map(|p| members.to_transport(p))
                .filter(|&t| !self.transport.is_failed(t))
                .and_then(|t| self.transport.peer(t).map(|view| (t, view)));
            if let Some((t, _)) = watched.filter(|(_, view)| view.exited && !view.left) {
                // Its process is gone (the engine knows for certain): a
                // failure, for every rank (announced), without a timeout.
                self.transport.declare_failed(t);
                continue;
            }
            if let (Some(p), Some((_, view))) = (awaiting, watched) {
                if let Some(theirs) = view.call.filter(|c| !header.agrees(c)) {
                    // It drives another call of this operation: no message
                    // of either may ever show it (a star allreduce's root
                    // waits for inputs while the others wait for its
                    // broadcast). Aborted for the team, as a message met.
                    self.mismatched = Some(Msg {
                        op,
                        kind: theirs.kind,
                        root: theirs.root.unwrap_or(0),
                        tag: Tag::Abort,
                        payload: T::Payload::default(),
                    });
                    return Err(Error::Mismatch {
                        op,
                        mine: header.to_string(),
                        theirs: format!("{theirs} (called by rank {p}, which this rank waits on)"),
                    });
                }
                if view.left && view.entered <= op {
                    // Its program ended without calling this operation: it
                    // will never take part, which for this operation is
                    // failure.
                    tick = tick.max(now);
                    core.handle(tick, Event::PeerFailed(p));
                    continue;
                }
            }
            if let Some(peer) = self.suspect.watch(watched, now, op, failure_timeout) {
                self.transport.declare_failed(peer);
                continue;
            }
            if now >= limit {
                if let Some(peer) = self
                    .suspect
                    .absent(now, &self.transport, op, failure_timeout)
                {
                    // Absent for the whole timeout: declared failed, and the
                    // operation goes on without it (one more timeout at most).
                    self.transport.declare_failed(peer);
                    deadline = Some(now.saturating_add(self.config.op_timeout));
                    continue;
                }
                let waits_too = awaiting
                    .map(|p| members.to_transport(p))
                    .filter(|&t| !self.transport.is_failed(t))
                    .and_then(|t| self.transport.peer(t))
                    .is_some_and(|v| v.in_call() && v.entered == op + 1);
                if waits_too && !chained {
                    // The awaited peer waits inside this operation too
                    // (still beating, or `watch` would have declared it):
                    // down a chain that ends at a rank absent or hung,
                    // which the rank at its end declares when its own
                    // timeout passes, and announces. One more timeout,
                    // once, so that every rank of the chain gets the
                    // operation's outcome, not its own `Timeout` first.
                    chained = true;
                    deadline = Some(now.saturating_add(self.config.op_timeout));
                    continue;
                }
                return Err(Error::Timeout {
                    op,
                    waited: Duration::from_nanos(self.config.op_timeout),
                });
            }
            // Bounded even without a deadline: a wake-up that never comes
            // (a bug anywhere below) costs `max_sleep`, not the timeout.
            let mut wake_at = limit.min(now.saturating_add(self.config.max_sleep));
            if let Some(t) = core.poll_deadline() {
                wake_at = wake_at.min(t);
            }
            if let Some(t) = self.ahead.iter().map(|&(due, _, _)| due).min() {
                wake_at = wake_at.min(t);
            }
            if output.is_some() {
                if let Some(ready) = ready_at {
                    wake_at = wake_at.min(ready.saturating_add(self.config.grace));
                }
            }
            self.transport.beat();
            let mut call = Call {
                driver: &mut *self,
                core: &mut *core,
                op,
                tick: &mut tick,
                output: &mut output,
                failed: None,
            };
            T::block_call(&mut call, wake_at);
            if let Some(e) = call.failed {
                return Err(e);
            }
            tick = tick.max(self.transport.now());
            if core.poll_deadline().is_some_and(|t| t <= tick) {
                core.handle(tick, Event::Timer);
            }
        }
        Ok(output.expect("loop ends with output"))
    }

    /// Sends everything the core has to send now. After a correction
    /// message it takes what arrived before the next send: a message may
    /// stop a checked sweep (never wait with a send pending: a park or yield
    /// costs a scheduling round, milliseconds with many ranks per core).
    /// True if it sent anything.
    #[inline]
    fn send_all<C>(
        &mut self,
        core: &mut C,
        op: OpId,
        tick: &mut Tick,
        uses_time: bool,
    ) -> Result<bool, Error>
    where
        C: Protocol,
        T::Payload: Carries<C::Payload>,
    {
        let members = self.members;
        let mut sent = false;
        while let Some(tx) = core.poll_transmit(*tick) {
            sent = true;
            crate::fault_point::reach(crate::fault_point::FaultPoint::BeforeSend);
            let correction = tx.msg.tag.is_correction();
            let to = members.to_transport(tx.to);
            self.transmit(op, to, tx.msg.map(<T::Payload>::wrap))?;
            if correction {
                while let Some((from, msg)) = self.transport.try_recv() {
                    self.take(core, op, *tick, from, msg)?;
                }
            }
            if uses_time {
                // The contract: time advances between sends, so a core
                // that sends until a time stops.
                *tick = (*tick).max(self.transport.now());
            }
        }
        Ok(sent)
    }

    /// Everything a call can do without waiting, as a helper runs it (see
    /// [`crate::helping`]): failure news, the core's sends, what arrived,
    /// the lingering cores' sends, until nothing moves. Timers, the
    /// detector, the deadline and the grace stay with the rank's own
    /// thread. True if anything moved. (The rank's own loop in
    /// `drive_loop` takes one message per turn instead, so that its call
    /// returns as soon as it may: draining first would cost a two-rank
    /// exchange an empty poll per call.)
    fn advance<C>(
        &mut self,
        core: &mut C,
        op: OpId,
        tick: &mut Tick,
        output: &mut Option<C::Output>,
    ) -> Result<bool, Error>
    where
        C: Protocol,
        T::Payload: Carries<C::Payload>,
    {
        let uses_time = core.uses_time();
        let mut moved = false;
        loop {
            if uses_time {
                *tick = (*tick).max(self.transport.now());
            }
            self.learn_failures(core, op, tick)?;
            self.flush_outbox();
            let mut did = self.send_all(core, op, tick, uses_time)?;
            if output.is_none() {
                *output = core.take_output();
                did |= output.is_some();
            }
            // Not past the fence's room: a rank whose call a helper runs
            // may be descheduled for a time slice, and its channels, which
            // the helper drains, no longer hold its senders back (a root
            // broadcasting in a loop ran 125 operations ahead of such a
            // rank). What stays in them, the rank's own thread takes.
            while !self.fence.is_full() {
                let Some((from, msg)) = self.transport.try_recv() else {
                    break;
                };
                self.take(core, op, *tick, from, msg)?;
                did = true;
            }
            if !did {
                break;
            }
            moved = true;
        }
        self.serve_lingering()?;
        Ok(moved)
    }

    /// For a core whose output can only come from `root` (a transport
    /// rank): whether to end the call with [`Error::RootFailed`]. A root that failed, or whose
    /// program ended, before it entered operation `op` never sent a value:
    /// at once. One that failed inside the operation may have reached some
    /// ranks, whose correction may still bring the value: after
    /// [`DriverConfig::root_wait`], counted from when this rank first saw
    /// it gone.
    fn root_gone(&self, root: Rank, op: OpId, now: Tick, lost_at: &mut Option<Tick>) -> bool {
        let view = self.transport.peer(root);
        if view.is_some_and(|v| v.exited && !v.left) {
            // Its process is gone: failed, for every rank (announced).
            self.transport.declare_failed(root);
        }
        let failed = self.transport.is_failed(root);
        let never_entered = view.is_some_and(|v| v.entered <= op);
        let left = view.is_some_and(|v| v.left);
        if !(failed || left && never_entered) {
            return false;
        }
        let lost = *lost_at.get_or_insert(now);
        never_entered || now.saturating_sub(lost) >= self.config.root_wait
    }

    /// Whether the call may return, given the core's answer and, for
    /// [`Leave::AfterGrace`], how long it has been ready (the clock is read
    /// only then).
    fn may_return<C: Protocol>(&self, core: &C, ready_at: &mut Option<Tick>) -> bool {
        match core.may_return() {
            Leave::Now => true,
            Leave::Not => false,
            Leave::AfterGrace => {
                let now = self.transport.now();
                let since = *ready_at.get_or_insert(now);
                now.saturating_sub(since) >= self.config.grace
            }
        }
    }

    /// Hands a received message to the current core, a lingering one, or the
    /// fence. Counted handled at once: the sends it causes come within this
    /// call, before this rank's program can end.
    fn take<C>(
        &mut self,
        core: &mut C,
        op: OpId,
        tick: Tick,
        from: Rank,
        msg: Msg<T::Payload>,
    ) -> Result<(), Error>
    where
        C: Protocol,
        T::Payload: Carries<C::Payload>,
    {
        self.transport.count_handled();
        if self.sent_by_failed(from) {
            return Ok(());
        }
        match self.fence.route(msg.op) {
            Route::Current => {
                debug_assert_eq!(msg.op, op);
                self.hand(core, op, tick, from, msg)
            }
            Route::Early => {
                // A message of this core's kind (the same algorithm, at a
                // later operation), which it may answer for this rank if
                // the rank does not get there soon.
                if <T::Payload as Carries<C::Payload>>::holds(&msg.payload) {
                    if let Some((delay, tag, payload)) = core.answer_ahead(msg.kind, msg.tag) {
                        let answer = Msg {
                            tag,
                            payload: <T::Payload as Carries<C::Payload>>::wrap(payload),
                            ..msg
                        };
                        let due = self.transport.now().saturating_add(delay);
                        self.ahead.push((due, from, answer));
                    }
                }
                self.route_other(from, msg);
                Ok(())
            }
            _ => {
                self.route_other(from, msg);
                Ok(())
            }
        }
    }

    /// Sends the answers for later operations whose time has come
    /// ([`Protocol::answer_ahead`]). True if it sent one.
    fn answer_ahead(&mut self, now: Tick) -> Result<bool, Error> {
        if self.ahead.iter().all(|&(due, _, _)| due > now) {
            return Ok(false);
        }
        let mut i = 0;
        while i < self.ahead.len() {
            if self.ahead[i].0 <= now {
                let (_, to, msg) = self.ahead.swap_remove(i);
                if !self.sent_by_failed(to) {
                    self.transmit(msg.op, to, msg)?;
                }
            } else {
                i += 1;
            }
        }
        Ok(true)
    }

    /// True for a message from a rank whose failure this rank's cores have
    /// been told: it is dropped. A rank marks itself failed after its last
    /// send, and the registry is read before the channels are drained, so
    /// such a message can only come from a rank declared failed while it was
    /// merely slow (a zombie): fail-stop by decree, nothing it sends from
    /// then on enters a result. (What a zombie sent before this rank learned
    /// of its failure is taken, as if it had failed just after sending it.)
    #[inline]
    fn sent_by_failed(&self, from: Rank) -> bool {
        !self.known_failed.is_empty() && self.known_failed.contains(&from)
    }

    /// Hands a message of the current operation to its core, or ends the
    /// call with a mismatch: a message the core's header does not accept,
    /// whose payload is another kind of core's, or another rank's abort of
    /// the operation.
    #[inline]
    fn hand<C>(
        &mut self,
        core: &mut C,
        op: OpId,
        tick: Tick,
        from: Rank,
        msg: Msg<T::Payload>,
    ) -> Result<(), Error>
    where
        C: Protocol,
        T::Payload: Carries<C::Payload>,
    {
        let Some(from) = self.members.of_transport(from) else {
            // Not in this communicator: late traffic of the team it was
            // shrunk from.
            return Ok(());
        };
        let header = core.header();
        if msg.tag == Tag::Abort {
            return Err(Error::Mismatch {
                op,
                mine: header.to_string(),
                theirs: format!(
                    "{} (rank {from} met a mismatch and aborted the operation)",
                    msg.describe()
                ),
            });
        }
        let accepted = if header.accepts(&msg) {
            msg.try_map(Carries::unwrap)
        } else {
            Err(msg)
        };
        match accepted {
            Ok(msg) => {
                core.handle(tick, Event::Message { from, msg });
                Ok(())
            }
            Err(msg) => {
                let theirs = msg.describe();
                self.mismatched = Some(msg);
                Err(Error::Mismatch {
                    op,
                    mine: header.to_string(),
                    theirs,
                })
            }
        }
    }

    /// When the registry has news, hands the current core and the lingering
    /// ones every failure it lists, after the messages already in the
    /// channels: a rank marks itself failed after its last send, so what it
    /// sent before it failed is taken before its failure is reported (as
    /// over FIFO channels with a perfect detector). A pair exchange relies
    /// on it: a peer that sent its input and then died in a later operation
    /// must not be left out of the one it completed. Without news it is one
    /// load: the list is kept (`known_failed`) and handed to each new core
    /// at its start.
    #[inline]
    fn learn_failures<C>(&mut self, core: &mut C, op: OpId, tick: &mut Tick) -> Result<(), Error>
    where
        C: Protocol,
        T::Payload: Carries<C::Payload>,
    {
        // The common case, on every turn of every call: nothing new.
        if self.transport.failure_epoch() == self.seen_epoch {
            return Ok(());
        }
        self.learn_new_failures(core, op, tick)
    }

    #[inline(never)]
    fn learn_new_failures<C>(
        &mut self,
        core: &mut C,
        op: OpId,
        tick: &mut Tick,
    ) -> Result<(), Error>
    where
        C: Protocol,
        T::Payload: Carries<C::Payload>,
    {
        let Some(fresh) = self.failure_news() else {
            return Ok(());
        };
        let now = (*tick).max(self.transport.now());
        *tick = now;
        while let Some((from, msg)) = self.transport.try_recv() {
            self.take(core, op, now, from, msg)?;
        }
        self.known_failed = fresh;
        tell_failures::<T::Payload, C>(core, &self.known_failed, self.members, self.me, now);
        self.tell_lingering_failures(now);
        Ok(())
    }

    /// The registry's list, if it moved since `seen_epoch`. The caller
    /// drains the channels, then makes it `known_failed`: the list is read
    /// first, so every message its ranks sent before they failed is in the
    /// channels by then, and is taken before their messages are dropped.
    fn failure_news(&mut self) -> Option<Vec<Rank>> {
        let epoch = self.transport.failure_epoch();
        if epoch == self.seen_epoch {
            return None;
        }
        self.seen_epoch = epoch;
        Some(self.transport.failed())
    }

    /// Hands the lingering cores every failure in `known_failed`.
    fn tell_lingering_failures(&mut self, now: Tick) {
        let me = self.transport.rank();
        for kept in &mut self.lingering {
            let mine = kept.members.of_transport(me).unwrap_or(me);
            tell_failures(&mut *kept.core, &self.known_failed, kept.members, mine, now);
        }
    }

    /// A message of another operation than the current one (or any message
    /// while the rank is between operations).
    fn route_other(&mut self, from: Rank, msg: Msg<T::Payload>) {
        if self.sent_by_failed(from) {
            return;
        }
        if self.fence.route(msg.op) == Route::Early {
            self.fence.hold(from, msg.op, msg);
            return;
        }
        let Some(i) = self
            .lingering
            .iter()
            .position(|k| k.core.header().op == msg.op)
        else {
            return;
        };
        if msg.tag == Tag::Abort {
            // The operation was aborted after this rank completed it: its
            // core has nobody left to serve.
            self.drop_kept(i);
            return;
        }
        let Some(from) = self.lingering[i].members.of_transport(from) else {
            return;
        };
        let core = &mut self.lingering[i].core;
        let now = if core.uses_time() {
            self.transport.now()
        } else {
            0
        };
        core.handle(now, Event::Message { from, msg });
    }

    /// Lets lingering cores send what they have.
    fn serve_lingering(&mut self) -> Result<(), Error> {
        if self.lingering.is_empty() {
            return Ok(());
        }
        // The clock only for a core that acts on it (the contract lets the
        // others see a stale tick): this runs on every idle turn and pump.
        let now = if self.lingering.iter().any(|k| k.core.uses_time()) {
            self.transport.now()
        } else {
            0
        };
        let mut i = 0;
        while i < self.lingering.len() {
            while let Some(tx) = self.lingering[i].core.poll_transmit(now) {
                let kept = &self.lingering[i];
                let (op, to) = (kept.core.header().op, kept.members.to_transport(tx.to));
                self.transmit(op, to, tx.msg)?;
            }
            if self.lingering[i].core.is_finished() {
                self.drop_kept(i);
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// Sends one message, or keeps it in the outbox if the channel is full.
    /// Messages to failed ranks vanish, as fail-stop says.
    #[inline]
    fn transmit(&mut self, op: OpId, to: Rank, msg: Msg<T::Payload>) -> Result<(), Error> {
        // Fail-stop: a rank that died (say, by its send budget while a
        // lingering core was sending) sends nothing more. (One declared
        // failed while only slow finds out at its next step; what it sends
        // until then, receivers that know drop.)
        if self.state != RankState::Alive {
            return Err(Error::Failed(self.me));
        }
        if let Some(rec) = self.records.get_mut(op as usize) {
            rec.sends += 1;
        }
        if !self.transport.is_failed(to) {
            // Counted in flight from here, even while it waits in the outbox.
            self.transport.count_sent();
            // Channels are FIFO per pair: a message waits only behind
            // messages to the same rank, never behind another rank's full
            // channel (one dead peer's must not hold back the rest).
            if self.outbox.is_empty() || !self.outbox.iter().any(|&(r, _)| r == to) {
                if let Err(msg) = self.transport.send(to, msg) {
                    self.outbox.push_back((to, msg));
                }
            } else {
                self.outbox.push_back((to, msg));
            }
        }
        if let Some((left, death)) = self.send_budget.as_mut() {
            *left -= 1;
            if *left == 0 {
                let death = *death;
                self.send_budget = None;
                return Err(self.kill_point(death));
            }
        }
        Ok(())
    }

    /// Fail-stop for the sends a full channel held back: a rank that failed
    /// or hung never sends them. They were counted in flight when queued,
    /// so they are counted handled here; otherwise the team would never be
    /// quiet.
    fn drop_outbox(&mut self) {
        for _ in self.outbox.drain(..) {
            self.transport.count_handled();
        }
    }

    /// Sends what the outbox holds, each rank's messages in order; a rank
    /// whose channel is full keeps the rest of its messages waiting, and
    /// the other ranks' go on (no head-of-line blocking: a peer that died
    /// unannounced, whose channel stays full until it is declared failed,
    /// delays nobody else's messages).
    #[inline]
    fn flush_outbox(&mut self) {
        if self.outbox.is_empty() {
            return;
        }
        self.flush_outbox_slow();
    }

    fn flush_outbox_slow(&mut self) {
        let mut full = std::mem::take(&mut self.full_lanes);
        full.clear();
        for _ in 0..self.outbox.len() {
            let Some((to, msg)) = self.outbox.pop_front() else {
                break;
            };
            if full.contains(&to) {
                self.outbox.push_back((to, msg));
            } else if let Err(msg) = self.transport.send(to, msg) {
                full.push(to);
                self.outbox.push_back((to, msg));
            }
        }
        self.full_lanes = full;
    }

    /// Takes the next message, if any, counting it handled once `handle`
    /// is done.
    fn receive_with(&mut self, handle: impl FnOnce(&mut Self, Rank, Msg<T::Payload>)) -> bool {
        match self.transport.try_recv() {
            Some((from, msg)) => {
                handle(self, from, msg);
                self.transport.count_handled();
                true
            }
            None => false,
        }
    }

    /// Takes what has arrived and drops it (a hung rank's channels must
    /// drain for the team to be quiet).
    pub fn drain_and_drop(&mut self) {
        while self.receive_with(|_, _, _| {}) {}
    }

    /// Between calls: takes what has arrived (for the cores kept from past
    /// operations, or held for operations to come), serves the kept cores,
    /// and sends what the outbox held back; never waits. A rank that waits
    /// outside the library calls this so that its kept cores still answer
    /// (FTCO's ACKs and KEEPALIVE answers, a correction's late messages).
    pub fn progress(&mut self) -> Result<(), Error> {
        self.check_alive()?;
        self.transport.beat();
        self.flush_outbox();
        while self.receive_with(|d, from, msg| d.route_other(from, msg)) {}
        self.serve_lingering()?;
        self.flush_outbox();
        Ok(())
    }

    /// Flow control at the entry of a call: a rank whose channels are full
    /// does not start another operation until its outbox is short again.
    /// A call's own sends were placed before it returned (`drive`), so what
    /// waits here is a lingering core's, or what a call left when its hold
    /// reached the operation timeout. Meanwhile it keeps taking messages, so
    /// two ranks waiting on each other's channels both drain.
    fn backpressure(&mut self) {
        if self.sends_held() {
            self.hold_back(Self::sends_held);
        }
    }

    /// Whether more sends wait for full channels than
    /// [`DriverConfig::outbox_limit`] allows.
    fn sends_held(&self) -> bool {
        self.outbox.len() > self.config.outbox_limit
    }

    /// Flow control's wait, between operations: while `held` says so, for
    /// at most [`DriverConfig::op_timeout`], takes messages, serves the
    /// lingering cores and flushes the outbox, waiting in between (so that
    /// ranks held back by each other all drain). True if `held` ended.
    pub fn hold_back(&mut self, held: impl FnMut(&Self) -> bool) -> bool {
        self.hold_back_with(held, |d, from, msg| {
            d.route_other(from, msg);
            d.transport.count_handled();
        })
    }

    /// [`hold_back`](Driver::hold_back), handing what arrives to `handle`,
    /// which counts it handled.
    fn hold_back_with(
        &mut self,
        mut held: impl FnMut(&Self) -> bool,
        mut handle: impl FnMut(&mut Self, Rank, Msg<T::Payload>),
    ) -> bool {
        let start = self.transport.now();
        let deadline = start.saturating_add(self.config.op_timeout);
        // Room in a receiver's channel comes with no message to this rank:
        // a wait would sleep to its deadline. So for HOLD_PAUSE_NS the
        // engine may pause instead (where ranks share cores, give the core
        // to whoever may drain the channel) and the room is looked for
        // again; only then waits.
        let pause_until = start.saturating_add(HOLD_PAUSE_NS);
        loop {
            if !held(self) {
                return true;
            }
            if self.transport.now() >= deadline || !self.is_alive() {
                return false;
            }
            self.transport.beat();
            self.flush_outbox();
            while let Some((from, msg)) = self.transport.try_recv() {
                handle(self, from, msg);
            }
            let _ = self.serve_lingering();
            if held(self) {
                let now = self.transport.now();
                let until = now.saturating_add(50_000);
                if now < pause_until {
                    self.transport.pause(until);
                } else {
                    self.transport.wait(until);
                }
            }
        }
    }

    /// After the program: keep serving late messages until the whole team
    /// is quiet. Failed and hung ranks only take messages out of their
    /// channels (and drop them), so that the count of messages in flight
    /// reaches zero.
    pub fn finish(&mut self) {
        self.transport.leave(self.state == RankState::Hung);
        let mut idle_rounds = 0u32;
        loop {
            self.transport.beat();
            let serving = self.is_alive();
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
            self.transport.publish_served_epoch(seen);
            while self.receive_with(|d, from, msg| {
                if serving && d.state == RankState::Alive {
                    d.route_other(from, msg);
                    let _ = d.serve_lingering();
                }
            }) {
                busy = true;
            }
            if !busy && self.outbox.is_empty() && self.transport.team_quiet() {
                return;
            }
            idle_rounds = if busy { 0 } else { idle_rounds + 1 };
            let pause = if idle_rounds < 10 { 20_000 } else { 500_000 };
            let until = self.transport.now().saturating_add(pause);
            self.transport.wait(until);
        }
    }

    /// [`Driver::learn_failures`] for the lingering cores alone.
    fn learn_failures_lingering(&mut self) {
        let Some(fresh) = self.failure_news() else {
            return;
        };
        // Messages first, as in `learn_failures`.
        while self.receive_with(|d, from, msg| d.route_other(from, msg)) {}
        self.known_failed = fresh;
        let now = self.transport.now();
        self.tell_lingering_failures(now);
    }
}

/// A core kept after its call, with the numbering of the communicator it
/// was made in.
struct Kept<'t, W> {
    members: Members<'t>,
    core: RecycleBox<dyn Lingering<W> + Send + 't>,
}

/// Hands `core` (rank `me` of `members`) the failure of every member in
/// `failed` (transport ranks) but itself.
fn tell_failures<W, C>(core: &mut C, failed: &[Rank], members: Members<'_>, me: Rank, now: Tick)
where
    C: Lingering<W> + ?Sized,
{
    for r in failed.iter().filter_map(|&t| members.of_transport(t)) {
        if r != me {
            core.handle(now, Event::PeerFailed(r));
        }
    }
}
