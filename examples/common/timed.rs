//! The timed loop both timing examples share (threads: `timing.rs`,
//! processes: `mpi_timing.rs`), written once against the engine-neutral
//! [`Collectives`] trait and mirrored by `scripts/mpi/timing.c` for Open
//! MPI: like timed with like.

use std::time::{Duration, Instant};

use corrected::prelude::*;

#[path = "fence.rs"]
pub mod fence;

/// How the calls are lined up.
#[derive(Clone, Copy)]
pub enum Mode<'f> {
    /// Back to back after one barrier.
    B2b,
    /// Each call after the library's own barrier, minus as many barriers
    /// alone.
    Lone,
    /// Each call after a [`fence::Fence`] (the same code on both sides),
    /// minus as many fences alone.
    Fenced(&'f fence::Fence),
}

impl<'f> Mode<'f> {
    /// `b2b`, `lone` or `fenced` (the last with `fence`, if the engine has
    /// one: threads of one process).
    pub fn parse(mode: &str, fence: Option<&'f fence::Fence>) -> Result<Self, String> {
        match (mode, fence) {
            ("b2b", _) => Ok(Mode::B2b),
            ("lone", _) => Ok(Mode::Lone),
            ("fenced", Some(f)) => Ok(Mode::Fenced(f)),
            ("fenced", None) => Err("MODE fenced: threads of one process only".into()),
            (other, _) => Err(format!("unknown MODE {other}")),
        }
    }
}

/// Warms up with `iters.min(100)` calls, then times `iters` calls on this
/// rank and returns the mean per call. [`Mode::Lone`] and [`Mode::Fenced`]:
/// each call after a barrier (the library's or the fence), minus `iters`
/// barriers alone (the cost a call adds to a barrier-separated step,
/// whatever skew the barrier leaves); [`Mode::B2b`]: back to back after one
/// barrier. Each rank times its whole loop. `PARTS=1` prints rank 0's two
/// loops of the first two modes to stderr.
pub fn mean_per_call<C: Collectives>(
    comm: &mut C,
    iters: u32,
    mode: Mode<'_>,
    mut call: impl FnMut(&mut C) -> Result<(), Error>,
) -> Result<Duration, Error> {
    for _ in 0..iters.min(100) {
        call(comm)?;
    }
    let step = |comm: &mut C| match mode {
        Mode::Fenced(fence) => {
            fence.wait(|| {
                let _ = comm.progress();
            });
            Ok(())
        }
        _ => comm.barrier(),
    };
    // Rank 0 alone reads the switches, with `PARTS` only, outside the
    // timed loops.
    let parts = std::env::var("PARTS").is_ok() && comm.rank() == 0;
    let switches = || if parts { switches() } else { 0 };
    step(comm)?;
    let switched = switches();
    let t = Instant::now();
    for _ in 0..iters {
        if !matches!(mode, Mode::B2b) {
            step(comm)?;
        }
        call(comm)?;
    }
    let mut total = t.elapsed();
    let switched = (switches() - switched) as f64 / iters as f64;
    if matches!(mode, Mode::B2b) && parts {
        eprintln!(
            "rank 0: {:?} per call; context switches per call of the process: {switched:.2}",
            total / iters,
        );
    }
    if !matches!(mode, Mode::B2b) {
        step(comm)?;
        let alone = switches();
        let t = Instant::now();
        for _ in 0..iters {
            step(comm)?;
        }
        let steps = t.elapsed();
        let alone = (switches() - alone) as f64 / iters as f64;
        if parts {
            eprintln!(
                "rank 0: barrier + call {:?}, barrier alone {:?}; \
                 context switches per step of the process: {switched:.2} and {alone:.2}",
                total / iters,
                steps / iters,
            );
        }
        total = total.saturating_sub(steps);
    }
    Ok(total / iters)
}

/// Context switches of this process so far, voluntary and not, summed over
/// its threads (`/proc/self/task/*/status`; 0 where there is no `/proc`).
fn switches() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
        .flat_map(|status| {
            status
                .lines()
                .filter(|l| l.contains("ctxt_switches"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .collect::<Vec<_>>()
        })
        .sum()
}
