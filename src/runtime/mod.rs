//! The thread runtime: ranks are OS threads of one process, pinned to
//! cores, exchanging messages through per-thread SPSC mailboxes, running the
//! same protocol cores as the simulator.
//!
//! ```no_run
//! use corrected::runtime::Team;
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
//! * [`Packet`]: what a mailbox slot carries; [`data::Data`]: a value of
//!   any length in it, inline or in a shared [`segment::Segment`].
//!
//! The drive loop itself is engine-neutral and lives in [`crate::driver`];
//! this module supplies its mailbox transport and the public API.

pub(crate) mod broadcast;
mod comm;
pub mod data;
mod faults;
mod ftco_reduction;
pub mod lazy;
pub mod lent;
mod liveness;
pub(crate) mod one_line;
mod packet;
pub mod pin;
pub(crate) mod recycle;
pub mod segment;
mod team;
mod transport;

pub use crate::buffer::{Buffer, BufferMut};
pub use crate::op::{Operation, Reducible, SystemOperation};
pub use crate::protocol::allreduce::AllreduceAlgorithm;
#[cfg(feature = "mpi")]
pub(crate) use comm::data_op;
pub use comm::{reduces_ahead, Comm, REDUCES_AHEAD_BYTES, REDUCES_AHEAD_MAX};
pub use faults::{Fault, FaultSchedule};
pub use ftco_reduction::FTCO_ALLREDUCE_ROOT;
#[cfg(feature = "mpi")]
pub(crate) use ftco_reduction::{
    allreduce_kind as ftco_allreduce_kind, allreduce_result as ftco_allreduce_result,
    drive_ftco_reduction, reduce_result_into as ftco_reduce_result_into,
};
pub use packet::Packet;
pub use pin::Pinning;
#[cfg(feature = "mpi")]
pub(crate) use team::Plans;
pub use team::{
    BroadcastAlgorithm, OpStats, RankOutcome, ReduceAlgorithm, Team, TeamBuilder, TeamReport,
    DEFAULT_FTCO_TIMEOUT, DEFAULT_TREE, FTCO_LOGP, MAX_FTCO_TIMEOUT, MAX_RANKS,
};

/// Operation fencing, which the loom models in `loom-tests/` check:
/// public only in a loom build (`RUSTFLAGS="--cfg loom"`).
#[cfg(loom)]
pub use crate::driver::fence::{Fence, Route};
