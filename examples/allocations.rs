//! Heap allocations per collective in a steady loop, counted by a global
//! allocator: `cargo run --release --example allocations`. Prints, for a few
//! collectives and sizes, the allocations all ranks together make per call
//! once warm (1000 calls after 500), and the segments the pool allocated
//! in the allreduce's run (all while it warms up).

use corrected::Collectives;
use std::sync::atomic::{AtomicU64, Ordering};

use corrected::runtime::{Comm, SystemOperation, Team};

#[path = "common/counting.rs"]
mod counting;
use counting::allocations;

/// Allocations per call of `call`, over `iters` calls after `warm` ones,
/// all ranks together (ranks line up on barriers around the counted loop).
/// One call of a collective on a rank's input and output.
type Call = dyn Fn(&mut Comm<'_>, &[f64], &mut [f64]) + Sync;

fn per_call(team: &Team, n: usize, warm: u32, iters: u32, call: &Call) -> (f64, u64) {
    let counted = AtomicU64::new(0);
    let report = team.run(|comm| {
        let input = vec![1.0f64; n];
        let mut out = vec![0.0f64; n];
        for _ in 0..warm {
            call(comm, &input, &mut out);
        }
        comm.barrier().unwrap();
        let before = allocations();
        for _ in 0..iters {
            call(comm, &input, &mut out);
        }
        comm.barrier().unwrap();
        if comm.rank() == 0 {
            counted.store(allocations() - before, Ordering::Relaxed);
        }
    });
    (
        counted.load(Ordering::Relaxed) as f64 / iters as f64,
        report.segment_allocations,
    )
}

fn main() {
    for ranks in [2, 8] {
        let team = Team::builder()
            .ranks(ranks)
            .fault_budget(1)
            .build()
            .unwrap();
        for (what, n) in [("8 B", 1), ("1 KiB", 128), ("1 MiB", 1 << 17)] {
            let (ar, segs) = per_call(&team, n, 500, 1000, &|comm, x, y| {
                comm.all_reduce_into(x, y, SystemOperation::sum()).unwrap()
            });
            let (bc, _) = per_call(&team, n, 500, 1000, &|comm, _, y| {
                comm.broadcast_into(0, y).unwrap()
            });
            let (re, _) = per_call(&team, n, 500, 1000, &|comm, x, y| {
                comm.reduce_into(0, x, y, SystemOperation::sum()).unwrap()
            });
            println!(
                "P={ranks} {what}: allreduce {ar:.2} allocations per call (segments allocated in the run: {segs}), broadcast {bc:.2}, reduce {re:.2}"
            );
        }
    }
}
