//! `corrected run`: collectives on real threads, with fault emulation.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use corrected::protocol::bcast::Correction;
use corrected::runtime::{Fault, FaultSchedule, Pinning, RankOutcome, Team};
use corrected::sim::Stats;
use corrected::topology::TreeSpec;
use corrected::types::Rank;
use corrected::Error;

/// Options of `corrected run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Number of ranks (threads); default: one per available core.
    #[arg(long)]
    ranks: Option<u32>,
    /// The collective: bcast.
    #[arg(long, default_value = "bcast")]
    op: String,
    /// Root of every broadcast.
    #[arg(long, default_value_t = 0)]
    root: Rank,
    /// Dissemination tree: binomial, lame:K, kary:K or optimal; prefix inorder- for depth-first numbering.
    #[arg(long, default_value = "binomial")]
    tree: String,
    /// Correction: none, opportunistic:D, optimized:D, checked, checked-sync or delayed:NANOS.
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

/// Runs `corrected run`. Exit code 1 if any delivery was wrong or missing
/// where the correction guarantees it.
pub fn run(args: RunArgs) -> Result<ExitCode, Error> {
    if args.op != "bcast" && args.op != "broadcast" {
        return Err(Error::Unsupported(format!(
            "--op {} is not available yet; use --op bcast (reduce, allreduce and barrier come with the next issue)",
            args.op
        )));
    }
    let tree: TreeSpec = args.tree.parse()?;
    let correction: Correction = args.correction.parse()?;
    let mut builder = Team::builder()
        .tree(tree)
        .correction(correction)
        .op_timeout(Duration::from_secs_f64(args.timeout.max(0.001)))
        .pinning(if args.no_pin {
            Pinning::None
        } else {
            Pinning::RoundRobin
        });
    if let Some(r) = args.ranks {
        builder = builder.ranks(r);
    }
    if args.kill.contains(&args.root) || args.hang.contains(&args.root) {
        return Err(Error::DeadRoot(args.root));
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
        });
    }
    for &r in &args.panic {
        if r >= ranks {
            return Err(Error::RankOutOfRange {
                rank: r,
                procs: ranks,
            });
        }
    }
    let (iters, root, panics) = (args.iters, args.root, &args.panic);
    let started = std::time::Instant::now();
    let report = team.run(|comm| {
        let mut got = Vec::with_capacity(iters as usize);
        for i in 0..iters {
            if i == iters / 2 && panics.contains(&comm.rank()) {
                panic!("rank {} panics on purpose (--panic)", comm.rank());
            }
            let mut v = if comm.rank() == root { expected(i) } else { 0 };
            got.push(comm.broadcast_into(root, &mut v).map(|()| v));
        }
        got
    });
    let wall = started.elapsed();

    let mut delivered = 0u64;
    let mut missing = 0u64;
    let mut wrong = 0u64;
    for (rank, outcome) in report.outcomes.iter().enumerate() {
        let rank = rank as Rank;
        let RankOutcome::Returned(got) = outcome else {
            continue;
        };
        if report.failed.contains(&rank) || report.hung.contains(&rank) {
            continue;
        }
        for (i, r) in got.iter().enumerate() {
            match r {
                Ok(v) if *v == expected(i as u32) => delivered += 1,
                Ok(_) => wrong += 1,
                Err(_) => missing += 1,
            }
        }
    }
    let guaranteed =
        correction.guarantees_delivery() || (args.kill.is_empty() && args.hang.is_empty());
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
            "op": "bcast",
            "iters": iters,
            "tree": tree.to_string(),
            "correction": correction.to_string(),
            "latency_ns": { "p50": lat.p50, "p99": lat.p99, "max": lat.max, "mean": lat.mean },
            "messages_per_op": messages_per_op,
            "delivered": delivered,
            "missing": missing,
            "violations": violations,
            "failed_ranks": report.failed,
            "hung_ranks": report.hung,
            "panicked_ranks": panicked,
            "wall_seconds": wall.as_secs_f64(),
        });
        out!("{v}");
    } else {
        out!(
            "{ranks} ranks, {iters} broadcasts from rank {root}, tree {tree}, correction {correction}, {:.2} s",
            wall.as_secs_f64()
        );
        out!(
            "latency per broadcast (slowest rank's call): p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
            lat.p50 / 1e3,
            lat.p99 / 1e3,
            lat.max / 1e3
        );
        out!("messages per broadcast: {messages_per_op:.2}");
        out!("delivered to live ranks: {delivered}, missing: {missing}, wrong: {wrong}, violations: {violations}");
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
