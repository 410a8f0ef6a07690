//! Event queues bucketed by time, for the LogP engine (they know nothing of
//! LogP).
//!
//! LogP times are small integers and every new event lies at or after the
//! current time, so per-tick buckets beat a heap. Both queues keep a ring,
//! the *window*, of 1024 consecutive ticks starting at the current time: an
//! event inside the window goes straight into its tick's bucket (O(1), no
//! allocation once the bucket has capacity; buckets keep their capacity
//! across runs). An event beyond the window (a far deadline, a slow failure
//! detector's report) goes into an ordered map of far ticks, and moves into
//! the ring when the window reaches its tick, before anything else can be
//! scheduled there.
//!
//! Cost model, whatever the ticks: memory O(window + events pending), so a
//! deadline at tick 10^12 costs one map entry, not 10^12 buckets; scheduling
//! O(1) in the window and O(log far ticks) beyond it; finding the next tick
//! O(window / 64 + log far ticks), never a scan of empty ticks.
//!
//! Time only moves forward. Taking tick `t` ([`BucketQueue::take`],
//! [`WakeSets::take`]) makes `t` the current time and drops whatever is still
//! scheduled before `t`; scheduling before the current time panics.

use std::collections::BTreeMap;

use crate::types::Tick;

/// Ticks in the ring, the window (a power of two). A 64K-rank broadcast
/// spans about a hundred ticks, so it never leaves the ring. With 256, 1024
/// or 4096 the 64K-rank simulations ran the same number of instructions
/// within 2 % (also `delayed:D` with D on either side of the window); a wider
/// ring costs memory (at most one [`WakeSets`] bitset per slot, 8 KiB at 64K
/// ranks) and a longer occupancy scan.
const WINDOW: usize = 1024;
const _: () = assert!(WINDOW.is_power_of_two() && WINDOW % 64 == 0);

/// The ring slot of tick `t`.
#[inline]
fn slot(t: Tick) -> usize {
    t as usize & (WINDOW - 1)
}

/// The end of the window that starts at `base`.
#[inline]
fn window_end(base: Tick) -> Tick {
    base.saturating_add(WINDOW as Tick)
}

/// A fresh ring of empty slots.
fn empty_ring<T>() -> Box<[Vec<T>; WINDOW]> {
    let ring: Box<[Vec<T>]> = (0..WINDOW).map(|_| Vec::new()).collect();
    match ring.try_into() {
        Ok(ring) => ring,
        Err(_) => unreachable!("the ring has WINDOW slots"),
    }
}

/// Which ring slots hold something, one bit per slot.
#[derive(Clone, Debug)]
struct Occupancy([u64; WINDOW / 64]);

impl Default for Occupancy {
    fn default() -> Self {
        Occupancy([0; WINDOW / 64])
    }
}

impl Occupancy {
    #[inline]
    fn contains(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }

    #[inline]
    fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    #[inline]
    fn remove(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }

    /// The first tick of `from..to` whose slot is occupied, where `to - from`
    /// is at most `WINDOW` (so each slot stands for one tick of the range).
    #[inline]
    fn first_in(&self, from: Tick, to: Tick) -> Option<Tick> {
        let mut t = from;
        while t < to {
            let i = slot(t);
            let bits = self.0[i / 64] >> (i % 64);
            if bits != 0 {
                // Bits past `to` in this word stand for ticks before `from`.
                let found = t.saturating_add(Tick::from(bits.trailing_zeros()));
                return (found < to).then_some(found);
            }
            t = t.saturating_add((64 - i % 64) as Tick);
        }
        None
    }

    /// Empties every occupied slot of a tick in `base..to` (the ticks the
    /// window leaves when time moves from `base` to `to`), calling `clear` on
    /// each and counting it off `near`, the number of occupied slots.
    fn empty_before(
        &mut self,
        base: Tick,
        to: Tick,
        near: &mut usize,
        mut clear: impl FnMut(usize),
    ) {
        let mut from = base;
        let end = to.min(window_end(base));
        while *near > 0 {
            let Some(t) = self.first_in(from, end) else {
                break;
            };
            let i = slot(t);
            clear(i);
            self.remove(i);
            *near -= 1;
            from = t + 1;
        }
    }

