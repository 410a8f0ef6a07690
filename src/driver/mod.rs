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
//! alive but silent is caught by the timeout detector (`detector.rs`): a
//! rank that awaits a peer whose heartbeat has stood still for the failure
//! timeout marks it failed for everyone (a rank that merely waits keeps
//! beating, so a wait-for chain is never taken for death). A rank so marked
//! is failed for good: its next step returns [`Error::Failed`]. A rank whose program has ended counts as
//! failed for every operation it never entered.
//!
//! Time: the driver reads the transport's clock when a call starts (if it
//! keeps records), after every wait, and, for a core that
//! [uses time](Protocol::uses_time), before every step and between
//! consecutive sends, as the [`Protocol`] contract promises.
//!
//! Where each part lives: `drive.rs` the loop of a call (its waits, the
//! detector's looks, a root's failure, the grace); `receive.rs` messages in
//! (fencing, mismatches, answers ahead); `outbox.rs` messages out and flow
//! control; `failures.rs` failure news; `lingering.rs` the cores kept after
//! their calls; `idle.rs` a rank outside its calls (progress, the end of its
//! program); `fence.rs`, `detector.rs`, `members.rs` and `memory.rs` the
//! pieces they use; `transport.rs` what an engine provides.

mod call;
mod detector;
mod drive;
mod failures;
pub(crate) mod fence;
mod idle;
mod lingering;
mod members;
pub mod memory;
mod outbox;
mod pending;
mod receive;
mod transport;

pub use members::Members;
pub use pending::Outcome;
pub(crate) use transport::{pack_call, unpack_call};
pub use transport::{Carries, PeerView, Progress, Transport};

use std::alloc::Layout;
use std::collections::VecDeque;
use std::time::Duration;

use recycle_box::RecycleBox;

use crate::error::Error;
use crate::protocol::Msg;
use crate::types::{OpId, Rank, Tick};
use detector::Suspicion;
use fence::Fence;
use lingering::Kept;

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
    /// The longest a call's first wait lasts before the driver looks again
    /// (a wake-up that never comes costs this, not the timeout). On a
    /// transport [woken by every event](Transport::woken_by_every_event)
    /// each wait doubles it, up to a sixteenth of the failure timeout,
    /// until a message comes, so that a long wait costs no core.
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
    /// Operations launched and not yet waited (`pending.rs`).
    pending: Vec<pending::Pending<'t, T::Payload>>,
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
            pending: Vec::new(),
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

    /// Publishes that the call of operation `op` returned (a call that
    /// fails before its core is driven says so too: a rank inside a call
    /// whose heartbeat stands still is taken for hung).
    pub fn returned(&mut self, op: OpId) {
        self.transport.publish_returned(op);
        self.transport.beat();
    }
}
