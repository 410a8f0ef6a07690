//! An allreduce in flight while each process computes, between MPI
//! processes (`MpiComm`, f = 1), timed the way `scripts/mpi/overlap.c`
//! times Open MPI's `MPI_Iallreduce` (`examples/overlap.rs` is the same on
//! threads; `scripts/vs-openmpi-overlap.sh` runs both with `MPI=1`).
//!
//! `mpirun -np P target/release/examples/mpi_overlap ITERS BYTES COMPUTE_US SLICES`
//! prints, for the slowest process, the mean µs of a blocking allreduce,
//! the computation alone, the computation then the blocking allreduce, and
//! the immediate allreduce overlapped with the computation. Needs
//! `--features mpi`.

use std::time::Duration;

use corrected::mpi::MpiComm;
use corrected::prelude::*;

#[path = "common/overlap.rs"]
mod overlap;

fn arg<T: std::str::FromStr>(args: &[String], i: usize, name: &str) -> T {
    args.get(i)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("usage: mpi_overlap ITERS BYTES COMPUTE_US SLICES ({name})"))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let iters: u32 = arg(&args, 1, "ITERS");
    let bytes: usize = arg(&args, 2, "BYTES");
    let compute_us: u64 = arg(&args, 3, "COMPUTE_US");
    let slices: u32 = arg(&args, 4, "SLICES");
    let (universe, _) = mpi::initialize_with_threading(mpi::environment::Threading::Single)
        .ok_or("MPI was initialized already")?;
    let mut comm = MpiComm::new(&universe.world(), &Team::builder().fault_budget(1))?;
    let work = Duration::from_micros(compute_us);
    let mine = overlap::four_loops(&mut comm, iters, (bytes / 8).max(1), work, slices)?;
    let mut slowest = [0.0f64; 4];
    for (i, &m) in mine.iter().enumerate() {
        let mut v = m;
        comm.all_reduce_into(&m, &mut v, SystemOperation::max())?;
        slowest[i] = v;
    }
    if comm.rank() == 0 {
        println!(
            "{:.3} {:.3} {:.3} {:.3}",
            slowest[0], slowest[1], slowest[2], slowest[3]
        );
    }
    Ok(())
}
