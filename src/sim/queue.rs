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
    pub fn push(&mut self, at: Tick, event: E) {
        let at = at as usize;
        if at >= self.buckets.len() {
            self.buckets.resize_with((at + 1).max(2 * self.buckets.len()), Vec::new);
        }
        self.buckets[at].push(event);
        self.pending += 1;
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
        let events = std::mem::take(&mut self.buckets[at as usize]);
        self.pending -= events.len();
        events
    }

    /// Returns a vector from [`BucketQueue::take`], emptied, to tick `at`.
    pub fn recycle(&mut self, at: Tick, mut events: Vec<E>) {
        events.clear();
        let slot = &mut self.buckets[at as usize];
        if slot.is_empty() && slot.capacity() < events.capacity() {
            *slot = events;
        }
    }

    /// Drops every pending event.
    pub fn clear(&mut self) {
        self.buckets.iter_mut().for_each(Vec::clear);
        self.pending = 0;
    }
}
