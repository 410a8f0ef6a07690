//! Events in, sends and deadlines out (in the spirit of quinn-proto's
//! deterministic tests).
//!
//! A [`Script`] wraps one [`Protocol`] core and plays the engine's part by
//! hand: the test says when the operation starts, which message arrives
//! from whom, which peer is reported failed and when a timer fires, and
//! reads back what the core sends, which deadline it asks for and what it
//! delivers. Every call takes the `now` an engine would hand the core, and
//! the script checks the parts of the contract an engine relies on:
//!
//! * time never runs backwards: each call's `now` is at least the last one;
//! * [`Event::Start`] comes once, before any other event;
//! * a timer fires only when the core's deadline is due;
//! * the core gives its output at most once;
//! * at a fixed `now` a core sends finitely many messages, and once it has
//!   none left its deadline, if any, lies after `now`.
//!
//! It does not model time passing on its own, message latency or send
//! costs: sends come out in the order the core chooses, all at the `now`
//! the test gives. What arrives in between is up to the test.
//!
//! ```
//! use corrected::protocol::bcast::{Bcast, BcastPlan, Correction};
//! use corrected::protocol::script::Script;
//! use corrected::protocol::{Msg, Protocol, Tag};
//! use corrected::topology::{Shape, Tree, TreeSpec};
//! use corrected::types::{Collective, LogP};
//!
//! // Rank 5 of 16 on a binomial tree, opportunistic correction d = 1.
//! let spec = TreeSpec::interleaved(Shape::Binomial);
//! let tree = Tree::build(spec, 16, LogP::PAPER).unwrap();
//! let plan = BcastPlan::new(tree, Correction::Opportunistic { distance: 1 }, 0);
//! let mut rank5 = Script::new(Bcast::<u8>::new(&plan, 0, 5, 0, None).unwrap());
//! rank5.start(0);
//! let tree_msg = Msg { op: 0, kind: Collective::Broadcast, root: 0, tag: Tag::Tree, payload: 7 };
//! rank5.deliver(4, 1, tree_msg);
//! assert_eq!(rank5.output(), Some(7));
//! let sent: Vec<_> = rank5.sends(4).iter().map(|t| (t.msg.tag, t.to)).collect();
//! // Its tree child 5 + 8, then one correction message each way, left first.
//! assert_eq!(sent, [(Tag::Tree, 13), (Tag::Leftward, 4), (Tag::Rightward, 6)]);
//! assert_eq!(rank5.deadline(), None);
//! assert!(rank5.core().is_quiescent());
//! ```

use crate::protocol::{Event, Msg, Protocol, Transmit};
use crate::types::{Rank, Tick};

/// Sends at one `now` beyond which a core is taken to send without end
/// (the contract asks for finitely many). No core of this crate comes
/// near: a correction sweep sends at most P - 1 messages.
const SEND_LIMIT: usize = 1 << 20;

/// One core driven by hand. See the [module docs](self).
#[derive(Debug)]
pub struct Script<C: Protocol> {
    core: C,
    /// The `now` of the last call (0 before any).
    now: Tick,
    started: bool,
    /// The output, once the core gave it and until [`Script::output`] takes it.
    output: Option<C::Output>,
    /// The core gave its output (taken or not).
    delivered: bool,
}

impl<C: Protocol> Script<C> {
    /// A script around `core`, before its [`Event::Start`].
    pub fn new(core: C) -> Self {
        Script {
            core,
            now: 0,
            started: false,
            output: None,
            delivered: false,
        }
    }

    /// Hands the core [`Event::Start`] at `now`. Panics if it was started before.
    pub fn start(&mut self, now: Tick) {
        assert!(!self.started, "Start is delivered once");
        self.advance(now, "start");
        self.started = true;
        self.handle(Event::Start);
    }

    /// Hands the core a message `msg` from `from` at `now`.
    pub fn deliver(&mut self, now: Tick, from: Rank, msg: Msg<C::Payload>) {
        self.advance(now, "deliver");
        self.handle(Event::Message { from, msg });
    }

    /// Tells the core at `now` that `rank` has failed ([`Event::PeerFailed`]).
    pub fn fail(&mut self, now: Tick, rank: Rank) {
        self.advance(now, "fail");
        self.handle(Event::PeerFailed(rank));
    }

    /// Fires the core's timer at `now` ([`Event::Timer`]). Panics unless the
    /// core has a deadline and it is due (at or before `now`).
    pub fn fire(&mut self, now: Tick) {
        self.advance(now, "fire");
        match self.core.poll_deadline() {
            Some(at) if at <= now => {}
            Some(at) => panic!("fire at {now}: the deadline {at} is not due"),
            None => panic!("fire at {now}: the core has no deadline"),
        }
        self.handle(Event::Timer);
    }

    /// Polls the core once at `now` for a send, as an engine does when the
    /// rank's send port is free.
    pub fn send(&mut self, now: Tick) -> Option<Transmit<Msg<C::Payload>>> {
        self.advance(now, "send");
        self.poll(now)
    }

    /// Every send the core has at `now`, polled one at a time until it has
    /// none. Panics if its deadline then is not after `now`, or if it does
    /// not run out of sends.
    pub fn sends(&mut self, now: Tick) -> Vec<Transmit<Msg<C::Payload>>> {
        self.advance(now, "sends");
        let mut out = Vec::new();
        while let Some(tx) = self.poll(now) {
            out.push(tx);
            assert!(
                out.len() < SEND_LIMIT,
                "sends at {now}: the core does not run out of sends"
            );
        }
        if let Some(at) = self.core.poll_deadline() {
            assert!(
                at > now,
                "sends at {now}: nothing left to send, yet the deadline {at} is due"
            );
        }
        out
    }

