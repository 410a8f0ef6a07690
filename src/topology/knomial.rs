//! The interleaved k-nomial tree in closed form (FTCO, Section 5.2.1: "a
//! k-nomial tree is produced by forwarding up to k − 1 messages from each
//! node to its children in each iteration, until all nodes are reached"):
//! in round i, every rank r < k^i sends to r + j·k^i for j = 1..k (k - 1
//! children a round). Rank c's parent is c with its leading base-k digit
//! cleared. k = 2 is the binomial tree, which a test checks.

use crate::types::Rank;

/// Children of `rank` in send order (round by round, j ascending), for
/// `procs` ranks of the k-nomial tree, k >= 2.
pub fn children(rank: Rank, k: u32, procs: u32) -> impl Iterator<Item = Rank> {
    let (k, rank, procs) = (u64::from(k), u64::from(rank), u64::from(procs));
    // The first round after `rank` has the value: the least k^i > rank.
    let mut first = 1u64;
    while first <= rank {
        first *= k;
    }
    std::iter::successors(Some(first), move |&p| Some(p * k))
        .take_while(move |&p| rank + p < procs)
        .flat_map(move |p| (1..k).map(move |j| rank + j * p))
        .take_while(move |&c| c < procs)
        .map(|c| c as Rank)
}

/// Parent of `rank` in the k-nomial tree: `rank` with its leading base-k
/// digit cleared (`None` for the root).
pub fn parent(rank: Rank, k: u32) -> Option<Rank> {
    if rank == 0 {
        return None;
    }
    let (k, r) = (u64::from(k), u64::from(rank));
    let mut top = 1u64;
    while top * k <= r {
        top *= k;
    }
    Some((r % top) as Rank)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{binomial, interleave, Shape, Tree, TreeSpec};

    #[test]
    fn k_2_is_binomial_and_parents_match_children() {
        for procs in 1..200u32 {
            for r in 0..procs {
                let two: Vec<Rank> = children(r, 2, procs).collect();
                let bin: Vec<Rank> = binomial::children(r, procs).collect();
                assert_eq!(two, bin, "P = {procs}, rank {r}");
                assert_eq!(parent(r, 2), binomial::parent(r));
                for k in 2..7 {
                    for c in children(r, k, procs) {
                        assert_eq!(parent(c, k), Some(r), "k = {k}, P = {procs}");
                    }
                }
            }
            for k in 2..7 {
                let reached: u32 = (0..procs)
                    .map(|r| children(r, k, procs).count() as u32)
                    .sum();
                assert_eq!(reached, procs - 1, "every non-root once, k = {k}");
            }
        }
        // 3-nomial, 9 ranks: 0 sends to 1, 2, then 3, 6; 1 to 4, 7.
        assert_eq!(children(0, 3, 9).collect::<Vec<_>>(), vec![1, 2, 3, 6]);
        assert_eq!(children(1, 3, 9).collect::<Vec<_>>(), vec![4, 7]);
        assert_eq!(parent(7, 3), Some(1));
    }

    /// Interleaved in the sense of Corrected Trees Definition 1, as the
    /// binomial tree it generalizes.
    #[test]
    fn is_interleaved() {
        let logp = crate::types::LogP::PAPER;
        for k in 2..7 {
            let spec = TreeSpec::interleaved(Shape::KNomial(k));
            assert_eq!(spec.to_string().parse::<TreeSpec>().unwrap(), spec);
            for procs in 1..300 {
                let tree = Tree::build(spec, procs, logp).unwrap();
                assert_eq!(interleave::check(&tree), None, "k = {k}, P = {procs}");
            }
        }
        let bad = TreeSpec::interleaved(Shape::KNomial(1));
        assert!(Tree::build(bad, 8, logp).is_err());
        assert!("knomial:1".parse::<TreeSpec>().is_err());
    }
}
