//! Times one collective of ours between MPI processes (the MPI engine, or
//! the hierarchy of threads below it) the way `scripts/mpi/timing.c` times
//! Open MPI's, for `scripts/vs-openmpi-mpi.sh`: like timed with like, in one
//! run.
//!
//! `mpirun -np P target/release/examples/mpi_timing OP MODE ITERS BYTES F [THREADS]`
//! prints the slowest rank's mean time per call in microseconds. OP is
//! `allreduce` (an f64 sum, element by element), `bcast` (from rank 0) or
//! `reduce` (an f64 sum to rank 0);
//! MODE `b2b`, `lone` or `step` (see `common/timed.rs`; its `fenced` is for
//! threads only); BYTES the value's size (a multiple of 8: f64 elements);
//! F the fault budget between processes.
//! THREADS (default 1): more than 1 runs a node team of that many threads
//! per process (`corrected::mpi::NodeTeam`, our protocols at both levels),
//! every thread timing its loop. `SHM=BYTES` (passed on with `mpirun -x
//! SHM`) sets the slots of the node's shared memory, `SHM=0` turns it off
//! (`TeamBuilder::mpi_shared_memory`). `ALLREDUCE=auto|tree|star` in the
//! environment (passed on with `mpirun -x ALLREDUCE`) picks the allreduce
//! between processes. Needs `--features mpi`.

use std::time::Duration;

use corrected::mpi::{MpiComm, NodeTeam, ProcessLevel};
use corrected::prelude::*;
use mpi::traits::{Communicator, Root};

#[path = "common/timed.rs"]
#[allow(dead_code)] // its fence: for threads of one process only
mod timed;

/// One rank's mean per call of `op`.
fn time_one(
    comm: &mut impl Collectives,
    op: &str,
    mode: timed::Mode<'_>,
    iters: u32,
    bytes: usize,
) -> Result<Duration, Error> {
    let me = comm.rank();
    let mine = vec![f64::from(me); bytes / 8];
    let mut out = vec![0.0; bytes / 8];
    if op == "allreduce" {
        timed::mean_per_call(comm, iters, mode, |c| {
            c.all_reduce_into(&mine, &mut out, SystemOperation::sum())
        })
    } else if op == "reduce" {
        timed::mean_per_call(comm, iters, mode, |c| {
            c.reduce_into(0, &mine, &mut out, SystemOperation::sum())
        })
    } else {
        timed::mean_per_call(comm, iters, mode, |c| {
            if me == 0 {
                out.copy_from_slice(&mine);
            }
            c.broadcast_into(0, &mut out)
        })
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (op, mode, iters, bytes, f, threads) =
        match args.as_slice() {
            [op, mode, iters, bytes, f] => (op, mode, iters, bytes, f, "1"),
            [op, mode, iters, bytes, f, threads] => (op, mode, iters, bytes, f, threads.as_str()),
            _ => return Err(
                "usage: mpi_timing allreduce|bcast|reduce b2b|lone|step ITERS BYTES F [THREADS]"
                    .into(),
            ),
        };
    if !matches!(op.as_str(), "allreduce" | "bcast" | "reduce") {
        return Err(format!("unknown OP {op}").into());
    }
    let (iters, bytes, f): (u32, usize, u32) = (iters.parse()?, bytes.parse()?, f.parse()?);
    let threads: u32 = threads.parse()?;
    let mode = timed::Mode::parse(mode, None)?;
    let threading = if threads > 1 {
        mpi::environment::Threading::Serialized
    } else {
        mpi::environment::Threading::Single
    };
    let (universe, _) = mpi::initialize_with_threading(threading).ok_or("MPI initializes once")?;
    let world = universe.world();
    let mean = if threads == 1 {
        let mut builder = Team::builder().fault_budget(f);
        // ALLREDUCE=auto|tree|star: the algorithm between processes.
        if let Ok(algorithm) = std::env::var("ALLREDUCE") {
            builder = builder.allreduce(algorithm.parse()?);
        }
        // CORRECTION=checked|none|...: the broadcast's correction.
        if let Ok(correction) = std::env::var("CORRECTION") {
            builder = builder.correction(correction.parse()?);
        }
        // SHM=BYTES: the slots of the node's shared memory (0: none, large
        // allreduces by blocks through MPI messages).
        if let Ok(bytes) = std::env::var("SHM") {
            builder = builder.mpi_shared_memory(bytes.parse()?);
        }
        let mut comm = MpiComm::new(&world, &builder)?;
        time_one(&mut comm, op, mode, iters, bytes)?
    } else {
        let level = ProcessLevel::Corrected(Team::builder().fault_budget(f));
        let node = NodeTeam::new(Team::builder().ranks(threads), level)?;
        let report = node.run(|comm| time_one(comm, op, mode, iters, bytes));
        let mut slowest = Duration::ZERO;
        for (rank, got) in report.returned() {
            slowest = slowest.max(got.clone().map_err(|e| format!("thread {rank}: {e}"))?);
        }
        slowest
    };
    let mean = mean.as_secs_f64() * 1e6;
    let root = world.process_at_rank(0);
    if world.rank() == 0 {
        let mut slowest = 0.0;
        root.reduce_into_root(&mean, &mut slowest, mpi::collective::SystemOperation::max());
        println!("{slowest:.3}");
    } else {
        root.reduce_into(&mean, mpi::collective::SystemOperation::max());
    }
    Ok(())
}
