//! The gossip time counter carried in messages: corrected gossip on an
//! engine without a global LogP clock (Hoefler et al., IPDPS 2017, Section
//! III-A: "messages carry the virtual time counter, so all stop at T";
//! Algorithm 3's `time` variable).
//!
//! In the simulator every node shares one virtual clock and a gossip core
//! reads it from `now`. Threads have no such clock: a rank's wall-clock time
//! means nothing to the model when ranks share cores (a descheduled rank
//! loses a whole scheduling round, in which the model would have had it
//! send hundreds of messages). So on threads T counts **the model's time as
//! each rank's own send slots advance it**, as the paper's nodes do:
//! [`SlotClock`] wraps a gossip core and keeps its rank's logical time
//! `vt`, which
//!
//! * starts at 0 (the root's start);
//! * advances by O with every send, whose message carries the time it was
//!   sent at ([`Stamped`]);
//! * hands a message to the core at its logical arrival, its stamp plus
//!   2O + L (the send's overhead, the wire, the receive's overhead), or as
//!   soon as it polls if that time has passed: a message that comes early
//!   in real time (its sender ran ahead while this rank was descheduled)
//!   waits until this rank's own sends have brought its clock there, as it
//!   would in the model, instead of cutting its gossip short, and of
//!   several messages handed before a poll the earliest goes first;
//! * jumps to the next event (a message's arrival, or the core's deadline)
//!   when the core has nothing to send before it (the wait for messages in
//!   flight between T and T + L + O costs no real time: the messages it
//!   waits for are in flight in logical time).
//!
//! A core may also wait for something that may never come (FCG's c-node
//! waits for word of f + 1 g-nodes, and after a timeout sends SOS): such a
//! deadline is a timeout, not a wait for messages in flight, and the core
//! says so ([`SlotTimed::timeout_pending`]). Jumping to it would fire every
//! timeout at once; with [`SlotClock::with_real_timeouts`] the wrapper waits
//! it out in the engine's time instead, then hands the core its timer.
//!
//! The wrapped core sees only `vt`, so a g-node sends gossip in exactly the
//! slots `vt < T` and stops; OCG's correction time C is C/O sends. What the
//! logical clock does not reproduce: which message reaches a rank first is
//! up to the scheduler (a message that comes late in real time is taken
//! late in logical time, and a rank adopts the first message it takes),
//! and a message taken while the rank is busy costs it no overhead. So the
//! same seed gives the same peers on threads as in the simulator, but not
//! always the same g-node set; the guarantees that do not depend on timing
//! (CCG's and FCG's) hold as they are, and OCG's and GOS's reach is the
//! model's in distribution only (`docs/algorithms.md` has the numbers).

use crate::protocol::{Event, Msg, Protocol, Transmit};
use crate::types::{LogP, Rank, Tick};

/// A payload with the logical time its message was sent at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamped<P> {
    /// The sender's logical time when it sent.
    pub sent: Tick,
    /// The wrapped core's payload.
    pub value: P,
}

/// What a core run by a [`SlotClock`] tells it about its deadline.
pub trait SlotTimed: Protocol {
    /// True if the deadline [`Protocol::poll_deadline`] gives now is a
    /// timeout (a wait for something that may never come), false if it is
    /// a wait for messages in flight, which logical time skips. Default:
    /// false.
    fn timeout_pending(&self) -> bool {
        false
    }
}

/// A gossip core driven by its rank's logical time instead of the engine's
/// `now` (see the module docs). Sans-IO like the core it wraps: it asks
/// the engine for a timer only for a timeout, and only with
/// [`SlotClock::with_real_timeouts`].
#[derive(Debug)]
pub struct SlotClock<C: Protocol> {
    core: C,
    logp: LogP,
    vt: Tick,
    /// Messages taken before their logical arrival, latest first.
    early: Vec<(Tick, Rank, Msg<C::Payload>)>,
    /// How long a timeout lasts in the engine's time, if timeouts are
    /// waited out there.
    real_timeout: Option<Tick>,
    /// The engine's time when the pending timeout began.
    armed: Option<Tick>,
    /// The engine's time of the last call.
    engine_now: Tick,
}

impl<C: SlotTimed> SlotClock<C> {
    /// `core`, whose model is `logp`, at logical time 0. Timeouts are
    /// logical too: the clock jumps to them when nothing comes first.
    pub fn new(core: C, logp: LogP) -> Self {
        SlotClock {
            core,
            logp,
            vt: 0,
            early: Vec::new(),
            real_timeout: None,
            armed: None,
            engine_now: 0,
        }
    }

    /// Waits out the core's timeouts for `timeout` ticks of the engine's
    /// time (nanoseconds on threads) each, instead of jumping to them.
    pub fn with_real_timeouts(mut self, timeout: Tick) -> Self {
        self.real_timeout = Some(timeout);
        self
    }

    /// The wrapped core.
    pub fn core(&self) -> &C {
        &self.core
    }

    /// This rank's logical time.
    pub fn now(&self) -> Tick {
        self.vt
    }

