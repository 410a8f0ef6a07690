//! The LogP engine (Corrected Trees, Section 2.2), driving any [`Protocol`].
//!
//! * A send started at `t` occupies its sender until `t + o`, and the message
//!   arrives at `t + o + L`.
//! * Each rank receives one message at a time: a message arriving at `a`
//!   is handed to the core at `max(a, previous receive end) + o`, in arrival
//!   order. Sending and receiving overlap (the paper's model; flogsim's
//!   `parallelism = 2`). The gap g is ignored.
//! * Within one tick, every receive that ends at `t` is handed over before
//!   any rank decides its send at `t`.
//! * Fail-stop: a rank with death time `d` handles nothing at or after `d`,
//!   and a message whose receive would end at or after `d` vanishes; its
//!   sender still paid `o`, and cannot tell. A rank may also die right after
//!   its n-th send (a send budget): it dies one tick after that send starts.
//! * Failure detector (optional, [`Engine::set_detector`]): `delay` ticks
//!   after a rank dies, every live rank gets [`Event::PeerFailed`] for it,
//!   as the thread runtime's liveness registry tells everyone.
//!
//! All messages take the same time `o + L` to arrive, so the arrival order at
//! a receiver is the order of send starts: the receive end can be fixed when
//! the send starts, and a message needs a single event. Every tick then wakes
//! the ranks that received, got their send port back, or have a timer due,
//! in rank order.

use crate::protocol::{Event, Msg, Protocol, Tag, Transmit};
use crate::sim::queue::{BucketQueue, WakeSets};
use crate::types::{LogP, MessageSize, Rank, Tick};

/// Death time of a rank that never fails.
pub const NEVER: Tick = Tick::MAX;

#[derive(Clone, Copy, Debug)]
struct Delivery<M> {
    to: Rank,
    from: Rank,
    msg: M,
}

/// What the engine saw in one run.
#[derive(Clone, Debug)]
pub struct Trace<O> {
    /// Each rank's output and when it came, if it did.
    pub outputs: Vec<Option<(Tick, O)>>,
    /// Outputs produced a second time by the same rank (must stay 0).
    pub duplicates: u64,
    /// Messages sent, by [`Tag`].
    pub sends_by_tag: [u64; Tag::COUNT],
    /// Messages sent by each rank.
    pub sends_by_rank: Vec<u32>,
    /// When all activity ended: the last send end, receive end, or arrival
    /// of a message at a dead rank.
    pub quiescence: Tick,
    /// Live cores that were not quiescent when the queue ran dry (must stay 0).
    pub unquiescent: u32,
    /// When each rank died ([`NEVER`]: it did not), given or by its budget.
    pub death: Vec<Tick>,
}

/// No send budget: the rank may send forever.
pub const UNLIMITED: u32 = u32::MAX;

/// The engine's per-rank state: 32 bytes, two ranks to a cache line (at
/// 64K ranks the slots, like the cores, are touched all over; send budgets,
/// rarely used, live apart in `Engine::sends_left`).
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// When the rank fails (`NEVER`: it does not).
    death: Tick,
    /// When its send port comes free.
    send_free: Tick,
    /// When its receive port comes free.
    recv_free: Tick,
    /// The timer it has armed (`NEVER`: none).
    timer_at: Tick,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 32);

/// A reusable LogP engine. Its buffers keep their capacity between runs.
#[derive(Debug)]
pub struct Engine<P> {
    logp: LogP,
    deliveries: BucketQueue<Delivery<Msg<P>>>,
    /// Ranks to drive at a tick: they received, their send port comes free,
    /// or a timer is due.
    wakes: WakeSets,
    slots: Vec<Slot>,
    /// Sends each rank makes before it dies ([`UNLIMITED`]: no limit);
    /// empty when the run has no budgets.
    sends_left: Vec<u32>,
    /// Failed ranks to report, by the tick of the report.
    notices: BucketQueue<Rank>,
    detector: Option<Tick>,
    /// LogGP's (bytes - 1) x G: what each send costs beyond o.
    extra: Tick,
    /// Messages of sizes of their own (LogGP); in place of `extra` when set.
    sized: Option<SizeOf<P>>,
}

/// A payload's bytes, and LogGP's gap per byte G.
type SizeOf<P> = (fn(&P) -> u64, Tick);

/// LogGP's (bytes - 1) G of a message of its own size.
fn sized_extra<P>((bytes, g): SizeOf<P>, payload: &P) -> Tick {
    bytes(payload).saturating_sub(1).saturating_mul(g)
}

impl<P: Clone> Engine<P> {
    /// An engine for the model `logp`.
    pub fn new(logp: LogP) -> Self {
        Engine {
            logp,
            deliveries: BucketQueue::default(),
            wakes: WakeSets::default(),
            slots: Vec::new(),
            sends_left: Vec::new(),
            notices: BucketQueue::default(),
            detector: None,
            extra: 0,
            sized: None,
        }
    }

