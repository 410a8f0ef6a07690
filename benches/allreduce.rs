//! Allreduce and barrier latency on threads: fault-free at P = 2 (pinned,
//! one rank per core) and P = 8, 32 (oversubscribed on this 2-core machine),
//! and the latency of the one operation in which a rank fails.
//!
//! `cargo bench --bench allreduce` (criterion filters apply:
//! `-- allreduce/`, `-- back_to_back`, `-- barrier`, `-- after_failure`).
//!
//! **Fault-free (criterion).** One iteration is one
//! `all_reduce_into(&x, &mut out, sum)` of one `f64` (8 bytes, as an
//! `MPI_Allreduce` of 8 bytes) or one `barrier()`; its time is the slowest
//! rank's time inside the call (`TeamReport.ops[i].latency_ns`, so these
//! teams are built with `op_records(true)`). Ranks line
//! up on a barrier before each call (not timed), so no rank runs ahead into
//! the next operation. Its waiters yield rather than park
//! (`benches/common/lineup.rs`); on 2 cores its release still reaches the
//! ranks of a core one scheduling turn after another, a skew the slowest
//! rank's time includes. Groups:
//! - `allreduce/f=F/P` for the fault budget F = 0, 1, 2 (F < P). F = 0 is the
//!   tree reduce without up-correction, then the broadcast; that broadcast
//!   still uses checked correction, because the team always gives allreduce
//!   a broadcast that guarantees delivery.
//! - `allreduce/plain/P`: the reference without any fault tolerance,
//!   `reduce_into` to rank 0 (f = 0) then `broadcast_into` from rank 0 with
//!   no correction; its time is the slowest rank's time inside both calls.
//! - `allreduce_back_to_back/{f=1,plain}/P`: the same calls, lined up once
//!   and then called back to back, as MPI benchmarks (OSU's) time a loop:
//!   the slowest rank's total time inside its calls divided by their number.
//!   Ranks may enter the next operation while others finish the last one.
//! - `allreduce_unrecorded/{f=1,plain}/P`: back to back on a team without
//!   operation records (the default: no per-call clock reads or records):
//!   each rank times its own loop; the time is the slowest rank's loop
//!   divided by the calls. Where ranks outnumber cores the team's default
//!   allreduce is the star; `allreduce_unrecorded/f=1,tree/P` is the tree
//!   allreduce there, in the same run.
//! - `barrier/f=1/P`.
//!
//! Every result is checked (outside the timed calls) against the exact sum.
//!
//! **After a failure (`after_failure`, own loop, not criterion).** A rank
//! can fail only once, and a team survives at most f failures, so every
//! sample is a fresh team (f = 1): [`WARM`] fault-free allreduces lined up
//! as above (so that lanes exist and threads have run), then the faulty
//! allreduce, lined up the same way; the sample is the slowest *live*
//! rank's time inside that faulty call. Thread start-up and team teardown
//! are outside the timed call. Criterion's `iter_custom` is not used here:
//! it sizes its batches from the returned (timed) durations, which would be
//! a small part of each sample's wall time (a team's start and end), so a
//! 3 s measurement would take minutes. Printed: median, min and max over
//! [`FAULT_SAMPLES`] teams, next to the median of the fault-free allreduce
//! just before it (op `WARM - 1`) in the same teams. Two ways to fail:
//! - `kill`: the victim is dead from the faulty operation on
//!   (`FaultSchedule::kill`); it dies as it enters the call, and the liveness
//!   registry tells everyone at once.
//! - `hang`: the victim enters the faulty operation and stays silent
//!   (`Fault::Hang`); nobody is told, and only the failure timeout finds it.
//!   The bench sets the timeout to [`BENCH_FAILURE_TIMEOUT`] (50 ms; the
//!   default is 1 s), so this latency is dominated by the timeout.
//!
//! Victims: the last rank P - 1 (not a root of the first round), and rank 0,
//! the first round's root, whose failure forces a retry with root 1.

#[path = "common/lineup.rs"]
mod lineup;
use corrected::Collectives;
use lineup::YieldBarrier;

use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion};

use corrected::runtime::{
    AllreduceAlgorithm, Comm, Fault, FaultSchedule, SystemOperation, Team, TeamBuilder, TeamReport,
};
use corrected::types::Rank;

