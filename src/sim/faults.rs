//! Fault plans for the simulator: a given dead set, a random dead set of a
//! given rate, and ranks that die at a given time during the operation.

use rand::seq::index;
use rand::Rng;

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
        Ok(())
    }

    /// True if no rank can fail during the operation (only before it).
    pub fn static_only(&self) -> bool {
        self.die_at.is_empty()
    }

    /// How many ranks the rate kills in a team of `procs`.
    pub fn random_count(&self, procs: u32) -> u32 {
        ((self.rate * procs as f64).floor() as u32).min(procs.saturating_sub(1))
    }

    /// Fills `death[r]` with the tick rank `r` fails at ([`NEVER`] if it
    /// does not, 0 if dead before the operation), drawing the random part from
    /// `rng` among every rank but `root` (among all if `root >= procs`).
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
    }
}
