//! One rank's handle on the mailboxes: it pushes into the lanes out of its
//! rank and rings their receivers' doorbells, serves the lanes into its rank
//! round-robin from its doorbell, and waits (spin, yield, park).

use std::cell::Cell;
use std::marker::PhantomData;
use std::time::Instant;

use super::asymmetric::{self, DoorbellFence};
use super::lane::Lane;
use super::parking::wake_sleeper;
use super::{Compact, Mailboxes, Rank, Whole, Woke, GROUP, RUNNING, SLEEPING, SPINS, YIELDS};
use crate::fault_point::{self, FaultPoint};
use crate::sync::{self, thread, Ordering};

/// `poll_ready` looks at the lanes found empty since the last heavy fence
/// on one call in this many: a push late to show is rare (a race of a few
/// nanoseconds per message), and each look loads the lanes' pointers.
const RECHECK_EVERY: u32 = 16;

/// One rank's sending and receiving handle. `Send` (it may move to the thread
/// that uses it) but not `Sync`, not `Clone`: it is the only producer of the
/// lanes out of its rank and the only consumer of the lanes into it.
pub struct Endpoint<'a, T, C: Compact<T> = Whole> {
    pub(super) boxes: &'a Mailboxes<T, C>,
    pub(super) rank: Rank,
    /// Senders whose lanes may hold messages: bits taken from the doorbell
    /// and not yet found empty. Private, so keeping a bit costs no RMW.
    pending: Box<[u64]>,
    /// Number of set bits in `pending`.
    pending_count: u32,
    /// With [`DoorbellFence::Membarrier`]: senders whose bit this endpoint
    /// took from the doorbell and dropped on finding their lane empty, since
    /// its last heavy fence. Such a sender may have seen its bit still set
    /// and skipped the ring while its push was not yet visible here: these
    /// lanes are polled while spinning and checked after the heavy fence
    /// before a park. Always empty with [`DoorbellFence::SeqCst`].
    unchecked: Box<[u64]>,
    /// Number of set bits in `unchecked`.
    unchecked_count: u32,
    /// The hint lane's entry of `unchecked`, kept apart: `poll_ready` polls
    /// that lane anyway. Moved into `unchecked` when the hint moves on.
    hint_unchecked: bool,
    /// Calls of `poll_ready`, so that it looks at `unchecked` lanes on
    /// every [`RECHECK_EVERY`]th only.
    polls: u32,
    /// Unit tests only: messages that `recheck` found in lanes dropped as
    /// empty (a sender's push late to show), and heavy fences paid.
    #[cfg(test)]
    pub(super) rechecked: u64,
    #[cfg(test)]
    pub(super) heavy_fences: u64,
    /// Where the round-robin scan of `pending` resumes: one past the lane
    /// served last.
    start: usize,
    /// The lane served last: polled directly when the doorbell is silent, so
    /// a message whose bit is not visible yet is not missed (and a
    /// ping-pong peer's reply is seen one cache line earlier).
    hint: Option<(Rank, &'a Lane<T, C>)>,
    /// The thread registered as this rank's waiter.
    registered: Option<thread::ThreadId>,
    /// Spin rounds of [`Endpoint::wait`] before it yields ([`SPINS`] unless
    /// set by [`Endpoint::set_spins`]).
    spins: u32,
    _not_sync: PhantomData<Cell<()>>,
}

impl<'a, T: Send, C: Compact<T>> Endpoint<'a, T, C> {
    /// The endpoint of `rank`, taken by [`Mailboxes::endpoint`].
    pub(super) fn new(boxes: &'a Mailboxes<T, C>, rank: Rank) -> Self {
        Endpoint {
            boxes,
            rank,
            pending: vec![0; boxes.words].into_boxed_slice(),
            pending_count: 0,
            unchecked: vec![0; boxes.words].into_boxed_slice(),
            unchecked_count: 0,
            hint_unchecked: false,
            polls: 0,
            #[cfg(test)]
            rechecked: 0,
            #[cfg(test)]
            heavy_fences: 0,
            start: 0,
            hint: None,
            registered: None,
            spins: SPINS,
            _not_sync: PhantomData,
        }
    }

