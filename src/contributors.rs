//! Which ranks' inputs a reduction's result holds: what
//! [`Collectives::all_reduce_into_contributors`](crate::Collectives::all_reduce_into_contributors)
//! and [`Collectives::reduce_into_contributors`](crate::Collectives::reduce_into_contributors)
//! return beside the result.
//!
//! The up-correction reduce already knows the set (Küttler, Härtig, reduce
//! paper Section 4.4): with the list failure scheme every partial result
//! carries the ranks its subtree found failed, and the root's list for the
//! subtree it picks names exactly the inputs its result lacks (each
//! up-correction group has one member per subtree, so no input is counted
//! twice). An allreduce's broadcast carries that list with the value, so
//! every rank that delivers holds the same one (Section 5.1), for every
//! element of a slice. Fault-free the list is empty and costs nothing;
//! each failure adds one rank number to the messages that report it.
//! FTCO's reduce knows its set the same way: each partial carries the
//! nodes its subtree circumvented, and its allreduce's result carries the
//! root's list down. A node team joins its levels' lists: each proxy's
//! process's missing threads, the process level's missing processes
//! (`src/mpi/hier/contributors.rs`, docs/mpi.md).
//! `tests/allreduce_sim.rs` and `tests/reduce_sim.rs` check the list
//! against the dead set rank by rank at every kill point of small teams
//! (`check::lacks_exactly`), `src/sim/ftco_reduce.rs` FTCO's in every
//! simulated run; on threads `tests/kill_matrix.rs`, `tests/data.rs` and
//! `tests/ftco_reduce_threads.rs`, through kills before and during the
//! call; between processes `tests/mpi.rs`.

use crate::protocol::reduce::FailureInfo;
use crate::types::Rank;

/// The ranks whose inputs a reduce's or an allreduce's result holds: every
/// live rank, and each rank that failed during the call either in or out
/// (never in part: the same set for every element). Described by those
/// left out, which are few: ranks that failed before their input reached
/// the rank that folds it in.
///
/// The number of contributors is always known. Which ranks are missing is
/// known when the team lists failures ([`FailureScheme::List`](crate::protocol::reduce::FailureScheme::List), the
/// default) and at most [`LIST_CAPACITY`](crate::protocol::reduce::LIST_CAPACITY)
/// are missing (more are possible only beyond that many failures);
/// otherwise [`Contributors::missing`] is `None` and only the count is
/// known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contributors {
    size: u32,
    count: u32,
    /// Ascending; `None` if not every missing rank is known.
    listed: Option<Vec<Rank>>,
}

impl Contributors {
    /// Every one of `size` ranks contributed.
    pub fn everyone(size: u32) -> Self {
        Contributors {
            size,
            count: 0,
            listed: Some(Vec::new()),
        }
    }

    /// All of `size` ranks but `missing` (ranks below `size`, each once).
    pub(crate) fn all_but(size: u32, missing: &[Rank]) -> Self {
        let mut listed = missing.to_vec();
        listed.sort_unstable();
        listed.dedup();
        Contributors {
            size,
            count: listed.len() as u32,
            listed: Some(listed),
        }
    }

    /// All of `size` ranks but `count` of them, which ones not known.
    pub(crate) fn counted(size: u32, count: u32) -> Self {
        Contributors {
            size,
            count,
            listed: None,
        }
    }

    /// What a reduce's failure information `info` says of the inputs its
    /// result lacks (list or count scheme: the bit scheme counts nothing,
    /// and the engines refuse it before the call).
    pub(crate) fn from_info(size: u32, info: &FailureInfo) -> Self {
        let ranks = info.ranks();
        if ranks.is_empty() && info.count == 0 {
            // Fault-free, every call: nothing to sort.
            return Contributors::everyone(size);
        }
        let c = Contributors::all_but(size, ranks);
        // A pair lists its peer whatever the scheme counts.
        let count = info.count.max(ranks.len() as u32);
        if count as usize > ranks.len() {
            return Contributors::counted(size, count);
        }
        c
    }

    /// The number of ranks of the communicator the call ran on (the ranks
    /// named here are numbered in it).
    pub fn size(&self) -> u32 {
        self.size
    }

    /// How many ranks' inputs the result holds.
    pub fn len(&self) -> u32 {
        self.size - self.count
    }

    /// True if no rank contributed (never, for a result: its own rank's
    /// input is in it).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True if every rank's input is in the result.
    pub fn is_everyone(&self) -> bool {
        self.count == 0
    }

    /// The ranks whose inputs the result lacks, ascending, if known (see
    /// the type's doc).
    pub fn missing(&self) -> Option<&[Rank]> {
        self.listed.as_deref()
    }

    /// Whether `rank`'s input is in the result, if known; `Some(false)`
    /// for a rank out of range.
    pub fn contains(&self, rank: Rank) -> Option<bool> {
        if rank >= self.size {
            return Some(false);
        }
        self.missing().map(|m| m.binary_search(&rank).is_err())
    }

    /// The contributing ranks, ascending, if known.
    pub fn ranks(&self) -> Option<Vec<Rank>> {
        let missing = self.missing()?;
        Some(
            (0..self.size)
                .filter(|r| missing.binary_search(r).is_err())
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_set_is_its_complement() {
        let c = Contributors::all_but(6, &[4, 1, 4]);
        assert_eq!((c.len(), c.is_everyone()), (4, false));
        assert_eq!(c.missing(), Some(&[1, 4][..]));
        assert_eq!(c.ranks(), Some(vec![0, 2, 3, 5]));
        assert_eq!(
            (c.contains(0), c.contains(1), c.contains(6)),
            (Some(true), Some(false), Some(false))
        );
        assert!(Contributors::everyone(3).is_everyone());
    }

    use crate::protocol::reduce::FailureScheme;

    #[test]
    fn counted_beyond_the_list_the_set_is_unknown() {
        let mut info = FailureInfo::default();
        for r in 0..9 {
            info.note_failed(r, false, FailureScheme::List);
        }
        let c = Contributors::from_info(20, &info);
        assert_eq!((c.len(), c.missing(), c.contains(0)), (11, None, None));
        let mut info = FailureInfo::default();
        info.note_failed(3, false, FailureScheme::Count);
        let c = Contributors::from_info(5, &info);
        assert_eq!((c.len(), c.missing()), (4, None));
        let c = Contributors::from_info(5, &FailureInfo::default());
        assert!(c.is_everyone());
    }
}
