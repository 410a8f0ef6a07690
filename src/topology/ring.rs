//! The correction ring: ranks `0..P` in order, `P-1` next to `0`
//! (Corrected Trees, Section 3.1).

use crate::types::Rank;

// Both take `rank < procs` and `dist <= procs`, and avoid a division: they
// sit on the simulator's per-message path.

/// The rank `dist` steps to the left (towards lower ranks) of `rank`, for
/// `rank < procs` and `dist <= procs`.
#[inline]
pub fn left(rank: Rank, dist: u32, procs: u32) -> Rank {
    debug_assert!(rank < procs && dist <= procs);
    if dist <= rank {
        rank - dist
    } else {
        (rank as u64 + procs as u64 - dist as u64) as Rank
    }
}

/// The rank `dist` steps to the right (towards higher ranks) of `rank`, for
/// `rank < procs` and `dist <= procs`.
#[inline]
pub fn right(rank: Rank, dist: u32, procs: u32) -> Rank {
    debug_assert!(rank < procs && dist <= procs);
    let r = rank as u64 + dist as u64;
    if r >= procs as u64 {
        (r - procs as u64) as Rank
    } else {
        r as Rank
    }
}

/// The longest run of consecutive ranks on the ring for which `colored` is
/// false: the paper's maximum gap size `g_max`. Dead ranks count as
/// uncolored. 0 when every rank is colored, `procs` when none is.
pub fn max_gap(procs: u32, colored: impl Fn(Rank) -> bool) -> u32 {
    let Some(first) = (0..procs).find(|&r| colored(r)) else {
        return procs;
    };
    // Walk once around the ring starting at a colored rank.
    let (mut best, mut run) = (0, 0);
    for i in 1..=procs {
        if colored(right(first, i, procs)) {
            run = 0;
        } else {
            run += 1;
            best = best.max(run);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_wrap_around() {
        assert_eq!(left(0, 1, 10), 9);
        assert_eq!(left(3, 3, 10), 0);
        assert_eq!(left(3, 10, 10), 3);
        assert_eq!(right(9, 1, 10), 0);
        assert_eq!(right(4, 10, 10), 4);
    }

    #[test]
    fn max_gap_is_cyclic() {
        let colored = |set: &'static [u32]| move |r: u32| set.contains(&r);
        assert_eq!(max_gap(10, colored(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9])), 0);
        assert_eq!(max_gap(10, colored(&[0, 5])), 4);
        // 8, 9 and 0..2 form one run of five across the wrap.
        assert_eq!(max_gap(10, colored(&[3, 7])), 5);
        assert_eq!(max_gap(10, colored(&[])), 10);
    }
}