    /// This endpoint's rank.
    pub fn rank(&self) -> Rank {
        self.rank
    }

    /// Sets how many spin rounds (about 25-30 ns each) [`Endpoint::wait`]
    /// polls before it yields and parks. A thread alone on its core should
    /// spin long: in a virtual machine, waking a halted vCPU costs tens of
    /// microseconds (docs/mailbox.md). Under loom it stays 0.
    pub fn set_spins(&mut self, spins: u32) {
        if cfg!(not(loom)) {
            self.spins = spins;
        }
    }

    /// Makes the calling thread the one wakers unpark, now rather than at
    /// its first park (which registers it otherwise, allocating its handle):
    /// a thread that drives this endpoint for good calls this once, so that
    /// its waits allocate nothing later.
    pub fn register_thread(&mut self) {
        let me = thread::current();
        if self.registered != Some(me.id()) {
            self.registered = Some(me.id());
            self.boxes.headers[self.rank as usize].register(me);
        }
    }

    /// Sends `msg` to `to`. Never blocks: `Err(msg)` hands the value back
    /// when the lane is full. No allocation except on the very first send on
    /// a lane. Sending to oneself is allowed.
    ///
    /// # Panics
    ///
    /// If `to` is not a rank of the team.
    #[inline]
    pub fn send(&mut self, to: Rank, msg: T) -> Result<(), T> {
        let boxes = self.boxes;
        assert!(
            to < boxes.ranks,
            "send to rank {to} in a team of {}",
            boxes.ranks
        );
        let (from, to) = (self.rank as usize, to as usize);
        let lane = match boxes.lane(from, to) {
            Some(lane) => lane,
            None => boxes.create_lane(from, to),
        };
        // SAFETY: this endpoint is the only producer of lane (from -> to): it
        // is the only endpoint of `from` (taken flag), `&mut self` excludes a
        // concurrent send, and Endpoint is not Sync.
        unsafe { lane.push(msg) }?;
        fault_point::reach(FaultPoint::Published);
        let bell = boxes.bell(to, from / GROUP);
        let bit = 1 << (from % GROUP);
        // If our bit is still set, the receiver has not yet taken the ring
        // of an earlier message of ours (or leaves it set because it polls
        // this lane directly), and it will look at this lane after it swaps
        // the bit out: we need not ring again. That is a store (the push)
        // then a load (of the bell) against the receiver's swap then load
        // (of the stamp): the SeqCst fences here and after the receiver's
        // swaps (`refill`) order them. If this fence precedes the
        // receiver's, its stamp load sees the push; if the receiver's comes
        // first, our load sees its swap (bit clear) or later, and we ring.
        // Skipping the RMW keeps the doorbell's line unchanged, so a
        // receiver polling it keeps it cached. With the asymmetric fence
        // this side is a compiler fence and the receiver's membarrier before
        // it parks is the other half (`asymmetric`, docs/mailbox.md).
        asymmetric::light(boxes.fence);
        if bell.load(Ordering::Relaxed) & bit != 0 {
            return Ok(());
        }
        // AcqRel RMW: Release publishes the lane pointer (and orders the
        // push, which has its own Release) before the bit; and it is the
        // sender's half of the no-lost-wake-up pair: if the receiver's
        // pre-park swap of this word precedes this RMW in the word's
        // modification order (all writes to doorbell words are RMWs), this
        // RMW reads from it, so the receiver's `state = SLEEPING` happens
        // before the load below. Otherwise the receiver's swap sees our bit.
        bell.fetch_or(bit, Ordering::AcqRel);
        fault_point::reach(FaultPoint::Rung);
        wake_sleeper(&boxes.headers[to]);
        Ok(())
    }