/// Team sizes: 2 pinned one rank per core, 8 and 32 sharing the 2 cores.
const RANKS: [u32; 3] = [2, 8, 32];

/// Fault-free allreduces in each fresh team before the faulty one.
const WARM: usize = 10;

/// Fresh teams per fault configuration.
const FAULT_SAMPLES: usize = 30;

/// The failure timeout of the `hang` teams (the default is 1 s).
const BENCH_FAILURE_TIMEOUT: Duration = Duration::from_millis(50);

/// A rank's input: distinct per rank, so a lost or doubled input shows.
fn input(rank: Rank) -> f64 {
    f64::from(rank) + 1.0
}

/// The sum of the inputs of `ranks` ranks, less the ones in `without`.
fn expected(ranks: u32, without: &[Rank]) -> f64 {
    (0..ranks).filter(|r| !without.contains(r)).map(input).sum()
}

/// One allreduce of this rank's input; the result, or why it failed.
fn allreduce(comm: &mut Comm<'_>) -> Result<f64, String> {
    let mut out = 0.0;
    comm.all_reduce_into(&input(comm.rank()), &mut out, SystemOperation::sum())
        .map_err(|e| e.to_string())?;
    Ok(out)
}

/// How the ranks of a run start their calls.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lineup {
    /// On a `YieldBarrier` before every call.
    EveryCall,
    /// On the barrier once, then call after call, as MPI benchmarks time a
    /// loop of collectives.
    Once,
}

type Report = TeamReport<Result<Vec<f64>, String>>;

/// Runs `ops` calls of `call` on every rank of `team`, lined up as `lineup`
/// says. A rank stops at its first error (a failed rank must not wait on
/// the barrier again, so the faulty call has to be the last one). Each rank
/// returns its results.
fn run_lined_up<F>(team: &Team, ops: usize, lineup: Lineup, call: F) -> Report
where
    F: Fn(&mut Comm<'_>) -> Result<f64, String> + Sync,
{
    let barrier = YieldBarrier::new(team.ranks() as usize);
    team.run(|comm| {
        (0..ops)
            .map(|i| {
                if i == 0 || lineup == Lineup::EveryCall {
                    barrier.wait();
                }
                call(comm)
            })
            .collect()
    })
}

/// Panics unless every rank returned `want` from every call.
fn check_all(report: &Report, want: f64) {
    for (r, got) in report.returned() {
        let got = got.as_ref().unwrap_or_else(|e| panic!("rank {r}: {e}"));
        assert!(got.iter().all(|&v| v == want), "rank {r}: {got:?}");
    }
    assert_eq!(report.outcomes.len(), report.returned().count());
}

/// The slowest rank's time inside operations `first .. first + count`
/// (summed per rank), in nanoseconds. Needs every rank to have completed
/// them (a fault-free run), so that `latency_ns` is in rank order.
fn slowest_rank(report: &Report, first: usize, count: usize) -> u64 {
    let ops = &report.ops[first..first + count];
    (0..report.outcomes.len())
        .map(|r| ops.iter().map(|o| o.latency_ns[r]).sum::<u64>())
        .max()
        .unwrap_or(0)
}

/// One criterion point: `ops_per_iter` calls per iteration. Lined up before
/// every call, an iteration's time is the slowest rank's time inside its
/// calls; back to back, it is the slowest rank's time inside all calls of
/// the run, divided evenly. Every rank's every result must be `want`.
fn bench_point<F>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    team: &Team,
    (lineup, ops_per_iter, want): (Lineup, usize, f64),
    call: F,
) where
    F: Fn(&mut Comm<'_>) -> Result<f64, String> + Sync,
{
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let iters = iters as usize;
            let report = run_lined_up(team, iters * ops_per_iter, lineup, &call);
            check_all(&report, want);
            let ns = match lineup {
                Lineup::EveryCall => (0..iters)
                    .map(|i| slowest_rank(&report, i * ops_per_iter, ops_per_iter))
                    .sum(),
                Lineup::Once => slowest_rank(&report, 0, iters * ops_per_iter),
            };
            Duration::from_nanos(ns)
        })
    });
}

fn team(ranks: u32, f: u32) -> Team {
    Team::builder()
        .ranks(ranks)
        .fault_budget(f)
        .op_records(true)
        .build()
        .unwrap()
}

