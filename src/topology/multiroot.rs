//! The multi-root k-nomial tree (FTCO, Section 5.2.1: "Another useful
//! topology which improves the latency, the multi-root, uses a collection
//! of trees with fully-connected roots").
//!
//! `multiroot:K` over P ranks: the first `R = min(K, P)` ranks are the
//! roots, pairwise connected; every other rank `c` hangs below root
//! `c mod K`, and the ranks `r, r + K, r + 2K, ...` of root `r` form a
//! K-nomial tree of their own ([`knomial`], numbered `(c - r) / K`). It is
//! the K-nomial tree whose root's first round (its K − 1 children 1..K-1,
//! the other roots) is replaced by the clique of the K roots: a rank's
//! parent in the multi-root tree is its [`knomial`] parent, except that a
//! root has none.
//!
//! # What fits a single-parent [`Tree`](crate::topology::Tree)
//!
//! A root of the multi-root tree has K − 1 peers and no parent, so the
//! whole shape is not a tree. What a [`Tree`](crate::topology::Tree) of
//! spec `multiroot:K` holds is its one-source view: root 0 reaches the
//! other roots directly (they are fully connected) and first, then its own
//! children; every other rank as in its own root's tree. That is exactly
//! the K-nomial tree, so a broadcast from root 0 and a reduce to root 0 on
//! `multiroot:K` are those of `knomial:K`. The clique matters only where
//! every root needs the result: an allreduce. There the roots each reduce
//! their own tree, exchange their partials all-to-all (K − 1 sends and
//! receives each, one latency), and each sends the result down its own
//! tree: one hop of the tree less than reducing to root 0 and broadcasting
//! from it. The FTCO allreduce does that when its plan's tree has several
//! roots ([`roots`]; `protocol::ftco`).
//!
//! The authors' simulator (Appendix C) counts its radix as children per
//! round and makes that many ranks roots; in our counting (K − 1 children
//! a round, as `knomial:K`) that would be K − 1 roots. We take K roots:
//! the clique then replaces exactly one round of the K-nomial tree, and
//! `multiroot:K` is `knomial:K` for everything but the allreduce's
//! exchange (`docs/algorithms.md`). Only the interleaved numbering is
//! built (`inorder-multiroot:K` parses but does not build): it keeps the
//! roots at ranks `0..K`.
//!
//! [`knomial`]: crate::topology::knomial

use crate::topology::knomial;
use crate::types::Rank;

/// How many roots `multiroot:K` has over `procs` ranks: `min(K, procs)`.
pub fn roots(k: u32, procs: u32) -> u32 {
    k.min(procs)
}

/// The root whose tree `rank` belongs to: `rank mod K` (a root is its own).
pub fn root_of(rank: Rank, k: u32) -> Rank {
    rank % k
}

/// The parent of `rank` in the multi-root tree: its K-nomial parent, or
/// `None` for a root (ranks below K).
pub fn parent(rank: Rank, k: u32) -> Option<Rank> {
    if rank < k {
        None
    } else {
        knomial::parent(rank, k)
    }
}

/// The children of `rank` within its own root's tree, in send order (a
/// root's peers are not among them), for `procs` ranks.
pub fn children(rank: Rank, k: u32, procs: u32) -> impl Iterator<Item = Rank> {
    knomial::children(rank, k, procs).filter(move |&c| c >= k)
}

/// The other roots, in the order root `rank` sends its partial to them:
/// `rank + 1, rank + 2, ...` around the `roots` roots, so that every root
/// hears first from a different peer.
pub fn peers(rank: Rank, roots: u32) -> impl Iterator<Item = Rank> {
    (1..roots).map(move |i| (rank + i) % roots)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{interleave, Shape, Tree, TreeSpec};
    use crate::types::LogP;

    /// Every rank is reached exactly once: as a root, or as the child of
    /// exactly one rank of its own root's tree; the parent chains end at
    /// `c mod K`; each root's tree, renumbered `(c - r) / K`, is the
    /// K-nomial tree over its ranks (the paper's "collection of trees").
    #[test]
    fn a_collection_of_knomial_trees_with_a_clique_of_roots() {
        for k in 2..7u32 {
            for procs in 1..300u32 {
                let r = roots(k, procs);
                let mut reached = vec![0u32; procs as usize];
                for root in 0..r {
                    reached[root as usize] += 1;
                    let peers: Vec<Rank> = peers(root, r).collect();
                    assert_eq!(peers.len() as u32, r - 1);
                    assert!(peers.iter().all(|&p| p < r && p != root));
                }
                for p in 0..procs {
                    for c in children(p, k, procs) {
                        reached[c as usize] += 1;
                        assert_eq!(parent(c, k), Some(p), "k = {k}, P = {procs}");
                        assert_eq!(root_of(c, k), root_of(p, k));
                    }
                }
                assert!(reached.iter().all(|&n| n == 1), "k = {k}, P = {procs}");
                for c in 0..procs {
                    let mut top = c;
                    while let Some(p) = parent(top, k) {
                        top = p;
                    }
                    assert_eq!(top, root_of(c, k));
                    let root = root_of(c, k);
                    let m = (c - root) / k;
                    let size = (procs - root).div_ceil(k);
                    let own: Vec<Rank> = children(c, k, procs).map(|x| (x - root) / k).collect();
                    let kn: Vec<Rank> = knomial::children(m, k, size).collect();
                    assert_eq!(own, kn, "k = {k}, P = {procs}, rank {c}");
                }
            }
        }
    }

    /// The one-source view ([`Tree`]) is the K-nomial tree: root 0 sends to
    /// the other roots first; the spec round-trips; it is interleaved.
    #[test]
    fn one_source_view_is_the_knomial_tree() {
        let logp = LogP::PAPER;
        for k in 2..6 {
            let spec = TreeSpec::interleaved(Shape::MultiRoot(k));
            assert_eq!(spec.to_string(), format!("multiroot:{k}"));
            assert_eq!(spec.to_string().parse::<TreeSpec>().unwrap(), spec);
            let inorder: TreeSpec = format!("inorder-multiroot:{k}").parse().unwrap();
            assert_eq!(inorder.to_string().parse::<TreeSpec>().unwrap(), inorder);
            assert!(Tree::build(inorder, 8, logp).is_err(), "roots stay 0..K");
            for procs in 1..200 {
                let tree = Tree::build(spec, procs, logp).unwrap();
                let kn =
                    Tree::build(TreeSpec::interleaved(Shape::KNomial(k)), procs, logp).unwrap();
                assert_eq!(tree.roots(), roots(k, procs));
                assert_eq!(kn.roots(), 1);
                for r in 0..procs {
                    assert_eq!(tree.children(r), kn.children(r));
                    let own: Vec<Rank> = children(r, k, procs).collect();
                    let want: Vec<Rank> = if r == 0 {
                        tree.children(0)[(tree.roots() - 1) as usize..].to_vec()
                    } else {
                        tree.children(r).to_vec()
                    };
                    assert_eq!(own, want);
                }
                let first: Vec<Rank> = tree
                    .children(0)
                    .iter()
                    .take(k as usize - 1)
                    .copied()
                    .collect();
                let others: Vec<Rank> = (1..tree.roots()).collect();
                assert_eq!(first[..others.len()], others[..]);
                assert_eq!(interleave::check(&tree), None, "k = {k}, P = {procs}");
            }
        }
        assert!("multiroot:1".parse::<TreeSpec>().is_err());
        assert!("multiroot".parse::<TreeSpec>().is_err());
    }
}
