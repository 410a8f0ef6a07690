//! The liveness registry: which ranks of a team have failed. A rank is
//! marked the moment it is killed, panics or leaves; everyone can read it.

use crate::sync::{AtomicBool, AtomicU64, Ordering};
use crate::types::Rank;

/// Failed flags of a team plus an epoch that grows with every new failure,
/// so a rank can tell cheaply whether anything changed since it last looked.
#[derive(Debug)]
pub struct Liveness {
    failed: Box<[AtomicBool]>,
    epoch: AtomicU64,
}

impl Liveness {
    /// A registry of `ranks` live ranks.
    pub fn new(ranks: u32) -> Self {
        Liveness {
            failed: (0..ranks).map(|_| AtomicBool::new(false)).collect(),
            epoch: AtomicU64::new(0),
        }
    }

    /// Marks `rank` failed; true if it was not already.
    pub fn mark_failed(&self, rank: Rank) -> bool {
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
