//! The random stream an engine hands a core that draws (gossip picks its
//! peers at random). A core never seeds itself: the engine derives one
//! stream per rank and operation from the run's seed, so the same seed gives
//! the same run in every engine.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::types::{OpId, Rank};

/// A seeded pseudo-random stream (xoshiro256++), deterministic for a given
/// (seed, rank, operation).
#[derive(Clone, Debug)]
pub struct RandomStream(Xoshiro256PlusPlus);

impl RandomStream {
    /// The stream of `rank` in operation `op` of a run seeded with `seed`:
    /// streams of different ranks or operations are independent.
    pub fn for_rank(seed: u64, rank: Rank, op: OpId) -> Self {
        let key = seed
            ^ splitmix64((u64::from(op) << 32) | u64::from(rank)).rotate_left(17)
            ^ 0x5851_f42d_4c95_7f2d;
        RandomStream(Xoshiro256PlusPlus::seed_from_u64(splitmix64(key)))
    }

    /// A uniform number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u32) -> u32 {
        self.0.gen_range(0..n)
    }

    /// A uniform rank of `0..procs` other than `me` (`procs >= 2`).
    pub fn peer_except(&mut self, me: Rank, procs: u32) -> Rank {
        let r = self.below(procs - 1);
        if r >= me {
            r + 1
        } else {
            r
        }
    }
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_repeat_per_seed_and_differ_per_rank() {
        let draw = |seed, rank, op| {
            let mut s = RandomStream::for_rank(seed, rank, op);
            (0..16).map(|_| s.peer_except(rank, 64)).collect::<Vec<_>>()
        };
        assert_eq!(draw(1, 3, 0), draw(1, 3, 0));
        assert_ne!(draw(1, 3, 0), draw(1, 4, 0));
        assert_ne!(draw(1, 3, 0), draw(1, 3, 1));
        assert_ne!(draw(1, 3, 0), draw(2, 3, 0));
        let mut s = RandomStream::for_rank(9, 5, 0);
        let mut seen = [0u32; 8];
        for _ in 0..8000 {
            let p = s.peer_except(5, 8);
            assert_ne!(p, 5, "never the rank itself");
            seen[p as usize] += 1;
        }
        // Each of the 7 others near 8000/7 = 1143: uniform within 15 %.
        for (p, &n) in seen.iter().enumerate().filter(|&(p, _)| p != 5) {
            assert!((970..=1320).contains(&n), "peer {p} drawn {n} times");
        }
    }
}
