//! The MPI engine (cargo feature `mpi`): the same protocol cores and the
//! same driver as the thread runtime, between processes, one rank per
//! process, over MPI point-to-point messages (rsmpi's `mpi` crate).
//!
//! * [`MpiComm`] implements [`crate::collectives::Collectives`], so a
//!   program written against the trait runs on threads or on processes.
//! * `transport` is the driver's `Transport` over MPI: nonblocking sends
//!   from buffers it owns, probe-driven receives, a cap of sends in flight
//!   per peer, and no MPI call that waits on a peer; `wire` frames a
//!   protocol message into bytes and back; `shm` maps the node's shared
//!   memory. All three are internals (public with the feature
//!   `internals`).
//! * [`hier`]: threads below MPI, a [`NodeTeam`] per process whose
//!   [`NodeComm`] runs every collective over all threads of all processes.
//!
//! What this Open MPI (4.1, no ULFM) allows and what it does not, and how
//! to launch a program that must survive a process's death, are in
//! docs/mpi.md.
//!
//! ```no_run
//! use corrected::mpi::MpiComm;
//! use corrected::prelude::*;
//!
//! let universe = mpi::initialize().expect("MPI initializes once");
//! let mut comm = MpiComm::new(&universe.world(), &Team::builder())?;
//! let mut sum = 0.0;
//! comm.all_reduce_into(&(comm.rank() as f64), &mut sum, SystemOperation::sum())?;
//! # Ok::<(), Error>(())
//! ```

mod comm;
mod engine;
pub mod hier;
mod large;
mod native;
mod node;
mod shared_broadcast;
#[cfg(feature = "internals")]
pub mod shm;
#[cfg(not(feature = "internals"))]
#[allow(dead_code)] // parts serve only the feature `internals` (tests)
pub(crate) mod shm;
#[cfg(feature = "internals")]
pub mod transport;
#[cfg(not(feature = "internals"))]
pub(crate) mod transport;
#[cfg(feature = "internals")]
pub mod wire;
#[cfg(not(feature = "internals"))]
#[allow(dead_code)] // parts serve only the feature `internals` (tests)
pub(crate) mod wire;

pub use comm::{MpiComm, SHARED_MIN_BYTES};
pub use engine::BroadcastCounts;
pub use hier::{NodeComm, NodeTeam, ProcessLevel};
pub use shm::DEFAULT_SLOT_BYTES;
#[cfg(feature = "internals")]
pub use transport::MpiTransport;

/// Finalizes MPI (drops `universe`), or, if that has not returned after
/// `deadline`, ends the process with `code`. This Open MPI's
/// `MPI_Finalize` waits for every process of the job, a SIGKILLed one
/// included, and can so hang forever after a process died (seen in about
/// one run in three with 8 processes; docs/mpi.md): call this last, after
/// every result is written out.
pub fn finalize_within(
    universe: ::mpi::environment::Universe,
    deadline: std::time::Duration,
    code: i32,
) {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    std::thread::spawn(move || {
        std::thread::sleep(deadline);
        let _ = std::io::stdout().flush();
        std::process::exit(code);
    });
    drop(universe);
}
