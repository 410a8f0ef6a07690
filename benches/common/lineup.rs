//! The start line of lined-up benchmarks: a barrier whose waiters yield
//! instead of parking, so that its release does not cost a futex wake-up per
//! thread (`std::sync::Barrier` parks: with 8 threads on 2 cores its release
//! wakes them one after another, a skew of tens of microseconds that the
//! slowest rank's time inside the next call would include). MPI benchmarks
//! line up on `MPI_Barrier`, whose waiters spin or yield too.

use std::sync::atomic::{AtomicUsize, Ordering};

/// A reusable sense-counting barrier for `n` threads that waits by yielding.
pub struct YieldBarrier {
    n: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
}

impl YieldBarrier {
    /// A barrier for `n` threads.
    pub fn new(n: usize) -> Self {
        YieldBarrier {
            n,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
        }
    }

    /// Returns once all `n` threads have called `wait` in this generation.
    // Not every bench that includes this file uses both forms.
    #[allow(dead_code)]
    pub fn wait(&self) {
        self.wait_with(|| {});
    }

    /// As [`wait`](YieldBarrier::wait), calling `idle` on every turn of
    /// the wait (a rank's `Comm::progress`, so that it serves what it kept
    /// from its past operations while it waits outside the library).
    pub fn wait_with(&self, mut idle: impl FnMut()) {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::AcqRel);
            return;
        }
        while self.generation.load(Ordering::Acquire) == generation {
            idle();
            std::thread::yield_now();
        }
    }
}
