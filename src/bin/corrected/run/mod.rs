//! `corrected run`: collectives on real threads, with fault emulation.

use corrected::Collectives;
use std::collections::HashMap;
use std::mem::size_of;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use corrected::protocol::bcast::Correction;
use corrected::protocol::reduce::FailureScheme;
use corrected::runtime::{
    AllreduceAlgorithm, BroadcastAlgorithm, Fault, FaultSchedule, OpStats, Pinning, RankOutcome,
    ReduceAlgorithm, Team, DEFAULT_TREE, FTCO_ALLREDUCE_ROOT,
};
use corrected::sim::reduce::input_of;
use corrected::sim::Stats;
use corrected::types::Rank;
use corrected::{ConfigError, Error};

use crate::bcast::BcastArgs;
use crate::error::CliError;
use crate::limits::{
    at_least_one, bytes, check_memory, check_tree_fits, out_of_range, MAX_TIMEOUT_S, MIN_TIMEOUT_S,
};
use crate::op::Op;
use crate::progress::Progress;

mod report;
mod tally;
use report::RunReport;
use tally::{expected, tally, Got};

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
    #[arg(long, default_value = "list")]
    failure_scheme: String,
    /// Milliseconds a rank waits on a silent peer inside an operation before
    /// declaring it failed (finds --hang ranks in reduce and allreduce);
    /// above 0 and at most --timeout. Default: 1000, or half of --timeout
    /// where that is shorter.
    #[arg(long)]
    failure_timeout_ms: Option<f64>,
    #[command(flatten)]
    bcast: BcastArgs,
    /// Allreduce and barrier algorithm: tree (up-correction reduce, then the
    /// corrected broadcast), star (inputs straight to a root, the result
    /// straight back), or auto (star where ranks outnumber cores; the
    /// default). With --op allreduce or barrier only.
    #[arg(long)]
    allreduce: Option<String>,
    /// Ranks dead from the first operation on, comma separated. A rank may
    /// be in one of --kill, --hang, --kill-after-sends and --panic only, and
    /// at least one rank must be in none.
    #[arg(long, value_delimiter = ',')]
    kill: Vec<Rank>,
    /// RANK:N: the rank dies right after its N-th send in the first
    /// operation, or when that call ends if it sends fewer (the kill point
    /// always fires).
    #[arg(long, value_delimiter = ',', value_parser = crate::parse_rank_pair::<u32>)]
    kill_after_sends: Vec<(Rank, u32)>,
    /// Ranks that hang (alive but silent) from the first operation on.
    #[arg(long, value_delimiter = ',')]
    hang: Vec<Rank>,
    /// Ranks whose code panics half-way through the iterations.
    #[arg(long, value_delimiter = ',')]
    panic: Vec<Rank>,
    /// Number of operations (1 or more).
    #[arg(long, default_value_t = 1000)]
    iters: u32,
    /// Bytes of each rank's value: 8 (one u64), or any multiple of 8 (a
    /// vector of u64, broadcast whole or reduced element by element; the
    /// first, the last and up to 4096 evenly spaced elements of each result
    /// checked). A broadcast's root writes a new value before each call, so
    /// the latency includes that write (its receivers are in the call
    /// already) and the copies of lines its core just wrote. A barrier
    /// carries none: --bytes is refused with it. Default: 8.
    #[arg(long)]
    bytes: Option<u64>,
    /// Least microseconds between two correction messages of one rank
    /// (0: no pacing); a full sweep, (ranks - 1) x pace, must take less than --timeout.
    #[arg(long, default_value_t = 0.0)]
    pace_us: f64,
    /// Do not pin threads to cores.
    #[arg(long)]
    no_pin: bool,
    /// Seconds a rank waits inside one operation before giving up
    /// (at least 0.001 and at most 86400).
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// A value as a vector of `n` elements: element k is `x * (2k + 1)`
/// (wrapping). The odd factor is invertible modulo 2^64, so a wrapping sum
/// of such vectors gives back, from each element, the sum of the `x` it
/// includes ([`gather`]).
fn spread(x: u64, n: usize) -> Vec<u64> {
    let mut v = vec![0; n];
    spread_into(x, &mut v);
    v
}