    /// Calls `f` on every occupied slot and empties the set.
    fn drain(&mut self, mut f: impl FnMut(usize)) {
        for (w, word) in self.0.iter_mut().enumerate() {
            let mut bits = std::mem::take(word);
            while bits != 0 {
                f(w * 64 + bits.trailing_zeros() as usize);
                bits &= bits - 1;
            }
        }
    }
}

/// Events by the tick they fire at.
///
/// Guarantees: the events of one tick come out in the order they were pushed,
/// whether they waited in the window or beyond it, which keeps a run
/// deterministic. Cost (see the [module docs](self)): push O(1) within the
/// window of 1024 ticks from the current time, O(log far ticks) beyond it;
/// memory O(window + events pending), however far the ticks lie.
#[derive(Debug)]
pub struct BucketQueue<E> {
    /// The current time: the ring holds ticks `base..base + WINDOW`.
    base: Tick,
    /// Tick `t` of the window at slot `t % WINDOW`.
    ring: Box<[Vec<E>; WINDOW]>,
    /// The non-empty slots.
    occupied: Occupancy,
    /// The number of non-empty slots.
    near: usize,
    /// Events at `base + WINDOW` or later, by tick, in push order.
    far: BTreeMap<Tick, Vec<E>>,
}

impl<E> Default for BucketQueue<E> {
    fn default() -> Self {
        BucketQueue {
            base: 0,
            ring: empty_ring(),
            occupied: Occupancy::default(),
            near: 0,
            far: BTreeMap::new(),
        }
    }
}

impl<E> BucketQueue<E> {
    /// Schedules `event` at `at`, which must not lie before the current time
    /// (the last tick taken).
    #[inline]
    pub fn push(&mut self, at: Tick, event: E) {
        if at.wrapping_sub(self.base) >= WINDOW as Tick {
            return self.push_far(at, event);
        }
        let i = slot(at);
        let bucket = &mut self.ring[i];
        if bucket.is_empty() {
            self.occupied.insert(i);
            self.near += 1;
        }
        bucket.push(event);
    }

    #[cold]
    #[inline(never)]
    fn push_far(&mut self, at: Tick, event: E) {
        assert!(
            at >= self.base,
            "event at tick {at}, before the current time {}",
            self.base
        );
        self.far.entry(at).or_default().push(event);
    }

    /// The first tick after `now` (and not before the current time) that has
    /// events, if any.
    #[inline]
    pub fn next_after(&self, now: Tick) -> Option<Tick> {
        let from = now.checked_add(1)?.max(self.base);
        if self.near > 0 {
            if let Some(t) = self.occupied.first_in(from, window_end(self.base)) {
                return Some(t);
            }
        }
        self.far.range(from..).next().map(|(&t, _)| t)
    }

    /// Takes the events of tick `at`, which becomes the current time: events
    /// still pending before `at` are dropped. Hand the vector back with
    /// [`BucketQueue::recycle`] to keep its capacity.
    pub fn take(&mut self, at: Tick) -> Vec<E> {
        if at < self.base {
            return Vec::new();
        }
        if at != self.base {
            self.advance(at);
        }
        let i = slot(at);
        if !self.occupied.contains(i) {
            return Vec::new();
        }
        self.occupied.remove(i);
        self.near -= 1;
        std::mem::take(&mut self.ring[i])
    }

    /// Returns a vector from [`BucketQueue::take`], emptied, to tick `at`.
    pub fn recycle(&mut self, at: Tick, mut events: Vec<E>) {
        events.clear();
        if at.wrapping_sub(self.base) < WINDOW as Tick {
            let bucket = &mut self.ring[slot(at)];
            if bucket.is_empty() && bucket.capacity() < events.capacity() {
                *bucket = events;
            }
        }
    }

