//! Up-correction groups (Küttler, Härtig, *Fault-tolerant Reduce and
//! Allreduce operations based on correction*, Section 4.2).
//!
//! Ranks are virtual: the root of the reduce is 0. Every non-root `v` with
//! group number `(v - 1) / (f + 1)` belongs to that group; groups hold `f + 1`
//! consecutive ranks, so each group has exactly one member in each subtree of
//! the [`IfTree`](crate::topology::IfTree). If the last group is short, the
//! root joins it; otherwise the root belongs to no group.

use crate::types::Rank;

/// The up-correction groups of `procs` ranks for a fault budget `f`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Groups {
    procs: u32,
    /// f + 1.
    width: u32,
}

impl Groups {
    /// Groups of `f + 1` among `procs` ranks (root 0). `procs >= 1`.
    pub fn new(procs: u32, f: u32) -> Self {
        debug_assert!(procs >= 1);
        Groups {
            procs,
            width: f + 1,
        }
    }

    /// Number of full groups: floor((P - 1) / (f + 1)).
    pub fn full_groups(&self) -> u32 {
        (self.procs - 1) / self.width
    }

    /// `a` of Theorem 5: the size of the root's group, root included
    /// (1 when the root is in no group).
    pub fn root_group_size(&self) -> u32 {
        (self.procs - 1) % self.width + 1
    }

    /// True if the root exchanges values with the short last group.
    pub fn root_in_group(&self) -> bool {
        self.root_group_size() > 1
    }

    /// True if one group holds every rank (P <= f + 1): then every member's
    /// up-corrected value is already the whole reduction.
    pub fn covers_team(&self) -> bool {
        self.root_group_size() == self.procs
    }

    /// The group number of `v`, or `None` for a root in no group. The root's
    /// group, if any, is the last one ([`Groups::full_groups`]).
    pub fn group_of(&self, v: Rank) -> Option<u32> {
        if v == 0 {
            self.root_in_group().then(|| self.full_groups())
        } else {
            Some((v - 1) / self.width)
        }
    }

    /// The other members of `v`'s group, in increasing order (the root, if a
    /// member, first). Empty for a root in no group.
    pub fn peers(&self, v: Rank) -> impl Iterator<Item = Rank> {
        let (root, first, end) = match self.group_of(v) {
            None => (false, 1, 1),
            Some(g) => {
                let first = g * self.width + 1;
                let end = (first + self.width).min(self.procs);
                (g == self.full_groups() && self.root_in_group(), first, end)
            }
        };
        root.then_some(0)
            .into_iter()
            .chain(first..end)
            .filter(move |&p| p != v)
    }

    /// Messages sent in the fault-free up-correction phase (Theorem 5):
    /// f(f+1)·floor((P-1)/(f+1)) + a(a-1).
    pub fn fault_free_messages(&self) -> u64 {
        let f = (self.width - 1) as u64;
        let a = self.root_group_size() as u64;
        f * (f + 1) * self.full_groups() as u64 + a * (a - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_example_seven_ranks_f1() {
        // Figure 2: {1,2}, {3,4}, {5,6}; the root is in no group.
        let g = Groups::new(7, 1);
        assert!(!g.root_in_group());
        assert_eq!(g.peers(1).collect::<Vec<_>>(), [2]);
        assert_eq!(g.peers(4).collect::<Vec<_>>(), [3]);
        assert_eq!(g.peers(0).count(), 0);
        assert_eq!(g.fault_free_messages(), 6);
    }

    #[test]
    fn short_last_group_takes_the_root() {
        let g = Groups::new(8, 2); // {1,2,3}, {4,5,6}, {7, root}
        assert_eq!(g.root_group_size(), 2);
        assert_eq!(g.peers(7).collect::<Vec<_>>(), [0]);
        assert_eq!(g.peers(0).collect::<Vec<_>>(), [7]);
        assert_eq!(g.peers(5).collect::<Vec<_>>(), [4, 6]);
    }

    #[test]
    fn membership_is_symmetric_and_counts_match_theorem_5() {
        for procs in 1..40 {
            for f in 0..5 {
                let g = Groups::new(procs, f);
                let mut sent = 0u64;
                for v in 0..procs {
                    for p in g.peers(v) {
                        assert!(g.peers(p).any(|q| q == v), "P={procs} f={f} {v}<->{p}");
                        sent += 1;
                    }
                }
                assert_eq!(sent, g.fault_free_messages(), "P={procs} f={f}");
                assert_eq!(g.covers_team(), procs <= f + 1);
            }
        }
    }
}