/// [`spread`] into `v`, in place: a broadcast's root writes its value for
/// each call without allocating (a 1 MiB allocation per call, freed at
/// once, is 256 page faults that the receivers, already in the call,
/// would wait out).
fn spread_into(x: u64, v: &mut [u64]) {
    for (k, e) in v.iter_mut().enumerate() {
        *e = x.wrapping_mul(2 * k as u64 + 1);
    }
}

/// The one value every element of `v` stands for, or a value no check
/// accepts (the first element's, off by one) if two checked elements
/// disagree: a result whose elements include different ranks is wrong.
/// Element 0 is `x` itself (its factor is 1); of the others, at most
/// [`CHECKED`] evenly spaced ones and the last are checked, one
/// multiplication each. That is at least one per chunk of a large
/// reduction (64 KiB, `CHUNK_BYTES`) up to 16 MiB, and the check between
/// calls stays small next to a call: checking every element slowed an
/// 8-rank loop of 1 MiB allreduces five times, and its reported latency
/// with it.
fn gather(v: &[u64]) -> u64 {
    let x = v[0];
    let step = v.len().div_ceil(CHECKED).max(1);
    let agree = (0..v.len())
        .step_by(step)
        .chain(std::iter::once(v.len() - 1))
        .all(|k| v[k] == x.wrapping_mul(2 * k as u64 + 1));
    if agree {
        x
    } else {
        x.wrapping_add(1)
    }
}

/// Elements of a result [`gather`] checks, at most (plus the last).
const CHECKED: usize = 4096;

fn wrapping_sum(a: &u64, b: &u64) -> u64 {
    a.wrapping_add(*b)
}

/// Bytes per second over a latency in nanoseconds, in GB/s (10^9 bytes).
fn bandwidth(bytes: u64, latency_ns: f64) -> f64 {
    if latency_ns > 0.0 {
        bytes as f64 / latency_ns
    } else {
        0.0
    }
}

impl RunArgs {
    /// `--bytes`, 8 unless given.
    fn bytes(&self) -> u64 {
        self.bytes.unwrap_or(8)
    }

    /// `--failure-timeout-ms`: unless given, 1000 or half of `--timeout`
    /// where that is shorter.
    fn failure_timeout_ms(&self) -> f64 {
        self.failure_timeout_ms
            .unwrap_or_else(|| (self.timeout * 1e3 / 2.0).min(1000.0))
    }
}

