//! What `corrected sim` refuses before anything is allocated: options no
//! scenario constructor checks, options the run would ignore, and a
//! simulation the memory available cannot hold.

use corrected::topology::MAX_PROCS;
use corrected::types::Tick;
use corrected::ConfigError;

use super::SimArgs;
use crate::error::CliError;
use crate::limits::{
    at_least_one, bytes, check_memory, check_tree_fits, out_of_range, ticks_at_most, MAX_WAIT_TICKS,
};
use crate::op::Op;

/// Bytes one worker's simulation state takes per process, measured
/// (`/usr/bin/time`, 2^18 and 2^20 processes, one and two threads) and
/// rounded up: cores, event queue, traces. Reduce and allreduce keep
/// up-correction groups of f + 1, about 100 bytes per process per f.
fn bytes_per_process(op: Op, f: u32) -> u64 {
    let f = u64::from(f);
    match op {
        Op::Bcast => 360,
        Op::Reduce => bytes(f, 100).saturating_add(720),
        Op::Allreduce | Op::Barrier => bytes(f, 100).saturating_add(1400),
    }
}
/// Bytes the scenario shares between workers per process (tree, plans).
const SHARED_BYTES_PER_PROCESS: u64 = 96;

/// The longest `--curve`: every run keeps two numbers per tick.
const MAX_CURVE_TICKS: Tick = 10_000;

/// Bytes kept per run until the summary (its metrics, while sorted).
const BYTES_PER_RUN: u64 = 128;

/// Worker threads of the Monte Carlo: as asked, or one per core, never
/// more than runs.
pub(super) fn threads(args: &SimArgs) -> usize {
    let asked = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    asked.clamp(1, usize::try_from(args.runs).unwrap_or(usize::MAX))
}

/// Checks the options no scenario constructor checks, and the memory the
/// simulation will take, before anything is allocated.
pub(super) fn check(args: &SimArgs, op: Op) -> Result<(), CliError> {
    if args.procs == 0 {
        return Err(ConfigError::ZeroRanks.into());
    }
    if args.procs > MAX_PROCS {
        return Err(ConfigError::TooManyRanks {
            procs: args.procs.into(),
            max: MAX_PROCS.into(),
        }
        .into());
    }
    at_least_one("--runs", args.runs)?;
    if args.threads == Some(0) {
        at_least_one("--threads", 0)?;
    }
    if let Some(threads) = args.threads.filter(|&t| t > MAX_THREADS) {
        return Err(out_of_range(
            "--threads",
            threads,
            format!("at most {MAX_THREADS} worker threads are started (each holds one simulation)"),
            format!(
                "pass --threads {} (this machine's cores), or leave it out",
                std::thread::available_parallelism().map_or(1, |n| n.get())
            ),
        ));
    }
    if args.bytes == 0 {
        return Err(out_of_range(
            "--bytes",
            0,
            "a message carries at least one byte",
            "pass --bytes 8 (the default) or more",
        ));
    }
    check_faults(args)?;
    check_used(args, op)?;
    if let Ok(tree) = args.model.tree().parse() {
        check_tree_fits(tree, args.procs, "--procs")?;
    }
    ticks_at_most("--detector", args.detector, MAX_WAIT_TICKS)?;
    if let Some(&(rank, tick)) = args.die_at.iter().find(|(_, t)| *t > MAX_WAIT_TICKS) {
        return Err(out_of_range(
            "--die-at",
            format!("{rank}:{tick}"),
            format!("a rank dies at tick {MAX_WAIT_TICKS} at the latest"),
            format!("pass --die-at {rank}:TICK with TICK at most {MAX_WAIT_TICKS}"),
        ));
    }
    let threads = threads(args) as u64;
    let procs = u64::from(args.procs);
    let per_process =
        SHARED_BYTES_PER_PROCESS.saturating_add(bytes(threads, bytes_per_process(op, args.f)));
    let need = bytes(procs, per_process).saturating_add(bytes(args.runs, BYTES_PER_RUN));
    check_memory(
        "this simulation",
        need,
        || {
            format!(
                "{procs} processes x {threads} worker threads x {} bytes, and {} runs x {BYTES_PER_RUN} bytes",
                bytes_per_process(op, args.f),
                args.runs
            )
        },
        "fewer --procs, --threads or --runs",
    )
}

