//! Pinning rank threads to cores with `core_affinity`.

/// Where rank threads run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pinning {
    /// Let the OS place them.
    None,
    /// Rank r on the (r mod n)-th core this process may use (n cores from
    /// the process's affinity mask, so `taskset` and cgroups are respected).
    /// With more ranks than cores, ranks share cores round-robin.
    #[default]
    RoundRobin,
}

/// The cores this process may run on, in order.
pub fn available_cores() -> Vec<core_affinity::CoreId> {
    core_affinity::get_core_ids().unwrap_or_default()
}

/// Pins the calling thread for rank `rank` under `pinning`; false if it could not.
pub fn pin(pinning: Pinning, rank: u32, cores: &[core_affinity::CoreId]) -> bool {
    match pinning {
        Pinning::None => true,
        Pinning::RoundRobin if cores.is_empty() => false,
        Pinning::RoundRobin => core_affinity::set_for_current(cores[rank as usize % cores.len()]),
    }
}
