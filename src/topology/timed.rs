//! Trees built from a ready-to-send sequence: Lamé trees of order k and the
//! LogP-optimal tree (Corrected Trees, Sections 3.2.2 and 3.2.3).
//!
//! Every informed process sends once every `step` time units, and a process
//! sent to at time `t` is ready to send itself at `t + delay`. `R(t)` counts
//! the processes ready by time `t`:
//!
//! ```text
//! R(t) = 0                        t < 0
//!      = 1                        0 <= t < delay
//!      = R(t - step) + R(t - delay)   otherwise
//! ```
//!
//! * Lamé of order k: `step = 1, delay = k` (Eq. 1); order 1 is binomial.
//! * LogP-optimal:   `step = o, delay = 2o + L` (Section 3.2.3).
//!
//! Ranks are handed out in the order processes become ready, and among the
//! processes made ready at the same time in the order of their parents'
//! ranks. That is Eq. 2 for `step = 1` (child `r + R(i + k - 1)` of `r` at
//! iteration `i`). For `step > 1` only the processes whose ready time is
//! congruent to `i` modulo `step` send at `i`; `r`'s index `j` among them is
//! fixed, and its child at time `i` is `R(i + delay - 1) + j`.

use crate::types::Rank;

/// The ready-to-send sequence `R(t)` of one (step, delay) pair, long enough for
/// a team of `procs`.
#[derive(Clone, Debug)]
pub struct ReadySequence {
    step: u64,
    delay: u64,
    /// `ready[t] = R(t)`, up to the first `t` with `R(t) >= procs`.
    ready: Vec<u64>,
    /// `class[t] = A(t)`: processes made ready at times `<= t` congruent to `t`
    /// modulo `step`, i.e. the number of senders at time `t`.
    class: Vec<u64>,
}

impl ReadySequence {
    /// The sequence for the given step and delay (both at least 1), computed
    /// until it covers `procs` ranks.
    pub fn new(step: u64, delay: u64, procs: u32) -> Self {
        assert!(
            step >= 1 && delay >= 1,
            "step and delay are validated by the caller"
        );
        let mut s = ReadySequence {
            step,
            delay,
            ready: Vec::new(),
            class: Vec::new(),
        };
        let target = (procs as u64).max(1);
        loop {
            let t = s.ready.len() as i64;
            let r = if t < delay as i64 {
                1
            } else {
                s.r(t - step as i64) + s.r(t - delay as i64)
            };
            s.ready.push(r);
            let a = s.a(t - step as i64) + r - s.r(t - 1);
            s.class.push(a);
            if r >= target {
                return s;
            }
        }
    }

    /// The Lamé sequence of order `k` (Eq. 1).
    pub fn lame(k: u32, procs: u32) -> Self {
        Self::new(1, k as u64, procs)
    }

    /// The LogP-optimal sequence for latency `l` and overhead `o`.
    pub fn optimal(l: u64, o: u64, procs: u32) -> Self {
        Self::new(o, 2 * o + l, procs)
    }

    /// `R(t)`; beyond the computed range it saturates at the last value, which
    /// is already at least the team size.
    pub fn r(&self, t: i64) -> u64 {
        if t < 0 {
            0
        } else {
            self.ready
                .get(t as usize)
                .copied()
                .unwrap_or_else(|| *self.ready.last().unwrap_or(&0))
        }
    }

    fn a(&self, t: i64) -> u64 {
        if t < 0 {
            0
        } else {
            self.class[t as usize]
        }
    }

    /// The time at which `rank` becomes ready to send: the least `t` with `R(t) > rank`.
    pub fn ready_time(&self, rank: Rank) -> u64 {
        self.ready.partition_point(|&r| r <= rank as u64) as u64
    }

    /// `rank`'s index among the processes that send when it does.
    fn sender_index(&self, rank: Rank) -> u64 {
        let c = self.ready_time(rank) as i64;
        self.a(c - self.step as i64) + rank as u64 - self.r(c - 1)
    }

    /// Children of `rank` in send order, for `procs` ranks.
    pub fn children(&self, rank: Rank, procs: u32) -> impl Iterator<Item = Rank> + '_ {
        let j = self.sender_index(rank);
        let start = self.ready_time(rank);
        (0..)
            .map(move |n| self.r((start + n * self.step + self.delay) as i64 - 1) + j)
            .take_while(move |&c| c < procs as u64)
            .map(|c| c as Rank)
    }

    /// Parent of `rank` (`None` for the root).
    pub fn parent(&self, rank: Rank) -> Option<Rank> {
        if rank == 0 {
            return None;
        }
        let t = self.ready_time(rank) as i64;
        let j = rank as u64 - self.r(t - 1);
        // It was sent to at time i by the j-th sender of that time.
        let mut c = t - self.delay as i64;
        while self.a(c - self.step as i64) > j {
            c -= self.step as i64;
        }
        Some((self.r(c - 1) + j - self.a(c - self.step as i64)) as Rank)
    }
}