    fn arrival(&self, sent: Tick) -> Tick {
        sent.saturating_add(2 * self.logp.overhead + self.logp.latency)
    }

    /// The earliest early message's arrival.
    fn next_arrival(&self) -> Option<Tick> {
        self.early.last().map(|&(at, _, _)| at)
    }

    /// True while the core waits out a timeout in the engine's time.
    fn real_wait(&self) -> bool {
        self.real_timeout.is_some() && self.core.timeout_pending()
    }

    /// Notes when a timeout began, in the engine's time.
    fn arm(&mut self) {
        let pending = self.real_wait() && self.core.poll_deadline().is_some();
        self.armed = match (pending, self.armed) {
            (false, _) => None,
            (true, None) => Some(self.engine_now),
            (true, armed) => armed,
        };
    }

    /// Hands the core every early message whose arrival has come.
    fn deliver_due(&mut self) {
        while self.next_arrival().is_some_and(|at| at <= self.vt) {
            let (_, from, msg) = self.early.pop().expect("checked");
            self.core.handle(self.vt, Event::Message { from, msg });
        }
    }

    /// Moves the clock to the next event, a message's arrival or the core's
    /// deadline (unless that is a timeout waited out in the engine's time),
    /// and hands it over. False if there is none.
    fn skip_to_next_event(&mut self) -> bool {
        let deadline = if self.real_wait() {
            None
        } else {
            self.core.poll_deadline().filter(|&at| at > self.vt)
        };
        let next = match (deadline, self.next_arrival()) {
            (None, None) => return false,
            (Some(d), None) => d,
            (None, Some(a)) => a,
            (Some(d), Some(a)) => d.min(a),
        };
        self.vt = self.vt.max(next);
        if deadline.is_some_and(|d| d <= self.vt) {
            self.core.handle(self.vt, Event::Timer);
        }
        self.deliver_due();
        true
    }

    /// The next send, stamped, skipping ahead through events while the
    /// core has none.
    fn next_send(&mut self) -> Option<Transmit<Msg<Stamped<C::Payload>>>> {
        self.deliver_due();
        loop {
            if let Some(tx) = self.core.poll_transmit(self.vt) {
                let sent = self.vt;
                self.vt = self.vt.saturating_add(self.logp.overhead.max(1));
                return Some(Transmit {
                    to: tx.to,
                    msg: tx.msg.map(|value| Stamped { sent, value }),
                });
            }
            // Nothing now: on to the next event, if any (a deadline is
            // later than `vt`, by the contract, so this ends).
            if !self.skip_to_next_event() {
                return None;
            }
        }
    }
}

impl<C: SlotTimed> Protocol for SlotClock<C> {
    type Payload = Stamped<C::Payload>;
    type Output = C::Output;

    fn handle(&mut self, now: Tick, event: Event<Msg<Self::Payload>>) {
        self.engine_now = self.engine_now.max(now);
        match event {
            Event::Start => self.core.handle(self.vt, Event::Start),
            Event::PeerFailed(r) => self.core.handle(self.vt, Event::PeerFailed(r)),
            Event::Timer => {
                // Only a timeout waited out in the engine's time comes here:
                // logical deadlines are skipped to in `poll_transmit`.
                let due = self.poll_deadline();
                if due.is_some_and(|due| self.engine_now >= due) {
                    if let Some(at) = self.core.poll_deadline() {
                        self.vt = self.vt.max(at);
                        self.armed = None;
                        self.core.handle(self.vt, Event::Timer);
                    }
                }
            }
            Event::Message { from, msg } => {
                let at = self.arrival(msg.payload.sent);
                let msg = msg.map(|p| p.value);
                // Latest first, so the earliest pops; equal arrivals in the
                // order taken.
                let i = self.early.partition_point(|&(a, _, _)| a > at);
                self.early.insert(i, (at, from, msg));
                // Only what is due: a core with nothing to send before the
                // message's arrival takes it at the next poll, so that of
                // several messages handed in a row (those that came while
                // this rank was in an earlier call) it takes the earliest
                // first, as in the model.
                self.deliver_due();
            }
        }
        self.arm();
    }

    fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<Self::Payload>>> {
        self.engine_now = self.engine_now.max(now);
        let sent = self.next_send();
        self.arm();
        sent
    }

    /// Only a timeout waited out in the engine's time.
    fn poll_deadline(&self) -> Option<Tick> {
        let timeout = self.real_timeout?;
        self.armed.map(|at| at.saturating_add(timeout))
    }

    fn is_quiescent(&self) -> bool {
        self.early.is_empty() && self.core.is_quiescent() && self.core.poll_deadline().is_none()
    }

    /// True with timeouts in the engine's time: the wrapper needs the
    /// engine's clock to know when one is over.
    fn uses_time(&self) -> bool {
        self.real_timeout.is_some()
    }

    crate::protocol::forward_to_core!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::gossip::{gossip_ticks, Gossip, GossipCorrection, GossipPlan};
    use crate::protocol::random::RandomStream;
    use crate::protocol::Tag;
    use crate::types::Collective;

