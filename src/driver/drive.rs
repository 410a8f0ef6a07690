//! A call's drive loop: [`Driver::drive`] runs one core until it has its
//! output and may return, or fails; [`Driver::advance`] is the part of it
//! another rank's thread may run while this rank waits (see
//! [`crate::helping`]). The loop's waits, the timeout detector's looks, the
//! root's failure and the grace period are here; what a message does on
//! arrival is in `receive.rs`, what a send does in `outbox.rs`.

use std::time::Duration;

use super::call::Call;
use super::failures::tell_failures;
use super::{Carries, Driver, RankState, Transport};
use crate::error::Error;
use crate::protocol::{Event, Header, Leave, Msg, Protocol, Tag};
use crate::types::{OpId, Rank, Tick};

impl<'t, T: Transport> Driver<'t, T> {
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
        self.drive_from(op, started, core, true)
    }

    /// [`Driver::drive`], from the core's start if `fresh`, or (a core
    /// launched before, [`Driver::launch`], possibly older than the
    /// operation the rank entered last) from where it stands: its deadline
    /// then counts from its first wait here.
    pub(super) fn drive_from<C>(
        &mut self,
        op: OpId,
        started: Option<Tick>,
        core: &mut C,
        fresh: bool,
    ) -> Result<C::Output, Error>
    where
        T: Send,
        C: Protocol + Send,
        C::Output: Send,
        T::Payload: Carries<C::Payload>,
    {
        let mut result = self.drive_loop(op, started, core, fresh);
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
        result = self.end_call(op, &core.header(), result);
        // The newest operation entered: a launched one waited here may be
        // older than operations this rank has since entered and left.
        self.returned(if fresh { op } else { self.fence.next() - 1 });
        if result.is_ok() {
            let done = core.header();
            let mut i = 0;
            while i < self.lingering.len() {
                // Only by a later operation of the same communicator:
                // after a split, one of this rank's sub-team says nothing
                // of the ranks of another, which may still need this core.
                let kept = &self.lingering[i];
                if kept.members.is(self.members) && kept.core.retired_by(&done) {
                    self.drop_kept(i);
                } else {
                    i += 1;
                }
            }
        }
        result
    }

    /// What ends every call of operation `op` (its core's `header`),
    /// `result` so far: a mismatch it met is told to the team, and a kill
    /// point planned after more sends than it made fires now.
    pub(super) fn end_call<O>(
        &mut self,
        op: OpId,
        header: &Header,
        mut result: Result<O, Error>,
    ) -> Result<O, Error> {
        if let Some(msg) = self.mismatched.take() {
            self.abort_team(op, header, msg);
        }
        if let Some((_, death)) = self.send_budget.take() {
            if self.state == RankState::Alive {
                // Fewer sends than the kill point: it dies at the call's end.
                result = Err(self.kill_point(death));
            }
        }
        result
    }

    fn drive_loop<C>(
        &mut self,
        op: OpId,
        started: Option<Tick>,
        core: &mut C,
        fresh: bool,
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
        if fresh {
            self.start_core(op, core, tick)?;
        }
        let me = self.me;
        let members = self.members;
        let mut deadline = started.map(|s| s.saturating_add(self.config.op_timeout));
        let mut output = None;
        // When the call could have returned but for the core's grace.
        let mut ready_at: Option<Tick> = None;
        let header = core.header();
        let root = header.root.filter(|&r| r != me);
        // When this rank learned that the root failed after entering the
        // operation (a value may still come from ranks it reached).
        let mut root_lost_at: Option<Tick> = None;
        // When this rank learned that a failure cut it off from a value
        // no correction is bound to bring ([`Protocol::stranded`]).
        let mut stranded_at: Option<Tick> = None;
        // Whether the deadline was moved for an awaited peer that waits
        // inside this operation too (once per call).
        let mut chained = false;
        let mut turns = 0u32;
        // How long the next wait lasts at most: `max_sleep`, and on a
        // transport whose waits every event ends, doubled after each wait,
        // up to a sixteenth of the
        // failure timeout (how often the detector looks), and back to
        // `max_sleep` when a message comes. A long wait (a silent peer, a
        // broadcast that cannot complete waiting out its timeout) then
        // wakes a few dozen times a second, not a thousand: it costs no core.
        let mut idle_sleep = self.config.max_sleep;
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
                idle_sleep = self.config.max_sleep;
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
                if let Some(cut) = core.stranded() {
                    // Below a failed rank, with no correction bound to
                    // come: at once if none can, else after the same wait
                    // a value from a failed root gets.
                    let since = *stranded_at.get_or_insert(now);
                    if cut.certain || now.saturating_sub(since) >= self.config.root_wait {
                        let cut_by = cut.cut_by;
                        return Err(Error::NotReached {
                            op,
                            root: r,
                            cut_by,
                        });
                    }
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
            // (a bug anywhere below) costs `idle_sleep`, not the timeout.
            let mut wake_at = limit.min(now.saturating_add(idle_sleep));
            if self.transport.woken_by_every_event() {
                let cap = self.config.max_sleep.max(self.config.failure_timeout / 16);
                idle_sleep = idle_sleep.saturating_mul(2).min(cap);
            }
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

    /// Starts `core` of operation `op`, just entered: its start, what came
    /// early for it, then every failure known so far (the messages a
    /// failed rank sent were all taken before its failure entered
    /// `known_failed`, see `learn_failures`), and publishes the call.
    pub(super) fn start_core<C>(&mut self, op: OpId, core: &mut C, tick: Tick) -> Result<(), Error>
    where
        C: Protocol,
        T::Payload: Carries<C::Payload>,
    {
        core.handle(tick, Event::Start);
        if !self.fence.is_empty() {
            let mut early = std::mem::take(&mut self.early);
            self.fence.release_into(op, &mut early);
            for (from, msg) in early.drain(..) {
                self.hand(core, op, tick, from, msg)?;
            }
            // Kept for the next call: its capacity stays.
            self.early = early;
        }
        if !self.known_failed.is_empty() {
            tell_failures::<T::Payload, C>(core, &self.known_failed, self.members, self.me, tick);
        }
        // This operation's early messages are its core's now, to answer.
        self.ahead.retain(|(_, _, m)| m.op > op);
        self.transport.publish_call(core.header());
        Ok(())
    }

    /// Sends everything the core has to send now. After a correction
    /// message it takes what arrived before the next send: a message may
    /// stop a checked sweep (never wait with a send pending: a park or yield
    /// costs a scheduling round, milliseconds with many ranks per core).
    /// True if it sent anything.
    #[inline]
    pub(super) fn send_all<C>(
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
    pub(super) fn advance<C>(
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
    /// at once, where the engine knows that exactly
    /// ([`Transport::entries_exact`]). One that failed inside the operation may have reached some
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
        let never_entered =
            view.is_some_and(|v| v.entered <= op) && self.transport.entries_exact(root);
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
}