    /// Takes one message, FIFO per sender, round-robin across senders (the
    /// scan resumes after the lane served last). Never blocks.
    pub fn try_recv(&mut self) -> Option<(Rank, T)> {
        let boxes = self.boxes;
        let me = self.rank as usize;
        let mut refilled = false;
        loop {
            let from = match self.find(self.start) {
                Some(from) => from,
                None => {
                    // End of a round: take the bits rung since, once per call.
                    if !refilled {
                        refilled = true;
                        self.refill(false);
                    }
                    match self.find(0) {
                        Some(from) => from,
                        None => break,
                    }
                }
            };
            let Some(lane) = boxes.lane(from, me) else {
                // Unreachable: a bit is rung only after its lane is installed.
                self.clear(from);
                continue;
            };
            // SAFETY: this endpoint is the only consumer of lane (from -> me):
            // it is the only endpoint of `me`, and `&mut self`, !Sync.
            match unsafe { lane.pop() } {
                Some(msg) => {
                    self.set_hint(from, lane);
                    // SAFETY: as above (consumer).
                    if !unsafe { lane.has_next() } {
                        // A message pushed after this check rings the bell
                        // again, so dropping the bit loses nothing.
                        self.clear(from);
                    }
                    self.start = from + 1;
                    fault_point::reach(FaultPoint::Taken);
                    return Some((from as Rank, msg));
                }
                // Already drained (through the hint) or a stale bit.
                None => self.clear(from),
            }
        }
        // The doorbell is silent: the lane served last may hold a message
        // whose bit is not visible yet.
        if let Some((from, lane)) = self.hint {
            // SAFETY: as above (consumer of lane from -> me).
            if let Some(msg) = unsafe { lane.pop() } {
                fault_point::reach(FaultPoint::Taken);
                return Some((from, msg));
            }
        }
        None
    }

    /// Blocks until a message may be pending, [`Mailboxes::wake`] was called
    /// for this rank, or `deadline` passed. Spins briefly, then yields, then
    /// parks (`park_timeout` with a deadline). Spurious `Message` returns are
    /// possible (see [`Woke::Message`]); messages are not taken.
    ///
    /// # Panics
    ///
    /// Under loom, if `deadline` is `Some` (loom has no clock).
    pub fn wait(&mut self, deadline: Option<Instant>) -> Woke {
        // Ready at once: no clock read. Deadline passed: no spinning.
        if let Some(woke) = self.poll_ready() {
            return woke;
        }
        if !expired(deadline) {
            if let Some(woke) = self.spin() {
                return woke;
            }
        }
        self.block(deadline)
    }

    /// The first, clock-free stage of [`wait`](Endpoint::wait): polls the
    /// spin count times (with a `spin_loop` between polls). `Some` as soon
    /// as a message may be pending or a wake-up came, `None` otherwise. A
    /// caller with bookkeeping to do before a longer wait (reading the clock
    /// costs tens of nanoseconds) spins first and does it only on `None`.
    pub fn spin(&mut self) -> Option<Woke> {
        self.spin_rounds(self.spins)
    }

    /// [`Endpoint::spin`] for `rounds` rounds instead of the spin count: a
    /// short look-out for a caller that has something else to watch.
    pub fn spin_rounds(&mut self, rounds: u32) -> Option<Woke> {
        if let Some(woke) = self.poll_ready() {
            return Some(woke);
        }
        for _ in 0..rounds {
            sync::spin_loop();
            if let Some(woke) = self.poll_ready() {
                return Some(woke);
            }
        }
        None
    }

    /// The later stages of [`wait`](Endpoint::wait), without its spinning:
    /// yields a few times, then parks until a message may be pending, a
    /// wake-up, or `deadline`.
    ///
    /// # Panics
    ///
    /// Under loom, if `deadline` is `Some` (loom has no clock).
    #[cfg_attr(loom, allow(clippy::reversed_empty_ranges))] // YIELDS = 0
    pub fn block(&mut self, deadline: Option<Instant>) -> Woke {
        #[cfg(loom)]
        assert!(deadline.is_none(), "wait: loom has no clock, pass None");
        if let Some(woke) = self.poll_ready() {
            return woke;
        }
        if expired(deadline) {
            return Woke::Timeout;
        }
        for _ in 0..YIELDS {
            if expired(deadline) {
                return Woke::Timeout;
            }
            thread::yield_now();
            if let Some(woke) = self.poll_ready() {
                return woke;
            }
        }
        self.park(deadline)
    }