/// Back to back on a team that keeps no operation records (the default: no
/// per-call clock reads, no per-call memory): each rank times
/// its own loop of `iters` calls, lined up once; the time is the slowest
/// rank's loop divided by the calls.
fn bench_unrecorded<F>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    team: TeamBuilder,
    want: f64,
    call: F,
) where
    F: Fn(&mut Comm<'_>) -> Result<f64, String> + Sync,
{
    let team = team.op_records(false).build().unwrap();
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let barrier = YieldBarrier::new(team.ranks() as usize);
            let report = team.run(|comm| {
                barrier.wait();
                let started = Instant::now();
                let got: Result<Vec<f64>, String> = (0..iters).map(|_| call(comm)).collect();
                (got, started.elapsed())
            });
            assert_eq!(report.returned().count(), report.outcomes.len());
            assert!(report.ops.is_empty(), "no records kept");
            let mut slowest = Duration::ZERO;
            for (r, (got, took)) in report.returned() {
                let got = got.as_ref().unwrap_or_else(|e| panic!("rank {r}: {e}"));
                assert!(got.iter().all(|&v| v == want), "rank {r}: {got:?}");
                slowest = slowest.max(*took);
            }
            slowest
        })
    });
}

/// No fault tolerance at all: reduce with f = 0, broadcast uncorrected.
fn plain_team(ranks: u32) -> Team {
    Team::builder()
        .ranks(ranks)
        .fault_budget(0)
        .correction("none".parse().unwrap())
        .op_records(true)
        .build()
        .unwrap()
}

/// `reduce_into` rank 0, then `broadcast_into` from rank 0.
fn plain_allreduce(comm: &mut Comm<'_>) -> Result<f64, String> {
    let mut out = 0.0;
    comm.reduce_into(0, &input(comm.rank()), &mut out, SystemOperation::sum())
        .map_err(|e| e.to_string())?;
    comm.broadcast_into(0, &mut out)
        .map_err(|e| e.to_string())?;
    Ok(out)
}

/// A barrier has no value: its calls are checked for errors only.
fn barrier(comm: &mut Comm<'_>) -> Result<f64, String> {
    comm.barrier().map_err(|e| e.to_string())?;
    Ok(0.0)
}

/// A group of 10 samples over 3 s: every iteration starts a team.
fn short_group<'c>(c: &'c mut Criterion, name: &str) -> BenchmarkGroup<'c, WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    group
}

fn fault_free(c: &mut Criterion) {
    let groups = [
        ("allreduce", Lineup::EveryCall),
        ("allreduce_back_to_back", Lineup::Once),
        ("barrier", Lineup::EveryCall),
    ];
    for (name, lineup) in groups {
        let mut group = short_group(c, name);
        for ranks in RANKS {
            let all = expected(ranks, &[]);
            if name == "barrier" {
                let id = BenchmarkId::new("f=1", ranks);
                bench_point(&mut group, id, &team(ranks, 1), (lineup, 1, 0.0), barrier);
                continue;
            }
            // Back to back: only the target configuration and its reference.
            let budgets = if lineup == Lineup::Once { 1..=1 } else { 0..=2 };
            for f in budgets.filter(|&f| f < ranks) {
                let id = BenchmarkId::new(format!("f={f}"), ranks);
                bench_point(&mut group, id, &team(ranks, f), (lineup, 1, all), allreduce);
            }
            let id = BenchmarkId::new("plain", ranks);
            let point = (lineup, 2, all);
            bench_point(&mut group, id, &plain_team(ranks), point, plain_allreduce);
        }
        group.finish();
    }
    let mut group = short_group(c, "allreduce_unrecorded");
    for ranks in RANKS {
        let all = expected(ranks, &[]);
        let f1 = Team::builder().ranks(ranks).fault_budget(1);
        bench_unrecorded(
            &mut group,
            BenchmarkId::new("f=1", ranks),
            f1,
            all,
            allreduce,
        );
        if ranks as usize > num_cpus() {
            let tree = Team::builder()
                .ranks(ranks)
                .fault_budget(1)
                .allreduce(AllreduceAlgorithm::Tree);
            let id = BenchmarkId::new("f=1,tree", ranks);
            bench_unrecorded(&mut group, id, tree, all, allreduce);
        }
        let plain = Team::builder()
            .ranks(ranks)
            .fault_budget(0)
            .correction("none".parse().unwrap());
        let id = BenchmarkId::new("plain", ranks);
        bench_unrecorded(&mut group, id, plain, all, plain_allreduce);
    }
    group.finish();
}