    /// Every message of the runs to come has `size` (LogGP): a send
    /// occupies its process o + (bytes - 1) G. [`MessageSize::SMALL`] is
    /// plain LogP.
    pub fn set_message_size(&mut self, size: MessageSize) {
        self.extra = size.extra();
        self.sized = None;
    }

    /// Every message of the runs to come has the size `bytes` gives its
    /// payload (LogGP, a gap of `gap_per_byte` G per byte): a send of `b`
    /// bytes occupies its process o + (b - 1) G. For cores whose messages
    /// differ in size (an allreduce by blocks: its blocks, and *none*).
    pub fn set_message_bytes(&mut self, bytes: fn(&P) -> u64, gap_per_byte: Tick) {
        self.extra = 0;
        self.sized = Some((bytes, gap_per_byte));
    }

    /// Turns the failure detector on (`Some(delay)`) or off. With it, every
    /// live rank gets [`Event::PeerFailed`] `delay` ticks after a rank dies.
    pub fn set_detector(&mut self, delay: Option<Tick>) {
        self.detector = delay;
    }

    /// The model.
    pub fn logp(&self) -> LogP {
        self.logp
    }

    /// Runs one operation to the end and returns what happened: every core
    /// gets [`Event::Start`] at time 0 unless it is dead from the start, and
    /// the run ends when no event is left. `death[r]` is when rank `r` fails
    /// ([`NEVER`] for live ranks).
    pub fn run<C>(&mut self, cores: &mut [C], death: &[Tick]) -> Trace<C::Output>
    where
        C: Protocol<Payload = P>,
    {
        let mut trace = Trace::default();
        self.run_into(cores, death, &mut trace);
        trace
    }

    /// As [`Engine::run`], but reuses the buffers of `trace`.
    pub fn run_into<C>(&mut self, cores: &mut [C], death: &[Tick], trace: &mut Trace<C::Output>)
    where
        C: Protocol<Payload = P>,
    {
        self.run_budgeted(cores, death, &[], trace)
    }

    /// As [`Engine::run_into`], and rank `r` also dies right after its
    /// `budget[r]`-th send ([`UNLIMITED`]: never; an empty `budget`: no rank).
    /// A budget of 0 is death before the operation.
    pub fn run_budgeted<C>(
        &mut self,
        cores: &mut [C],
        death: &[Tick],
        budget: &[u32],
        trace: &mut Trace<C::Output>,
    ) where
        C: Protocol<Payload = P>,
    {
        let n = cores.len();
        assert_eq!(death.len(), n, "one death time per core");
        assert!(
            budget.is_empty() || budget.len() == n,
            "one budget per core"
        );
        self.sends_left.clear();
        self.sends_left.extend_from_slice(budget);
        self.slots.clear();
        self.slots
            .extend(death.iter().enumerate().map(|(r, &d)| Slot {
                death: if budget.get(r) == Some(&0) { 0 } else { d },
                send_free: 0,
                recv_free: 0,
                timer_at: NEVER,
            }));
        self.notices.clear();
        self.deliveries.clear();
        self.wakes.reset(n);
        trace.outputs.clear();
        trace.outputs.resize_with(n, || None);
        trace.sends_by_rank.clear();
        trace.sends_by_rank.resize(n, 0);
        trace.duplicates = 0;
        trace.sends_by_tag = [0; Tag::COUNT];
        trace.quiescence = 0;
        trace.unquiescent = 0;

        let mut at_start = Vec::new();
        for r in 0..n {
            let d = self.slots[r].death;
            if d != NEVER {
                self.schedule_notice(r as Rank, d, &mut at_start);
            }
        }
        // Start, then the failures reported at tick 0, then the first sends.
        for r in 0..n {
            self.start(cores, r, trace);
        }
        self.notify(cores, &at_start, 0, trace);
        // Messages of sizes of their own take another send path, chosen
        // once per run: inline, their cost slowed every other run.
        if self.sized.is_some() {
            self.event_loop::<C, true>(cores, trace);
        } else {
            self.event_loop::<C, false>(cores, trace);
        }
        trace.death.clear();
        trace.death.extend(self.slots.iter().map(|s| s.death));
        trace.unquiescent = (0..n)
            .filter(|&r| self.slots[r].death == NEVER && !cores[r].is_quiescent())
            .count() as u32;
    }

    /// Hands rank `r` its [`Event::Start`] unless it is dead from the start.
    #[inline]
    fn start<C>(&self, cores: &mut [C], r: usize, trace: &mut Trace<C::Output>)
    where
        C: Protocol<Payload = P>,
    {
        if self.slots[r].death > 0 {
            cores[r].handle(0, Event::Start);
            Self::collect(&mut cores[r], r, 0, trace);
        }
    }

