//! The interleaved binomial tree in its closed form (Corrected Trees,
//! Section 3.2.2): `r` sends to `r + 2^i` for every `i` with `2^i > r`.
//! It equals the Lamé tree of order 1, which a test checks.

use crate::types::Rank;

/// Children of `rank` in send order, for `procs` ranks.
pub fn children(rank: Rank, procs: u32) -> impl Iterator<Item = Rank> {
    let first = if rank == 0 {
        0
    } else {
        64 - (rank as u64).leading_zeros()
    };
    (first..64)
        .map(move |i| rank as u64 + (1u64 << i))
        .take_while(move |&c| c < procs as u64)
        .map(|c| c as Rank)
}

/// Parent of `rank`: the rank with its highest set bit cleared.
pub fn parent(rank: Rank) -> Option<Rank> {
    (rank != 0).then(|| rank & !(1 << (31 - rank.leading_zeros())))
}