/// The most worker threads `--threads` starts.
const MAX_THREADS: usize = 1024;

/// A rank named twice in `--dead` and `--die-at`: it can fail once.
fn check_faults(args: &SimArgs) -> Result<(), CliError> {
    let named = args.dead.iter().map(|&r| (r, "--dead"));
    let named = named.chain(args.die_at.iter().map(|&(r, _)| (r, "--die-at")));
    let mut seen = std::collections::HashMap::new();
    for (rank, list) in named {
        if let Some(first) = seen.insert(rank, list) {
            return Err(CliError::FaultConflict {
                rank,
                first,
                second: list,
            });
        }
    }
    Ok(())
}

/// Options given that the algorithm or collective would ignore, refused:
/// a run must be what its command line says.
fn check_used(args: &SimArgs, op: Op) -> Result<(), CliError> {
    let algorithm = args.algorithm.as_str();
    let gossip = algorithm == "gossip";
    let m = &args.model;
    let unused: [(Option<String>, &'static str, bool, &str, &str); 8] = [
        (
            args.gossip_time.clone(),
            "--gossip-time",
            gossip,
            "only corrected gossip has a gossip time",
            "--algorithm gossip",
        ),
        (
            args.gossip_phase_end.clone(),
            "--gossip-phase-end",
            gossip,
            "only corrected gossip has a gossip phase",
            "--algorithm gossip",
        ),
        (
            args.delta.map(|d| d.to_string()),
            "--delta",
            gossip,
            "only corrected gossip's T and C are chosen with a δ",
            "--algorithm gossip",
        ),
        (
            args.curve.map(|c| c.to_string()),
            "--curve",
            gossip || algorithm == "big",
            "only gossip and BIG draw a coloring curve",
            "--algorithm gossip or big",
        ),
        (
            m.correction.clone(),
            "--correction",
            !matches!(algorithm, "big" | "ftco" | "ack-tree"),
            "BIG, FTCO and the ack tree have no correction",
            "--algorithm tree or gossip",
        ),
        (
            m.tree.clone(),
            "--tree",
            !matches!(algorithm, "gossip" | "big"),
            "corrected gossip and BIG send along no tree",
            "--algorithm tree, ftco or ack-tree",
        ),
        (
            args.allreduce.clone(),
            "--allreduce",
            op == Op::Allreduce,
            "only --op allreduce runs an allreduce",
            "--op allreduce",
        ),
        (
            args.failure_scheme.clone(),
            "--failure-scheme",
            op != Op::Bcast,
            "only the reduce (and the allreduce, which reduces first) carries failure information",
            "--op reduce or allreduce",
        ),
    ];
    for (given, option, used, why, with) in unused {
        if let (Some(value), false) = (given, used) {
            return Err(out_of_range(
                option,
                value,
                why,
                format!("pass {option} with {with} only"),
            ));
        }
    }
    Ok(())
}

/// `--curve` keeps two numbers per tick and run: at most
/// [`MAX_CURVE_TICKS`].
pub(super) fn check_curve(args: &SimArgs) -> Result<(), CliError> {
    match args.curve {
        Some(until) if until > MAX_CURVE_TICKS => Err(out_of_range(
            "--curve",
            until,
            format!("the curve keeps every tick of every run; at most {MAX_CURVE_TICKS} ticks"),
            format!("pass --curve {MAX_CURVE_TICKS} or less"),
        )),
        _ => Ok(()),
    }
}
