//! The thread runtime's [`Transport`]: a rank's mailbox endpoint (SPSC
//! lanes, doorbell, spin-yield-park waiting) plus the team's shared state
//! (liveness registry, per-rank counters, the clock's origin).

use std::time::{Duration, Instant};

use crate::driver::{pack_call, unpack_call, PeerView, Progress, Transport};
use crate::mailbox::Endpoint;
use crate::protocol::{Header, Msg};
use crate::runtime::one_line::OneLine;
use crate::runtime::shared::Shared;
use crate::sync::{thread, Ordering};
use crate::trace::{self, Event};
use crate::types::{OpId, Rank, Tick};
use crate::value::Packet;

/// Spin rounds (~25-30 ns each) of a [`Transport::pause`] on a rank alone
/// on its core: how often a sender held back by a full lane looks for room.
const PAUSE_SPINS: u32 = 64;

/// Rounds of lending and yielding in which nothing moved before a waiting
/// rank parks (see [`MailboxTransport::block_call`]).
const IDLE_ROUNDS: u32 = 16;

/// Polls a waiting rank makes at most per wait, instead of yielding, while
/// every core mate is idle in a lent call (see
/// [`MailboxTransport::block_call`]): about 20 µs.
const MATES_IDLE_SPINS: u32 = 512;

/// Whether every core mate of `me` is idle in a lent call (and there is
/// one).
fn mates_idle(shared: &Shared<'_>, me: usize) -> bool {
    let mates = &shared.core_mates[me];
    !mates.is_empty() && mates.iter().all(|&r| shared.loans[r as usize].is_idle())
}

/// One pass over the loans of `me`'s core mates, pumping each that is lent,
/// poked and free. True if any pump moved something.
fn help_others(shared: &Shared<'_>, me: usize) -> bool {
    let mut helped = false;
    for &r in shared.core_mates[me].iter() {
        let moved = shared.loans[r as usize].help().unwrap_or(false);
        if moved {
            trace::record(me as Rank, Event::Helped(r));
        }
        helped |= moved;
    }
    helped
}

/// One rank's mailbox transport.
pub(crate) struct MailboxTransport<'t> {
    shared: &'t Shared<'t>,
    endpoint: Endpoint<'t, Msg<Packet>, OneLine>,
    rank: Rank,
}

impl<'t> MailboxTransport<'t> {
    pub(crate) fn new(
        shared: &'t Shared<'t>,
        endpoint: Endpoint<'t, Msg<Packet>, OneLine>,
    ) -> Self {
        let rank = endpoint.rank();
        MailboxTransport {
            shared,
            endpoint,
            rank,
        }
    }

    /// [`Transport::block`] inside a call, between its timeline's `Park`
    /// and `Unpark` ([`crate::trace`]).
    fn block_traced(&mut self, until: Tick) {
        trace::record(self.rank, Event::Park);
        self.block(until);
        trace::record(self.rank, Event::Unpark);
    }

    fn counters(&self) -> &crate::runtime::shared::Counters {
        &self.shared.counters[self.rank as usize]
    }

    fn instant(&self, tick: Tick) -> Instant {
        self.shared
            .started
            .checked_add(Duration::from_nanos(tick))
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600))
    }

    /// Waits up to `pause` for a message or a wake-up (the hung rank's loop).
    pub(crate) fn nap(&mut self, pause: Duration) {
        self.endpoint.wait(Some(Instant::now() + pause));
    }
}

