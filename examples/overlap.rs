//! An allreduce in flight while each rank computes, timed the way
//! `scripts/mpi/overlap.c` times Open MPI's `MPI_Iallreduce`, for
//! `scripts/vs-openmpi-overlap.sh`: like timed with like, in one run.
//!
//! `cargo run --release --example overlap -- RANKS ITERS BYTES COMPUTE_US SLICES`
//! prints, for the slowest rank, the mean µs of: a blocking allreduce of
//! BYTES bytes of f64 (a sum); COMPUTE_US of computation (floating-point
//! work until the clock says COMPUTE_US have passed); a step of the
//! computation then the blocking allreduce (`serial`); a step of an
//! immediate allreduce started, the computation in SLICES slices with a
//! [`Collectives::test`] after each, then [`Collectives::wait`]
//! (`overlap`). The serial and overlapped steps are timed in blocks taken
//! in turn (the host's speed drifts within a run). Team defaults (f = 1),
//! one thread per rank, pinned as the team pins them.

use std::time::Duration;

use corrected::prelude::*;

#[path = "common/overlap.rs"]
mod overlap;

fn arg<T: std::str::FromStr>(args: &[String], i: usize, name: &str) -> T {
    args.get(i)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("usage: overlap RANKS ITERS BYTES COMPUTE_US SLICES ({name})"))
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    let ranks: u32 = arg(&args, 1, "RANKS");
    let iters: u32 = arg(&args, 2, "ITERS");
    let bytes: usize = arg(&args, 3, "BYTES");
    let compute_us: u64 = arg(&args, 4, "COMPUTE_US");
    let slices: u32 = arg::<u32>(&args, 5, "SLICES").max(1);
    let work = Duration::from_micros(compute_us);
    let n = (bytes / 8).max(1);
    let team = Team::builder().ranks(ranks).build()?;
    let report = team.run(|comm| overlap::four_loops(comm, iters, n, work, slices));
    let mut slowest = [0.0f64; 4];
    for (r, got) in report.returned() {
        let got = got.as_ref().map_err(|e| {
            eprintln!("rank {r}: {e}");
            e.clone()
        })?;
        for (s, g) in slowest.iter_mut().zip(got) {
            *s = s.max(*g);
        }
    }
    println!(
        "{:.3} {:.3} {:.3} {:.3}",
        slowest[0], slowest[1], slowest[2], slowest[3]
    );
    Ok(())
}
