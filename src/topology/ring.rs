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
