//! A placement: for every rank of the correction ring, the PU it sits on.
//!
//! This is how ranks are renumbered: rank r (the r-th position on the ring,
//! and the rank the trees are built on) runs on OS cpu `cpus()[r]`. A policy
//! that wants ring neighbours far apart simply gives neighbouring ranks far
//! apart cpus; nothing else in the runtime or the simulator changes.

use std::ops::Range;

use crate::error::ConfigError;
use crate::placement::machine::{DomainRef, Machine};
use crate::placement::policy::Policy;
use crate::topology::ring;
use crate::types::Rank;

/// Ranks placed on a machine: rank r sits on the PU at tree position
/// `leaves()[r]`, OS cpu `cpus()[r]`. Guarantees: one rank per PU at most,
/// and it keeps the machine it was made for.
#[derive(Clone, Debug)]
pub struct Placement {
    policy: Policy,
    machine: Machine,
    leaves: Vec<usize>,
    cpus: Vec<u32>,
}

impl Placement {
    pub(crate) fn new(policy: Policy, machine: &Machine, leaves: Vec<usize>) -> Placement {
        debug_assert!({
            let mut s = leaves.clone();
            s.sort_unstable();
            s.windows(2).all(|w| w[0] < w[1]) && s.last() < Some(&machine.pus())
        });
        Placement {
            policy,
            cpus: leaves.iter().map(|&l| machine.cpus()[l]).collect(),
            machine: machine.clone(),
            leaves,
        }
    }

    /// The policy that made it.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// The machine it places ranks on.
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// Number of ranks.
    pub fn ranks(&self) -> u32 {
        self.cpus.len() as u32
    }

    /// OS cpu id of each rank.
    pub fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    /// Tree position (index into [`Machine::cpus`]) of each rank's PU.
    pub fn leaves(&self) -> &[usize] {
        &self.leaves
    }

    /// The ranks that sit in `domain`, in increasing order; errors if the
    /// machine has no such domain.
    pub fn ranks_in(&self, domain: DomainRef) -> Result<Vec<Rank>, ConfigError> {
        let span = self.machine.domain(domain)?;
        Ok(self.ranks_in_span(&span))
    }

    fn ranks_in_span(&self, span: &Range<usize>) -> Vec<Rank> {
        (0..self.ranks())
            .filter(|&r| span.contains(&self.leaves[r as usize]))
            .collect()
    }

    /// The longest run of consecutive ring ranks inside `domain`: the gap
    /// that killing the domain leaves on the correction ring
    /// ([`ring::max_gap`] with the domain's ranks dead).
    pub fn max_gap(&self, domain: DomainRef) -> Result<u32, ConfigError> {
        let span = self.machine.domain(domain)?;
        Ok(ring::max_gap(self.ranks(), |r| {
            !span.contains(&self.leaves[r as usize])
        }))
    }
}

/// The least maximum gap any layout of `procs` ranks can have after the
/// `dead` ranks of one domain die: ⌈dead / (procs − dead)⌉ (`procs` if all die).
pub fn gap_lower_bound(dead: u32, procs: u32) -> u32 {
    if dead >= procs {
        procs
    } else {
        dead.div_ceil(procs - dead)
    }
}
