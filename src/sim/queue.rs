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

use crate::sim::window::TickRing;
use crate::types::Tick;

/// Events by the tick they fire at.
///
/// Guarantees: the events of one tick come out in the order they were pushed,
/// whether they waited in the window or beyond it, which keeps a run
/// deterministic. Cost (see the [module docs](self)): push O(1) within the
/// window of 1024 ticks from the current time, O(log far ticks) beyond it;
/// memory O(window + events pending), however far the ticks lie.
#[derive(Debug)]
pub struct BucketQueue<E> {
    /// Tick `t`'s events, in push order, in its slot or beyond the window.
    ring: TickRing<E, E>,
}

impl<E> Default for BucketQueue<E> {
    fn default() -> Self {
        BucketQueue {
            ring: TickRing::default(),
        }
    }
}

impl<E> BucketQueue<E> {
    /// Schedules `event` at `at`, which must not lie before the current time
    /// (the last tick taken).
    #[inline]
    pub fn push(&mut self, at: Tick, event: E) {
        if !self.ring.in_window(at) {
            return self.ring.push_far(at, event, "event");
        }
        self.ring.occupy(at).push(event);
    }

    /// The first tick after `now` (and not before the current time) that has
    /// events, if any.
    #[inline]
    pub fn next_after(&self, now: Tick) -> Option<Tick> {
        self.ring.next_after(now)
    }

    /// Takes the events of tick `at`, which becomes the current time: events
    /// still pending before `at` are dropped. Hand the vector back with
    /// [`BucketQueue::recycle`] to keep its capacity.
    pub fn take(&mut self, at: Tick) -> Vec<E> {
        self.ring.take(at, Vec::clear, |bucket, events| {
            debug_assert!(bucket.is_empty(), "a slot entering the window is empty");
            if bucket.capacity() < events.len() {
                *bucket = events;
            } else {
                bucket.extend(events);
            }
        })
    }

    /// Returns a vector from [`BucketQueue::take`], emptied, to tick `at`.
    pub fn recycle(&mut self, at: Tick, mut events: Vec<E>) {
        events.clear();
        if let Some(bucket) = self.ring.slot_in_window(at) {
            if bucket.is_empty() && bucket.capacity() < events.capacity() {
                *bucket = events;
            }
        }
    }

    /// Drops every pending event and sets the time back to 0.
    pub fn clear(&mut self) {
        self.ring.clear(Vec::clear);
    }

    /// Ticks this queue holds storage for: ring slots with a buffer and far
    /// ticks. At most `WINDOW` plus the far ticks pending.
    #[cfg(test)]
    pub(crate) fn allocated_ticks(&self) -> usize {
        self.ring.allocated_ticks()
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
#[derive(Debug, Default)]
pub struct WakeSets {
    /// Words in a tick's bitset.
    words: usize,
    /// A tick's bitset of ranks in its slot, or beyond the window its ranks
    /// (repeats allowed).
    ring: TickRing<u64, u32>,
}

impl WakeSets {
    /// Empties every tick, sets the time back to 0 and sizes the sets for
    /// `ranks` ranks.
    pub fn reset(&mut self, ranks: usize) {
        let words = ranks.div_ceil(64);
        if words != self.words {
            self.ring.drop_storage();
            self.words = words;
        }
        self.ring.clear(|set| set.fill(0));
    }

    /// Wakes `rank` at `at`, which must not lie before the current time (the
    /// last tick taken).
    #[inline]
    pub fn set(&mut self, at: Tick, rank: u32) {
        if !self.ring.in_window(at) {
            debug_assert!(
                (rank as usize) < 64 * self.words,
                "rank {rank} out of range"
            );
            return self.ring.push_far(at, rank, "wake");
        }
        add_rank(self.ring.occupy(at), self.words, rank);
    }

    /// The first tick after `now` (and not before the current time) with a
    /// rank to wake.
    #[inline]
    pub fn next_after(&self, now: Tick) -> Option<Tick> {
        self.ring.next_after(now)
    }

    /// Takes the set of tick `at`, which becomes the current time: ranks
    /// still to wake before `at` are dropped. Walk the set with
    /// [`WakeSets::drain`] and hand it back with [`WakeSets::recycle`].
    pub fn take(&mut self, at: Tick) -> Vec<u64> {
        let words = self.words;
        self.ring.take(
            at,
            |set| set.fill(0),
            |set, ranks| ranks.into_iter().for_each(|r| add_rank(set, words, r)),
        )
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
        if set.len() != self.words {
            return;
        }
        if let Some(slot) = self.ring.slot_in_window(at) {
            if slot.is_empty() {
                *slot = set;
            }
        }
    }

    /// Ticks this structure holds storage for: ring slots with a bitset and
    /// far ticks. At most `WINDOW` plus the far ticks pending.
    #[cfg(test)]
    pub(crate) fn allocated_ticks(&self) -> usize {
        self.ring.allocated_ticks()
    }
}

/// Adds `rank` to `set`, a bitset of `words` words once it holds anything
/// (an empty vector until its slot's first rank).
#[inline]
fn add_rank(set: &mut Vec<u64>, words: usize, rank: u32) {
    if set.is_empty() {
        set.resize(words, 0);
    }
    set[rank as usize / 64] |= 1 << (rank % 64);
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::sim::window::WINDOW;

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

    /// A regression: a far tick cost a bucket for every tick before it.
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

    /// The same, for the wake-ups.
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
