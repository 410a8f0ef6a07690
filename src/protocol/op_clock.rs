//! A timeout-based core on an engine whose clock is real time: the FTCO
//! broadcast ([`crate::protocol::ftco`]; *Tree-based Fault-Tolerant
//! Collective Operations*, Section 4 and Appendix A) on threads.
//!
//! FTCO's deadlines are times from the operation's start: a node without
//! the value asks its parent at its expected arrival time f_ETA plus T,
//! and a DATA is watched for d·T + o·(children) after it is sent. In the
//! simulator every node starts at 0. On threads the engine's clock counts
//! from the team's start, and each rank enters an operation when its
//! program gets there. [`OpClock`] runs the core on its rank's operation
//! time: 0 when the engine hands it [`Event::Start`], the engine's time
//! minus that start afterwards, and deadlines back in the engine's time.
//! The ticks are the engine's (nanoseconds on threads): the plan's T and o
//! are real durations.
//!
//! **A deadline fires only once the rank has looked.** FTCO's timeout is a
//! failure detector: no answer within the timeout and the peer is
//! suspected. On a machine with more ranks than cores a rank is often
//! descheduled; when it runs again, its deadline has passed and the answer
//! it waited for may be sitting in its lane, unread. Firing the deadline
//! first would suspect a live peer for this rank's own delay. So the core's
//! clock stops just short of its next deadline until the engine has handed
//! [`Event::Timer`] twice for that same deadline: an engine hands a timer
//! only after a wait (`driver`: after every wait, once the
//! deadline has passed), and a wait comes only once the rank found nothing
//! to take, so by the second timer every message that reached the rank
//! before it looked has been handed to the core, on time. What remains of
//! a timeout is what it is for: no answer had arrived when the rank looked
//! after the deadline. (This departs from the [`Protocol`] contract in one
//! point, on purpose: after the first timer, [`OpClock::poll_deadline`]
//! stays in the past until the second.)
//!
//! **Answer delays.** The clock also measures what a timeout must cover:
//! for every [`Tag::Tree`] or [`Tag::Upward`] message (FTCO's DATA down
//! and up) the time until its target's
//! [`Tag::Ack`] is taken, in the engine's time
//! ([`OpClock::answer_delays`]; on threads, from the send to the moment the
//! sender's thread took the ACK, so it includes both ranks' scheduling
//! delays).
//!
//! The core's own guarantees hold as they are (FTCO, Definition 3.2 read
//! for a broadcast): with the root alive, every live rank delivers the
//! root's value exactly once; a timeout that fires on a live rank only
//! costs messages (duplicate DATA, acknowledged and ignored).

use crate::protocol::{Event, Msg, Protocol, Tag, Transmit};
use crate::types::{Collective, Rank, Tick};

/// A core run on its rank's operation time, whose deadlines fire only
/// after the rank has taken what reached it (see the module docs; FTCO,
/// Section 4, Appendix A).
#[derive(Clone, Debug)]
pub struct OpClock<C> {
    core: C,
    /// The engine's time when the operation started on this rank.
    start: Option<Tick>,
    /// The core's time last handed to it.
    last: Tick,
    /// A due deadline (the core's time) the engine has reported once.
    seen_due: Option<Tick>,
    /// Tree messages not yet acknowledged: target, the engine's time sent.
    unanswered: Vec<(Rank, Tick)>,
    /// The answer delays measured so far.
    delays: Vec<Tick>,
}

impl<C: Protocol> OpClock<C> {
    /// `core`, started when the engine hands it [`Event::Start`].
    pub fn new(core: C) -> Self {
        OpClock {
            core,
            start: None,
            last: 0,
            seen_due: None,
            unanswered: Vec::new(),
            delays: Vec::new(),
        }
    }

    /// For every tree message this rank sent whose target acknowledged it,
    /// the engine's time from the send to the ACK (in the order the ACKs
    /// were taken): what FTCO's timeout must cover (Appendix A).
    pub fn answer_delays(&self) -> &[Tick] {
        &self.delays
    }

    /// Notes a tree message sent at `now`, or the ACK of one taken at `now`.
    fn measure(&mut self, now: Tick, peer: Rank, tag: Tag, sent: bool) {
        match (tag, sent) {
            (Tag::Tree | Tag::Upward, true) => self.unanswered.push((peer, now)),
            (Tag::Ack, false) => {
                if let Some(i) = self.unanswered.iter().position(|&(r, _)| r == peer) {
                    let (_, at) = self.unanswered.swap_remove(i);
                    self.delays.push(now.saturating_sub(at));
                }
            }
            _ => {}
        }
    }

    /// The wrapped core.
    pub fn core(&self) -> &C {
        &self.core
    }

    /// The same clock around `f(core)`: for an engine that keeps a core
    /// after its call in another form (a reduction's with its lent
    /// function swapped out).
    pub fn map<D: Protocol>(self, f: impl FnOnce(C) -> D) -> OpClock<D> {
        OpClock {
            core: f(self.core),
            start: self.start,
            last: self.last,
            seen_due: self.seen_due,
            unanswered: self.unanswered,
            delays: self.delays,
        }
    }

    /// The engine's time of the core's time `t` (0 before the start): when
    /// a suspicion the core reports at `t` was raised (FTCO, Section 4).
    pub fn engine_time(&self, t: Tick) -> Tick {
        self.start.unwrap_or(0).saturating_add(t)
    }

    fn start_at(&mut self, now: Tick) -> Tick {
        *self.start.get_or_insert(now)
    }

    /// The operation's time at the engine's `now`.
    fn since_start(&mut self, now: Tick) -> Tick {
        now.saturating_sub(self.start_at(now))
    }