    /// Plans the detector's report of `rank`'s death at `died` (reports due
    /// at tick 0 go to `at_start`).
    fn schedule_notice(&mut self, rank: Rank, died: Tick, at_start: &mut Vec<Rank>) {
        if let Some(delay) = self.detector {
            match died.saturating_add(delay) {
                0 => at_start.push(rank),
                at => {
                    self.notices.push(at, rank);
                    // Any wake makes the loop visit the tick; a dead rank's
                    // own wake does nothing else.
                    self.wakes.set(at, rank);
                }
            }
        }
    }

    /// Tells every live rank that each of `failed` has failed.
    fn notify<C>(
        &mut self,
        cores: &mut [C],
        failed: &[Rank],
        now: Tick,
        trace: &mut Trace<C::Output>,
    ) where
        C: Protocol<Payload = P>,
    {
        for &x in failed {
            for (r, core) in cores.iter_mut().enumerate() {
                if self.slots[r].death > now {
                    core.handle(now, Event::PeerFailed(x));
                    Self::collect(core, r, now, trace);
                    self.wakes.set(now, r as Rank);
                }
            }
        }
    }

    /// The first sends, then every tick with an event until none is left.
    /// `SIZED`: messages have sizes of their own ([`Engine::set_message_bytes`]).
    fn event_loop<C, const SIZED: bool>(&mut self, cores: &mut [C], trace: &mut Trace<C::Output>)
    where
        C: Protocol<Payload = P>,
    {
        let n = cores.len();
        for r in 0..n {
            self.drive::<C, SIZED>(cores, r as Rank, 0, trace);
        }
        let mut now = 0;
        while let Some(t) = self.wakes.next_after(now) {
            now = t;
            let events = self.deliveries.take(now);
            for Delivery { to, from, msg } in &events {
                let (to, from) = (*to, *from);
                if self.slots[to as usize].death > now {
                    let core = &mut cores[to as usize];
                    let msg = msg.clone();
                    core.handle(now, Event::Message { from, msg });
                    Self::collect(core, to as usize, now, trace);
                }
            }
            self.deliveries.recycle(now, events);
            let failed = self.notices.take(now);
            self.notify(cores, &failed, now, trace);
            self.notices.recycle(now, failed);
            // Every receive ending at `now` is in before any rank decides.
            let mut wakes = self.wakes.take(now);
            WakeSets::drain(&mut wakes, |r| {
                let slot = &mut self.slots[r as usize];
                if slot.timer_at == now && slot.death > now {
                    slot.timer_at = NEVER;
                    cores[r as usize].handle(now, Event::Timer);
                    Self::collect(&mut cores[r as usize], r as usize, now, trace);
                }
                self.drive::<C, SIZED>(cores, r, now, trace);
            });
            self.wakes.recycle(now, wakes);
        }
    }

    #[inline]
    fn collect<C: Protocol>(core: &mut C, r: usize, now: Tick, trace: &mut Trace<C::Output>) {
        if let Some(out) = core.take_output() {
            match trace.outputs[r] {
                Some(_) => trace.duplicates += 1,
                None => trace.outputs[r] = Some((now, out)),
            }
        }
    }

    /// Lets rank `r` start a send if its send port is free, and re-arms its timer.
    #[inline]
    fn drive<C, const SIZED: bool>(
        &mut self,
        cores: &mut [C],
        r: Rank,
        now: Tick,
        trace: &mut Trace<C::Output>,
    ) where
        C: Protocol<Payload = P>,
    {
        let ri = r as usize;
        let slot = self.slots[ri];
        if slot.death <= now {
            return;
        }
        // A send occupies its process o + (bytes - 1) G (LogGP; G = 0: LogP),
        // a receive o.
        let (o, l) = (self.logp.overhead, self.logp.latency);
        let send = o + self.extra;
        let core = &mut cores[ri];
        if slot.send_free <= now {
            if let Some(Transmit { to, msg }) = core.poll_transmit(now) {
                let send = match self.sized {
                    Some(sized) if SIZED => o + sized_extra(sized, &msg.payload),
                    _ => send,
                };
                trace.sends_by_rank[ri] += 1;
                trace.sends_by_tag[msg.tag as usize] += 1;
                self.slots[ri].send_free = now + send;
                self.wakes.set(now + send, r);
                if let Some(left) = self.sends_left.get_mut(ri).filter(|l| **l != UNLIMITED) {
                    *left -= 1;
                    if *left == 0 {
                        // The message is out; the rank dies right after.
                        self.slots[ri].death = now + 1;
                        self.schedule_notice(r, now + 1, &mut Vec::new());
                    }
                }
                let arrival = now + send + l;
                let dest = &mut self.slots[to as usize];
                let done = arrival.max(dest.recv_free) + o;
                let end = if dest.death > done {
                    dest.recv_free = done;
                    self.deliveries.push(done, Delivery { to, from: r, msg });
                    self.wakes.set(done, to);
                    done
                } else {
                    arrival
                };
                trace.quiescence = trace.quiescence.max(end);
            }
        }
        // A core may deliver as it sends (a reduce's part is done once its
        // message to the parent is out).
        Self::collect(core, ri, now, trace);
        // A deadline already due means the core has a send waiting for the
        // port, and the wake-up when the port comes free drives it again.
        if let Some(at) = core.poll_deadline() {
            let slot = &mut self.slots[ri];
            if at > now && at != slot.timer_at {
                slot.timer_at = at;
                self.wakes.set(at, r);
            }
        }
    }
}

