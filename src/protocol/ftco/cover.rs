//! Which nodes a partial result of the FTCO reduce includes, so that no
//! node is counted twice (FTCO, Section 4: "non-idempotent aggregation
//! operators, such as addition, require a specific routine [...] so that
//! each value is used only once"; this is our routine).
//!
//! A node's partial covers its subtree minus the nodes it (or a node below
//! it) circumvented: `subtree(top) \ missing`, every missing node a single
//! node whose children were still asked for (Figures 3-4). Subtrees are
//! nested or disjoint, so whether two such sets meet is a question of
//! ancestry and counts, answered without listing the subtrees.

use crate::types::Rank;

use super::FtcoPlan;

/// A piece a node has folded into its partial: a whole partial of `top`
/// (`subtree(top) \ missing`), or `top`'s own value alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Piece {
    pub(super) top: Rank,
    pub(super) missing: Vec<Rank>,
    pub(super) whole: bool,
}

/// The disjoint pieces one node has folded in, besides its own value.
#[derive(Clone, Debug)]
pub(super) struct Covers {
    me: Rank,
    pieces: Vec<Piece>,
}

impl Covers {
    pub(super) fn new(me: Rank) -> Self {
        Covers {
            me,
            pieces: Vec::new(),
        }
    }

    pub(super) fn pieces(&self) -> &[Piece] {
        &self.pieces
    }

    pub(super) fn push(&mut self, piece: Piece) {
        self.pieces.push(piece);
    }

    /// True when node `z`'s own value is folded in.
    pub(super) fn covers(&self, plan: &FtcoPlan, z: Rank) -> bool {
        z == self.me
            || self
                .pieces
                .iter()
                .any(|p| p.top == z || in_whole(plan, p, z))
    }

    /// True when a whole piece holds `z`: that piece's sender answers for
    /// `z`'s subtree.
    pub(super) fn in_whole_piece(&self, plan: &FtcoPlan, z: Rank) -> bool {
        self.pieces.iter().any(|p| in_whole(plan, p, z))
    }

    /// True when `subtree(top) \ missing` meets what is folded in
    /// (`missing` lies below `top`, without repeats).
    pub(super) fn overlaps(&self, plan: &FtcoPlan, top: Rank, missing: &[Rank]) -> bool {
        let inside = |z: Rank| plan.is_below(z, top) && !missing.contains(&z);
        if inside(self.me) {
            return true;
        }
        self.pieces.iter().any(|p| {
            if !p.whole {
                return inside(p.top);
            }
            // Both are subtrees minus single nodes: they meet unless the
            // lower subtree is all missing from one or the other.
            let (low, other) = if plan.is_below(p.top, top) {
                (p.top, missing)
            } else if plan.is_below(top, p.top) {
                (top, p.missing.as_slice())
            } else {
                return false;
            };
            let own = if low == p.top { &p.missing } else { missing };
            let gone = own.len()
                + other
                    .iter()
                    .filter(|&&m| plan.is_below(m, low) && !own.contains(&m))
                    .count();
            (gone as u32) < plan.subtree_size(low)
        })
    }

    /// What this node's partial misses: the nodes it circumvented
    /// (`suspects`) and those its whole pieces miss, less those folded in
    /// since.
    pub(super) fn missing(&self, plan: &FtcoPlan, suspects: &[Rank]) -> Vec<Rank> {
        let mut out: Vec<Rank> = Vec::new();
        let all = suspects
            .iter()
            .chain(self.pieces.iter().flat_map(|p| p.missing.iter()));
        for &z in all {
            if !out.contains(&z) && !self.covers(plan, z) {
                out.push(z);
            }
        }
        out.sort_unstable();
        out
    }
}

fn in_whole(plan: &FtcoPlan, p: &Piece, z: Rank) -> bool {
    p.whole && plan.is_below(z, p.top) && !p.missing.contains(&z)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{Shape, TreeSpec};
    use crate::types::LogP;

    /// Binary tree of 15: 0 - {1, 2}; 1 - {3, 4}; 3 - {7, 8}; ...
    fn plan() -> FtcoPlan {
        let spec = TreeSpec::interleaved(Shape::KAry(2));
        FtcoPlan::new(spec, 15, LogP::new(2, 1).unwrap(), None).unwrap()
    }

    fn whole(top: Rank, missing: &[Rank]) -> Piece {
        Piece {
            top,
            missing: missing.to_vec(),
            whole: true,
        }
    }

    #[test]
    fn overlap_of_subtrees_less_single_nodes() {
        let plan = plan();
        let t = plan.tree();
        let a = t.children(0)[0];
        let b = t.children(a)[0];
        let (c, d) = (t.children(b)[0], t.children(b)[1]);
        let mut covers = Covers::new(0);
        // a's partial, which circumvented b: it holds c and d, not b.
        covers.push(whole(a, &[b]));
        assert!(covers.overlaps(&plan, b, &[]), "b's partial holds c and d");
        assert!(!covers.overlaps(&plan, b, &[c, d]), "b alone is free");
        assert!(covers.overlaps(&plan, c, &[]));
        assert!(covers.covers(&plan, c) && !covers.covers(&plan, b));
        assert!(covers.in_whole_piece(&plan, d));
        covers.push(Piece {
            top: b,
            missing: vec![],
            whole: false,
        });
        assert!(covers.covers(&plan, b));
        assert_eq!(covers.missing(&plan, &[]), Vec::<Rank>::new());
        // A piece above the folded one: a's subtree with a and b missing
        // still meets a's piece through c.
        let mut below = Covers::new(0);
        below.push(whole(c, &[]));
        assert!(below.overlaps(&plan, a, &[b]));
        assert!(!below.overlaps(&plan, d, &[]));
        assert_eq!(below.missing(&plan, &[a, c]), vec![a]);
    }
}
