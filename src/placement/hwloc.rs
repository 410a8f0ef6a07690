//! The machine as hwloc sees it, through the `hwlocality` crate (cargo
//! feature `hwloc`; needs the system's libhwloc, `libhwloc-dev` on Debian).
//!
//! Levels are read as hwloc types: `Package`, `NUMANode` (by cpuset, since
//! hwloc 2 attaches NUMA nodes as memory children), `L3Cache`, `Core`, `PU`.
//! A level is kept when hwloc has objects of that type; the NUMA level only
//! when there is more than one node (as [`super::sysfs`] does). PU leaves
//! carry hwloc's OS indexes, which are Linux cpu ids.

use hwlocality::object::types::ObjectType;
use hwlocality::object::TopologyObject;
use hwlocality::Topology;

use crate::error::ConfigError;
use crate::placement::machine::{KeyedPu, Level, Machine};

fn hwloc_error(what: &str, e: impl std::fmt::Display) -> ConfigError {
    ConfigError::BadTopology(format!("hwloc {what}: {e}"))
}

/// This machine, as hwloc discovers it, restricted to the cpus this process
/// may run on (hwloc already leaves out cpus a cgroup forbids; the affinity
/// mask of `taskset` is applied on top).
pub fn from_hwloc() -> Result<Machine, ConfigError> {
    let topology = Topology::new().map_err(|e| hwloc_error("discovery", e))?;
    machine_of(&topology, "hwloc")?.restrict_to_affinity()
}

/// A synthetic machine built by hwloc itself from `description` (hwloc's
/// synthetic format, e.g. `package:2 l3:4 core:8 pu:2`): to check that
/// [`super::synthetic()`] and hwloc read the same descriptions alike. Errors
/// on descriptions hwloc rejects.
pub fn from_hwloc_synthetic(description: &str) -> Result<Machine, ConfigError> {
    let topology = Topology::builder()
        .from_synthetic(description)
        .map_err(|e| ConfigError::BadSynthetic {
            spec: description.to_string(),
            why: format!("hwloc rejects it: {e}"),
        })?
        .build()
        .map_err(|e| hwloc_error("synthetic build", e))?;
    machine_of(&topology, &format!("hwloc synthetic '{description}'"))
}

/// The logical index of `pu`'s ancestor of type `ty`.
fn ancestor(pu: &TopologyObject, ty: ObjectType) -> u64 {
    pu.first_ancestor_with_type(ty)
        .map_or(u64::MAX, |o| o.logical_index() as u64)
}

fn machine_of(topology: &Topology, source: &str) -> Result<Machine, ConfigError> {
    let count = |ty| topology.objects_with_type(ty).len();
    let numas: Vec<&TopologyObject> = topology.objects_with_type(ObjectType::NUMANode).collect();
    let mut levels = Vec::new();
    levels.extend((count(ObjectType::Package) > 0).then_some(Level::Package));
    levels.extend((numas.len() > 1).then_some(Level::Numa));
    levels.extend((count(ObjectType::L3Cache) > 0).then_some(Level::L3));
    levels.extend((count(ObjectType::Core) > 0).then_some(Level::Core));
    levels.push(Level::Pu);
    let mut pus: Vec<KeyedPu> = Vec::new();
    for pu in topology.objects_with_type(ObjectType::PU) {
        let cpu = pu
            .os_index()
            .ok_or_else(|| hwloc_error("topology", "a PU without an OS index"))?;
        let key = levels
            .iter()
            .map(|level| match level {
                Level::Package => ancestor(pu, ObjectType::Package),
                Level::Numa => numas
                    .iter()
                    .position(|n| n.cpuset().is_some_and(|set| set.is_set(cpu)))
                    .map_or(u64::MAX, |i| i as u64),
                Level::L3 => ancestor(pu, ObjectType::L3Cache),
                Level::Core => ancestor(pu, ObjectType::Core),
                Level::Pu => pu.logical_index() as u64,
            })
            .collect();
        pus.push((key, cpu as u32));
    }
    Machine::from_keys(source, levels, pus)
}