/// The options' own checks: values out of range, a rank with two faults.
/// Before the team is built: nothing has started.
fn check_options(args: &RunArgs, op: Op) -> Result<(), CliError> {
    at_least_one("--iters", args.iters.into())?;
    if let (Some(bytes), Op::Barrier) = (args.bytes, op) {
        return Err(out_of_range(
            "--bytes",
            bytes,
            "a barrier carries no data",
            "leave out --bytes with --op barrier",
        ));
    }
    if let (Some(allreduce), Op::Bcast | Op::Reduce) = (&args.allreduce, op) {
        return Err(out_of_range(
            "--allreduce",
            allreduce,
            format!("--op {} runs no allreduce", op.name()),
            "pass --allreduce with --op allreduce or barrier only",
        ));
    }
    if args.bytes() == 0 || args.bytes() % 8 != 0 {
        return Err(out_of_range(
            "--bytes",
            args.bytes(),
            "it must be a positive multiple of 8 (values are vectors of u64)",
            "pass --bytes 8 (the default), or e.g. --bytes 1048576",
        ));
    }
    if !(args.timeout >= MIN_TIMEOUT_S && args.timeout <= MAX_TIMEOUT_S) {
        return Err(out_of_range(
            "--timeout",
            args.timeout,
            format!("it must be at least {MIN_TIMEOUT_S} and at most {MAX_TIMEOUT_S} seconds (a rank sharing a core waits out a time slice of milliseconds)"),
            "pass --timeout in seconds, e.g. --timeout 10 (the default)",
        ));
    }
    if !(args.failure_timeout_ms() > 0.0 && args.failure_timeout_ms() <= args.timeout * 1e3) {
        return Err(out_of_range(
            "--failure-timeout-ms",
            args.failure_timeout_ms(),
            format!(
                "it must be above 0 and at most --timeout ({} ms): a silent peer must be found before the operation times out",
                args.timeout * 1e3
            ),
            "pass a smaller --failure-timeout-ms, or raise --timeout",
        ));
    }
    if !(args.pace_us >= 0.0 && args.pace_us.is_finite()) {
        return Err(out_of_range(
            "--pace-us",
            args.pace_us,
            "it must be 0 (no pacing) or more microseconds",
            "pass --pace-us 0, or a number of microseconds",
        ));
    }
    let lists: [(&'static str, Vec<Rank>); 4] = [
        ("--kill", args.kill.clone()),
        ("--hang", args.hang.clone()),
        (
            "--kill-after-sends",
            args.kill_after_sends.iter().map(|&(r, _)| r).collect(),
        ),
        ("--panic", args.panic.clone()),
    ];
    let mut seen: HashMap<Rank, &'static str> = HashMap::new();
    for (name, ranks) in &lists {
        for &r in ranks {
            if let Some(first) = seen.insert(r, name) {
                return Err(CliError::FaultConflict {
                    rank: r,
                    first,
                    second: name,
                });
            }
        }
    }
    Ok(())
}

/// The checks that need the team's size: a survivor, a correction whose
/// waits fit in the timeout, the memory of the results.
fn check_team(args: &RunArgs, correction: Correction, ranks: u32) -> Result<(), CliError> {
    let faulty = args.kill.len() + args.hang.len() + args.kill_after_sends.len() + args.panic.len();
    // The lists are disjoint (check_options) and in range (build).
    if faulty >= ranks as usize {
        return Err(CliError::NoSurvivor { ranks });
    }
    let timeout_ns = args.timeout * 1e9;
    let delay_ns = match correction {
        Correction::Delayed { delay } => delay as f64,
        _ => 0.0,
    };
    let pace_ns = args.pace_us * 1e3;
    let sweep_ns = delay_ns + f64::from(ranks - 1) * pace_ns;
    if sweep_ns >= timeout_ns {
        let why = format!(
            "a correction sweep can take the delay plus (ranks - 1) paced messages, {delay_ns} + {} x {pace_ns} ns = {:.3} s, not below --timeout ({} s): operations would time out",
            ranks - 1,
            sweep_ns / 1e9,
            args.timeout
        );
        return Err(if delay_ns > 0.0 {
            out_of_range(
                "--correction",
                args.bcast.tree_correction(),
                why,
                format!(
                    "pass delayed:NANOS with NANOS below {:.0}, or raise --timeout",
                    timeout_ns - (sweep_ns - delay_ns)
                ),
            )
        } else {
            out_of_range(
                "--pace-us",
                args.pace_us,
                why,
                format!(
                    "pass --pace-us below {:.3}, or raise --timeout",
                    timeout_ns / 1e3 / f64::from(ranks - 1)
                ),
            )
        });
    }
    // Every rank keeps its result of every operation (and an operation
    // record), until the report.
    let per_rank_op =
        (size_of::<Got>() + corrected::runtime::OP_RECORD_BYTES + size_of::<u64>()) as u64;
    let per_op = (size_of::<OpStats>() + 2 * size_of::<u64>()) as u64;
    let (ranks, iters) = (u64::from(ranks), u64::from(args.iters));
    let need = bytes(bytes(ranks, iters), per_rank_op).saturating_add(bytes(iters, per_op));
    // And its input and output vectors, plus about as much in segments.
    let data = bytes(ranks, args.bytes().saturating_mul(4));
    check_memory(
        "this run",
        need.saturating_add(data),
        || {
            format!(
                "{ranks} ranks x ({iters} operations x {per_rank_op} bytes of results + 4 x {} bytes of values)",
                args.bytes()
            )
        },
        "fewer --iters, --ranks or --bytes",
    )
}

/// Runs `corrected run`. Exit code 1 if a delivery was wrong or missing
/// where the algorithm guarantees it; expected losses (a failed root, a
/// correction without a guarantee meeting faults, more than f failures)
/// are counted apart, and more than f failures (`TooManyFailures`) exit
/// with code 3 and a message. Reduce and allreduce sum pseudo-random 64-bit inputs
/// (wrapping), so a missing, doubled or partial input shows in the result.
pub fn run(args: RunArgs) -> Result<ExitCode, CliError> {
    let op = Op::parse(
        &args.op,
        &[Op::Bcast, Op::Reduce, Op::Allreduce, Op::Barrier],
        "bcast, reduce, allreduce or barrier",
    )?;
    let chosen = args.bcast.choose(op, args.timeout)?;
    let (algorithm, delivery, bcast_name) =
        (chosen.algorithm, chosen.delivery, chosen.name.clone());
    let (tree, correction) = (chosen.tree, chosen.correction);
    let ftco_reduce = matches!(chosen.reduce, ReduceAlgorithm::Ftco { .. });
    let ftco = ftco_reduce || matches!(algorithm, BroadcastAlgorithm::Ftco { .. });
    let timed = ftco || matches!(algorithm, BroadcastAlgorithm::AckTree);
    let allreduce: AllreduceAlgorithm = args.allreduce.as_deref().unwrap_or("auto").parse()?;
    let scheme: FailureScheme = args.failure_scheme.parse()?;
    check_options(&args, op)?;
    // The JSON's latency and message counts come from the operation records.
    let mut builder = chosen
        .apply(Team::builder())
        .op_records(true)
        .allreduce(allreduce)
        .failure_scheme(scheme)
        .failure_timeout(Duration::from_secs_f64(args.failure_timeout_ms() / 1e3))
        .op_timeout(Duration::from_secs_f64(args.timeout))
        .correction_pace(Duration::from_secs_f64(args.pace_us / 1e6))
        .pinning(if args.no_pin {
            Pinning::None
        } else {
            Pinning::Packed
        });
    if let Some(r) = args.ranks {
        builder = builder.ranks(r);
    }
    if let Some(f) = args.f {
        builder = builder.fault_budget(f);
    }
    if op.rooted() && (args.kill.contains(&args.root) || args.hang.contains(&args.root)) {
        return Err(ConfigError::DeadRoot(args.root).into());
    }
    // FTCO's root never fails (Section 2): an allreduce's and a barrier's
    // is rank 0.
    let ftco_root = if op == Op::Reduce {
        args.root
    } else {
        FTCO_ALLREDUCE_ROOT
    };
    let root_dies = args.kill.contains(&ftco_root)
        || args.hang.contains(&ftco_root)
        || args.kill_after_sends.iter().any(|&(r, _)| r == ftco_root);
    if ftco_reduce && root_dies {
        return Err(ConfigError::DeadRoot(ftco_root).into());
    }
    let mut faults = FaultSchedule::none().kill_group(args.kill.iter().copied(), 0);
    for &(r, n) in &args.kill_after_sends {
        faults = faults.at(r, 0, Fault::DieAfterSends(n));
    }
    for &r in &args.hang {
        faults = faults.at(r, 0, Fault::Hang);
    }
    let team = builder.faults(faults).build()?;
    // The tree as run: the corrected broadcast's as the team resolved it,
    // else the one given or the binomial (TeamBuilder::tree).
    let tree = match (op, algorithm) {
        (Op::Bcast, BroadcastAlgorithm::Tree) => team.broadcast_tree(),
        _ => tree.unwrap_or(DEFAULT_TREE),
    };
    let ranks = team.ranks();
    for &r in std::iter::once(&args.root).chain(&args.panic) {
        if r >= ranks {
            return Err(Error::RankOutOfRange {
                rank: r,
                procs: ranks,
            }
            .into());
        }
    }
    check_team(&args, correction, ranks)?;
    check_tree_fits(tree, ranks, "--ranks")?;
    crate::stalls::warn_if_below("--failure-timeout-ms", args.failure_timeout_ms(), ranks);
    let (iters, root, panics) = (args.iters, args.root, &args.panic);
    let n = (args.bytes() / 8) as usize;
    let progress = Progress::new(ranks, iters);
    let started = std::time::Instant::now();
    let report = progress.show_while(|| {
        team.run(|comm| {
            let me = comm.rank();
            let _done = progress.rank_started();
            let mut got: Vec<Got> = Vec::with_capacity(iters as usize);
            let input: Vec<u64> = spread(input_of(me), n);
            let mut v = vec![0u64; n];
            for i in 0..iters {
                if i == iters / 2 && panics.contains(&me) {
                    panic!("rank {me} panics on purpose (--panic)");
                }
                got.push(match op {
                    Op::Bcast => {
                        if me == root {
                            spread_into(expected(i), &mut v);
                        }
                        comm.broadcast_into(root, &mut v[..])
                            .map(|()| Some(gather(&v)))
                    }
                    Op::Reduce => comm
                        .reduce_into(root, &input[..], &mut v[..], wrapping_sum)
                        .map(|()| (me == root).then(|| gather(&v))),
                    Op::Allreduce => comm
                        .all_reduce_into(&input[..], &mut v[..], wrapping_sum)
                        .map(|()| Some(gather(&v))),
                    Op::Barrier => comm.barrier().map(|()| None),
                });
                progress.op_done();
            }
            got
        })
    });
    let wall = started.elapsed();

    // FTCO has no fault budget: any number of ranks may fail but the root.
    let f = if ftco_reduce {
        u32::MAX
    } else {
        team.fault_budget()
    };
    let t = tally(&args, op, delivery, f, &report);
    let gossip = op == Op::Bcast && matches!(algorithm, BroadcastAlgorithm::Gossip(_));
    let latencies = report
        .ops
        .iter()
        .filter_map(|o| o.latency_ns.iter().max().map(|&ns| ns as f64));
    let lat = Stats::of(latencies);
    // The allreduce's and barrier's algorithm, for reports.
    let reduction = if ftco_reduce {
        bcast_name.clone()
    } else {
        team.allreduce_algorithm().to_string()
    };
    let budget = if ftco_reduce {
        "no fault budget".to_string()
    } else {
        format!("f={}", team.fault_budget())
    };
    let panicked_ranks: Vec<Rank> = report
        .outcomes
        .iter()
        .enumerate()
        .filter(|(_, o)| matches!(o, RankOutcome::Panicked(_)))
        .map(|(r, _)| r as Rank)
        .collect();
    let per_op = |n: u64| n as f64 / report.ops.len().max(1) as f64;
    let printed = RunReport {
        command: "run",
        ranks,
        op: op.name(),
        root: op.rooted().then_some(root),
        iters,
        algorithm: args.bcast.algorithm.clone(),
        broadcast: (op == Op::Bcast).then(|| bcast_name.clone()),
        reduce: (op == Op::Reduce).then(|| {
            if ftco_reduce {
                bcast_name.clone()
            } else {
                "up-correction".to_string()
            }
        }),
        allreduce: matches!(op, Op::Allreduce | Op::Barrier).then(|| reduction.clone()),
        tree: tree.to_string(),
        // The correction the operation ran: gossip's own for a gossip
        // broadcast, none for BIG, FTCO and the ack tree.
        correction: match (op, algorithm) {
            (_, _) if ftco_reduce => None,
            (Op::Bcast, BroadcastAlgorithm::Tree) => Some(correction.to_string()),
            (Op::Bcast, BroadcastAlgorithm::Gossip(_)) => Some(
                args.bcast
                    .correction
                    .as_deref()
                    .unwrap_or("ccg")
                    .to_string(),
            ),
            (Op::Bcast, _) => None,
            _ => Some(correction.to_string()),
        },
        f: (!ftco_reduce && op != Op::Bcast).then(|| team.fault_budget()),
        failure_scheme: (!ftco_reduce && op != Op::Bcast).then(|| scheme.to_string()),
        failure_timeout_ms: args.failure_timeout_ms(),
        timeout: args.timeout,
        timeout_ms: args.bcast.timeout_ms,
        bytes: (op != Op::Barrier).then_some(args.bytes()),
        pace_us: args.pace_us,
        kill: args.kill.clone(),
        kill_after_sends: args.kill_after_sends.clone(),
        hang: args.hang.clone(),
        panic: args.panic.clone(),
        latency_ns: lat,
        answer_delay_ns: ftco
            .then(|| Stats::of(report.answer_delays_ns.iter().map(|&ns| ns as f64))),
        messages_per_op: Stats::of(report.ops.iter().map(|o| o.messages as f64)),
        consistency: (op == Op::Bcast).then(|| Stats::of(t.consistency.iter().copied())),
        g_nodes_per_op: gossip.then(|| report.gossip_colored as f64 / f64::from(iters)),
        timeouts: timed.then_some(report.timeouts),
        false_suspicions: timed.then_some(report.false_suspicions),
        bandwidth_gbs: (op != Op::Barrier).then(|| bandwidth(args.bytes(), lat.p50)),
        helped_pumps_per_op: per_op(report.helped),
        segment_allocations: report.segment_allocations,
        delivered: t.delivered,
        missing: t.missing,
        missing_by_error: t.errors.clone(),
        wrong: t.wrong,
        expected_misses: t.expected_misses,
        root_failed: t.root_failed,
        violations: t.violations,
        result_consistent: t.consistent,
        failed_ranks: report.failed.clone(),
        hung_ranks: report.hung.clone(),
        panicked_ranks,
        wall_seconds: wall.as_secs_f64(),
    };
    if args.json {
        printed.print_json();
    } else {
        let what = match op {
            Op::Bcast => format!("broadcasts from rank {root}"),
            Op::Reduce if ftco_reduce => format!("reduces to rank {root} ({bcast_name}), {budget}"),
            Op::Reduce => format!("reduces to rank {root}, {budget}"),
            Op::Allreduce => format!("allreduces ({reduction}), {budget}"),
            Op::Barrier => format!("barriers ({reduction}), {budget}"),
        };
        let how = if op == Op::Bcast {
            bcast_name.clone()
        } else if ftco_reduce {
            format!("tree {tree}")
        } else {
            format!("tree {tree}, correction {correction}")
        };
        printed.print_text(&format!(
            "{ranks} ranks, {iters} {what}, {how}, {:.2} s",
            wall.as_secs_f64()
        ));
    }
    let beyond = t.errors.get("too_many_failures").copied().unwrap_or(0);
    if beyond > 0 {
        eprintln!(
            "error: more than f={} ranks failed: {beyond} results ended in TooManyFailures (failed ranks {:?})",
            team.fault_budget(),
            report.failed
        );
        eprintln!("hint: raise --f, or kill fewer ranks");
    }
    Ok(if t.violations > 0 {
        ExitCode::from(1)
    } else if beyond > 0 {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::{gather, spread, spread_into, wrapping_sum};

    #[test]
    fn a_root_writing_its_next_value_in_place_leaves_nothing_of_the_last() {
        // The broadcast's root reuses one buffer: a stale element would be
        // taken for a delivery of the previous call.
        let mut v = spread(3, 1000);
        spread_into(4, &mut v);
        assert_eq!(v, spread(4, 1000));
        assert_eq!(gather(&v), 4);
    }

    #[test]
    fn a_sum_of_spread_values_gathers_to_the_sum_and_a_mixed_one_does_not() {
        let n = 1000;
        let (a, b) = (spread(3, n), spread(u64::MAX - 5, n));
        let sum: Vec<u64> = a.iter().zip(&b).map(|(x, y)| wrapping_sum(x, y)).collect();
        assert_eq!(gather(&a), 3);
        assert_eq!(gather(&sum), 3u64.wrapping_add(u64::MAX - 5));
        // A result whose chunks hold different contributions: one element
        // is the sum, the rest `a` alone.
        for k in [1, 500, n - 1] {
            let mut mixed = a.clone();
            mixed[k] = sum[k];
            assert_ne!(gather(&mixed), 3);
            assert_ne!(gather(&mixed), gather(&sum));
        }
        // A 16 MiB result: every 64 KiB chunk (8192 elements) has checked
        // elements (every 512th), so a chunk reduced over another set of
        // contributions is seen wherever it lies.
        let big = spread(7, 2 << 20);
        let other = spread(8, 2 << 20);
        for chunk in [0, 17, 255] {
            let mut mixed = big.clone();
            let range = chunk * 8192..(chunk + 1) * 8192;
            mixed[range.clone()].copy_from_slice(&other[range]);
            assert_ne!(gather(&mixed), 7, "chunk {chunk}");
        }
    }
}