impl Transport for MailboxTransport<'_> {
    type Payload = Packet;

    #[inline]
    fn rank(&self) -> Rank {
        self.rank
    }

    fn procs(&self) -> u32 {
        self.shared.ranks()
    }

    #[inline]
    fn now(&self) -> Tick {
        self.shared.now()
    }

    #[inline]
    fn send(&mut self, to: Rank, msg: Msg<Packet>) -> Result<(), Msg<Packet>> {
        self.endpoint.send(to, msg)?;
        if self.shared.helping {
            self.shared.loans[to as usize].poke();
        }
        Ok(())
    }

    #[inline]
    fn try_recv(&mut self) -> Option<(Rank, Msg<Packet>)> {
        self.endpoint.try_recv()
    }

    #[inline]
    /// A message rings the receiver's doorbell and a failure wakes every
    /// rank (`Shared::fail`).
    fn woken_by_every_event(&self) -> bool {
        true
    }

    fn spin(&mut self) -> bool {
        self.endpoint.spin().is_some()
    }

    fn block(&mut self, until: Tick) {
        self.shared.idle();
        let at = self.instant(until);
        self.endpoint.block(Some(at));
    }

    /// With helping on (ranks outnumber cores), a waiting rank lends its
    /// call (unless it [waits once](crate::protocol::Protocol::waits_once))
    /// and pumps the calls its core mates lend, yielding the core whenever
    /// none of them moved, unless every core mate is idle in a lent call:
    /// then it polls, up to [`MATES_IDLE_SPINS`] rounds per wait (those are
    /// not idle rounds). After [`IDLE_ROUNDS`] rounds in a row in which
    /// nothing moved anywhere, it takes its call back and parks as
    /// [`block`](Transport::block) does (not lent while parked: a message
    /// wakes it as usual).
    fn block_call<P: Progress<Self>>(call: &mut P, until: Tick) {
        let t = call.transport();
        let (shared, me) = (t.shared, t.rank as usize);
        let rank = me as Rank;
        trace::record(rank, Event::Wait);
        if !shared.helping {
            return t.block_traced(until);
        }
        shared.idle();
        let lend = call.worth_lending();
        let loan = &shared.loans[me];
        let mut idle = 0;
        let mut spins = 0u32;
        let mut spinning = false;
        while idle < IDLE_ROUNDS {
            let round = || {
                let helped = help_others(shared, me);
                // Every core mate idle in a lent call: none of them has
                // anything to run, so a yield would only pass the core
                // round them (a switch each) until a message comes from
                // another core. Poll here instead, for a while.
                let spin = !helped && spins < MATES_IDLE_SPINS && mates_idle(shared, me);
                if spin {
                    crate::sync::spin_loop();
                } else if !helped {
                    trace::record(rank, Event::Yield);
                    thread::yield_now();
                    trace::record(rank, Event::Resumed);
                }
                (helped, spin)
            };
            let ((helped, spun), moved) = if lend {
                loan.lend(call, round)
            } else {
                (round(), false)
            };
            let t = call.transport();
            t.beat();
            if spun != spinning {
                spinning = spun;
                trace::record(
                    rank,
                    if spun {
                        Event::SpinStart
                    } else {
                        Event::SpinEnd
                    },
                );
            }
            if moved || t.endpoint.spin().is_some() {
                trace::record(rank, Event::Woke(moved));
                return;
            }
            if spun {
                spins += 1;
                continue;
            }
            idle = if helped { 0 } else { idle + 1 };
            // The clock only when idle, every fourth round: a read costs
            // tens of nanoseconds, a round about a microsecond.
            if idle % 4 == 3 && shared.now() >= until {
                return;
            }
        }
        call.transport().block_traced(until);
    }

    fn wait(&mut self, until: Tick) {
        self.shared.idle();
        let at = self.instant(until);
        self.endpoint.wait(Some(at));
    }

    /// Where ranks outnumber cores a yield (the receiver that would make
    /// room may share this core); else [`PAUSE_SPINS`] rounds of spinning
    /// on this rank's own inbox, after which the driver looks for room
    /// again: a wait would spin its whole spin count (100 µs for a rank
    /// alone on its core) however soon the receiver drains, and a look at
    /// every round would move the receiver's `head` line at each (10 % on
    /// the two-rank broadcast loop, measured); one look per ~2 µs costs
    /// the receiver a few line transfers per lane it drains.
    fn pause(&mut self, until: Tick) {
        if self.shared.helping {
            self.shared.idle();
            thread::yield_now();
        } else {
            let _ = until;
            self.endpoint.spin_rounds(PAUSE_SPINS);
        }
    }

    #[inline]
    fn failure_epoch(&self) -> u64 {
        self.shared.liveness.epoch()
    }

    fn failed(&self) -> Vec<Rank> {
        self.shared.liveness.failed()
    }

    #[inline]
    fn is_failed(&self, rank: Rank) -> bool {
        self.shared.liveness.is_failed(rank)
    }

    fn declare_failed(&self, rank: Rank) {
        self.shared.fail(rank);
    }

    fn peer(&self, peer: Rank) -> Option<PeerView> {
        let c = &self.shared.counters[peer as usize];
        // Oldest news first: the peer stores `entered`, then `returned`,
        // then `left`, each Release. Loaded in the reverse order, each
        // Acquire, a later field is never newer than an earlier one, so the
        // view is one the peer has been in. (Loaded the other way, a rank
        // that entered the last operation and then ended its program could
        // be seen as "left without entering it", taken for failed in that
        // operation alone, and its input lost: the soak found it once in
        // 10^6 operations.)
        let left = c.left.load(Ordering::Acquire);
        let returned = c.returned.load(Ordering::Acquire);
        let beat = c.beat.load(Ordering::Acquire);
        let entered = c.entered.load(Ordering::Acquire);
        let call = unpack_call(c.call.load(Ordering::Acquire));
        Some(PeerView {
            entered,
            call,
            returned,
            beat,
            left,
            // A thread that ends is marked by the runtime (`left`, the
            // failure registry): it never vanishes unseen.
            exited: false,
        })
    }

    fn publish_entered(&self, op: OpId) {
        self.counters().entered.store(op + 1, Ordering::Release);
    }

    fn publish_returned(&self, op: OpId) {
        self.counters().returned.store(op + 1, Ordering::Release);
    }

    fn publish_call(&self, header: Header) {
        self.counters()
            .call
            .store(pack_call(Some(header)), Ordering::Release);
    }

    // One writer, as for the message counters below.
    #[inline]
    fn beat(&mut self) {
        let beat = &self.counters().beat;
        beat.store(beat.load(Ordering::Relaxed) + 1, Ordering::Release);
    }

    // The counters have one writer, this rank: a load and a store count
    // without the locked read-modify-write (two per message otherwise).
    #[inline]
    fn count_sent(&self) {
        let pushed = &self.counters().pushed;
        pushed.store(pushed.load(Ordering::Relaxed) + 1, Ordering::Release);
    }

    #[inline]
    fn count_handled(&self) {
        let consumed = &self.counters().consumed;
        consumed.store(consumed.load(Ordering::Relaxed) + 1, Ordering::Release);
    }

    fn leave(&self, hung: bool) {
        self.counters().left.store(true, Ordering::Release);
        // A hung rank was counted finished when it hung.
        if !hung {
            self.shared.finish_one();
        }
    }

    fn publish_served_epoch(&self, epoch: u64) {
        self.counters().epoch_seen.store(epoch, Ordering::Release);
    }

    fn team_quiet(&self) -> bool {
        self.shared.quiet()
    }

    /// Until the last program ends, which wakes every rank
    /// (`Shared::finish_one`).
    fn others_running(&self) -> bool {
        !self.shared.all_finished()
    }
}
