//! Messages out and flow control: a send goes to its channel, or waits in
//! the outbox behind the sends to the same rank only; the send budget of an
//! emulated death counts down here; a rank whose sends wait for full
//! channels holds back (docs/architecture.md, *Flow control*).

use super::{Driver, RankState, Transport};
use crate::error::Error;
use crate::protocol::{Header, Msg, Tag};
use crate::types::{OpId, Rank, Tick};

/// How long flow control yields and looks again before it waits (ns of the
/// engine's clock): a receiver drains a full lane of 64 messages in about
/// 20 µs, and a wait, which only a message ends, would sleep its 50 µs
/// out. A root broadcasting in a loop to a rank on its own core did so
/// twice per 64 calls (109 µs per hold, measured): the 4-rank back-to-back
/// broadcast took 2.2 µs per call instead of 0.7-0.9 (docs/benchmarks.md,
/// *Changes to the small collectives, measured*).
const HOLD_PAUSE_NS: Tick = 200_000;

impl<'t, T: Transport> Driver<'t, T> {
    /// Sends one message, or keeps it in the outbox if the channel is full.
    /// Messages to failed ranks vanish, as fail-stop says.
    #[inline]
    pub(super) fn transmit(
        &mut self,
        op: OpId,
        to: Rank,
        msg: Msg<T::Payload>,
    ) -> Result<(), Error> {
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

    /// Tells every other rank that operation `op` is aborted: this rank's
    /// call (`mine`) met a message of another call (`theirs`). Each ends
    /// its call of `op` with [`Error::Mismatch`] at once, or on entering
    /// it, instead of waiting for a result that cannot come; ranks past it
    /// drop the core they kept for it.
    pub(super) fn abort_team(&mut self, op: OpId, mine: &Header, theirs: Msg<T::Payload>) {
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

    /// Fail-stop for the sends a full channel held back: a rank that failed
    /// or hung never sends them. They were counted in flight when queued,
    /// so they are counted handled here; otherwise the team would never be
    /// quiet.
    pub(super) fn drop_outbox(&mut self) {
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
    pub(super) fn flush_outbox(&mut self) {
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

    /// Flow control at the entry of a call: a rank whose channels are full
    /// does not start another operation until its outbox is short again.
    /// A call's own sends were placed before it returned (`drive`), so what
    /// waits here is a lingering core's, or what a call left when its hold
    /// reached the operation timeout. Meanwhile it keeps taking messages, so
    /// two ranks waiting on each other's channels both drain.
    pub(super) fn backpressure(&mut self) {
        if self.sends_held() {
            self.hold_back(Self::sends_held);
        }
    }

    /// Whether more sends wait for full channels than
    /// [`DriverConfig::outbox_limit`] allows.
    pub(super) fn sends_held(&self) -> bool {
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
    pub(super) fn hold_back_with(
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
}
