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
//! * [`SystemOperation`], [`Operation`]: reduction operations;
//! * [`FaultSchedule`]: fail-stop fault emulation (dead, dies after n sends, hangs);
//! * [`wire`]: what a message can carry.

mod comm;
mod faults;
mod fence;
mod liveness;
pub mod op;
pub mod pin;
mod team;
pub mod wire;

pub use comm::{Comm, LINGER};
pub use faults::{Fault, FaultSchedule};
pub use fence::{Fence, Route};
pub use liveness::Liveness;
pub use op::{Operation, Reducible, SystemOperation};
pub use pin::Pinning;
pub use team::{OpStats, RankOutcome, Team, TeamBuilder, TeamReport, MAX_RANKS};
pub use wire::Wire;
