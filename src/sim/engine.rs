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
//!   sender still paid `o`, and cannot tell.
//!
//! All messages take the same time `o + L` to arrive, so the arrival order at
//! a receiver is the order of send starts: the receive end can be fixed when
//! the send starts, and a message needs a single event.

use crate::protocol::{Event, Msg, Protocol, Tag, Transmit};
use crate::sim::queue::BucketQueue;
use crate::types::{LogP, Rank, Tick};

/// Death time of a rank that never fails.
pub const NEVER: Tick = Tick::MAX;

#[derive(Clone, Copy, Debug)]
enum Ev<M> {
    Deliver { to: Rank, from: Rank, msg: M },
    SendDone(Rank),
    Timer(Rank),
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
}

/// A reusable LogP engine. Its buffers keep their capacity between runs.
#[derive(Debug)]
pub struct Engine<P> {
    logp: LogP,
    queue: BucketQueue<Ev<Msg<P>>>,
    send_free: Vec<Tick>,
    recv_free: Vec<Tick>,
    timer_at: Vec<Tick>,
    touched_at: Vec<Tick>,
    touched: Vec<Rank>,
}

impl<P: Copy> Engine<P> {
    /// An engine for the model `logp`.
    pub fn new(logp: LogP) -> Self {
        Engine {
            logp,
            queue: BucketQueue::default(),
            send_free: Vec::new(),
            recv_free: Vec::new(),
            timer_at: Vec::new(),
            touched_at: Vec::new(),
            touched: Vec::new(),
        }
    }

    /// The model.
    pub fn logp(&self) -> LogP {
        self.logp
    }

    /// Runs one operation to the end: every core gets [`Event::Start`] at time
    /// 0 unless it is dead from the start, and the run ends when no event is
    /// left. `death[r]` is when rank `r` fails ([`NEVER`] for live ranks).
    pub fn run<C>(&mut self, cores: &mut [C], death: &[Tick]) -> Trace<C::Output>
    where
        C: Protocol<Payload = P>,
    {
        let n = cores.len();
        assert_eq!(death.len(), n, "one death time per core");
        for v in [&mut self.send_free, &mut self.recv_free] {
            v.clear();
            v.resize(n, 0);
        }
        for v in [&mut self.timer_at, &mut self.touched_at] {
            v.clear();
            v.resize(n, NEVER);
        }
        self.queue.clear();
        self.touched.clear();
        let mut trace = Trace {
            outputs: (0..n).map(|_| None).collect(),
            duplicates: 0,
            sends_by_tag: [0; Tag::COUNT],
            sends_by_rank: vec![0; n],
            quiescence: 0,
            unquiescent: 0,
        };

        for r in 0..n {
            if death[r] > 0 {
                cores[r].handle(0, Event::Start);
                Self::collect(&mut cores[r], r, 0, &mut trace);
                self.touch(r as Rank, 0);
            }
        }
        let mut now = 0;
        loop {
            let touched = std::mem::take(&mut self.touched);
            for &r in &touched {
                self.drive(cores, death, r, now, &mut trace);
            }
            self.touched = touched;
            self.touched.clear();

            let Some(t) = self.queue.next_after(now) else { break };
            now = t;
            let events = self.queue.take(now);
            for ev in &events {
                match *ev {
                    Ev::Deliver { to, from, msg } => {
                        if death[to as usize] > now {
                            let core = &mut cores[to as usize];
                            core.handle(now, Event::Message { from, msg });
                            Self::collect(core, to as usize, now, &mut trace);
                            self.touch(to, now);
                        }
                    }
                    Ev::SendDone(r) => self.touch(r, now),
                    Ev::Timer(r) => {
                        if self.timer_at[r as usize] == now && death[r as usize] > now {
                            cores[r as usize].handle(now, Event::Timer);
                            Self::collect(&mut cores[r as usize], r as usize, now, &mut trace);
                            self.touch(r, now);
                        }
                    }
                }
            }
            self.queue.recycle(now, events);
        }
        trace.unquiescent = (0..n).filter(|&r| death[r] == NEVER && !cores[r].is_quiescent()).count() as u32;
        trace
    }

    fn touch(&mut self, r: Rank, now: Tick) {
        if self.touched_at[r as usize] != now {
            self.touched_at[r as usize] = now;
            self.touched.push(r);
        }
    }

    fn collect<C: Protocol>(core: &mut C, r: usize, now: Tick, trace: &mut Trace<C::Output>) {
        if let Some(out) = core.take_output() {
            match trace.outputs[r] {
                Some(_) => trace.duplicates += 1,
                None => trace.outputs[r] = Some((now, out)),
            }
        }
    }

    /// Lets rank `r` start a send if its send port is free, and re-arms its timer.
    fn drive<C>(&mut self, cores: &mut [C], death: &[Tick], r: Rank, now: Tick, trace: &mut Trace<C::Output>)
    where
        C: Protocol<Payload = P>,
    {
        let ri = r as usize;
        if death[ri] <= now {
            return;
        }
        let (o, l) = (self.logp.overhead, self.logp.latency);
        if self.send_free[ri] <= now {
            if let Some(Transmit { to, msg }) = cores[ri].poll_transmit(now) {
                trace.sends_by_rank[ri] += 1;
                trace.sends_by_tag[msg.tag as usize] += 1;
                self.send_free[ri] = now + o;
                self.queue.push(now + o, Ev::SendDone(r));
                let arrival = now + o + l;
                let done = arrival.max(self.recv_free[to as usize]) + o;
                let end = if death[to as usize] > done {
                    self.recv_free[to as usize] = done;
                    self.queue.push(done, Ev::Deliver { to, from: r, msg });
                    done
                } else {
                    arrival
                };
                trace.quiescence = trace.quiescence.max(end);
            }
        }
        // A deadline already due means the core has a send waiting for the
        // port, and the port's SendDone will drive it again.
        if let Some(at) = cores[ri].poll_deadline() {
            if at > now && at != self.timer_at[ri] {
                self.timer_at[ri] = at;
                self.queue.push(at, Ev::Timer(r));
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
        }
    }
}
