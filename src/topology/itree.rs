//! The I(f)-tree of the up-correction reduce (Küttler, Härtig, Section 4.5):
//! the root has f + 1 children whose subtrees differ in size by at most one.
//!
//! Virtual ranks, root 0. Subtree `k` (1..=f+1) holds the ranks `v` with
//! `(v - 1) mod (f + 1) = k - 1`, i.e. `k, k + (f+1), k + 2(f+1), ...`; so the
//! `j`-th member of every up-correction group sits in subtree `j + 1`, as
//! Theorem 1 requires. Inside a subtree the members, indexed `0, 1, 2, ...`,
//! form a tree of any [`TreeSpec`] shape (binomial by default), rooted at the
//! root's child `k`. With fewer than f + 2 ranks the root has P - 1 children,
//! each a subtree of one.

use crate::error::ConfigError;
use crate::topology::{Tree, TreeSpec};
use crate::types::{LogP, Rank};

/// An I(f)-tree over `procs` virtual ranks.
#[derive(Clone, Debug)]
pub struct IfTree {
    procs: u32,
    /// f + 1.
    width: u32,
    /// The shape inside each subtree, for the two subtree sizes: `large` for
    /// subtrees `1..=large_count`, `small` for the rest.
    large: Tree,
    small: Tree,
    large_count: u32,
}

impl IfTree {
    /// The I(f)-tree for `procs >= 1` ranks, with subtrees shaped as `spec`.
    pub fn build(spec: TreeSpec, procs: u32, f: u32, logp: LogP) -> Result<Self, ConfigError> {
        if procs == 0 {
            return Err(ConfigError::ZeroRanks);
        }
        let width = f + 1;
        let below = procs - 1;
        let small = below / width;
        let large_count = below % width;
        let size = |m: u32| Tree::build(spec, m.max(1), logp);
        Ok(IfTree {
            procs,
            width,
            large: size(small + 1)?,
            small: size(small)?,
            large_count,
        })
    }

    /// Number of ranks.
    pub fn procs(&self) -> u32 {
        self.procs
    }

    /// The root's children: `1..=min(f + 1, P - 1)`.
    pub fn root_children(&self) -> std::ops::RangeInclusive<Rank> {
        1..=self.width.min(self.procs - 1)
    }

    /// The subtree (`1..=f+1`, named by the root's child spanning it) that
    /// holds non-root `v`.
    pub fn subtree_of(&self, v: Rank) -> Rank {
        debug_assert!(v > 0);
        (v - 1) % self.width + 1
    }

    /// Members of subtree `k`.
    pub fn subtree_size(&self, k: Rank) -> u32 {
        if k == 0 || k >= self.procs || k > self.width {
            return 0;
        }
        (self.procs - 1 - k) / self.width + 1
    }

    fn inner(&self, k: Rank) -> &Tree {
        if k <= self.large_count {
            &self.large
        } else {
            &self.small
        }
    }

    /// Parent of `v` (`None` for the root).
    pub fn parent(&self, v: Rank) -> Option<Rank> {
        if v == 0 {
            return None;
        }
        let k = self.subtree_of(v);
        let j = (v - 1) / self.width;
        Some(match self.inner(k).parent(j) {
            None => 0,
            Some(pj) => k + pj * self.width,
        })
    }

    /// Children of `v`, in the order of the inner tree.
    pub fn children(&self, v: Rank) -> impl Iterator<Item = Rank> + '_ {
        let (inner, k): (&[Rank], Rank) = if v == 0 {
            (&[], 0)
        } else {
            let k = self.subtree_of(v);
            (self.inner(k).children((v - 1) / self.width), k)
        };
        let root_end = if v == 0 {
            *self.root_children().end()
        } else {
            0
        };
        (1..=root_end).chain(inner.iter().map(move |&j| k + j * self.width))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Groups;

    fn build(procs: u32, f: u32) -> IfTree {
        IfTree::build("binomial".parse().unwrap(), procs, f, LogP::PAPER).unwrap()
    }

    #[test]
    fn paper_example_seven_ranks_f1() {
        // Figure 2: 0 -> {1, 2}; 1 -> {3, 5}; 2 -> {4, 6}.
        let t = build(7, 1);
        assert_eq!(t.children(0).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(t.children(2).collect::<Vec<_>>(), [4, 6]);
        assert_eq!(t.parent(5), Some(1));
    }

    #[test]
    fn is_an_i_f_tree_with_one_group_member_per_subtree() {
        for procs in 1..70 {
            for f in 0..5 {
                let t = build(procs, f);
                let groups = Groups::new(procs, f);
                // A spanning tree: every non-root reaches 0, parent/children agree.
                for v in 1..procs {
                    let p = t.parent(v).unwrap();
                    assert!(t.children(p).any(|c| c == v), "P={procs} f={f} v={v}");
                    let mut top = v;
                    while let Some(p) = t.parent(top).filter(|&p| p != 0) {
                        assert_eq!(t.subtree_of(p), t.subtree_of(v), "stays in its subtree");
                        top = p;
                    }
                    assert_eq!(top, t.subtree_of(v));
                    // Group peers live in other subtrees.
                    for q in groups.peers(v).filter(|&q| q != 0) {
                        assert_ne!(t.subtree_of(q), t.subtree_of(v));
                    }
                }
                let sizes: Vec<u32> = t.root_children().map(|k| t.subtree_size(k)).collect();
                assert_eq!(sizes.len() as u32, (f + 1).min(procs - 1));
                assert_eq!(sizes.iter().sum::<u32>(), procs - 1);
                let (lo, hi) = (sizes.iter().min(), sizes.iter().max());
                if let (Some(h), Some(l)) = (hi, lo) {
                    assert!(h - l <= 1, "P={procs} f={f}");
                }
            }
        }
    }
}