    /// The time handed to the core: the operation's time, held just short
    /// of a deadline that has not fired yet, never decreasing.
    fn core_now(&mut self, now: Tick) -> Tick {
        let mut t = self.since_start(now);
        if let Some(due) = self.core.poll_deadline().filter(|&d| d > self.last) {
            t = t.min(due - 1);
        }
        self.last = self.last.max(t);
        self.last
    }
}

impl<C: Protocol> Protocol for OpClock<C> {
    type Payload = C::Payload;
    type Output = C::Output;

    fn handle(&mut self, now: Tick, event: Event<Msg<C::Payload>>) {
        match event {
            Event::Start => {
                self.start = Some(now);
                self.core.handle(0, Event::Start);
            }
            Event::Timer => {
                let t = self.since_start(now);
                match self.core.poll_deadline().filter(|&d| d <= t) {
                    None => self.seen_due = None,
                    // The second report of the same deadline: it fires.
                    Some(due) if self.seen_due == Some(due) => {
                        self.seen_due = None;
                        self.last = self.last.max(t);
                        self.core.handle(self.last, Event::Timer);
                    }
                    Some(due) => self.seen_due = Some(due),
                }
            }
            event => {
                if let Event::Message { from, msg } = &event {
                    self.measure(now, *from, msg.tag, false);
                }
                let t = self.core_now(now);
                self.core.handle(t, event);
            }
        }
    }

    fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<C::Payload>>> {
        let t = self.core_now(now);
        let tx = self.core.poll_transmit(t)?;
        self.measure(now, tx.to, tx.msg.tag, true);
        Some(tx)
    }

    /// The core's deadline in the engine's time. After a first
    /// [`Event::Timer`] for it, it stays due (in the past) until the
    /// second.
    fn poll_deadline(&self) -> Option<Tick> {
        let start = self.start?;
        self.core.poll_deadline().map(|d| start.saturating_add(d))
    }

    fn is_quiescent(&self) -> bool {
        self.core.is_quiescent()
    }

    fn answer_ahead(&self, kind: Collective, tag: Tag) -> Option<(Tick, Tag, C::Payload)> {
        self.core.answer_ahead(kind, tag)
    }

    /// True: the operation's time is the engine's, read at every step.
    fn uses_time(&self) -> bool {
        true
    }

    crate::protocol::forward_to_core!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ftco::{Ftco, FtcoPlan};
    use crate::protocol::Leave;
    use crate::topology::{Shape, TreeSpec};
    use crate::types::{Collective, LogP};

    fn plan() -> FtcoPlan {
        let logp = LogP::new(2, 1).unwrap();
        FtcoPlan::new(TreeSpec::interleaved(Shape::KAry(2)), 7, logp, None).unwrap()
    }

    /// The core's time counts from the operation's start on this rank; a
    /// due deadline fires on the second timer only, and an ACK taken in
    /// between (it reached the rank before the rank looked) is on time.
    #[test]
    fn a_deadline_fires_once_the_rank_has_looked() {
        let plan = plan();
        let kids = plan.tree().children(0).to_vec();
        let core = Ftco::new(&plan, 0, 0, 0, Some(5u8)).unwrap();
        let mut root = OpClock::new(core);
        let start = 1_000;
        root.handle(start, Event::Start);
        let sent: Vec<Rank> = std::iter::from_fn(|| root.poll_transmit(start).map(|t| t.to))
            .take(3)
            .collect();
        assert_eq!(sent, kids);
        // f_timeout(0, kid, 1) + 1 = 8 + 2 + 2 + 1 after the start.
        let due = root.poll_deadline().unwrap();
        assert_eq!(due, start + 13);
        root.handle(due + 50, Event::Timer);
        assert_eq!(root.core().timeouts(), 0, "the first timer only looks");
        let ack = Msg {
            op: 0,
            kind: Collective::Broadcast,
            root: 0,
            tag: Tag::Ack,
            payload: None,
        };
        for &from in &kids {
            root.handle(due + 60, Event::Message { from, msg: ack });
        }
        assert_eq!(root.poll_deadline(), None);
        assert_eq!(root.core().timeouts(), 0);
        assert_eq!(root.answer_delays(), &[73, 73]);
        assert_eq!(root.may_return(), Leave::Now);
    }

    /// With no answer, the second timer fires: the child is suspected at
    /// the engine's time, and DATA goes to its children.
    #[test]
    fn a_silent_child_is_suspected_at_the_second_timer() {
        let plan = plan();
        let kids = plan.tree().children(0).to_vec();
        let grandkids = plan.tree().children(kids[0]).to_vec();
        let core = Ftco::new(&plan, 0, 0, 0, Some(5u8)).unwrap();
        let mut root = OpClock::new(core);
        root.handle(500, Event::Start);
        while root.poll_transmit(500).is_some() {}
        let due = root.poll_deadline().unwrap();
        // Not due yet: ignored.
        root.handle(due - 1, Event::Timer);
        root.handle(due, Event::Timer);
        assert_eq!(
            root.poll_deadline(),
            Some(due),
            "due until the second timer"
        );
        root.handle(due + 7, Event::Timer);
        assert_eq!(root.core().timeouts(), 2);
        let suspected: Vec<(Rank, Tick)> = root.core().suspicions().collect();
        assert_eq!(suspected, vec![(kids[0], 20), (kids[1], 20)]);
        assert_eq!(root.engine_time(20), due + 7);
        let next = root.poll_transmit(due + 8).map(|t| (t.to, t.msg.tag));
        assert_eq!(next, Some((grandkids[0], Tag::Tree)));
    }
}
