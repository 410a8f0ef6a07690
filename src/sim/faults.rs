//! Fault plans for the simulator: a given dead set, a random dead set of a
//! given rate, ranks that die at a given time during the operation, and
//! ranks drawn at random to die at a random time during it.
//!
//! Every simulator draws a run's death times with [`FaultPlan::draw`] from
//! the run's seed, so experiments of different algorithms on the same plan
//! and seed see the same dead ranks and the same death times.

use rand::seq::index;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::error::ConfigError;
use crate::sim::engine::NEVER;
use crate::types::{Rank, Tick};

/// Which ranks fail, and when. Faults are fail-stop: a failed rank sends and
/// receives nothing more.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultPlan {
    /// Ranks dead before the operation starts.
    pub dead: Vec<Rank>,
    /// Fraction of ranks (0 <= rate < 1) dead before the operation, drawn
    /// afresh for every run: exactly ⌊rate·P⌋ ranks other than the root,
    /// uniformly (as the paper's simulator does).
    pub rate: f64,
    /// Ranks that die at the given tick during the operation.
    pub die_at: Vec<(Rank, Tick)>,
    /// Ranks drawn afresh for every run to die during the operation.
    pub dying: Dying,
}

/// Random deaths during the operation: `count` ranks, uniformly among those
/// neither exempt (the root) nor failed by the rest of the plan, each dying
/// at a tick drawn uniformly from `1..=within`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dying {
    /// How many ranks die during the operation.
    pub count: u32,
    /// The latest tick one of them dies at (at least 1 if `count > 0`).
    pub within: Tick,
}

impl FaultPlan {
    /// No faults.
    pub fn none() -> Self {
        FaultPlan::default()
    }

    /// A random dead set of the given rate.
    pub fn rate(rate: f64) -> Self {
        FaultPlan {
            rate,
            ..FaultPlan::default()
        }
    }

    /// `count` ranks dying at random ticks `1..=within` during the operation.
    pub fn dying(count: u32, within: Tick) -> Self {
        FaultPlan {
            dying: Dying { count, within },
            ..FaultPlan::default()
        }
    }

    /// A fixed dead set.
    pub fn dead(ranks: impl IntoIterator<Item = Rank>) -> Self {
        FaultPlan {
            dead: ranks.into_iter().collect(),
            ..FaultPlan::default()
        }
    }

    /// Checks the plan against a team of `procs` with root `root`.
    pub fn validate(&self, procs: u32, root: Rank) -> Result<(), ConfigError> {
        for &r in self.dead.iter().chain(self.die_at.iter().map(|(r, _)| r)) {
            if r >= procs {
                return Err(ConfigError::FaultRank { rank: r, procs });
            }
        }
        if self.dead.contains(&root) {
            return Err(ConfigError::DeadRoot(root));
        }
        if !(0.0..1.0).contains(&self.rate) {
            return Err(ConfigError::BadFaults(format!(
                "the fault rate must be at least 0 and below 1 (a fraction: 0.01 is 1 %); got {}",
                self.rate
            )));
        }
        if self.dying.count > 0 && (self.dying.within == 0 || self.dying.count >= procs) {
            return Err(ConfigError::BadFaults(format!(
                "{} ranks dying within {} ticks: they must be fewer than the {procs} ranks, \
                 within at least 1 tick",
                self.dying.count, self.dying.within
            )));
        }
        Ok(())
    }

    /// True if no rank can fail during the operation (only before it).
    pub fn static_only(&self) -> bool {
        self.die_at.is_empty() && self.dying.count == 0
    }

