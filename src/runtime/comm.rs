//! A rank's handle inside [`crate::runtime::Team::run`]: the collectives, and
//! the driver loop that runs a protocol core over the mailboxes.
//!
//! Operation fencing: every message carries its operation number, kind and
//! root. A message of the current operation goes to its core; one of an
//! older operation goes to that operation's core if the rank still keeps it
//! (see *lingering* below) and is dropped otherwise; one of a later
//! operation waits in `early` until the rank gets there. A message of the
//! current operation whose kind or root differs from the rank's own call
//! ends the call with [`Error::Mismatch`] instead of a hang.
//!
//! A call returns once the rank holds the value and has nothing left to
//! send. Its core may still have work that depends on messages yet to come
//! (a tree message after an early correction, a stop reply of delayed
//! correction), so it *lingers*: it is served whenever the rank is inside a
//! later call or has finished its closure, until it can never send again or
//! [`LINGER`] newer cores push it out.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::mailbox::Endpoint;
use crate::protocol::bcast::Bcast;
use crate::protocol::{Event, Msg, Protocol, Transmit};
use crate::runtime::faults::Fault;
use crate::runtime::fence::{Fence, Route};
use crate::runtime::team::{Counters, Shared};
use crate::runtime::wire::{self, Wire, Words};
use crate::sync::Ordering;
use crate::types::{Collective, OpId, Rank};

/// The longest a rank sleeps in one wait before it looks again.
const MAX_SLEEP: Duration = Duration::from_millis(1);

/// How long a rank colored by a correction message waits for its tree
/// message before it returns and leaves the forwarding to a lingering core.
const TREE_GRACE: Duration = Duration::from_millis(50);

/// Cores of past operations a rank keeps serving at most.
pub const LINGER: usize = 32;

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

/// A rank's handle: its number, the team size, and the collectives.
pub struct Comm<'t> {
    shared: &'t Shared<'t>,
    rank: Rank,
    endpoint: Endpoint<'t, Msg<Words>>,
    state: State,
    /// The operation this rank is in, and messages of later ones.
    fence: Fence<Msg<Words>>,
    lingering: VecDeque<Bcast<'t, Words>>,
    /// Sends a full lane refused, in order; retried before any new send.
    outbox: VecDeque<(Rank, Msg<Words>)>,
    seen_epoch: u64,
    known_failed: Vec<Rank>,
    records: Vec<OpRecord>,
    /// Sends left before an emulated death in the current operation.
    send_budget: Option<u32>,
}