    /// Makes `to`, later than the current time, the current time.
    fn advance(&mut self, to: Tick) {
        // Drop what is left before `to`; its slots are about to stand for
        // ticks of the new window.
        let ring = &mut self.ring;
        self.occupied
            .empty_before(self.base, to, &mut self.near, |i| ring[i].clear());
        self.base = to;
        // Far events the window now covers move into the ring before
        // anything else can be pushed at their tick.
        let end = window_end(to);
        while let Some(entry) = self.far.first_entry() {
            let t = *entry.key();
            if t >= end {
                break;
            }
            let events = entry.remove();
            if t >= to {
                let i = slot(t);
                let bucket = &mut self.ring[i];
                debug_assert!(bucket.is_empty(), "a slot entering the window is empty");
                if bucket.capacity() < events.len() {
                    *bucket = events;
                } else {
                    bucket.extend(events);
                }
                self.occupied.insert(i);
                self.near += 1;
            }
        }
    }

    /// Drops every pending event and sets the time back to 0.
    pub fn clear(&mut self) {
        let ring = &mut self.ring;
        self.occupied.drain(|i| ring[i].clear());
        self.near = 0;
        self.far.clear();
        self.base = 0;
    }

    /// Ticks this queue holds storage for: ring slots with a buffer and far
    /// ticks. At most `WINDOW` plus the far ticks pending.
    #[cfg(test)]
    pub(crate) fn allocated_ticks(&self) -> usize {
        self.ring.iter().filter(|b| b.capacity() > 0).count() + self.far.len()
    }
}

/// Ranks to wake, by tick.
///
/// Guarantees: a rank set twice for a tick is woken once, and a tick's ranks
/// come out in ascending rank order, which keeps the walk over per-rank state
/// sequential. Cost (see the [module docs](self)): within the window of 1024
/// ticks from the current time a tick is one bitset over the ranks
/// (allocated on first use, then kept across runs), and setting a rank is
/// O(1); beyond it a tick is a list of ranks in an ordered map, O(log far
/// ticks) per rank, turned into a bitset when the window reaches it. Memory
/// is O(window x ranks / 64 + wakes pending beyond the window), however far
/// the ticks lie.
#[derive(Debug)]
pub struct WakeSets {
    /// Words in a tick's bitset.
    words: usize,
    /// The current time: the ring holds ticks `base..base + WINDOW`.
    base: Tick,
    /// Tick `t` of the window at slot `t % WINDOW`.
    ring: Box<[Vec<u64>; WINDOW]>,
    /// The slots with a rank to wake.
    occupied: Occupancy,
    /// The number of slots with a rank to wake.
    near: usize,
    /// Ranks to wake at `base + WINDOW` or later, by tick (repeats allowed).
    far: BTreeMap<Tick, Vec<u32>>,
}

impl Default for WakeSets {
    fn default() -> Self {
        WakeSets {
            words: 0,
            base: 0,
            ring: empty_ring(),
            occupied: Occupancy::default(),
            near: 0,
            far: BTreeMap::new(),
        }
    }
}

impl WakeSets {
    /// Empties every tick, sets the time back to 0 and sizes the sets for
    /// `ranks` ranks.
    pub fn reset(&mut self, ranks: usize) {
        let words = ranks.div_ceil(64);
        let ring = &mut self.ring;
        if words != self.words {
            ring.iter_mut().for_each(|set| *set = Vec::new());
            self.occupied = Occupancy::default();
            self.words = words;
        } else {
            self.occupied.drain(|i| ring[i].fill(0));
        }
        self.near = 0;
        self.far.clear();
        self.base = 0;
    }

    /// Wakes `rank` at `at`, which must not lie before the current time (the
    /// last tick taken).
    #[inline]
    pub fn set(&mut self, at: Tick, rank: u32) {
        if at.wrapping_sub(self.base) >= WINDOW as Tick {
            return self.set_far(at, rank);
        }
        let i = slot(at);
        let set = &mut self.ring[i];
        if set.is_empty() {
            set.resize(self.words, 0);
        }
        set[rank as usize / 64] |= 1 << (rank % 64);
        if !self.occupied.contains(i) {
            self.occupied.insert(i);
            self.near += 1;
        }
    }

    #[cold]
    #[inline(never)]
    fn set_far(&mut self, at: Tick, rank: u32) {
        assert!(
            at >= self.base,
            "wake at tick {at}, before the current time {}",
            self.base
        );
        debug_assert!(
            (rank as usize) < 64 * self.words,
            "rank {rank} out of range"
        );
        self.far.entry(at).or_default().push(rank);
    }

