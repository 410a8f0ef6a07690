//! What the simulator predicts when every rank of one failure domain
//! ([`crate::placement`]) dies before a broadcast.

use serde::Serialize;

use crate::error::ConfigError;
use crate::placement::{gap_lower_bound, DomainRef, Placement};
use crate::protocol::bcast::Correction;
use crate::sim::{BcastRun, BcastScenario, BcastSim, FaultPlan};
use crate::topology::TreeSpec;
use crate::types::{LogP, Rank};

/// What the simulator predicts when one domain dies before a broadcast.
#[derive(Clone, Debug, Serialize)]
pub struct DomainPrediction {
    /// The domain, as `level:index`.
    pub domain: String,
    /// Its ranks (ring order), all dead.
    pub dead: Vec<Rank>,
    /// The root of the simulated broadcast: rank 0, or the first rank
    /// outside the domain if rank 0 is in it.
    pub root: Rank,
    /// The longest run of dead ranks on the ring.
    pub max_gap: u32,
    /// The least maximum gap any layout can reach: ⌈|D| / (P − |D|)⌉.
    pub gap_lower_bound: u32,
    /// The simulated broadcast (its `correction_latency` as `corrected sim`
    /// reports it: quiescence minus the fault-free dissemination time).
    pub run: BcastRun,
}

/// Simulates one broadcast of `tree` with `correction` under `logp`, with
/// every rank of `domain` dead. The simulator's root is rank 0; if the
/// domain holds rank 0, the broadcast starts at the first live rank ρ
/// instead, simulated as root 0 with the ring rotated by ρ (trees and ring
/// are rotation-invariant, so this is the same broadcast). Errors if the
/// domain holds every rank or does not exist.
pub fn predict(
    placement: &Placement,
    domain: DomainRef,
    tree: TreeSpec,
    correction: Correction,
    logp: LogP,
) -> Result<DomainPrediction, ConfigError> {
    let procs = placement.ranks();
    let dead = placement.ranks_in(domain)?;
    let root = (0..procs)
        .find(|r| dead.binary_search(r).is_err())
        .ok_or_else(|| {
            ConfigError::BadFaults(format!(
                "domain {domain} holds all {procs} ranks, so none would survive"
            ))
        })?;
    let rotated = dead.iter().map(|&d| (d + procs - root) % procs);
    let scenario = BcastScenario::new(tree, procs, correction, logp, FaultPlan::dead(rotated))?;
    let run = BcastSim::new(&scenario).run(0);
    Ok(DomainPrediction {
        domain: domain.to_string(),
        max_gap: placement.max_gap(domain)?,
        gap_lower_bound: gap_lower_bound(dead.len() as u32, procs),
        dead,
        root,
        run,
    })
}
