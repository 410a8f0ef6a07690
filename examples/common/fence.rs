//! The fence of the `fenced` timing mode: a sense-reversing barrier of P
//! threads, waiting with `sched_yield`, the same code as the fence of
//! `scripts/mpi/timing.c` (there in shared memory between processes), but
//! for the progress call (see [`Fence::wait`]). Both
//! sides' calls then start from the same skew, which their own barriers do
//! not give (a faster barrier leaves less of a step for the call to hide
//! in: docs/benchmarks.md).

use std::sync::atomic::{AtomicI64, Ordering};

use crossbeam_utils::CachePadded;

/// A barrier of `procs` threads outside the library under test.
pub struct Fence {
    arrived: CachePadded<AtomicI64>,
    generation: CachePadded<AtomicI64>,
    procs: i64,
}

impl Fence {
    /// A fence for `procs` threads.
    pub fn new(procs: u32) -> Self {
        Fence {
            arrived: CachePadded::new(AtomicI64::new(0)),
            generation: CachePadded::new(AtomicI64::new(0)),
            procs: i64::from(procs),
        }
    }

    /// Returns once all `procs` threads have called it (this time). The
    /// last to arrive resets the count, then moves the generation on; the
    /// others call `idle` and yield until the generation moves. `idle` is
    /// the library's progress call: ours has no progress thread, so a rank
    /// waiting outside it must serve what its past calls still owe
    /// ([`corrected::Collectives::progress`]; Open MPI's blocking calls
    /// owe nothing once they return).
    pub fn wait(&self, mut idle: impl FnMut()) {
        let g = self.generation.load(Ordering::SeqCst);
        if self.arrived.fetch_add(1, Ordering::SeqCst) == self.procs - 1 {
            self.arrived.store(0, Ordering::SeqCst);
            self.generation.store(g + 1, Ordering::SeqCst);
        } else {
            while self.generation.load(Ordering::SeqCst) == g {
                idle();
                std::thread::yield_now();
            }
        }
    }
}
