//! Many seeded runs on all cores. Run `i` uses seed `seed + i`, so results do
//! not depend on the number of threads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// How many runs, from which seed, on how many threads.
#[derive(Clone, Copy, Debug)]
pub struct MonteCarlo {
    /// Number of runs.
    pub runs: u64,
    /// Seed of run 0.
    pub seed: u64,
    /// Worker threads (at least 1).
    pub threads: usize,
}

impl MonteCarlo {
    /// Runs `run(state, seed)` for every run, each worker with its own state
    /// from `make`, calling `progress(done)` as runs finish. Returns the
    /// results in run order and the wall time in seconds.
    pub fn execute<S, R: Send>(
        &self,
        make: impl Fn() -> S + Sync,
        run: impl Fn(&mut S, u64) -> R + Sync,
        progress: impl Fn(u64) + Sync,
    ) -> (Vec<R>, f64) {
        let started = Instant::now();
        let next = AtomicU64::new(0);
        let done = AtomicU64::new(0);
        let threads = self.threads.clamp(1, self.runs.max(1) as usize);
        let mut parts: Vec<Vec<(u64, R)>> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut state = make();
                        let mut out = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= self.runs {
                                return out;
                            }
                            out.push((i, run(&mut state, self.seed.wrapping_add(i))));
                            progress(done.fetch_add(1, Ordering::Relaxed) + 1);
                        }
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().expect("a simulation worker panicked"))
                .collect()
        });
        let mut all: Vec<(u64, R)> = parts.iter_mut().flat_map(std::mem::take).collect();
        all.sort_by_key(|(i, _)| *i);
        (
            all.into_iter().map(|(_, r)| r).collect(),
            started.elapsed().as_secs_f64(),
        )
    }
}
