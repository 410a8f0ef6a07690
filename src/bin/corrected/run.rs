//! `corrected run`: collectives on real threads, with fault emulation.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use corrected::protocol::bcast::Correction;
use corrected::protocol::reduce::FailureScheme;
use corrected::runtime::{Fault, FaultSchedule, Pinning, RankOutcome, Team};
use corrected::sim::engine::NEVER;
use corrected::sim::reduce::{includes_exactly, input_of};
use corrected::sim::Stats;
use corrected::topology::TreeSpec;
use corrected::types::{Rank, Tick};
use corrected::{ConfigError, Error};

use crate::error::CliError;

/// Options of `corrected run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Number of ranks (threads); default: one per available core.
    #[arg(long)]
    ranks: Option<u32>,
    /// The collective: bcast, reduce, allreduce or barrier.
    #[arg(long, default_value = "bcast")]
    op: String,
    /// Root of every broadcast or reduce.
    #[arg(long, default_value_t = 0)]
    root: Rank,
    /// Fault budget f of reduce, allreduce and barrier (default 1, 0 for one rank).
    #[arg(long)]
    f: Option<u32>,
    /// Failure information of reduce: list, count or bit.
    #[arg(long, default_value = "bit")]
    failure_scheme: String,
    /// Milliseconds a rank waits on a silent peer inside an operation before
    /// declaring it failed (finds --hang ranks in reduce and allreduce).
    #[arg(long, default_value_t = 1000.0)]
    failure_timeout_ms: f64,
    /// Dissemination tree: binomial, lame:K, kary:K or optimal; prefix inorder- for depth-first numbering.
    #[arg(long, default_value = "binomial")]
    tree: String,
    /// Correction: none, opportunistic:D, optimized:D, relaying:D, forwarding:D, checked, checked-sync or delayed:NANOS.
    #[arg(long, default_value = "checked")]
    correction: String,
    /// Ranks dead from the first operation on, comma separated.
    #[arg(long, value_delimiter = ',')]
    kill: Vec<Rank>,
    /// RANK:N: the rank dies right after its N-th send in the first operation.
    #[arg(long, value_delimiter = ',', value_parser = crate::parse_rank_pair::<u32>)]
    kill_after_sends: Vec<(Rank, u32)>,
    /// Ranks that hang (alive but silent) from the first operation on.
    #[arg(long, value_delimiter = ',')]
    hang: Vec<Rank>,
    /// Ranks whose code panics half-way through the iterations.
    #[arg(long, value_delimiter = ',')]
    panic: Vec<Rank>,
    /// Number of operations.
    #[arg(long, default_value_t = 1000)]
    iters: u32,
    /// Least microseconds between two correction messages of one rank.
    #[arg(long, default_value_t = 0.0)]
    pace_us: f64,
    /// Do not pin threads to cores.
    #[arg(long)]
    no_pin: bool,
    /// Seconds a rank waits inside one operation before giving up.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

fn expected(i: u32) -> u64 {
    0x5eed_0000_0000 + i as u64
}

/// The collectives `corrected run` drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Bcast,
    Reduce,
    Allreduce,
    Barrier,
}