impl<O> Default for Trace<O> {
    fn default() -> Self {
        Trace {
            outputs: Vec::new(),
            duplicates: 0,
            sends_by_tag: [0; Tag::COUNT],
            sends_by_rank: Vec::new(),
            quiescence: 0,
            unquiescent: 0,
            death: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Collective;

    /// A deadline a million ticks beyond a million ticks.
    const FAR: Tick = 1_000_000_000_000;

    /// Rank 0 sleeps until `FAR`, then sends to rank 1; every rank notes
    /// the failures it is told of.
    #[derive(Default)]
    struct Sleeper {
        me: Rank,
        deadline: Option<Tick>,
        send: Option<Rank>,
        output: Option<Tick>,
        told: Vec<(Tick, Rank)>,
    }

    impl Protocol for Sleeper {
        type Payload = Tick;
        type Output = Tick;

        fn handle(&mut self, now: Tick, event: Event<Msg<Tick>>) {
            match event {
                Event::Start if self.me == 0 => self.deadline = Some(FAR),
                Event::Start => {}
                Event::Timer => {
                    assert_eq!(self.deadline.take(), Some(now), "the timer fires on time");
                    self.output = Some(now);
                    self.send = Some(1);
                }
                Event::Message { from, msg } => {
                    assert_eq!((from, msg.payload), (0, FAR));
                    self.output = Some(msg.payload);
                }
                Event::PeerFailed(r) => self.told.push((now, r)),
            }
        }

        fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<Tick>>> {
            let to = self.send.take()?;
            let msg = Msg {
                op: 0,
                kind: Collective::Broadcast,
                root: 0,
                tag: Tag::Tree,
                payload: now,
            };
            Some(Transmit { to, msg })
        }

        fn poll_deadline(&self) -> Option<Tick> {
            self.deadline
        }

        fn take_output(&mut self) -> Option<Tick> {
            self.output.take()
        }

        fn header(&self) -> crate::protocol::Header {
            crate::protocol::Header {
                op: 0,
                kind: Collective::Broadcast,
                root: Some(0),
            }
        }

        fn is_finished(&self) -> bool {
            self.deadline.is_none() && self.send.is_none()
        }

        fn is_quiescent(&self) -> bool {
            self.deadline.is_none() && self.send.is_none()
        }
    }

    /// A regression: a far deadline (and a slow detector's report) cost
    /// the engine's queues memory and time in proportion to virtual time.
    #[test]
    fn a_far_deadline_fires_on_time_with_bounded_memory() {
        let logp = LogP::PAPER;
        let mut engine = Engine::new(logp);
        engine.set_detector(Some(FAR));
        for _ in 0..2 {
            let mut cores: Vec<Sleeper> = (0..3)
                .map(|me| Sleeper {
                    me,
                    ..Sleeper::default()
                })
                .collect();
            let trace = engine.run(&mut cores, &[NEVER, NEVER, 7]);
            let received = FAR + 2 * logp.overhead + logp.latency;
            assert_eq!(trace.outputs[0], Some((FAR, FAR)));
            assert_eq!(trace.outputs[1], Some((received, FAR)));
            assert_eq!(trace.outputs[2], None);
            assert_eq!(trace.quiescence, received);
            assert_eq!(trace.unquiescent, 0);
            assert_eq!(cores[0].told, vec![(FAR + 7, 2)]);
            assert_eq!(cores[1].told, vec![(FAR + 7, 2)]);
            for (name, ticks) in [
                ("deliveries", engine.deliveries.allocated_ticks()),
                ("notices", engine.notices.allocated_ticks()),
                ("wakes", engine.wakes.allocated_ticks()),
            ] {
                assert!(ticks <= 8, "{name} hold storage for {ticks} ticks");
            }
        }
    }
}
