//! The timed loop both timing examples share (threads: `timing.rs`,
//! processes: `mpi_timing.rs`), written once against the engine-neutral
//! [`Collectives`] trait and mirrored by `scripts/mpi/timing.c` for Open
//! MPI: like timed with like.

use std::time::{Duration, Instant};

use corrected::prelude::*;

/// Warms up with `iters.min(100)` calls, then times `iters` calls on this
/// rank and returns the mean per call. `lone`: each call after a barrier,
/// minus `iters` barriers alone (the cost a call adds to a barrier-separated
/// step, whatever skew the barrier leaves); otherwise back to back after one
/// barrier. Each rank times its whole loop.
pub fn mean_per_call<C: Collectives>(
    comm: &mut C,
    iters: u32,
    lone: bool,
    mut call: impl FnMut(&mut C) -> Result<(), Error>,
) -> Result<Duration, Error> {
    for _ in 0..iters.min(100) {
        call(comm)?;
    }
    comm.barrier()?;
    let t = Instant::now();
    for _ in 0..iters {
        if lone {
            comm.barrier()?;
        }
        call(comm)?;
    }
    let mut total = t.elapsed();
    if lone {
        comm.barrier()?;
        let t = Instant::now();
        for _ in 0..iters {
            comm.barrier()?;
        }
        if std::env::var("PARTS").is_ok() && comm.rank() == 0 {
            eprintln!(
                "rank 0: barrier + call {:?}, barrier alone {:?}",
                total / iters,
                t.elapsed() / iters
            );
        }
        total = total.saturating_sub(t.elapsed());
    }
    Ok(total / iters)
}