    /// The doorbell's slow path: announce, re-check, park.
    #[cold]
    fn park(&mut self, deadline: Option<Instant>) -> Woke {
        // Registered before `state = SLEEPING`, so a sender that sees
        // SLEEPING finds this thread (the Release swap of the pointer is
        // sequenced before the probe's Release RMWs).
        self.register_thread();
        let boxes = self.boxes;
        let header = &boxes.headers[self.rank as usize];
        // Relaxed: published by the Release half of the RMWs in `probe`,
        // which are sequenced after this store.
        header.state.store(SLEEPING, Ordering::Relaxed);
        let woke = loop {
            if let Some(woke) = self.probe() {
                break woke;
            }
            match deadline {
                None => {
                    header.parking();
                    thread::park();
                }
                #[cfg(not(loom))]
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        break Woke::Timeout;
                    }
                    header.parking();
                    thread::park_timeout(deadline - now);
                }
                #[cfg(loom)]
                Some(_) => unreachable!("checked in wait"),
            }
            // Woken by a sender, a waker, a stale unpark, a timeout or
            // spuriously: `probe` tells which. `state` stays SLEEPING
            // meanwhile, so every ring after our last probe unparks us.
        };
        // Relaxed: senders that still see SLEEPING merely unpark us once more
        // (a stale token makes one later park return early, harmlessly).
        header.state.store(RUNNING, Ordering::Relaxed);
        woke
    }

    /// The receiver's half of the no-lost-wake-up pair, after `state =
    /// SLEEPING`: read-modify-writes of the notification flag and of every
    /// doorbell word. Their Release half publishes SLEEPING to any sender or
    /// waker whose RMW comes later in that word's modification order; an RMW
    /// always reads the latest value, so any earlier ring is seen here.
    fn probe(&mut self) -> Option<Woke> {
        let header = &self.boxes.headers[self.rank as usize];
        if header.notified.swap(false, Ordering::AcqRel) {
            return Some(Woke::Notified);
        }
        self.refill(true);
        (self.pending_count > 0).then_some(Woke::Message)
    }

    /// With [`DoorbellFence::Membarrier`], in the probe after the swaps: the
    /// heavy fence, then every lane this endpoint dropped since the last one
    /// looked at again (a sender that skipped its ring for a bit we had
    /// taken pushed before its compiler fence, which the heavy fence orders
    /// before these looks). Needed only if a bit was ever taken since: the
    /// lanes found empty (`unchecked`) or a bit swapped just now.
    fn settle(&mut self, took: bool) {
        if self.boxes.fence != DoorbellFence::Membarrier
            || !took && self.unchecked_count == 0 && !self.hint_unchecked
        {
            return;
        }
        asymmetric::heavy(self.boxes.fence);
        #[cfg(test)]
        {
            self.heavy_fences += 1;
        }
        self.recheck();
        self.unchecked.fill(0);
        self.unchecked_count = 0;
        if std::mem::take(&mut self.hint_unchecked) {
            if let Some((from, lane)) = self.hint {
                // SAFETY: this endpoint is the only consumer of the hint lane.
                if unsafe { lane.has_next() } {
                    self.pend(from as usize);
                }
            }
        }
    }

    /// Cheap readiness check for the spinning and yielding phases: plain
    /// loads, an RMW only to take a notification.
    #[inline]
    fn poll_ready(&mut self) -> Option<Woke> {
        let boxes = self.boxes;
        let me = self.rank as usize;
        let header = &boxes.headers[me];
        // Relaxed load first (no RMW on the common path); the Acquire swap
        // takes the notification and orders what the waker did before it.
        if header.notified.load(Ordering::Relaxed) && header.notified.swap(false, Ordering::Acquire)
        {
            return Some(Woke::Notified);
        }
        if self.pending_count > 0 {
            return Some(Woke::Message);
        }
        // Relaxed: a hint; try_recv takes the bits with an Acquire swap.
        if (0..boxes.words).any(|w| {
            let word = boxes.bell(me, w).load(Ordering::Relaxed);
            word != 0 && word != self.hint_bit(w)
        }) {
            return Some(Woke::Message);
        }
        if let Some((_, lane)) = self.hint {
            // SAFETY: this endpoint is the only consumer of the hint lane.
            if unsafe { lane.has_next() } {
                return Some(Woke::Message);
            }
        }
        if self.unchecked_count > 0 {
            self.polls = self.polls.wrapping_add(1);
            if self.polls % RECHECK_EVERY == 0 && self.recheck() {
                return Some(Woke::Message);
            }
        }
        None
    }

    /// Makes lane `from` the hint; with the asymmetric fence, the old hint
    /// lane, if unchecked, joins `unchecked`.
    #[inline]
    fn set_hint(&mut self, from: usize, lane: &'a Lane<T, C>) {
        if self.hint_unchecked && self.hint.is_some_and(|(h, _)| h as usize != from) {
            if let Some((old, _)) = self.hint {
                self.mark_unchecked(old as usize);
            }
            self.hint_unchecked = false;
        }
        self.hint = Some((from as Rank, lane));
    }

    #[inline]
    fn mark_unchecked(&mut self, from: usize) {
        let bit = 1u64 << (from % GROUP);
        let word = &mut self.unchecked[from / GROUP];
        if *word & bit == 0 {
            *word |= bit;
            self.unchecked_count += 1;
        }
    }

    /// Looks again at the lanes found empty since the last heavy fence
    /// (`unchecked`): those that now hold a message become pending again.
    /// True if any did. Plain loads: a push that is merely late in becoming
    /// visible shows here within the spin; before a park the heavy fence
    /// makes every such push visible, and the probe calls this after it.
    #[cold]
    fn recheck(&mut self) -> bool {
        let boxes = self.boxes;
        let me = self.rank as usize;
        let mut found = false;
        for w in 0..self.unchecked.len() {
            let mut bits = self.unchecked[w];
            while bits != 0 {
                let from = w * GROUP + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                // SAFETY: this endpoint is the only consumer of lane (from ->
                // me); its bit was rung, so the lane exists.
                let waiting = boxes
                    .lane(from, me)
                    .is_some_and(|lane| unsafe { lane.has_next() });
                if waiting {
                    self.unchecked[w] &= !(1u64 << (from % GROUP));
                    self.unchecked_count -= 1;
                    self.pend(from);
                    found = true;
                    #[cfg(test)]
                    {
                        self.rechecked += 1;
                    }
                }
            }
        }
        found
    }

    /// Moves the doorbell's bits into `pending`. `probe`: this is the
    /// pre-park re-check, whose swaps must happen (and be AcqRel), followed
    /// by the heavy fence where the doorbell fence is asymmetric.
    #[inline]
    fn refill(&mut self, probe: bool) {
        let boxes = self.boxes;
        let me = self.rank as usize;
        let mut took = false;
        for w in 0..self.pending.len() {
            let bell = boxes.bell(me, w);
            // The swap is an RMW, so it must happen in the probe even when a
            // plain load says 0 (it is the synchronization point). Outside
            // the probe a Relaxed load comes first: a word that is 0, or
            // holds only the hint lane's bit, is left alone (`try_recv`
            // polls the hint lane directly). That spares the receiver an RMW
            // on a line that senders write (an RMW stalls for a whole
            // cross-core transfer), and a bit left set spares its sender the
            // ring (see `send`): in a steady exchange the doorbell's line
            // does not move at all.
            if !probe {
                let word = bell.load(Ordering::Relaxed);
                if word == 0 || word == self.hint_bit(w) {
                    continue;
                }
            }
            // Acquire (and Release in the probe): reads from the senders'
            // AcqRel fetch_or, so the lanes they installed are visible.
            let order = if probe {
                Ordering::AcqRel
            } else {
                Ordering::Acquire
            };
            let bits = bell.swap(0, order);
            if bits != 0 {
                took = true;
                // Pairs with the fence in `send` (between its push and its
                // look at the bell): a sender that saw a bit we just took
                // did not ring again, and its push must be visible to our
                // later look at its lane. With the asymmetric fence that
                // look may miss the push: the lane then goes to `unchecked`
                // when it is dropped, and `settle` orders it before a park.
                asymmetric::after_take(boxes.fence);
            }
            let pending = &mut self.pending[w];
            let new = bits & !*pending;
            *pending |= new;
            self.pending_count += new.count_ones();
        }
        if probe {
            self.settle(took);
            // A stale bit of the idle hint lane (rung for a message the hint
            // path took) would end the park at once for nothing. The swap
            // and fence above (or `settle`'s) make every push whose sender
            // saw the bit set (rang or not) visible to `has_next`: an idle
            // hint lane's bit is stale indeed.
            if let Some((from, _)) = self.hint {
                let w = from as usize / GROUP;
                // SAFETY: this endpoint is the only consumer of the hint lane.
                let idle = self
                    .hint
                    .is_some_and(|(_, lane)| !unsafe { lane.has_next() });
                if idle && self.pending[w] & self.hint_bit(w) != 0 {
                    self.unpend(from as usize);
                }
            }
        }
    }

    /// The doorbell bit of the hint lane if it is in word `w`, else 0. A
    /// word holding only this bit is left in the doorbell: the hint lane is
    /// polled directly anyway (by `try_recv` and `wait`), so its messages are
    /// seen there, and the pre-park probe swaps the bit out.
    #[inline]
    fn hint_bit(&self, w: usize) -> u64 {
        match self.hint {
            Some((from, _)) if from as usize / GROUP == w => 1 << (from as usize % GROUP),
            _ => 0,
        }
    }

    /// The first pending sender at or after `from`.
    #[inline]
    fn find(&self, from: usize) -> Option<usize> {
        if self.pending_count == 0 {
            return None;
        }
        let mut w = from / GROUP;
        let mut bits = *self.pending.get(w)? & (!0u64 << (from % GROUP));
        loop {
            if bits != 0 {
                return Some(w * GROUP + bits.trailing_zeros() as usize);
            }
            w += 1;
            bits = *self.pending.get(w)?;
        }
    }

    /// Drops `from` from the pending set on finding its lane empty; with
    /// the asymmetric fence the lane goes to `unchecked` (see there).
    #[inline]
    fn clear(&mut self, from: usize) {
        if self.unpend(from) && self.boxes.fence == DoorbellFence::Membarrier {
            if self.hint.is_some_and(|(h, _)| h as usize == from) {
                self.hint_unchecked = true;
            } else {
                self.mark_unchecked(from);
            }
        }
    }

    /// Adds `from` to the pending set.
    #[inline]
    fn pend(&mut self, from: usize) {
        let bit = 1u64 << (from % GROUP);
        let word = &mut self.pending[from / GROUP];
        if *word & bit == 0 {
            *word |= bit;
            self.pending_count += 1;
        }
    }

    /// Drops `from` from the pending set; true if it was there.
    #[inline]
    fn unpend(&mut self, from: usize) -> bool {
        let bit = 1u64 << (from % GROUP);
        let word = &mut self.pending[from / GROUP];
        if *word & bit != 0 {
            *word &= !bit;
            self.pending_count -= 1;
            true
        } else {
            false
        }
    }
}