    /// The core's deadline ([`Protocol::poll_deadline`]).
    pub fn deadline(&self) -> Option<Tick> {
        self.core.poll_deadline()
    }

    /// The core's output, if it has given one that was not taken yet.
    pub fn output(&mut self) -> Option<C::Output> {
        self.output.take()
    }

    /// The `now` of the last call (0 before any).
    pub fn now(&self) -> Tick {
        self.now
    }

    /// The core, to ask it anything else ([`Protocol::awaiting`],
    /// [`Protocol::is_quiescent`], its own methods).
    pub fn core(&self) -> &C {
        &self.core
    }

    /// Checks and records the `now` of a call named `call`.
    fn advance(&mut self, now: Tick, call: &str) {
        assert!(
            now >= self.now,
            "{call} at {now}: time runs backwards (the last call was at {})",
            self.now
        );
        if call != "start" {
            assert!(self.started, "{call} at {now}: the core was not started");
        }
        self.now = now;
    }

    fn handle(&mut self, event: Event<Msg<C::Payload>>) {
        self.core.handle(self.now, event);
        self.collect();
    }

    fn poll(&mut self, now: Tick) -> Option<Transmit<Msg<C::Payload>>> {
        let tx = self.core.poll_transmit(now);
        self.collect();
        tx
    }

    /// Takes the core's output after every call, as an engine does.
    fn collect(&mut self) {
        if let Some(out) = self.core.take_output() {
            assert!(
                !self.delivered,
                "at {}: the core gave its output a second time",
                self.now
            );
            self.delivered = true;
            self.output = Some(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Tag;

    /// A toy core: on every message it echoes one reply to the sender, and
    /// it delivers the first payload it sees (twice if `stutter`). It wants
    /// a timer at `timer` until the timer fires.
    #[derive(Debug, Default)]
    struct Echo {
        pending: Vec<Rank>,
        seen: Option<u8>,
        out: Vec<u8>,
        stutter: bool,
        timer: Option<Tick>,
    }

    impl Protocol for Echo {
        type Payload = u8;
        type Output = u8;

        fn handle(&mut self, _now: Tick, event: Event<Msg<u8>>) {
            match event {
                Event::Message { from, msg } => {
                    self.pending.push(from);
                    if self.seen.is_none() || self.stutter {
                        self.seen = Some(msg.payload);
                        self.out.push(msg.payload);
                    }
                }
                Event::Timer => self.timer = None,
                Event::Start | Event::PeerFailed(_) => {}
            }
        }

        fn poll_transmit(&mut self, _now: Tick) -> Option<Transmit<Msg<u8>>> {
            let to = self.pending.pop()?;
            Some(Transmit {
                to,
                msg: msg(self.seen.unwrap_or(0)),
            })
        }

        fn poll_deadline(&self) -> Option<Tick> {
            self.timer
        }

        fn take_output(&mut self) -> Option<u8> {
            self.out.pop()
        }

        fn is_quiescent(&self) -> bool {
            self.pending.is_empty() && self.timer.is_none()
        }

        fn header(&self) -> crate::protocol::Header {
            crate::protocol::Header::broadcast(0, 0)
        }

        fn is_finished(&self) -> bool {
            false
        }
    }

    fn msg(payload: u8) -> Msg<u8> {
        Msg::broadcast(0, 0, Tag::Tree, payload)
    }

    /// An [`Echo`] that wants a timer at `at`.
    fn timed(at: Tick) -> Echo {
        Echo {
            timer: Some(at),
            ..Echo::default()
        }
    }

    #[test]
    fn events_in_sends_out() {
        let mut s = Script::new(timed(10));
        s.start(0);
        s.deliver(3, 1, msg(9));
        s.deliver(3, 2, msg(8));
        assert_eq!(s.output(), Some(9));
        assert_eq!(s.output(), None, "taken once");
        let to: Vec<Rank> = s.sends(4).iter().map(|t| t.to).collect();
        assert_eq!(to, [2, 1]);
        assert_eq!(s.send(5), None);
        assert_eq!(s.deadline(), Some(10));
        s.fire(12);
        assert_eq!((s.deadline(), s.now()), (None, 12));
        assert!(s.core().is_quiescent());
    }

    #[test]
    #[should_panic(expected = "time runs backwards")]
    fn time_never_runs_backwards() {
        let mut s = Script::new(Echo::default());
        s.start(5);
        s.fail(4, 1);
    }

    #[test]
    #[should_panic(expected = "not due")]
    fn a_timer_fires_only_when_due() {
        let mut s = Script::new(timed(10));
        s.start(0);
        s.fire(9);
    }

    #[test]
    #[should_panic(expected = "not started")]
    fn start_comes_first() {
        Script::new(Echo::default()).deliver(0, 1, msg(1));
    }

    #[test]
    #[should_panic(expected = "second time")]
    fn output_comes_once() {
        let mut s = Script::new(Echo {
            stutter: true,
            ..Echo::default()
        });
        s.start(0);
        s.deliver(1, 1, msg(1));
        s.deliver(2, 1, msg(2));
    }

    #[test]
    #[should_panic(expected = "deadline 3 is due")]
    fn a_deadline_lies_ahead_once_sends_are_out() {
        let mut s = Script::new(timed(3));
        s.start(0);
        s.sends(3);
    }
}
