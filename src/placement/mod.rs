//! Topology-aware placement: the machine's failure domains, ring layouts
//! that keep them apart, and domain faults (`docs/placement.md`).
//!
//! * [`machine`]: the domain tree (package, NUMA node, L3, core, PU) with OS
//!   cpu ids at the leaves; restriction to the cpus a process may use.
//! * [`sysfs`]: the machine from Linux sysfs (the default, no dependency);
//!   [`mod@synthetic`]: from a description such as `package:2 l3:4 core:8 pu:2`;
//!   `hwloc` (cargo feature `hwloc`): from hwloc through `hwlocality`.
//! * [`policy`]: compact, scatter and separated layouts; [`layout`]: the
//!   resulting [`Placement`], rank r on cpu `cpus()[r]`, and its gaps.
//! * [`faults`]: kill a domain (its cost in the simulator:
//!   `crate::sim::domain::predict`).
//!
//! ```
//! use corrected::placement::{synthetic, Policy};
//!
//! let machine = synthetic("package:2 l3:4 core:8 pu:2")?;
//! let placement = Policy::Separated.place(&machine, 128)?;
//! // Killing any L3 group (16 ranks) leaves no two dead ranks adjacent on the ring.
//! assert_eq!(placement.max_gap("l3:3".parse()?)?, 1);
//! let compact = Policy::Compact.place(&machine, 128)?;
//! assert_eq!(compact.max_gap("l3:3".parse()?)?, 16);
//! # Ok::<(), corrected::ConfigError>(())
//! ```

pub mod faults;
#[cfg(feature = "hwloc")]
pub mod hwloc;
pub mod layout;
pub mod machine;
pub mod policy;
pub mod synthetic;
pub mod sysfs;

pub use faults::kill_domain;
pub use layout::{gap_lower_bound, Placement};
pub use machine::{DomainRef, Level, Machine};
pub use policy::Policy;
pub use synthetic::synthetic;
pub use sysfs::{from_sysfs, from_sysfs_root};
