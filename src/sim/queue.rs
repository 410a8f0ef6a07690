//! An event queue bucketed by time. LogP times are small integers and every
//! new event lies in the future, so a vector of per-tick buckets beats a heap:
//! push and pop are O(1) and the buckets keep their capacity across runs.

use crate::types::Tick;

/// Events by the tick they fire at. Events of one tick come out in the order
/// they were pushed, which keeps a run deterministic.
#[derive(Debug)]
pub struct BucketQueue<E> {
    buckets: Vec<Vec<E>>,
    pending: usize,
}

impl<E> Default for BucketQueue<E> {
    fn default() -> Self {
        BucketQueue {
            buckets: Vec::new(),
            pending: 0,
        }
    }
}

impl<E> BucketQueue<E> {
    /// Schedules `event` at `at`.
    #[inline]
    pub fn push(&mut self, at: Tick, event: E) {
        let at = at as usize;
        if at >= self.buckets.len() {
            self.grow(at);
        }
        self.buckets[at].push(event);
        self.pending += 1;
    }

    #[cold]
    fn grow(&mut self, at: usize) {
        self.buckets
            .resize_with((at + 1).max(2 * self.buckets.len()), Vec::new);
    }

    /// The first tick after `now` that has events, if any event is pending.
    pub fn next_after(&self, now: Tick) -> Option<Tick> {
        if self.pending == 0 {
            return None;
        }
        (now as usize + 1..self.buckets.len())
            .find(|&t| !self.buckets[t].is_empty())
            .map(|t| t as Tick)
    }

    /// Takes the events of tick `at`. Hand the vector back with
    /// [`BucketQueue::recycle`] to keep its capacity.
    pub fn take(&mut self, at: Tick) -> Vec<E> {
        let Some(slot) = self.buckets.get_mut(at as usize) else {
            return Vec::new();
        };
        let events = std::mem::take(slot);
        self.pending -= events.len();
        events
    }

    /// Returns a vector from [`BucketQueue::take`], emptied, to tick `at`.
    pub fn recycle(&mut self, at: Tick, mut events: Vec<E>) {
        events.clear();
        if let Some(slot) = self.buckets.get_mut(at as usize) {
            if slot.is_empty() && slot.capacity() < events.capacity() {
                *slot = events;
            }
        }
    }

    /// Drops every pending event.
    pub fn clear(&mut self) {
        self.buckets.iter_mut().for_each(Vec::clear);
        self.pending = 0;
    }
}

/// Ranks to wake, by tick, as one bitset per tick: setting a bit is O(1), a
/// rank set twice for a tick is woken once, and a tick's ranks come out in
/// rank order, which keeps the walk over per-rank state sequential.
#[derive(Debug, Default)]
pub struct WakeSets {
    words: usize,
    sets: Vec<Vec<u64>>,
    counts: Vec<u32>,
    pending: usize,
}

impl WakeSets {
    /// Empties every tick and sizes the sets for `ranks` ranks.
    pub fn reset(&mut self, ranks: usize) {
        let words = ranks.div_ceil(64);
        if words != self.words {
            self.sets.clear();
            self.counts.clear();
            self.words = words;
        }
        for (set, count) in self.sets.iter_mut().zip(&mut self.counts) {
            if *count > 0 {
                set.fill(0);
                *count = 0;
            }
        }
        self.pending = 0;
    }

    /// Wakes `rank` at `at`.
    #[inline]
    pub fn set(&mut self, at: Tick, rank: u32) {
        let at = at as usize;
        if at >= self.sets.len() {
            self.grow(at);
        }
        let set = &mut self.sets[at];
        if set.is_empty() {
            set.resize(self.words, 0);
        }
        let (w, bit) = (rank as usize / 64, 1u64 << (rank % 64));
        if set[w] & bit == 0 {
            set[w] |= bit;
            self.counts[at] += 1;
            self.pending += 1;
        }
    }

    #[cold]
    fn grow(&mut self, at: usize) {
        let len = (at + 1).max(2 * self.sets.len());
        self.sets.resize_with(len, Vec::new);
        self.counts.resize(len, 0);
    }

    /// The first tick after `now` with a rank to wake.
    pub fn next_after(&self, now: Tick) -> Option<Tick> {
        if self.pending == 0 {
            return None;
        }
        (now as usize + 1..self.counts.len())
            .find(|&t| self.counts[t] > 0)
            .map(|t| t as Tick)
    }

    /// Takes the set of tick `at`; walk it with [`WakeSets::drain`] and hand
    /// it back with [`WakeSets::recycle`].
    pub fn take(&mut self, at: Tick) -> Vec<u64> {
        match self.sets.get_mut(at as usize) {
            Some(set) => {
                self.pending -= self.counts[at as usize] as usize;
                self.counts[at as usize] = 0;
                std::mem::take(set)
            }
            None => Vec::new(),
        }
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
        if let Some(slot) = self.sets.get_mut(at as usize) {
            if slot.is_empty() {
                *slot = set;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