impl<T, C: Compact<T>> Drop for Endpoint<'_, T, C> {
    fn drop(&mut self) {
        let boxes = self.boxes;
        let me = self.rank as usize;
        // Give the pending bits back to the doorbell (an RMW, as every write
        // to a doorbell word must be), so the next endpoint of this rank
        // serves those lanes; the unchecked ones too, so that it looks at
        // them once more.
        let hint = self
            .hint
            .filter(|_| self.hint_unchecked)
            .map_or(usize::MAX, |(h, _)| h as usize);
        for (w, (&bits, &unchecked)) in self.pending.iter().zip(self.unchecked.iter()).enumerate() {
            let mut bits = bits | unchecked;
            if hint / GROUP == w {
                bits |= 1 << (hint % GROUP);
            }
            if bits != 0 {
                boxes.bell(me, w).fetch_or(bits, Ordering::Release);
            }
        }
        let header = &boxes.headers[me];
        // The waiter stays registered: a late unpark of this thread is
        // harmless, and the next endpoint re-registers on its first park.
        // Release: pairs with the Acquire in `Mailboxes::endpoint`.
        header.taken.store(false, Ordering::Release);
    }
}

impl<T, C: Compact<T>> std::fmt::Debug for Endpoint<'_, T, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("rank", &self.rank)
            .field("pending", &self.pending_count)
            .finish_non_exhaustive()
    }
}

/// True if `deadline` has passed.
fn expired(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}