impl<'t> Comm<'t> {
    pub(crate) fn new(
        shared: &'t Shared<'t>,
        rank: Rank,
        endpoint: Endpoint<'t, Msg<Words>>,
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

    /// True while this rank is alive (not killed, not hung).
    pub fn is_alive(&self) -> bool {
        self.state == State::Alive
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
        let procs = self.size();
        if root >= procs {
            return Err(Error::RankOutOfRange { rank: root, procs });
        }
        let words = if root == self.rank {
            Some(wire::encode(value)?)
        } else {
            None
        };
        let op = self.begin_op()?;
        let started = Instant::now();
        let result = self.run_bcast(op, root, words);
        let rec = self
            .records
            .last_mut()
            .expect("begin_op records the operation");
        match result {
            Ok(words) => {
                rec.latency_ns = Some(started.elapsed().as_nanos() as u64);
                *value = T::decode(&words);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Numbers the next operation and applies this rank's planned fault.
    fn begin_op(&mut self) -> Result<OpId, Error> {
        match self.state {
            State::Failed => return Err(Error::Failed(self.rank)),
            State::Hung => return Err(Error::Hung(self.rank)),
            State::Alive => {}
        }
        let op = self.fence.enter();
        self.records.push(OpRecord {
            op,
            sends: 0,
            latency_ns: None,
        });
        self.send_budget = None;
        match self.shared.faults().lookup(self.rank, op) {
            Some(Fault::Dead) => {
                self.die();
                Err(Error::Failed(self.rank))
            }
            Some(Fault::Hang) => {
                self.hang();
                Err(Error::Hung(self.rank))
            }
            Some(Fault::DieAfterSends(0)) => {
                self.die();
                Err(Error::Failed(self.rank))
            }
            Some(Fault::DieAfterSends(n)) => {
                self.send_budget = Some(n);
                Ok(op)
            }
            None => Ok(op),
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
        self.shared.finished.fetch_add(1, Ordering::AcqRel);
        while !self.shared.all_finished() {
            self.endpoint
                .wait(Some(Instant::now() + Duration::from_millis(2)));
            while self.receive_with(|_, _, _| {}) {}
        }
    }

    fn run_bcast(&mut self, op: OpId, root: Rank, words: Option<Words>) -> Result<Words, Error> {
        let shared = self.shared;
        let mut core = Bcast::new(shared.plan, root, self.rank, op, words)?;
        core.handle(shared.now(), Event::Start);
        // Hand the core every failure known so far, then what came early.
        self.seen_epoch = u64::MAX;
        for (from, msg) in self.fence.release(op) {
            check_same(op, root, &msg)?;
            core.handle(shared.now(), Event::Message { from, msg });
        }
        let deadline = Instant::now() + shared.op_timeout();
        let mut output = None;
        let mut colored_at = Instant::now();
        loop {
            self.learn_failures(&mut core);
            self.flush_outbox();
            while let Some(tx) = core.poll_transmit(shared.now()) {
                let correction = tx.msg.tag.is_correction();
                self.transmit(op, tx)?;
                if correction {
                    // What arrived meanwhile may stop a checked sweep: look
                    // before the next send (never wait with a send pending:
                    // a park or yield costs a scheduling round, milliseconds
                    // with many ranks per core).
                    while let Some((from, msg)) = self.endpoint.try_recv() {
                        self.take(&mut core, op, root, from, msg)?;
                    }
                }
            }
            if output.is_none() {
                output = core.take_output();
                if output.is_some() {
                    colored_at = Instant::now();
                }
            }
            // A rank colored only by correction still owes its subtree the
            // tree message: it waits for it (or for its ancestor's failure)
            // up to TREE_GRACE, so that no rank returns while its children
            // depend on it, yet a hung ancestor cannot hold it for long.
            if output.is_some()
                && core.is_quiescent()
                && (core.colored_by_tree()
                    || core.is_finished()
                    || colored_at.elapsed() >= TREE_GRACE)
            {
                break;
            }
            if let Some((from, msg)) = self.endpoint.try_recv() {
                self.take(&mut core, op, root, from, msg)?;
                continue;
            }
            self.serve_lingering()?;
            let now = Instant::now();
            if now >= deadline {
                return Err(if shared.liveness.is_failed(root) {
                    Error::RootFailed { op, root }
                } else {
                    Error::Timeout {
                        op,
                        waited: shared.op_timeout(),
                    }
                });
            }
            // Bounded even without a deadline: a wake-up that never comes
            // (a bug anywhere below) costs a millisecond, not the timeout.
            let wake_at = core
                .poll_deadline()
                .map(|t| shared.started + Duration::from_nanos(t))
                .map_or(deadline, |t| t.min(deadline))
                .min(now + MAX_SLEEP);
            // (When waiting out TREE_GRACE, MAX_SLEEP bounds each nap.)
            self.endpoint.wait(Some(wake_at));
        }
        self.linger(core);
        Ok(output.expect("loop ends with output"))
    }

    /// Hands a received message to the current core, a lingering one, or the
    /// early queue. Counted handled at once: the sends it causes come within
    /// this call, before this rank's closure can end.
    fn take(
        &mut self,
        core: &mut Bcast<'t, Words>,
        op: OpId,
        root: Rank,
        from: Rank,
        msg: Msg<Words>,
    ) -> Result<(), Error> {
        self.consumed();
        match self.fence.route(msg.op) {
            Route::Current => {
                debug_assert_eq!(msg.op, op);
                check_same(op, root, &msg)?;
                core.handle(self.shared.now(), Event::Message { from, msg });
            }
            _ => self.route_other(from, msg),
        }
        Ok(())
    }

    /// Hands the core every failure it has not heard of yet.
    fn learn_failures(&mut self, core: &mut Bcast<'t, Words>) {
        let epoch = self.shared.liveness.epoch();
        if epoch == self.seen_epoch {
            return;
        }
        self.seen_epoch = epoch;
        self.known_failed = self.shared.liveness.failed();
        let now = self.shared.now();
        for &r in &self.known_failed {
            if r != self.rank {
                core.handle(now, Event::PeerFailed(r));
            }
        }
    }

    /// A message of another operation than the current one (or any message
    /// while the rank is between operations).
    fn route_other(&mut self, from: Rank, msg: Msg<Words>) {
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

    fn linger(&mut self, core: Bcast<'t, Words>) {
        if !core.is_finished() {
            if self.lingering.len() == LINGER {
                self.lingering.pop_front();
            }
            self.lingering.push_back(core);
        }
    }

    /// Sends one message, or keeps it in the outbox if the lane is full.
    /// Messages to failed ranks vanish, as fail-stop says.
    fn transmit(&mut self, op: OpId, tx: Transmit<Msg<Words>>) -> Result<(), Error> {
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

    fn pushed(&self) {
        self.counters().pushed.fetch_add(1, Ordering::Release);
    }

    /// Counts a received message as handled, with all it made this rank send.
    fn consumed(&self) {
        self.counters().consumed.fetch_add(1, Ordering::Release);
    }

    /// Takes the next message, if any, counting it handled once `handle` is done.
    fn receive_with(&mut self, handle: impl FnOnce(&mut Self, Rank, Msg<Words>)) -> bool {
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
        if self.state != State::Hung {
            self.shared.finished.fetch_add(1, Ordering::AcqRel);
        }
        let serving = self.state == State::Alive;
        let mut idle_rounds = 0u32;
        loop {
            let mut busy = false;
            if serving {
                self.flush_outbox();
                let _ = self.serve_lingering();
            }
            while self.receive_with(|comm, from, msg| {
                if serving {
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

    pub(crate) fn hung(&self) -> bool {
        self.state == State::Hung
    }

    pub(crate) fn into_records(self) -> Vec<OpRecord> {
        self.records
    }
}

/// Checks that a message of operation `op` belongs to the same collective.
fn check_same(op: OpId, root: Rank, msg: &Msg<Words>) -> Result<(), Error> {
    if msg.kind != Collective::Broadcast || msg.root != root {
        return Err(Error::Mismatch {
            op,
            mine: format!("broadcast from {root}"),
            theirs: format!("{:?} from {}", msg.kind, msg.root),
        });
    }
    Ok(())
}
