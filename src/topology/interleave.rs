//! A brute-force check of Definition 1 (Corrected Trees, Section 3.2): a tree
//! is interleaved iff, for every subtree `T_s`, any two nodes adjacent on the
//! ring `R_s` of `T_s` (its nodes in rank order, cyclically) descend one from
//! the other or have `root(T_s)` as their only common ancestor.

use crate::topology::Tree;
use crate::types::Rank;

/// A pair of ranks that breaks Definition 1, and the subtree root where it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The root of the subtree `T_s`.
    pub subtree: Rank,
    /// Two nodes adjacent on `R_s`.
    pub pair: (Rank, Rank),
}

/// The first violation of Definition 1, or `None` if `tree` is interleaved.
/// Takes O(P · depth · log P): meant for tests up to a few thousand ranks.
pub fn check(tree: &Tree) -> Option<Violation> {
    let (_, depth) = tree.levels();
    let lca = |mut a: Rank, mut b: Rank| {
        while depth[a as usize] > depth[b as usize] {
            a = tree.parent(a).unwrap_or(0);
        }
        while depth[b as usize] > depth[a as usize] {
            b = tree.parent(b).unwrap_or(0);
        }
        while a != b {
            a = tree.parent(a).unwrap_or(0);
            b = tree.parent(b).unwrap_or(0);
        }
        a
    };
    let mut nodes = Vec::new();
    for s in 0..tree.procs() {
        nodes.clear();
        let mut stack = vec![s];
        while let Some(r) = stack.pop() {
            nodes.push(r);
            stack.extend_from_slice(tree.children(r));
        }
        if nodes.len() < 2 {
            continue;
        }
        nodes.sort_unstable();
        for w in 0..nodes.len() {
            let (a, b) = (nodes[w], nodes[(w + 1) % nodes.len()]);
            let l = lca(a, b);
            // l == a or l == b: one descends from the other.
            if l != a && l != b && l != s {
                return Some(Violation {
                    subtree: s,
                    pair: (a, b),
                });
            }
        }
    }
    None
}

/// An interleaved numbering of any tree whose subtrees are not too unequal.
///
/// Works bottom-up: the ring order of a node's subtree starts with the node,
/// then takes its children's subtrees from the last sent to the first, each
/// time merging the order `A` built so far with the next child's order `B` as
/// `A0 B0 A1 B1 ...`. Relative orders inside `A` and `B` are kept, and no two
/// nodes of `B` end up adjacent as long as `|B| <= |A|`, so Definition 1 holds
/// if it did for the parts (the induction of Lemma 1). Our trees meet
/// `|B| <= |A|`: a child sent to earlier never has a larger subtree than
/// its parent together with its later children (tested for every shape). For
/// the binomial tree this gives Eq. 2 back. Returns `label[r]`, the new rank of `r`; the root stays 0.
pub fn merge_numbering(tree: &Tree) -> Vec<Rank> {
    let p = tree.procs() as usize;
    let mut order = vec![0 as Rank];
    let mut i = 0;
    while i < order.len() {
        order.extend_from_slice(tree.children(order[i]));
        i += 1;
    }
    let mut ring: Vec<Vec<Rank>> = vec![Vec::new(); p];
    for &r in order.iter().rev() {
        let mut acc = vec![r];
        for &c in tree.children(r).iter().rev() {
            let b = std::mem::take(&mut ring[c as usize]);
            let mut merged = Vec::with_capacity(acc.len() + b.len());
            for (j, &a) in acc.iter().enumerate() {
                merged.push(a);
                if let Some(&x) = b.get(j) {
                    merged.push(x);
                }
            }
            merged.extend(b.iter().skip(acc.len()));
            acc = merged;
        }
        ring[r as usize] = acc;
    }
    let mut label = vec![0 as Rank; p];
    for (new, &old) in ring[0].iter().enumerate() {
        label[old as usize] = new as Rank;
    }
    label
}
