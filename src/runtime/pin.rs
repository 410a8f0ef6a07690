//! Pinning rank threads to cores with `core_affinity`.

use std::sync::Arc;

use crate::error::ConfigError;

/// Where rank threads run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Pinning {
    /// Let the OS place them.
    None,
    /// Rank r on the (r mod n)-th core this process may use (n cores from
    /// the process's affinity mask, so `taskset` and cgroups are respected).
    /// With more ranks than cores, ranks share cores round-robin.
    RoundRobin,
    /// Like `RoundRobin` while there are at least as many cores as ranks;
    /// with more ranks than the n cores, rank r on the (r n / ranks)-th core:
    /// consecutive ranks share a core. The default: a tree's children and a
    /// ring's neighbours are mostly consecutive ranks, so most messages and
    /// most helping stay within one core's caches
    /// (8-byte allreduce, f = 1, 2 cores: 16 ranks 36.6 -> 29.8 us, 64 ranks
    /// 336 -> 255 us against `RoundRobin`, `examples/timing.rs`).
    #[default]
    Packed,
    /// Rank r on OS cpu `cpus[r]` (a [`crate::placement::Placement`]: the
    /// ring order follows the placement). A cpu this process may not use
    /// (a synthetic machine planned bigger than this one) is mapped to the
    /// (cpu mod n)-th core it may use, so nothing is pinned to a cpu that
    /// does not exist. The list must have one cpu per rank.
    Placed(Arc<[usize]>),
}

impl From<&crate::placement::Placement> for Pinning {
    /// The pinning that puts rank r on cpu `placement.cpus()[r]`, for
    /// [`crate::runtime::TeamBuilder::pinning`].
    fn from(placement: &crate::placement::Placement) -> Pinning {
        Pinning::Placed(
            placement
                .cpus()
                .iter()
                .map(|&c| c as usize)
                .collect::<Arc<[usize]>>(),
        )
    }
}

impl Pinning {
    /// Checks the pinning fits a team of `ranks`: a placed pinning needs
    /// exactly one cpu per rank.
    pub fn check(&self, ranks: u32) -> Result<(), ConfigError> {
        match self {
            Pinning::Placed(cpus) if cpus.len() != ranks as usize => {
                Err(ConfigError::PlacementSize {
                    placed: cpus.len(),
                    ranks,
                })
            }
            _ => Ok(()),
        }
    }

    /// The core rank `rank` of a team of `ranks` goes to among the `cores`
    /// this process may use; `None` for no pinning (or no usable core).
    pub fn core_for(
        &self,
        rank: u32,
        ranks: u32,
        cores: &[core_affinity::CoreId],
    ) -> Option<core_affinity::CoreId> {
        let n = cores.len();
        match self {
            _ if cores.is_empty() => None,
            Pinning::None => None,
            Pinning::Packed if ranks as usize > n => {
                Some(cores[rank as usize * n / ranks as usize])
            }
            Pinning::RoundRobin | Pinning::Packed => Some(cores[rank as usize % n]),
            Pinning::Placed(cpus) => {
                let cpu = *cpus.get(rank as usize)?;
                Some(
                    cores
                        .iter()
                        .find(|c| c.id == cpu)
                        .copied()
                        .unwrap_or(cores[cpu % cores.len()]),
                )
            }
        }
    }
}

/// The cores this process may run on, in order.
pub fn available_cores() -> Vec<core_affinity::CoreId> {
    core_affinity::get_core_ids().unwrap_or_default()
}

/// Pins the calling thread for rank `rank` under `pinning`; false if it could not.
pub fn pin(pinning: &Pinning, rank: u32, ranks: u32, cores: &[core_affinity::CoreId]) -> bool {
    match (pinning, pinning.core_for(rank, ranks, cores)) {
        (Pinning::None, _) => true,
        (_, Some(core)) => core_affinity::set_for_current(core),
        (_, None) => false,
    }
}

/// Whether a thread team of `ranks` outnumbers this process's cores.
pub(crate) fn crowded(ranks: u32) -> bool {
    ranks as usize > available_cores().len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use core_affinity::CoreId;

    #[test]
    fn placed_cpus_map_onto_usable_cores() {
        let cores = [CoreId { id: 0 }, CoreId { id: 1 }, CoreId { id: 5 }];
        let placed = Pinning::Placed(vec![5, 1, 7, 9].into());
        let got: Vec<usize> = (0..4)
            .map(|r| placed.core_for(r, 4, &cores).unwrap().id)
            .collect();
        // 5 and 1 are usable; 7 -> cores[7 % 3] = cores[1]; 9 -> cores[0].
        assert_eq!(got, vec![5, 1, 1, 0]);
        assert_eq!(placed.core_for(4, 5, &cores), None);
        assert!(placed.check(4).is_ok());
        assert!(matches!(
            placed.check(5),
            Err(ConfigError::PlacementSize {
                placed: 4,
                ranks: 5
            })
        ));
        assert_eq!(
            Pinning::RoundRobin.core_for(4, 6, &cores),
            Some(CoreId { id: 1 })
        );
        assert_eq!(Pinning::None.core_for(0, 1, &cores), None);
    }

    #[test]
    fn packed_keeps_consecutive_ranks_on_one_core() {
        let cores = [CoreId { id: 0 }, CoreId { id: 1 }, CoreId { id: 5 }];
        let on = |ranks: u32| -> Vec<usize> {
            (0..ranks)
                .map(|r| Pinning::Packed.core_for(r, ranks, &cores).unwrap().id)
                .collect()
        };
        // No more ranks than cores: one each, as round-robin.
        assert_eq!(on(2), vec![0, 1]);
        assert_eq!(on(3), vec![0, 1, 5]);
        // More: blocks of consecutive ranks, every core used.
        assert_eq!(on(8), vec![0, 0, 0, 1, 1, 1, 5, 5]);
        assert_eq!(on(4), vec![0, 0, 1, 5]);
    }
}
