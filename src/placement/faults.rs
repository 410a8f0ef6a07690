//! Domain faults: every rank of one failure domain dies at once (a
//! [`FaultSchedule`] for any engine; the simulator's prediction of what it
//! costs is `crate::sim::domain::predict`).

use crate::call::FaultSchedule;
use crate::error::ConfigError;
use crate::placement::layout::Placement;
use crate::placement::machine::DomainRef;

/// A schedule (for any engine) in which every rank of `domain` is dead from
/// its `call`-th collective call on ([`FaultSchedule::kill_group`]).
pub fn kill_domain(
    placement: &Placement,
    domain: DomainRef,
    call: u32,
) -> Result<FaultSchedule, ConfigError> {
    Ok(FaultSchedule::none().kill_group(placement.ranks_in(domain)?, call))
}
