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
    /// Each call after the library's own barrier, the whole step timed
    /// (barrier and call): what a barrier-separated program sees per step,
    /// with nothing subtracted.
    Step,
}

impl<'f> Mode<'f> {
    /// `b2b`, `lone`, `step` or `fenced` (the last with `fence`, if the
    /// engine has one: threads of one process).
    pub fn parse(mode: &str, fence: Option<&'f fence::Fence>) -> Result<Self, String> {
        match (mode, fence) {
            ("b2b", _) => Ok(Mode::B2b),
            ("lone", _) => Ok(Mode::Lone),
            ("step", _) => Ok(Mode::Step),
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
/// whatever skew the barrier leaves), the two loops timed in blocks taken
/// in turn ([`LONE_BLOCKS`]); [`Mode::Step`]: each call after a barrier,
/// the step timed whole; [`Mode::B2b`]: back to back after one barrier.
/// Each rank times its own loops. `PARTS=1` prints rank 0's loops
/// to stderr.
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
    if !matches!(mode, Mode::B2b) {
        let subtract = !matches!(mode, Mode::Step);
        return barrier_separated(comm, iters, step, call, parts, subtract);
    }
    step(comm)?;
    let switched = switches();
    let t = Instant::now();
    for _ in 0..iters {
        call(comm)?;
    }
    let total = t.elapsed();
    let switched = (switches() - switched) as f64 / iters as f64;
    if parts {
        eprintln!(
            "rank 0: {:?} per call; context switches per call of the process: {switched:.2}",
            total / iters,
        );
    }
    Ok(total / iters)
}

/// Blocks each loop of [`Mode::Lone`] and [`Mode::Fenced`] is cut into, the
/// two loops' blocks taken in turn: the host's speed drifts within a run
/// (the raw ping-pong moves by a third within minutes), and two loops timed
/// one after the other would put that drift into their difference.
pub const LONE_BLOCKS: u32 = 10;

/// `iters` steps of `step` then `call`, minus `iters` steps alone (unless
/// not `subtract`), in [`LONE_BLOCKS`] blocks of each taken in turn; the
/// mean per call.
fn barrier_separated<C: Collectives>(
    comm: &mut C,
    iters: u32,
    step: impl Fn(&mut C) -> Result<(), Error>,
    mut call: impl FnMut(&mut C) -> Result<(), Error>,
    parts: bool,
    subtract: bool,
) -> Result<Duration, Error> {
    let switches = || if parts { switches() } else { 0 };
    // One block of `n` steps, each followed by the call if `with_call`:
    // its time and the context switches in it.
    let mut block = |comm: &mut C, n: u32, with_call: bool| -> Result<(Duration, u64), Error> {
        step(comm)?;
        let s = switches();
        let t = Instant::now();
        for _ in 0..n {
            step(comm)?;
            if with_call {
                call(comm)?;
            }
        }
        Ok((t.elapsed(), switches() - s))
    };
    let (mut with, mut alone) = (Duration::ZERO, Duration::ZERO);
    let (mut switched_with, mut switched_alone) = (0, 0);
    for b in 0..LONE_BLOCKS {
        // The first `iters % LONE_BLOCKS` blocks take one step more.
        let n = iters / LONE_BLOCKS + u32::from(b < iters % LONE_BLOCKS);
        let (took, switched) = block(comm, n, true)?;
        with += took;
        switched_with += switched;
        if !subtract {
            continue;
        }
        let (took, switched) = block(comm, n, false)?;
        alone += took;
        switched_alone += switched;
    }
    if parts && !subtract {
        eprintln!(
            "rank 0: barrier + call {:?}; context switches per step of the process: {:.2}",
            with / iters,
            switched_with as f64 / iters as f64,
        );
    } else if parts {
        let per = |n: u64| n as f64 / iters as f64;
        eprintln!(
            "rank 0: barrier + call {:?}, barrier alone {:?}; \
             context switches per step of the process: {:.2} and {:.2}",
            with / iters,
            alone / iters,
            per(switched_with),
            per(switched_alone),
        );
    }
    // Without `subtract`, `alone` stayed zero: the whole step.
    Ok(with.saturating_sub(alone) / iters)
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
