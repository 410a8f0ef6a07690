//! `corrected`: fault-tolerant collectives among threads, built on the
//! correction idea of Corrected Trees / Corrected Gossip.
//!
//! The crate is layered as `../docs/architecture.md` describes:
//!
//! * [`topology`]: pure functions of (rank, P, parameters): interleaved and
//!   in-order trees, the correction ring, fault-free dissemination timing.
//! * [`protocol`]: sans-IO state machines, one per algorithm, behind the
//!   [`protocol::Protocol`] contract. They never touch a clock, thread or queue.
//! * [`sim`]: a LogP discrete-event engine that drives protocol cores at 64K
//!   ranks, fault injection, metrics named as in the papers, Monte Carlo.
//! * [`runtime`]: the same cores on pinned threads.
//! * [`placement`]: the machine's failure domains (sysfs, hwloc, synthetic)
//!   and ring layouts that keep them apart.
//!
//! Everything a caller can get wrong is reported through [`Error`].

pub mod error;
pub mod mailbox;
pub mod placement;
pub mod protocol;
pub mod runtime;
pub mod sim;
pub(crate) mod sync;
pub mod topology;
pub mod types;

pub use error::Error;
pub use types::{Rank, Tick};
