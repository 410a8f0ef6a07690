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

use std::hint::black_box;
use std::time::{Duration, Instant};

use corrected::prelude::*;

/// Blocks each of the two step loops is cut into, taken in turn.
const BLOCKS: u32 = 10;

/// Floating-point work until `d` has passed on the clock.
fn compute(d: Duration) {
    let start = Instant::now();
    let mut acc = 1.0f64;
    while start.elapsed() < d {
        for _ in 0..64 {
            acc = black_box(acc * 1.000_000_1 + 1e-9);
        }
    }
    black_box(acc);
}

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
    let slice = work / slices;
    let n = (bytes / 8).max(1);
    let team = Team::builder().ranks(ranks).build()?;
    let report = team.run(|comm| -> Result<[f64; 4], Error> {
        let mine = vec![f64::from(comm.rank()); n];
        let mut out = vec![0.0f64; n];
        let mut buf = mine.clone();
        let sum = SystemOperation::sum();
        let blocking = |comm: &mut Comm<'_>, out: &mut Vec<f64>| {
            comm.all_reduce_into(&mine[..], &mut out[..], SystemOperation::sum())
        };
        for _ in 0..10 {
            blocking(comm, &mut out)?;
        }
        let timed = |comm: &mut Comm<'_>, f: &mut dyn FnMut(&mut Comm<'_>) -> Result<(), Error>| {
            comm.barrier()?;
            let t = Instant::now();
            for _ in 0..iters / BLOCKS {
                f(comm)?;
            }
            Ok::<f64, Error>(t.elapsed().as_secs_f64())
        };
        let (mut allreduce, mut alone, mut serial, mut overlap) = (0.0, 0.0, 0.0, 0.0);
        for _ in 0..BLOCKS {
            allreduce += timed(comm, &mut |c| blocking(c, &mut out))?;
            alone += timed(comm, &mut |_| {
                compute(work);
                Ok(())
            })?;
            serial += timed(comm, &mut |c| {
                compute(work);
                blocking(c, &mut out)
            })?;
            overlap += timed(comm, &mut |c| {
                // The buffer goes in and comes back holding the sum: the
                // next step's input (what the program computes next).
                let mut req = c.immediate_all_reduce(std::mem::take(&mut buf), sum)?;
                for _ in 0..slices {
                    compute(slice);
                    c.test(&mut req)?;
                }
                buf = c.wait(req)?;
                Ok(())
            })?;
        }
        let per = |t: f64| t / f64::from(iters / BLOCKS * BLOCKS) * 1e6;
        Ok([per(allreduce), per(alone), per(serial), per(overlap)])
    });
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