    /// The first tick after `now` (and not before the current time) with a
    /// rank to wake.
    #[inline]
    pub fn next_after(&self, now: Tick) -> Option<Tick> {
        let from = now.checked_add(1)?.max(self.base);
        if self.near > 0 {
            if let Some(t) = self.occupied.first_in(from, window_end(self.base)) {
                return Some(t);
            }
        }
        self.far.range(from..).next().map(|(&t, _)| t)
    }

    /// Takes the set of tick `at`, which becomes the current time: ranks
    /// still to wake before `at` are dropped. Walk the set with
    /// [`WakeSets::drain`] and hand it back with [`WakeSets::recycle`].
    pub fn take(&mut self, at: Tick) -> Vec<u64> {
        if at < self.base {
            return Vec::new();
        }
        if at != self.base {
            self.advance(at);
        }
        let i = slot(at);
        if !self.occupied.contains(i) {
            return Vec::new();
        }
        self.occupied.remove(i);
        self.near -= 1;
        std::mem::take(&mut self.ring[i])
    }

    /// Calls `f` on every rank of `set` in ascending order, clearing it.
    #[inline]
    pub fn drain(set: &mut [u64], mut f: impl FnMut(u32)) {
        for (i, word) in set.iter_mut().enumerate() {
            let mut bits = std::mem::take(word);
            while bits != 0 {
                f((i * 64) as u32 + bits.trailing_zeros());
                bits &= bits - 1;
            }
        }
    }

    /// Returns a drained set to tick `at`.
    pub fn recycle(&mut self, at: Tick, set: Vec<u64>) {
        debug_assert!(set.iter().all(|&w| w == 0), "recycle a drained set");
        if at.wrapping_sub(self.base) < WINDOW as Tick && set.len() == self.words {
            let slot = &mut self.ring[slot(at)];
            if slot.is_empty() {
                *slot = set;
            }
        }
    }

    /// Makes `to`, later than the current time, the current time.
    fn advance(&mut self, to: Tick) {
        // Drop what is left before `to`; its slots are about to stand for
        // ticks of the new window.
        let ring = &mut self.ring;
        self.occupied
            .empty_before(self.base, to, &mut self.near, |i| ring[i].fill(0));
        self.base = to;
        // Far ranks the window now covers move into the ring.
        let end = window_end(to);
        while let Some(entry) = self.far.first_entry() {
            let t = *entry.key();
            if t >= end {
                break;
            }
            let ranks = entry.remove();
            if t >= to {
                for rank in ranks {
                    self.set(t, rank);
                }
            }
        }
    }