    const PAPER: LogP = LogP::PAPER;

    /// The root's clock: gossip stamped 0, 1, ..., T - 1 (one slot per
    /// send, o = 1), none at or after T, then OCG's C/o correction messages
    /// from T + L + o on, with no real waiting in between.
    #[test]
    fn the_root_gossips_in_its_slots_before_t_then_corrects() {
        let (stop, duration) = (9, 5);
        let ocg = GossipCorrection::Opportunistic { duration };
        let plan = GossipPlan::new(32, PAPER, stop, ocg).unwrap();
        let rng = RandomStream::for_rank(1, 0, 0);
        let core = Gossip::new(&plan, 0, 0, 0, Some(7u8), rng).unwrap();
        let mut root = SlotClock::new(core, PAPER);
        root.handle(u64::MAX / 2, Event::Start);
        let mut sent = Vec::new();
        while let Some(tx) = root.poll_transmit(0) {
            sent.push((tx.msg.payload.sent, tx.msg.tag));
        }
        let gossip = gossip_ticks(&sent);
        assert_eq!(gossip, (0..stop).collect::<Vec<_>>());
        let start = plan.correction_start();
        let corrections: Vec<Tick> = sent[gossip.len()..].iter().map(|&(t, _)| t).collect();
        assert_eq!(corrections, (start..start + duration).collect::<Vec<_>>());
        assert!(root.is_finished() && root.is_quiescent());
        assert_eq!(root.poll_deadline(), None);
    }

    /// A message moves a rank's clock to its logical arrival (sent + 2o +
    /// L), at the rank's next poll, never back: a rank colored by a message
    /// sent at 2 gossips from 2 + 2 + 2 = 6 until T; of two messages handed
    /// before a poll, the earlier arrival colors it.
    #[test]
    fn a_message_moves_the_clock_to_its_arrival() {
        let plan = GossipPlan::new(32, PAPER, 9, GossipCorrection::None).unwrap();
        let rng = RandomStream::for_rank(1, 5, 0);
        let core = Gossip::new(&plan, 0, 5, 0, None::<u8>, rng).unwrap();
        let mut node = SlotClock::new(core, PAPER);
        node.handle(0, Event::Start);
        let msg = |sent| Msg {
            op: 0,
            kind: Collective::Broadcast,
            root: 0,
            tag: Tag::Gossip,
            payload: Stamped { sent, value: 3u8 },
        };
        for (from, sent) in [(0, 4), (2, 2)] {
            let msg = msg(sent);
            node.handle(0, Event::Message { from, msg });
        }
        assert_eq!(node.now(), 0, "taken at the next poll");
        assert_eq!(node.take_output(), None);
        let first = node.poll_transmit(0).unwrap();
        assert_eq!(first.msg.payload.sent, 6);
        assert_eq!(node.take_output(), Some(3));
        // An older message later does not turn the clock back.
        node.handle(
            0,
            Event::Message {
                from: 1,
                msg: msg(0),
            },
        );
        assert_eq!(node.now(), 7);
        let stamps: Vec<Tick> =
            std::iter::from_fn(|| node.poll_transmit(0).map(|tx| tx.msg.payload.sent)).collect();
        assert_eq!(stamps, vec![7, 8]);
        assert!(node.is_finished());
    }

    /// A message taken early in real time waits for its logical arrival: a
    /// g-node still gossiping (T = 12) that takes a correction message sent
    /// at 9 (arriving at 13) first sends its gossip in slots 6 to 11, and
    /// only then sees the message.
    #[test]
    fn an_early_message_waits_for_its_logical_arrival() {
        let plan = GossipPlan::new(32, PAPER, 12, GossipCorrection::Checked).unwrap();
        let rng = RandomStream::for_rank(1, 5, 0);
        let core = Gossip::new(&plan, 0, 5, 0, None::<u8>, rng).unwrap();
        let mut node = SlotClock::new(core, PAPER);
        node.handle(0, Event::Start);
        let msg = |sent, tag| Msg {
            op: 0,
            kind: Collective::Broadcast,
            root: 0,
            tag,
            payload: Stamped { sent, value: 3u8 },
        };
        node.handle(
            0,
            Event::Message {
                from: 0,
                msg: msg(2, Tag::Gossip),
            },
        );
        let first = node.poll_transmit(0).unwrap();
        assert_eq!((first.msg.payload.sent, first.msg.tag), (6, Tag::Gossip));
        node.handle(
            0,
            Event::Message {
                from: 6,
                msg: msg(9, Tag::Leftward),
            },
        );
        assert_eq!(node.now(), 7, "the correction message waits");
        assert!(!node.is_quiescent());
        let gossip: Vec<Tick> = std::iter::from_fn(|| node.poll_transmit(0))
            .take_while(|tx| tx.msg.tag == Tag::Gossip)
            .map(|tx| tx.msg.payload.sent)
            .collect();
        assert_eq!(gossip, (7..12).collect::<Vec<_>>());
        assert!(node.core().is_g_node());
    }
}
