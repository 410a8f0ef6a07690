//! How long a thread of a busy team goes without running on this machine:
//! the floor under a failure timeout.
//!
//! A rank is declared failed when a peer hears nothing from it for the
//! failure timeout ([`TeamBuilder::failure_timeout`]). Where ranks
//! outnumber cores, a live rank that the scheduler does not run for longer
//! than that is declared failed too (a false suspicion): fail-stop by
//! decree, its later inputs left out. [`measure`] runs as many threads as
//! the team has ranks, all busy, and reports the longest time one of them
//! went without running: a failure timeout below it will suspect live
//! ranks under load. The CLI warns when one is set below twice this
//! (`corrected run` and `soak`, `--failure-timeout-ms`); `docs/benchmarks.md`
//! (*Soak and false suspicions*) has the numbers of this machine.
//!
//! [`TeamBuilder::failure_timeout`]: crate::runtime::TeamBuilder::failure_timeout

use std::time::{Duration, Instant};

/// What [`measure`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stalls {
    /// Threads that ran, all busy at once.
    pub threads: u32,
    /// How long they ran.
    pub window: Duration,
    /// The longest time one of them went without running.
    pub longest: Duration,
}

impl Stalls {
    /// The one of `self` and `other` with the longer stall.
    pub fn max(self, other: Stalls) -> Stalls {
        if other.longest > self.longest {
            other
        } else {
            self
        }
    }
}

/// Runs `threads` busy threads (unpinned, as the scheduler places them)
/// for `window` and returns the longest gap one of them saw between two
/// consecutive reads of the clock. Costs `window` of wall time and
/// `threads` threads' worth of CPU for it.
pub fn measure(threads: u32, window: Duration) -> Stalls {
    let start = Instant::now();
    let end = start + window;
    let longest = std::thread::scope(|s| {
        let spinners: Vec<_> = (0..threads.max(1))
            .map(|_| {
                s.spawn(move || {
                    let mut last = Instant::now();
                    let mut longest = Duration::ZERO;
                    while last < end {
                        let now = Instant::now();
                        longest = longest.max(now - last);
                        last = now;
                    }
                    longest
                })
            })
            .collect();
        spinners
            .into_iter()
            .map(|h| h.join().unwrap_or(Duration::ZERO))
            .max()
            .unwrap_or(Duration::ZERO)
    });
    Stalls {
        threads: threads.max(1),
        window: start.elapsed(),
        longest,
    }
}

/// The window [`measure`] needs to see stalls of about `timeout`: four of
/// them, at least 50 ms (several of the scheduler's time slices) and at
/// most 1 s.
pub fn window_for(timeout: Duration) -> Duration {
    (timeout * 4).clamp(Duration::from_millis(50), Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four times as many busy threads as cores cannot all run at once:
    /// over 100 ms each gets about a quarter of a core, so one of them
    /// must have gone without running for a while (at least one scheduler
    /// switch, far more than the clock's resolution).
    #[test]
    fn busy_threads_beyond_the_cores_wait_their_turn() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        let s = measure(4 * cores, Duration::from_millis(100));
        assert_eq!(s.threads, 4 * cores);
        assert!(s.window >= Duration::from_millis(100), "{s:?}");
        assert!(s.longest >= Duration::from_micros(100), "{s:?}");
        assert!(s.longest <= s.window, "{s:?}");
    }

    #[test]
    fn the_window_covers_four_timeouts_within_bounds() {
        assert_eq!(
            window_for(Duration::from_millis(5)),
            Duration::from_millis(50)
        );
        assert_eq!(
            window_for(Duration::from_millis(100)),
            Duration::from_millis(400)
        );
        assert_eq!(window_for(Duration::from_secs(10)), Duration::from_secs(1));
    }
}
