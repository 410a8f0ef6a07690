//! The thread runtime: ranks are OS threads of one process, pinned to
//! cores, exchanging messages through per-thread SPSC mailboxes, running the
//! same protocol cores as the simulator.
//!
//! ```no_run
//! use corrected::prelude::*;
//!
//! let team = Team::builder().ranks(8).build()?;
//! let report = team.run(|comm| {
//!     let mut value = if comm.rank() == 0 { 42u64 } else { 0 };
//!     comm.broadcast_into(0, &mut value).map(|_| value)
//! });
//! for (rank, got) in report.returned() {
//!     assert_eq!(got, &Ok(42), "rank {rank}");
//! }
//! # Ok::<(), corrected::Error>(())
//! ```
//!
//! * [`Team`], [`TeamBuilder`]: ranks, pinning, tree and correction, faults, timeouts;
//! * [`Comm`]: a rank's handle with the collectives (`broadcast_into`,
//!   `reduce_into`, `all_reduce_into`, `barrier`);
//! * [`SystemOperation`], [`Operation`] (re-exported from [`crate::op`]):
//!   reduction operations; [`Buffer`], [`BufferMut`] (from
//!   [`crate::buffer`]): what a collective reads and writes, one plain-data
//!   value or a slice of any length;
//! * [`FaultSchedule`]: fail-stop fault emulation (dead, dies after n sends, hangs);
//! * [`Config`] (from [`crate::call`]): the collectives' settings, which
//!   [`TeamBuilder`] forwards; values travel as `value` says.
//!
//! The drive loop (`driver`) and the per-call sequence
//! ([`crate::call`]) are engine-neutral; this module supplies the threads,
//! their pinning, the mailbox transport and the public API.

mod builder;
mod comm;
mod engine;
mod gather;
mod liveness;
pub(crate) mod one_line;
pub mod pin;
mod report;
mod shared;
pub mod stalls;
mod team;
mod transport;

pub use crate::buffer::{Buffer, BufferMut};
pub use crate::call::config::{
    BroadcastAlgorithm, Config, ReduceAlgorithm, DEFAULT_FTCO_TIMEOUT, DEFAULT_TREE, FTCO_LOGP,
    MAX_FTCO_TIMEOUT,
};
pub use crate::call::faults::{Fault, FaultSchedule};
pub use crate::call::{reduces_ahead, FTCO_ALLREDUCE_ROOT, REDUCES_AHEAD_BYTES, REDUCES_AHEAD_MAX};
pub use crate::mailbox::{membarrier_status, DoorbellFence};
pub use crate::op::{Operation, Reducible, SystemOperation};
pub use crate::protocol::allreduce::AllreduceAlgorithm;
pub use builder::{TeamBuilder, MAX_RANKS};
pub use comm::Comm;
pub use pin::Pinning;
pub use report::{OpStats, RankOutcome, TeamReport, OP_RECORD_BYTES};
pub use team::Team;

/// Operation fencing, which the loom models in `loom-tests/` check:
/// public only in a loom build (`RUSTFLAGS="--cfg loom"`).
#[cfg(loom)]
pub use crate::driver::fence::{Fence, Route};