impl Op {
    fn parse(s: &str) -> Result<Op, CliError> {
        Ok(match s {
            "bcast" | "broadcast" => Op::Bcast,
            "reduce" => Op::Reduce,
            "allreduce" => Op::Allreduce,
            "barrier" => Op::Barrier,
            _ => {
                return Err(CliError::UnknownOp {
                    op: s.to_string(),
                    expected: "bcast, reduce, allreduce or barrier",
                })
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            Op::Bcast => "bcast",
            Op::Reduce => "reduce",
            Op::Allreduce => "allreduce",
            Op::Barrier => "barrier",
        }
    }

    fn rooted(self) -> bool {
        matches!(self, Op::Bcast | Op::Reduce)
    }
}

/// One operation on one rank: the value it produced (`None` where the
/// collective gives none, e.g. a reduce's non-roots or a barrier).
type Got = Result<Option<u64>, Error>;

/// Per operation, when each rank failed in the sense of the inclusion check
/// (`NEVER`: live, 0: contributed nothing, 1: failed during it).
fn death_of(args: &RunArgs, report_failed: &[Rank], rank: Rank, op: u32) -> Tick {
    let panics_at = args.iters / 2;
    if args.kill.contains(&rank) || args.hang.contains(&rank) {
        return 0;
    }
    if args.panic.contains(&rank) && op >= panics_at {
        return 0;
    }
    if args.kill_after_sends.iter().any(|&(r, _)| r == rank) && report_failed.contains(&rank) {
        return if op == 0 { 1 } else { 0 };
    }
    if report_failed.contains(&rank) {
        // Declared failed by a timeout (or died by a panic mid-way): either.
        return 1;
    }
    NEVER
}

fn wrapping_sum(a: &u64, b: &u64) -> u64 {
    a.wrapping_add(*b)
}

/// Runs `corrected run`. Exit code 1 if any delivery was wrong or missing
/// where the algorithm guarantees it. Reduce and allreduce sum
/// pseudo-random 64-bit inputs (wrapping), so a missing, doubled or partial
/// input shows in the result.
pub fn run(args: RunArgs) -> Result<ExitCode, CliError> {
    let op = Op::parse(&args.op)?;
    let tree: TreeSpec = args.tree.parse()?;
    let correction: Correction = args.correction.parse()?;
    let scheme: FailureScheme = args.failure_scheme.parse()?;
    // The JSON's latency and message counts come from the operation records.
    let mut builder = Team::builder()
        .op_records(true)
        .tree(tree)
        .correction(correction)
        .failure_scheme(scheme)
        .failure_timeout(Duration::from_secs_f64(
            args.failure_timeout_ms.max(0.001) / 1e3,
        ))
        .op_timeout(Duration::from_secs_f64(args.timeout.max(0.001)))
        .correction_pace(Duration::from_secs_f64(args.pace_us.max(0.0) / 1e6))
        .pinning(if args.no_pin {
            Pinning::None
        } else {
            Pinning::RoundRobin
        });
    if let Some(r) = args.ranks {
        builder = builder.ranks(r);
    }
    if let Some(f) = args.f {
        builder = builder.fault_budget(f);
    }
    if op == Op::Bcast && (args.kill.contains(&args.root) || args.hang.contains(&args.root)) {
        return Err(ConfigError::DeadRoot(args.root).into());
    }
    let mut faults = FaultSchedule::none().kill_group(args.kill.iter().copied(), 0);
    for &(r, n) in &args.kill_after_sends {
        faults = faults.at(r, 0, Fault::DieAfterSends(n));
    }
    for &r in &args.hang {
        faults = faults.at(r, 0, Fault::Hang);
    }
    let team = builder.faults(faults).build()?;
    let ranks = team.ranks();
    if args.root >= ranks {
        return Err(Error::RankOutOfRange {
            rank: args.root,
            procs: ranks,
        }
        .into());
    }
    for &r in &args.panic {
        if r >= ranks {
            return Err(Error::RankOutOfRange {
                rank: r,
                procs: ranks,
            }
            .into());
        }
    }
    let (iters, root, panics) = (args.iters, args.root, &args.panic);
    let started = std::time::Instant::now();
    let report = team.run(|comm| {
        let me = comm.rank();
        let mut got: Vec<Got> = Vec::with_capacity(iters as usize);
        for i in 0..iters {
            if i == iters / 2 && panics.contains(&me) {
                panic!("rank {me} panics on purpose (--panic)");
            }
            let mut v = 0u64;
            got.push(match op {
                Op::Bcast => {
                    if me == root {
                        v = expected(i);
                    }
                    comm.broadcast_into(root, &mut v).map(|()| Some(v))
                }
                Op::Reduce => comm
                    .reduce_into(root, &input_of(me), &mut v, wrapping_sum)
                    .map(|()| (me == root).then_some(v)),
                Op::Allreduce => comm
                    .all_reduce_into(&input_of(me), &mut v, wrapping_sum)
                    .map(|()| Some(v)),
                Op::Barrier => comm.barrier().map(|()| None),
            });
        }
        got
    });
    let wall = started.elapsed();

    let mut delivered = 0u64;
    let mut missing = 0u64;
    let mut wrong = 0u64;
    let mut consistent = true;
    let mut deaths: Vec<Vec<Tick>> = Vec::with_capacity(iters as usize);
    for i in 0..iters {
        deaths.push(
            (0..ranks)
                .map(|r| death_of(&args, &report.failed, r, i))
                .collect(),
        );
    }
    let mut agreed: Vec<Option<u64>> = vec![None; iters as usize];
    for (rank, outcome) in report.outcomes.iter().enumerate() {
        let rank = rank as Rank;
        let RankOutcome::Returned(got) = outcome else {
            continue;
        };
        if report.failed.contains(&rank) || report.hung.contains(&rank) {
            continue;
        }
        for (i, r) in got.iter().enumerate() {
            let ok = match (op, r) {
                (_, Err(_)) => {
                    missing += 1;
                    continue;
                }
                (Op::Bcast, Ok(v)) => *v == Some(expected(i as u32)),
                (Op::Reduce | Op::Allreduce, Ok(Some(v))) => {
                    let same = *agreed[i].get_or_insert(*v) == *v;
                    same && includes_exactly(*v, &deaths[i])
                }
                (_, Ok(_)) => true,
            };
            if ok {
                delivered += 1;
            } else {
                wrong += 1;
                consistent = false;
            }
        }
    }
    let dead_or_hung = !(args.kill.is_empty() && args.hang.is_empty());
    let guaranteed = match op {
        Op::Bcast => correction.guarantees_delivery() || !dead_or_hung,
        _ => report.failed.len() as u32 <= team.fault_budget(),
    };
    let violations = wrong
        + if guaranteed && args.kill_after_sends.is_empty() {
            missing
        } else {
            0
        };
    let latencies: Vec<f64> = report
        .ops
        .iter()
        .filter_map(|o| o.latency_ns.iter().max().map(|&ns| ns as f64))
        .collect();
    let lat = Stats::of(latencies);
    let messages: u64 = report.ops.iter().map(|o| o.messages).sum();
    let messages_per_op = messages as f64 / report.ops.len().max(1) as f64;
    let panicked: Vec<Rank> = report
        .outcomes
        .iter()
        .enumerate()
        .filter(|(_, o)| matches!(o, RankOutcome::Panicked(_)))
        .map(|(r, _)| r as Rank)
        .collect();
    if args.json {
        let v = serde_json::json!({
            "ranks": ranks,
            "op": op.name(),
            "iters": iters,
            "f": (!op.rooted() || op == Op::Reduce).then(|| team.fault_budget()),
            "tree": tree.to_string(),
            "correction": correction.to_string(),
            "latency_ns": { "p50": lat.p50, "p99": lat.p99, "max": lat.max, "mean": lat.mean },
            "messages_per_op": messages_per_op,
            "delivered": delivered,
            "missing": missing,
            "violations": violations,
            "result_consistent": consistent,
            "failed_ranks": report.failed,
            "hung_ranks": report.hung,
            "panicked_ranks": panicked,
            "wall_seconds": wall.as_secs_f64(),
        });
        out!("{v}");
    } else {
        let what = match op {
            Op::Bcast => format!("broadcasts from rank {root}"),
            Op::Reduce => format!("reduces to rank {root}, f={}", team.fault_budget()),
            Op::Allreduce => format!("allreduces, f={}", team.fault_budget()),
            Op::Barrier => format!("barriers, f={}", team.fault_budget()),
        };
        out!(
            "{ranks} ranks, {iters} {what}, tree {tree}, correction {correction}, {:.2} s",
            wall.as_secs_f64()
        );
        out!(
            "latency per operation (slowest rank's call): p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
            lat.p50 / 1e3,
            lat.p99 / 1e3,
            lat.max / 1e3
        );
        out!("messages per operation: {messages_per_op:.2}");
        out!("delivered to live ranks: {delivered}, missing: {missing}, wrong: {wrong}, violations: {violations}, result consistent: {consistent}");
        out!(
            "failed ranks: {:?}, hung: {:?}, panicked: {:?}",
            report.failed,
            report.hung,
            panicked
        );
    }
    Ok(if violations == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
