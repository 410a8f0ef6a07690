//! The progress line of a long `corrected run`: the ranks count their
//! operations, a thread of the command draws them on stderr.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// How long a run goes on before the progress line appears.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// How often the line is redrawn.
const REDRAW: Duration = Duration::from_millis(100);

/// Operations done by the ranks of a running team, counted by the ranks'
/// closures; [`Progress::show_while`] draws them when stderr is a terminal.
pub struct Progress {
    ranks: u32,
    iters: u32,
    /// Operations done, summed over ranks.
    ops: AtomicU64,
    /// Ranks whose closure has ended (returned or panicked).
    finished: AtomicU32,
    /// The run is over: the drawing thread stops.
    stop: AtomicBool,
}

/// Counts its rank as finished when dropped, also when the rank panics.
pub struct RankDone<'p>(&'p Progress);

impl Drop for RankDone<'_> {
    fn drop(&mut self) {
        self.0.finished.fetch_add(1, Ordering::Relaxed);
    }
}

impl Progress {
    /// Progress of `iters` operations on each of `ranks` ranks.
    pub fn new(ranks: u32, iters: u32) -> Self {
        Progress {
            ranks,
            iters,
            ops: AtomicU64::new(0),
            finished: AtomicU32::new(0),
            stop: AtomicBool::new(false),
        }
    }

    /// Called by a rank's closure when it starts; keep the guard until the
    /// closure ends.
    pub fn rank_started(&self) -> RankDone<'_> {
        RankDone(self)
    }

    /// Called by a rank after each of its operations.
    pub fn op_done(&self) {
        self.ops.fetch_add(1, Ordering::Relaxed);
    }

    /// Runs `work` (the team's run) while a thread draws a progress line on
    /// stderr: only if stderr is a terminal, and only once the run has
    /// taken more than a second. The line is cleared at the end.
    pub fn show_while<R>(&self, work: impl FnOnce() -> R) -> R {
        if !std::io::stderr().is_terminal() {
            return work();
        }
        std::thread::scope(|s| {
            let drawer = s.spawn(|| self.draw());
            let result = work();
            self.stop.store(true, Ordering::Relaxed);
            drawer.thread().unpark();
            let _ = drawer.join();
            result
        })
    }

    /// The drawing thread: operations done per rank on average, out of
    /// `iters`, and how many ranks have finished.
    fn draw(&self) {
        let started = Instant::now();
        let mut bar: Option<ProgressBar> = None;
        while !self.stop.load(Ordering::Relaxed) {
            std::thread::park_timeout(REDRAW);
            if started.elapsed() < SHOW_AFTER {
                continue;
            }
            let bar = bar.get_or_insert_with(|| {
                let bar = ProgressBar::new(u64::from(self.iters)).with_elapsed(started.elapsed());
                bar.set_style(
                    ProgressStyle::with_template(
                        "{elapsed} {bar:30} {pos}/{len} operations per rank, {msg}",
                    )
                    .expect("valid template"),
                );
                bar
            });
            let ops = self.ops.load(Ordering::Relaxed);
            bar.set_position(ops / u64::from(self.ranks.max(1)));
            bar.set_message(format!(
                "{} of {} ranks done",
                self.finished.load(Ordering::Relaxed),
                self.ranks
            ));
        }
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
    }
}
