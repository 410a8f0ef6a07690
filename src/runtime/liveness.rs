//! The liveness registry: which ranks of a team have failed. A rank is
//! marked the moment it is killed, panics or leaves; everyone can read it.

use crate::sync::{AtomicBool, AtomicU64, Ordering};
use crate::types::{Rank, Tick};

/// Failed flags of a team plus an epoch that grows with every new failure,
/// so a rank can tell cheaply whether anything changed since it last looked.
#[derive(Debug)]
pub struct Liveness {
    failed: Box<[AtomicBool]>,
    /// When each rank was marked (the team's clock; `Tick::MAX`: not yet).
    failed_at: Box<[AtomicU64]>,
    epoch: AtomicU64,
}

impl Liveness {
    /// A registry of `ranks` live ranks.
    pub fn new(ranks: u32) -> Self {
        Liveness {
            failed: (0..ranks).map(|_| AtomicBool::new(false)).collect(),
            failed_at: (0..ranks).map(|_| AtomicU64::new(Tick::MAX)).collect(),
            epoch: AtomicU64::new(0),
        }
    }

    /// Marks `rank` failed at time `at` (the team's clock); true if it was
    /// not already.
    pub fn mark_failed(&self, rank: Rank, at: Tick) -> bool {
        // The time first: a reader that sees the flag sees when.
        self.failed_at[rank as usize].fetch_min(at, Ordering::AcqRel);
        let fresh = !self.failed[rank as usize].swap(true, Ordering::AcqRel);
        if fresh {
            self.epoch.fetch_add(1, Ordering::AcqRel);
        }
        fresh
    }

    /// True if `rank` has failed.
    #[inline]
    pub fn is_failed(&self, rank: Rank) -> bool {
        self.failed[rank as usize].load(Ordering::Acquire)
    }

    /// When `rank` was marked failed (the team's clock), if it was.
    pub fn failed_at(&self, rank: Rank) -> Option<Tick> {
        let at = self.failed_at[rank as usize].load(Ordering::Acquire);
        (at != Tick::MAX).then_some(at)
    }

    /// Grows by one with every failure.
    #[inline]
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Every failed rank, in order.
    pub fn failed(&self) -> Vec<Rank> {
        (0..self.failed.len() as Rank)
            .filter(|&r| self.is_failed(r))
            .collect()
    }
}
