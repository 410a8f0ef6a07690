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
//! * `driver`: the one drive loop that runs any core over any
//!   `driver::Transport` (fencing, lingering, outbox, timeout detector);
//!   with `mailbox`, `helping` and `value`, an engine's internals, public
//!   only with the feature `internals`.
//! * [`call`]: the call layer every engine goes through, and its
//!   engine-neutral [`Config`].
//! * [`runtime`]: the same cores on pinned threads (a mailbox transport
//!   under the driver, and the public [`runtime::Comm`]).
//! * [`collectives`]: the engine-neutral [`Collectives`] trait; [`op`] and
//!   [`buffer`]: reduction operations and what a collective reads and
//!   writes (plain data, any length);
//!   [`check`]: the properties both engines' results are checked against.
//! * `mpi` (feature `mpi`): the same collectives between MPI processes,
//!   and threads below MPI (node teams).
//! * [`placement`]: the machine's failure domains (sysfs, hwloc, synthetic)
//!   and ring layouts that keep them apart.
//!
//! Everything a caller can get wrong is reported through [`ConfigError`]
//! (a configuration, found before anything runs) or [`Error`] (what a
//! collective call returns; it wraps a [`ConfigError`] too).

pub mod buffer;
pub mod call;
pub mod check;
pub mod collectives;
pub mod contributors;
#[cfg(any(feature = "internals", loom))]
pub mod driver;
#[cfg(not(any(feature = "internals", loom)))]
#[allow(dead_code)] // parts serve only the feature `internals` (benches, tests, loom)
pub(crate) mod driver;
pub mod error;
#[cfg(feature = "fault-points")]
pub mod fault_point;
#[cfg(not(feature = "fault-points"))]
pub(crate) mod fault_point;
mod gather;
#[cfg(any(feature = "internals", loom))]
pub mod helping;
#[cfg(not(any(feature = "internals", loom)))]
#[allow(dead_code)] // parts serve only the feature `internals` (benches, tests, loom)
pub(crate) mod helping;
#[cfg(any(feature = "internals", loom))]
pub mod mailbox;
#[cfg(not(any(feature = "internals", loom)))]
#[allow(dead_code)] // parts serve only the feature `internals` (benches, tests, loom)
pub(crate) mod mailbox;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod op;
pub mod placement;
pub mod prelude;
pub mod protocol;
pub mod request;
pub mod runtime;
pub mod sim;
pub(crate) mod sync;
pub mod topology;
pub mod trace;
pub mod types;
#[cfg(any(feature = "internals", loom))]
pub mod value;
#[cfg(not(any(feature = "internals", loom)))]
#[allow(dead_code)] // parts serve only the feature `internals` (benches, tests, loom)
pub(crate) mod value;

/// The README's Rust examples, compiled and run by `cargo test --doc`, so
/// that what a newcomer copies first works.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub use buffer::{Buffer, BufferMut};
pub use bytemuck;
pub use call::Config;
pub use collectives::Collectives;
pub use contributors::Contributors;
pub use error::{ConfigError, Error};
pub use request::Request;
pub use types::{Rank, Tick};
