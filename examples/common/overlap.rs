//! The overlap benchmark's loops for one rank of any engine
//! (`examples/overlap.rs` on threads, `examples/mpi_overlap.rs` between
//! processes), timed as `scripts/mpi/overlap.c` times Open MPI's.

use std::hint::black_box;
use std::time::{Duration, Instant};

use corrected::prelude::*;

/// Blocks each loop is cut into, taken in turn (the host's speed drifts
/// within a run).
const BLOCKS: u32 = 10;

/// Floating-point work until `d` has passed on the clock.
pub fn compute(d: Duration) {
    let start = Instant::now();
    let mut acc = 1.0f64;
    while start.elapsed() < d {
        for _ in 0..64 {
            acc = black_box(acc * 1.000_000_1 + 1e-9);
        }
    }
    black_box(acc);
}

/// This rank's mean µs of: a blocking allreduce of `n` f64; `work` of
/// computation; the computation then the blocking allreduce; an immediate
/// allreduce started, the computation in `slices` slices with a test
/// after each, then the wait.
pub fn four_loops(
    comm: &mut impl Collectives,
    iters: u32,
    n: usize,
    work: Duration,
    slices: u32,
) -> Result<[f64; 4], Error> {
    let mine = vec![f64::from(comm.rank()); n];
    let mut out = vec![0.0f64; n];
    let mut buf = mine.clone();
    let sum = SystemOperation::sum();
    let slice = work / slices.max(1);
    for _ in 0..10 {
        comm.all_reduce_into(&mine[..], &mut out[..], sum)?;
    }
    let per_block = (iters / BLOCKS).max(1);
    let mut t = [0.0f64; 4];
    for _ in 0..BLOCKS {
        for (loop_, total) in t.iter_mut().enumerate() {
            comm.barrier()?;
            let start = Instant::now();
            for _ in 0..per_block {
                match loop_ {
                    0 => comm.all_reduce_into(&mine[..], &mut out[..], sum)?,
                    1 => compute(work),
                    2 => {
                        compute(work);
                        comm.all_reduce_into(&mine[..], &mut out[..], sum)?;
                    }
                    _ => {
                        // The buffer goes in and comes back holding the
                        // sum: the next step's input.
                        let mut req = comm.immediate_all_reduce(std::mem::take(&mut buf), sum)?;
                        for _ in 0..slices.max(1) {
                            compute(slice);
                            comm.test(&mut req)?;
                        }
                        buf = comm.wait(req)?;
                    }
                }
            }
            *total += start.elapsed().as_secs_f64();
        }
    }
    Ok(t.map(|s| s / f64::from(per_block * BLOCKS) * 1e6))
}
