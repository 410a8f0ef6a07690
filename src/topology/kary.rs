//! The interleaved k-ary tree (Corrected Trees, Section 3.2.1).
//!
//! Level ℓ holds the k^ℓ consecutive ranks `S(ℓ-1)..S(ℓ)` with
//! `S(ℓ) = 1 + k + ... + k^ℓ`. A process `r` on level ℓ has the children
//! `r + i·k^ℓ` for `i = 1..=k` (the paper prints `0 < i < k`, which would give
//! the root only k-1 children and contradicts its own "k^ℓ processes at level
//! ℓ"; see `docs/algorithms.md`). All descendants of `r` are congruent to `r`
//! modulo k^ℓ, so the subtree of a failed level-ℓ process leaves gaps of at
//! most one rank in every k^ℓ.

use crate::types::Rank;

/// The level of `rank`.
fn level_of(rank: u64, k: u64) -> u32 {
    let (mut level, mut start, mut width) = (0u32, 0u64, 1u64);
    while rank >= start + width {
        start += width;
        width *= k;
        level += 1;
    }
    level
}

/// Children of `rank` in send order (nearest first), for `procs` ranks.
pub fn children(rank: Rank, k: u32, procs: u32) -> impl Iterator<Item = Rank> {
    let (k64, r) = (k as u64, rank as u64);
    let level = level_of(r, k64);
    let stride = k64.pow(level);
    (1..=k64)
        .map(move |i| r + i * stride)
        .take_while(move |&c| c < procs as u64)
        .map(|c| c as Rank)
}

/// Parent of `rank` (`None` for the root).
pub fn parent(rank: Rank, k: u32) -> Option<Rank> {
    if rank == 0 {
        return None;
    }
    let (k64, r) = (k as u64, rank as u64);
    let level = level_of(r, k64);
    // The parent is the one rank of level ℓ-1 congruent to r modulo k^(ℓ-1).
    let width = k64.pow(level - 1);
    let base: u64 = (0..level - 1).map(|m| k64.pow(m)).sum();
    Some((base + (r - base) % width) as Rank)
}