/// The cores this process may run on.
fn num_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The median of `xs` (nanoseconds), in microseconds (`sim::Stats`).
fn median_us(xs: &[u64]) -> f64 {
    corrected::sim::Stats::of(xs.iter().map(|&x| x as f64)).p50 / 1e3
}

/// One fault configuration: `samples` fresh teams of `ranks` (f = 1) where
/// `victim` fails at operation `WARM` as `fault` says. Prints the faulty
/// operation's latency and the fault-free one's before it.
fn after_failure(ranks: u32, victim: Rank, fault: Fault, samples: usize) {
    let label = match fault {
        Fault::Hang => "hang",
        _ => "kill",
    };
    let role = if victim == 0 { "root" } else { "non-root" };
    let team = Team::builder()
        .ranks(ranks)
        .fault_budget(1)
        .failure_timeout(BENCH_FAILURE_TIMEOUT)
        .faults(FaultSchedule::none().at(victim, WARM as u32, fault))
        .op_records(true)
        .build()
        .unwrap();
    let (all, rest) = (expected(ranks, &[]), expected(ranks, &[victim]));
    let (mut faulty, mut before, mut bad) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..samples {
        let report = run_lined_up(&team, WARM + 1, Lineup::EveryCall, allreduce);
        let live: Vec<_> = report.returned().filter(|&(r, _)| r != victim).collect();
        let wrong = live.iter().find(|(_, got)| match got {
            Ok(v) => v.len() != WARM + 1 || v[..WARM].iter().any(|&x| x != all) || v[WARM] != rest,
            Err(_) => true,
        });
        let op = &report.ops[WARM];
        if let Some((r, got)) = wrong {
            bad.push(format!("rank {r}: {got:?}"));
        } else if op.completed as usize != live.len() || live.len() + 1 != ranks as usize {
            bad.push(format!(
                "{} of {} live ranks completed",
                op.completed,
                live.len()
            ));
        } else {
            faulty.push(op.latency_ns.iter().copied().max().unwrap_or(0));
            before.push(slowest_rank(&report, WARM - 1, 1));
        }
    }
    let id = format!("after_failure/{label}/{role}({victim})/{ranks}");
    if faulty.is_empty() {
        println!("{id:<36} no valid sample; {}", bad.join("; "));
        return;
    }
    let n = faulty.len();
    let (med, before_med) = (median_us(&faulty), median_us(&before));
    let (min, max) = (faulty[0] as f64 / 1e3, faulty[n - 1] as f64 / 1e3);
    println!(
        "{id:<36} median {med:>10.1} µs  [min {min:.1}, max {max:.1}]  \
         fault-free op before: {before_med:.1} µs  ({n} teams)"
    );
    if !bad.is_empty() {
        println!("    {} bad samples: {}", bad.len(), bad.join("; "));
    }
}

/// The `after_failure` group, unless a criterion filter excludes it (or
/// `--list` asks only for names). Under `--test` (`cargo test --benches`),
/// one team per configuration.
fn fault_runs() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        return;
    }
    if let Some(filter) = args.iter().find(|a| !a.starts_with('-')) {
        if !"after_failure".contains(filter.as_str()) && !filter.starts_with("after_failure") {
            return;
        }
    }
    let samples = if args.iter().any(|a| a == "--test") {
        1
    } else {
        FAULT_SAMPLES
    };
    println!(
        "after_failure: f = 1, one faulty allreduce after {WARM} fault-free ones per fresh team; \
         hang teams' failure timeout {} ms",
        BENCH_FAILURE_TIMEOUT.as_millis()
    );
    for ranks in RANKS {
        for fault in [Fault::Dead, Fault::Hang] {
            for victim in [ranks - 1, 0] {
                after_failure(ranks, victim, fault, samples);
            }
        }
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    fault_free(&mut c);
    c.final_summary();
    fault_runs();
}