    /// The death times of the run of `procs` ranks with seed `seed`, as
    /// every simulator draws them ([`FaultPlan::realize`] from a
    /// Xoshiro256++ seeded with `seed`): the same plan and seed give the
    /// same dead ranks and death times whatever the algorithm.
    pub fn draw(&self, procs: u32, exempt: Rank, seed: u64) -> Vec<Tick> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut death = Vec::new();
        self.realize(procs, exempt, &mut rng, &mut death);
        death
    }

    /// How many ranks the rate kills in a team of `procs`.
    pub fn random_count(&self, procs: u32) -> u32 {
        ((self.rate * procs as f64).floor() as u32).min(procs.saturating_sub(1))
    }

    /// Fills `death[r]` with the tick rank `r` fails at ([`NEVER`] if it
    /// does not, 0 if dead before the operation), drawing the random part from
    /// `rng` among every rank but `root` (among all if `root >= procs`): the
    /// dead set first, then (after the fixed ranks) the ranks [`Dying`] and
    /// their ticks, so a plan without `dying` draws what it did before.
    pub fn realize(&self, procs: u32, root: Rank, rng: &mut impl Rng, death: &mut Vec<Tick>) {
        death.clear();
        death.resize(procs as usize, NEVER);
        let k = self.random_count(procs);
        if k > 0 {
            let pool = procs as usize - usize::from(root < procs);
            for i in index::sample(rng, pool, k as usize) {
                // Skip the root: sample among the other P - 1 ranks.
                let r = if (i as Rank) < root {
                    i as Rank
                } else {
                    i as Rank + 1
                };
                death[r as usize] = 0;
            }
        }
        for &r in &self.dead {
            death[r as usize] = 0;
        }
        for &(r, at) in &self.die_at {
            death[r as usize] = death[r as usize].min(at);
        }
        if self.dying.count == 0 {
            return;
        }
        let candidate = |r: usize, death: &[Tick]| r as Rank != root && death[r] == NEVER;
        let available = (0..procs as usize).filter(|&r| candidate(r, death)).count();
        for _ in 0..(self.dying.count as usize).min(available) {
            let r = loop {
                let r = rng.gen_range(0..procs as usize);
                if candidate(r, death) {
                    break r;
                }
            };
            death[r] = rng.gen_range(1..=self.dying.within.max(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn a_rate_kills_exactly_floor_rate_times_p_and_never_the_root() {
        let plan = FaultPlan::rate(0.04);
        let mut death = Vec::new();
        for seed in 0..200 {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            plan.realize(100, 7, &mut rng, &mut death);
            assert_eq!(death.iter().filter(|&&d| d == 0).count(), 4);
            assert_eq!(death[7], NEVER);
        }
    }

    #[test]
    fn plans_are_checked() {
        assert!(FaultPlan::dead([3]).validate(3, 0).is_err());
        assert!(FaultPlan::dead([0]).validate(3, 0).is_err());
        assert!(FaultPlan::rate(-0.1).validate(3, 0).is_err());
        assert!(FaultPlan::rate(1.0).validate(3, 0).is_err());
        assert!(FaultPlan::dead([1, 2]).validate(3, 0).is_ok());
        let mut death = Vec::new();
        let plan = FaultPlan {
            die_at: vec![(2, 9)],
            ..FaultPlan::dead([1])
        };
        plan.realize(3, 0, &mut Xoshiro256PlusPlus::seed_from_u64(0), &mut death);
        assert_eq!(death, vec![NEVER, 0, 9]);
        assert!(FaultPlan::dying(1, 0).validate(3, 0).is_err());
        assert!(FaultPlan::dying(3, 5).validate(3, 0).is_err());
        assert!(FaultPlan::dying(2, 5).validate(3, 0).is_ok());
    }

    #[test]
    fn dying_ranks_are_drawn_after_the_dead_set_and_apart_from_it() {
        let still = FaultPlan::rate(0.05);
        let moving = FaultPlan {
            dying: Dying {
                count: 3,
                within: 20,
            },
            ..still.clone()
        };
        assert!(still.static_only() && !moving.static_only());
        let mut ticks = std::collections::BTreeSet::new();
        for seed in 0..300 {
            let before = still.draw(200, 5, seed);
            let during = moving.draw(200, 5, seed);
            assert_eq!(during, moving.draw(200, 5, seed), "a seed draws one run");
            // The dead set is the one the plan without `dying` draws.
            let dead = |d: &[Tick]| (0..200).filter(|&r| d[r] == 0).collect::<Vec<_>>();
            assert_eq!(dead(&before), dead(&during));
            assert_eq!(dead(&during).len(), 10);
            let dying: Vec<usize> = (0..200)
                .filter(|&r| during[r] != 0 && during[r] != NEVER)
                .collect();
            assert_eq!(dying.len(), 3, "seed {seed}");
            assert_eq!(during[5], NEVER, "the exempt rank never dies");
            for r in dying {
                assert_eq!(before[r], NEVER);
                assert!((1..=20).contains(&during[r]));
                ticks.insert(during[r]);
            }
        }
        // The ticks spread over the window.
        assert!(ticks.contains(&1) && ticks.contains(&20) && ticks.len() == 20);
    }
}
