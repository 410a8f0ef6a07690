//! Times one collective of ours between MPI processes (the MPI engine) the
//! way `scripts/mpi/timing.c` times Open MPI's, for
//! `scripts/vs-openmpi-mpi.sh`: like timed with like, in one run.
//!
//! `mpirun -np P target/release/examples/mpi_timing OP MODE ITERS BYTES F`
//! prints the slowest rank's mean time per call in microseconds. OP is
//! `allreduce` (an f64 sum, element by element) or `bcast` (from rank 0);
//! MODE `b2b` or `lone` (see `common/timed.rs`); BYTES the value's size (a
//! multiple of 8: f64 elements); F the fault budget. Needs `--features mpi`.

use corrected::mpi::MpiComm;
use corrected::prelude::*;
use mpi::traits::{Communicator, Root};

#[path = "common/timed.rs"]
mod timed;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [op, mode, iters, bytes, f] = args.as_slice() else {
        return Err("usage: mpi_timing allreduce|bcast b2b|lone ITERS BYTES F".into());
    };
    let (iters, bytes, f): (u32, usize, u32) = (iters.parse()?, bytes.parse()?, f.parse()?);
    let lone = mode == "lone";
    let universe = mpi::initialize().ok_or("MPI is initialized once")?;
    let world = universe.world();
    let mut comm = MpiComm::new(&world, &Team::builder().fault_budget(f))?;
    let me = comm.rank();
    let mine = vec![f64::from(me); bytes / 8];
    let mut out = vec![0.0; bytes / 8];
    let mean = match op.as_str() {
        "allreduce" => timed::mean_per_call(&mut comm, iters, lone, |c| {
            c.all_reduce_into(&mine[..], &mut out[..], SystemOperation::sum())
        }),
        "bcast" => timed::mean_per_call(&mut comm, iters, lone, |c| {
            if me == 0 {
                out.copy_from_slice(&mine);
            }
            c.broadcast_into(0, &mut out[..])
        }),
        other => return Err(format!("unknown OP {other}").into()),
    }?;
    drop(comm);
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