    /// Ticks this structure holds storage for: ring slots with a bitset and
    /// far ticks. At most `WINDOW` plus the far ticks pending.
    #[cfg(test)]
    pub(crate) fn allocated_ticks(&self) -> usize {
        self.ring.iter().filter(|s| s.capacity() > 0).count() + self.far.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAR: Tick = 1_000_000_000_000;
    const W: Tick = WINDOW as Tick;

    fn ranks_of(mut set: Vec<u64>) -> Vec<u32> {
        let mut got = Vec::new();
        WakeSets::drain(&mut set, |r| got.push(r));
        got
    }

    #[test]
    fn buckets_keep_push_order_and_find_the_next_tick() {
        let mut q = BucketQueue::default();
        q.push(5, 'a');
        q.push(3, 'b');
        q.push(5, 'c');
        assert_eq!(q.next_after(0), Some(3));
        assert_eq!(q.take(3), vec!['b']);
        assert_eq!(q.next_after(3), Some(5));
        assert_eq!(q.take(5), vec!['a', 'c']);
        assert_eq!(q.next_after(5), None);
        assert!(q.take(100).is_empty());
    }

    #[test]
    fn wake_sets_dedupe_and_come_out_in_rank_order() {
        let mut w = WakeSets::default();
        w.reset(200);
        for r in [130, 2, 64, 2, 199, 0] {
            w.set(7, r);
        }
        w.set(9, 5);
        assert_eq!(w.next_after(0), Some(7));
        let mut set = w.take(7);
        let mut got = Vec::new();
        WakeSets::drain(&mut set, |r| got.push(r));
        assert_eq!(got, vec![0, 2, 64, 130, 199]);
        assert!(set.iter().all(|&x| x == 0), "drain clears the set");
        w.recycle(7, set);
        assert_eq!(w.next_after(7), Some(9));
        w.reset(200);
        assert_eq!(w.next_after(0), None);
    }

    /// Bug 4 of issue 11: a far tick cost a bucket for every tick before it.
    #[test]
    fn a_far_event_costs_one_entry_not_one_bucket_per_tick() {
        let mut q = BucketQueue::default();
        q.push(3, 'a');
        q.push(1_000_000, 'm');
        assert!(q.allocated_ticks() <= 2, "{} ticks", q.allocated_ticks());
        q.push(FAR, 'x');
        q.push(FAR, 'y');
        q.push(FAR + 1, 'z');
        assert!(q.allocated_ticks() <= 4, "{} ticks", q.allocated_ticks());
        assert_eq!(q.next_after(0), Some(3));
        assert_eq!(q.take(3), vec!['a']);
        assert_eq!(q.next_after(3), Some(1_000_000));
        assert_eq!(q.take(1_000_000), vec!['m']);
        assert_eq!(q.next_after(1_000_000), Some(FAR));
        assert_eq!(q.take(FAR), vec!['x', 'y']);
        q.push(FAR + 1, 'w');
        assert_eq!(q.next_after(FAR), Some(FAR + 1));
        assert_eq!(q.take(FAR + 1), vec!['z', 'w']);
        assert_eq!(q.next_after(FAR + 1), None);
        assert!(q.allocated_ticks() <= 4, "{} ticks", q.allocated_ticks());
    }

    /// Bug 4 of issue 11, for the wake-ups.
    #[test]
    fn a_far_wake_costs_one_entry_not_one_set_per_tick() {
        let mut w = WakeSets::default();
        w.reset(100);
        w.set(2, 1);
        w.set(1_000_000, 9);
        assert!(w.allocated_ticks() <= 2, "{} ticks", w.allocated_ticks());
        for r in [7, 3, 7, 99] {
            w.set(FAR, r);
        }
        assert!(w.allocated_ticks() <= 3, "{} ticks", w.allocated_ticks());
        assert_eq!(w.next_after(0), Some(2));
        assert_eq!(ranks_of(w.take(2)), vec![1]);
        assert_eq!(w.next_after(2), Some(1_000_000));
        assert_eq!(ranks_of(w.take(1_000_000)), vec![9]);
        assert_eq!(w.next_after(1_000_000), Some(FAR));
        w.set(FAR, 5);
        assert_eq!(ranks_of(w.take(FAR)), vec![3, 5, 7, 99]);
        assert_eq!(w.next_after(FAR), None);
        assert!(w.allocated_ticks() <= 3, "{} ticks", w.allocated_ticks());
    }

    /// Events pushed beyond the window, moved into it, then joined by near
    /// pushes to the same tick: push order holds throughout.
    #[test]
    fn events_straddling_the_window_keep_push_order() {
        let mut q = BucketQueue::default();
        let t = 5 * W + 7;
        q.push(t, 1);
        q.push(t, 2);
        q.push(t + 1, 10);
        q.push(t + W, 20);
        q.push(4, 0);
        assert_eq!(q.take(4), vec![0]);
        // Move the window so that it covers `t` but not `t + W`.
        assert!(q.take(t - 10).is_empty());
        q.push(t, 3);
        q.push(t + W, 21);
        q.push(t + 1, 11);
        assert_eq!(q.next_after(t - 10), Some(t));
        assert_eq!(q.take(t), vec![1, 2, 3]);
        q.push(t + 1, 12);
        assert_eq!(q.take(t + 1), vec![10, 11, 12]);
        assert_eq!(q.next_after(t + 1), Some(t + W));
        assert_eq!(q.take(t + W), vec![20, 21]);
        assert_eq!(q.next_after(t + W), None);
    }

    /// Slots left behind (the engine's wakes at tick 0, never taken) do not
    /// come back when the ring wraps around to them.
    #[test]
    fn leftovers_before_the_current_time_are_dropped() {
        let mut w = WakeSets::default();
        w.reset(10);
        w.set(0, 1);
        w.set(5, 2);
        w.set(W + 3, 4);
        assert_eq!(w.next_after(0), Some(5));
        assert_eq!(ranks_of(w.take(5)), vec![2]);
        assert_eq!(w.next_after(5), Some(W + 3));
        assert_eq!(ranks_of(w.take(W + 3)), vec![4]);
        assert_eq!(w.next_after(W + 3), None);

        let mut q = BucketQueue::default();
        q.push(0, 'a');
        q.push(5, 'b');
        q.push(W, 'c');
        assert_eq!(q.take(5), vec!['b']);
        assert_eq!(q.next_after(5), Some(W));
        assert_eq!(q.take(W), vec!['c']);
        assert_eq!(q.next_after(W), None);
    }

    /// `clear` and `reset` start over at time 0 with nothing pending.
    #[test]
    fn clear_and_reset_forget_near_and_far() {
        let mut q = BucketQueue::default();
        q.push(3, 1);
        q.push(FAR, 2);
        q.clear();
        assert_eq!(q.next_after(0), None);
        q.push(1, 3);
        assert_eq!(q.take(1), vec![3]);

        let mut w = WakeSets::default();
        w.reset(70);
        w.set(3, 69);
        w.set(FAR, 1);
        w.reset(70);
        assert_eq!(w.next_after(0), None);
        w.set(1, 64);
        assert_eq!(ranks_of(w.take(1)), vec![64]);
        w.reset(3);
        w.set(2, 2);
        assert_eq!(ranks_of(w.take(2)), vec![2]);
    }

    #[test]
    #[should_panic(expected = "before the current time")]
    fn pushing_into_the_past_panics() {
        let mut q = BucketQueue::default();
        q.push(5 * W, 1);
        q.take(5 * W);
        q.push(3, 2);
    }

    /// Both queues against a plain ordered map, over a pseudo-random mix of
    /// near, window-crossing and far ticks.
    #[test]
    fn agree_with_an_ordered_map() {
        use std::collections::BTreeSet;
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let mut q = BucketQueue::default();
        let mut w = WakeSets::default();
        for round in 0..3 {
            q.clear();
            w.reset(130);
            let mut model_q: BTreeMap<Tick, Vec<u32>> = BTreeMap::new();
            let mut model_w: BTreeMap<Tick, BTreeSet<u32>> = BTreeMap::new();
            let mut now = 0;
            let mut serial = 0;
            // Push and take for a while, then only take until both are empty.
            for step in 0.. {
                for _ in 0..if step < 5000 { next(4) } else { 0 } {
                    let ahead = match next(10) {
                        0..=5 => 1 + next(8),
                        6 | 7 => 1 + next(3 * W),
                        8 => W - 2 + next(4),
                        9 if next(2) == 0 => 1 + next(100 * W),
                        _ => 1 + next(FAR),
                    };
                    let rank = next(130) as u32;
                    q.push(now + ahead, serial);
                    model_q.entry(now + ahead).or_default().push(serial);
                    serial += 1;
                    w.set(now + ahead, rank);
                    model_w.entry(now + ahead).or_default().insert(rank);
                }
                let expect = model_q.keys().next().copied();
                assert_eq!(q.next_after(now), expect, "round {round}");
                assert_eq!(w.next_after(now), expect, "round {round}");
                let Some(t) = expect else {
                    if step < 5000 {
                        continue;
                    }
                    break;
                };
                now = t;
                let events = q.take(t);
                assert_eq!(events, model_q.remove(&t).unwrap());
                q.recycle(t, events);
                let mut set = w.take(t);
                let mut got = Vec::new();
                WakeSets::drain(&mut set, |r| got.push(r));
                w.recycle(t, set);
                let want: Vec<u32> = model_w.remove(&t).unwrap().into_iter().collect();
                assert_eq!(got, want);
            }
            assert!(serial > 5000, "{serial} events");
            assert!(q.allocated_ticks() <= WINDOW);
            assert!(w.allocated_ticks() <= WINDOW);
        }
    }
}
