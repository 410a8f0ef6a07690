//! `corrected soak`: a long random mix of broadcasts, reduces, allreduces and
//! barriers on threads, with random kills, deaths after sends, hangs, panics
//! and short stalls, every result checked. With `--elements N`
//! broadcasts, reduces and allreduces carry vectors of N words (from 32 Ki
//! words on, an allreduce is reduced by chunks over lent buffers, issue
//! 14), and every element must agree on the contributions.
//!
//! The run is split into episodes: each is one `Team::run` with its own
//! fault plan (at most f faulty ranks, so every guarantee holds), its own
//! operations, and a fresh team. Every rank's input differs per operation,
//! so a result is checked against exactly the inputs of its operation:
//! * lost: a live rank's input is missing;
//! * duplicated: an input counted twice;
//! * stale: an input of another operation;
//! * wrong: any other difference (a failed rank's input may be in a result
//!   once, or not at all);
//! * false suspicions: ranks declared failed that had no fault (a stall is
//!   shorter than the failure timeout, so a stalled rank counts too).
//!   Reported, not a broken guarantee: a rank declared failed is failed
//!   for the team (fail-stop), so its input may be left out of any result
//!   from then on, as a failing rank's may, and each result is checked so
//!   (every other check holds); they mean the failure timeout is below
//!   the stalls this host's scheduler makes, and the command says so;
//! * hangs: calls that timed out or took longer than the failure timeout
//!   three times over;
//! * torn: a vector whose elements disagree on the contributions (element
//!   i of a rank's input is its value times 2i + 1, an odd factor, so each
//!   element of a sum gives back the sum of its contributors' values).
//!
//! All of these but false suspicions must be 0; the command exits 1
//! otherwise. Expected losses (a broadcast or reduce whose root failed) are
//! counted apart, and so is what an episode with more failures than f
//! (suspicions included) returns beyond the papers' guarantees
//! (`TooManyFailures`, or any value: `beyond_budget`).

use corrected::Collectives;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;

use corrected::check::{value_of_vector, vector_element};
use corrected::runtime::{Fault, FaultSchedule, RankOutcome, Team};
use corrected::sim::Stats;
use corrected::types::Rank;
use corrected::Error;

use crate::error::CliError;
use crate::limits::{at_least_one, out_of_range};

/// Options of `corrected soak`.
#[derive(Args, Debug)]
pub struct SoakArgs {
    /// Number of ranks (threads).
    #[arg(long, default_value_t = 16)]
    ranks: u32,
    /// Fault budget f of reduce, allreduce and barrier.
    #[arg(long, default_value_t = 2)]
    f: u32,
    /// Operations in all (rounded up to whole episodes).
    #[arg(long, default_value_t = 10_000)]
    ops: u64,
    /// Operations per episode (one team run with its own fault plan).
    #[arg(long, default_value_t = 500)]
    episode: u32,
    /// No faults at all: counts false suspicions under load alone.
    #[arg(long)]
    no_faults: bool,
    /// Milliseconds a rank waits on a silent peer before declaring it failed.
    #[arg(long, default_value_t = 1000.0)]
    failure_timeout_ms: f64,
    /// Seed of the operations and fault plans.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The first episode to run: with the same seed and --episode, replays
    /// the episode a failing soak names (`--from-episode 920 --ops 500`).
    #[arg(long, default_value_t = 0)]
    from_episode: u64,
    /// Words (u64) per value of broadcasts, reduces and allreduces: 1 is a
    /// single value; 32768 (256 KiB) or more makes every allreduce a
    /// chunked reduction over lent buffers.
    #[arg(long, default_value_t = 1)]
    elements: usize,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// The collective of one operation, the same on every rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bcast(Rank),
    Reduce(Rank),
    Allreduce,
    Barrier,
}

/// What a faulty rank suffers, at which operation of its episode.
#[derive(Clone, Copy, Debug)]
enum Plan {
    Fault(Fault),
    Panic,
}

const PANIC_MARK: &str = "soak: planned panic";

/// SplitMix64: a stateless mixer, so that every rank derives the same
/// operations and inputs from the seed alone.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A small deterministic stream for the fault plans.
struct Stream(u64);

impl Stream {
    fn next(&mut self) -> u64 {
        self.0 = mix(self.0);
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn input(seed: u64, episode: u64, rank: Rank, op: u32) -> u64 {
    mix(seed ^ mix(episode) ^ mix((rank as u64) << 32 | op as u64))
}

fn kind(seed: u64, episode: u64, op: u32, ranks: u32) -> Kind {
    let z = mix(seed ^ mix(episode.wrapping_add(0x5eed)) ^ mix(op as u64));
    let root = ((z >> 8) % ranks as u64) as Rank;
    match z % 4 {
        0 => Kind::Bcast(root),
        1 => Kind::Reduce(root),
        2 => Kind::Allreduce,
        _ => Kind::Barrier,
    }
}

/// What one call gave: its result (a value where the collective gives one:
/// element 0 of a vector, with its factor taken out), how long it took, and
/// whether the vector's elements disagreed.
type Call = (Result<Option<u64>, Error>, Duration, bool);

/// The soak's counters.
#[derive(Debug, Default, serde::Serialize)]
struct Tally {
    ops: u64,
    calls: u64,
    lost: u64,
    duplicated: u64,
    stale: u64,
    wrong: u64,
    false_suspicions: u64,
    hangs: u64,
    torn: u64,
    unexpected: u64,
    root_failed: u64,
    /// Results and errors of episodes where more ranks failed than f
    /// (suspicions included) that the checks within f would count:
    /// `TooManyFailures`, or a value no guarantee covers any more.
    beyond_budget: u64,
    faults: u64,
    #[serde(skip)]
    latency_ns: Vec<u64>,
    #[serde(skip)]
    first_problem: Option<String>,
}

impl Tally {
    fn problem(&mut self, what: String) {
        self.first_problem.get_or_insert(what);
    }

    /// No guarantee broken (false suspicions are reported apart).
    fn clean(&self) -> bool {
        self.lost
            + self.duplicated
            + self.stale
            + self.wrong
            + self.hangs
            + self.torn
            + self.unexpected
            == 0
    }
}

/// Runs `corrected soak`.
pub fn run(args: SoakArgs) -> Result<ExitCode, CliError> {
    at_least_one("--ops", args.ops)?;
    at_least_one("--episode", args.episode.into())?;
    at_least_one("--elements", args.elements as u64)?;
    // Every rank holds an input and an output vector.
    if (args.elements as u128) * (args.ranks as u128) * 16 > 4 << 30 {
        return Err(out_of_range(
            "--elements",
            args.elements,
            "the ranks' vectors would take more than 4 GiB",
            "pass fewer --elements or --ranks",
        ));
    }
    let episodes = args.ops.div_ceil(args.episode as u64);
    if args.from_episode.checked_add(episodes).is_none() {
        return Err(out_of_range(
            "--from-episode",
            args.from_episode,
            format!(
                "the {episodes} episodes of --ops from it would number past {}",
                u64::MAX
            ),
            "pass the episode a failing soak named, e.g. --from-episode 920",
        ));
    }
    if args.ranks < 2 {
        return Err(out_of_range(
            "--ranks",
            args.ranks,
            "a soak needs at least 2 ranks",
            "pass --ranks 2 or more",
        ));
    }
    if !(args.failure_timeout_ms > 0.0 && args.failure_timeout_ms <= 3_600_000.0) {
        return Err(out_of_range(
            "--failure-timeout-ms",
            args.failure_timeout_ms,
            "it must be above 0 and at most an hour",
            "pass --failure-timeout-ms 1000 (the default)",
        ));
    }
    let failure_timeout = Duration::from_secs_f64(args.failure_timeout_ms / 1000.0);
    crate::stalls::warn_if_below("--failure-timeout-ms", args.failure_timeout_ms, args.ranks);
    let team_check = Team::builder()
        .ranks(args.ranks)
        .fault_budget(args.f)
        .build();
    team_check.map_err(corrected::Error::from)?;
    let quiet_planned_panics = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let planned = info
            .payload()
            .downcast_ref::<&str>()
            .is_some_and(|m| *m == PANIC_MARK);
        if !planned {
            quiet_planned_panics(info);
        }
    }));
    let mut tally = Tally::default();
    let started = Instant::now();
    for episode in args.from_episode..args.from_episode + episodes {
        soak_episode(&args, episode, failure_timeout, &mut tally)?;
    }
    let _ = std::panic::take_hook();
    report(&args, &mut tally, started.elapsed());
    Ok(if tally.clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn soak_episode(
    args: &SoakArgs,
    episode: u64,
    failure_timeout: Duration,
    tally: &mut Tally,
) -> Result<(), CliError> {
    let (ranks, ops, seed) = (args.ranks, args.episode, args.seed);
    let mut rng = Stream(seed ^ mix(episode ^ 0xfa17));
    // At most f faulty ranks, each with one fault at one operation, and one
    // rank that stalls briefly (not a fault: it must not be suspected).
    let mut plans: Vec<(Rank, u32, Plan)> = Vec::new();
    let mut stall: Option<(Rank, u32)> = None;
    if !args.no_faults {
        let faulty = rng.below(args.f as u64 + 1) as usize;
        while plans.len() < faulty {
            let r = rng.below(ranks as u64) as Rank;
            if plans.iter().any(|&(p, _, _)| p == r) {
                continue;
            }
            let at = rng.below(ops as u64) as u32;
            let plan = match rng.below(5) {
                0 => Plan::Fault(Fault::Dead),
                1 => Plan::Fault(Fault::DieAfterSends(1 + rng.below(8) as u32)),
                2 => Plan::Fault(Fault::Hang),
                3 => Plan::Panic,
                _ => Plan::Fault(Fault::DieAfterSends(0)),
            };
            plans.push((r, at, plan));
        }
        let r = rng.below(ranks as u64) as Rank;
        if plans.iter().all(|&(p, _, _)| p != r) {
            stall = Some((r, rng.below(ops as u64) as u32));
        }
    }
    tally.faults += plans.len() as u64;
    let mut faults = FaultSchedule::none();
    for &(r, at, plan) in &plans {
        if let Plan::Fault(f) = plan {
            faults = faults.at(r, at, f);
        }
    }
    if let Some((r, at)) = stall {
        faults = faults.at(r, at, Fault::Stall(failure_timeout / 10));
    }
    let team = Team::builder()
        .ranks(ranks)
        .fault_budget(args.f)
        .failure_timeout(failure_timeout)
        .faults(faults)
        .build()
        .map_err(corrected::Error::from)?;
    let panic_at = |rank: Rank| {
        plans
            .iter()
            .find(|&&(r, _, p)| r == rank && matches!(p, Plan::Panic))
            .map(|&(_, at, _)| at)
    };
    let report = team.run(|comm| {
        let me = comm.rank();
        let mut calls: Vec<Call> = Vec::with_capacity(ops as usize);
        for op in 0..ops {
            if panic_at(me) == Some(op) {
                std::panic::panic_any(PANIC_MARK);
            }
            let mine = input(seed, episode, me, op);
            let n = args.elements;
            let local: Vec<u64> = (0..n).map(|i| vector_element(mine, i)).collect();
            let mut out = vec![0u64; n];
            let t = Instant::now();
            let got = match kind(seed, episode, op, ranks) {
                Kind::Bcast(root) => {
                    if me == root {
                        out.copy_from_slice(&local);
                    }
                    comm.broadcast_into(root, &mut out[..]).map(|()| true)
                }
                Kind::Reduce(root) => comm
                    .reduce_into(root, &local[..], &mut out[..], wrapping_add)
                    .map(|()| me == root),
                Kind::Allreduce => comm
                    .all_reduce_into(&local[..], &mut out[..], wrapping_add)
                    .map(|()| true),
                Kind::Barrier => comm.barrier().map(|()| false),
            };
            let took = t.elapsed();
            let value = value_of_vector(&out);
            let torn = matches!(got, Ok(true)) && value.is_none();
            let got = got.map(|has| has.then(|| value.unwrap_or(out[0])));
            let stop = matches!(got, Err(Error::Failed(_) | Error::Hung(_)));
            calls.push((got, took, torn));
            if stop {
                break;
            }
        }
        calls
    });
    // When each rank stopped contributing: the operation of its fault (or
    // of its first `Failed`, for a rank declared failed), and whether it
    // may have contributed to that one.
    let mut gone: Vec<Option<(u32, bool)>> = vec![None; ranks as usize];
    let mut suspected: Vec<Rank> = Vec::new();
    for &(r, at, plan) in &plans {
        let partial = matches!(plan, Plan::Fault(Fault::DieAfterSends(n)) if n > 0);
        gone[r as usize] = Some((at, partial));
    }
    for (r, outcome) in report.outcomes.iter().enumerate() {
        let planned_at = plans
            .iter()
            .find(|&&(p, _, _)| p as usize == r)
            .map(|&(_, at, _)| at);
        if let RankOutcome::Panicked(msg) = outcome {
            if msg != PANIC_MARK {
                tally.unexpected += 1;
                tally.problem(format!("episode {episode}: rank {r} panicked: {msg}"));
            }
        }
        // Told it failed before any fault of its own: declared failed on
        // suspicion (a stall longer than the failure timeout).
        let told = outcome.returned().and_then(|calls| {
            calls
                .iter()
                .position(|(g, _, _)| matches!(g, Err(Error::Failed(_))))
                .map(|op| op as u32)
        });
        let early = told.filter(|&op| planned_at.map_or(true, |at| op < at));
        if let Some(op) = early {
            gone[r] = Some((op, true));
        }
        if report.failed.contains(&(r as Rank)) && (planned_at.is_none() || early.is_some()) {
            tally.false_suspicions += 1;
            suspected.push(r as Rank);
        }
    }
    // More ranks failed than the budget (suspicions count): the algorithms
    // promise a prompt `TooManyFailures`, not every live input.
    let over_budget = report.failed.len() > args.f as usize;
    let hang_bound = failure_timeout * 3 + Duration::from_secs(1);
    let clean_so_far = tally.first_problem.is_none();
    for op in 0..ops {
        let ended = Ended {
            gone: &gone,
            suspected: &suspected,
            over_budget,
        };
        check_op(
            args,
            episode,
            op,
            &report.outcomes,
            &ended,
            hang_bound,
            tally,
        );
    }
    if let Some(p) = tally.first_problem.as_mut().filter(|_| clean_so_far) {
        // Name the episode's faults (rank, operation, fault) with its problem.
        p.push_str(&format!(
            "; faults of the episode: {plans:?}, stall: {stall:?}, declared failed: {:?}",
            report.failed
        ));
    }
    Ok(())
}

fn wrapping_add(a: &u64, b: &u64) -> u64 {
    a.wrapping_add(*b)
}

/// How each rank of an episode stopped contributing.
struct Ended<'a> {
    /// The operation of its fault (or of its first `Failed`, for a rank
    /// declared failed), and whether it may have contributed to that one.
    gone: &'a [Option<(u32, bool)>],
    /// Ranks declared failed without a fault: from some operation on the
    /// team excluded them, possibly before they learned it themselves.
    suspected: &'a [Rank],
    /// More ranks failed in the episode (suspected ones too) than the
    /// fault budget f.
    over_budget: bool,
}

/// Checks operation `op` of an episode on every rank live at its end.
fn check_op(
    args: &SoakArgs,
    episode: u64,
    op: u32,
    outcomes: &[RankOutcome<Vec<Call>>],
    ended: &Ended<'_>,
    hang_bound: Duration,
    tally: &mut Tally,
) {
    let (ranks, seed, gone) = (args.ranks, args.seed, ended.gone);
    let live = |r: Rank| !gone[r as usize].is_some_and(|(at, _)| at <= op);
    // In or out: a rank dying in this operation, or one declared failed
    // without a fault (when the others excluded it is not known here).
    let dying = |r: Rank| {
        gone[r as usize].is_some_and(|(at, partial)| at == op && partial)
            || (live(r) && ended.suspected.contains(&r))
    };
    let kind = kind(seed, episode, op, ranks);
    tally.ops += 1;
    let live_sum = (0..ranks)
        .filter(|&r| live(r) && !dying(r))
        .fold(0u64, |s, r| s.wrapping_add(input(seed, episode, r, op)));
    let dying_inputs: Vec<u64> = (0..ranks)
        .filter(|&r| dying(r))
        .map(|r| input(seed, episode, r, op))
        .collect();
    let mut agreed: Option<u64> = None;
    for r in (0..ranks).filter(|&r| live(r)) {
        let Some((got, took, torn)) = outcomes[r as usize]
            .returned()
            .and_then(|calls| calls.get(op as usize))
        else {
            continue;
        };
        tally.calls += 1;
        let what = || format!("episode {episode} op {op} ({kind:?}) rank {r}");
        if *took > hang_bound || matches!(got, Err(Error::Timeout { .. })) {
            tally.hangs += 1;
            tally.problem(format!("{}: {got:?} after {took:?}", what()));
            continue;
        }
        if *torn {
            tally.torn += 1;
            tally.problem(format!(
                "{}: elements disagree on the contributions",
                what()
            ));
            continue;
        }
        let root_live = match kind {
            Kind::Bcast(root) | Kind::Reduce(root) => live(root) && !dying(root),
            _ => true,
        };
        match (kind, got) {
            (_, Err(Error::RootFailed { .. })) if !root_live => {
                tally.root_failed += 1;
                continue;
            }
            (_, Err(Error::TooManyFailures { .. })) if ended.over_budget => {
                tally.beyond_budget += 1;
                continue;
            }
            (Kind::Bcast(root), Ok(Some(v))) => {
                if *v != input(seed, episode, root, op) && ended.over_budget {
                    tally.beyond_budget += 1;
                } else if *v != input(seed, episode, root, op) {
                    tally.wrong += 1;
                    tally.problem(format!("{}: got {v:#x}", what()));
                }
            }
            (Kind::Reduce(root), Ok(None)) if r != root => {}
            (Kind::Reduce(_) | Kind::Allreduce, Ok(Some(v))) => {
                let over = ended.over_budget;
                classify(
                    args,
                    episode,
                    op,
                    *v,
                    live_sum,
                    &dying_inputs,
                    over,
                    tally,
                    &what,
                );
                if kind == Kind::Allreduce && *agreed.get_or_insert(*v) != *v && ended.over_budget {
                    tally.beyond_budget += 1;
                } else if kind == Kind::Allreduce && *agreed.get_or_insert(*v) != *v {
                    tally.wrong += 1;
                    tally.problem(format!("{}: disagrees", what()));
                }
            }
            (Kind::Barrier, Ok(None)) => {}
            (_, other) => {
                tally.unexpected += 1;
                tally.problem(format!("{}: {other:?}", what()));
                continue;
            }
        }
        tally.latency_ns.push(took.as_nanos() as u64);
    }
}

/// Explains a reduction `v` of operation `op`: the live inputs plus some of
/// the dying ranks' is right; otherwise the first explanation that fits.
#[allow(clippy::too_many_arguments)]
fn classify(
    args: &SoakArgs,
    episode: u64,
    op: u32,
    v: u64,
    live_sum: u64,
    dying: &[u64],
    over_budget: bool,
    tally: &mut Tally,
    what: &dyn Fn() -> String,
) {
    let diff = v.wrapping_sub(live_sum);
    let subsets = 1u32 << dying.len().min(16);
    let sums: Vec<u64> = (0..subsets)
        .map(|m| {
            dying
                .iter()
                .enumerate()
                .filter(|&(i, _)| m & (1 << i) != 0)
                .fold(0u64, |s, (_, &x)| s.wrapping_add(x))
        })
        .collect();
    if sums.contains(&diff) {
        return;
    }
    let fits = |term: u64| sums.iter().any(|&s| diff == s.wrapping_add(term));
    let inputs = |o: u32| (0..args.ranks).map(move |r| input(args.seed, episode, r, o));
    if over_budget {
        // Beyond f failures nothing is promised about a value (the papers'
        // guarantees hold for at most f): counted apart, not a violation.
        tally.beyond_budget += 1;
        return;
    }
    let (counter, why) = if inputs(op).any(|x| fits(x.wrapping_neg())) {
        (&mut tally.lost, "lost a live input")
    } else if inputs(op).any(fits) {
        (&mut tally.duplicated, "an input twice")
    } else if (op.saturating_sub(8)..op + 8)
        .filter(|&o| o != op)
        .any(|o| inputs(o).any(fits))
    {
        (&mut tally.stale, "an input of another operation")
    } else {
        (&mut tally.wrong, "wrong")
    };
    *counter += 1;
    tally.problem(format!("{}: {v:#x}: {why}", what()));
}

/// `corrected soak --json`: the settings under their flags' names, then
/// the counts, the latency in nanoseconds and the verdict
/// (`docs/cli.md`, *JSON output*).
#[derive(serde::Serialize)]
struct SoakReport<'a> {
    command: &'static str,
    ranks: u32,
    f: u32,
    episode: u32,
    no_faults: bool,
    failure_timeout_ms: f64,
    seed: u64,
    from_episode: u64,
    elements: usize,
    /// `ops` (operations run, whole episodes) and the counts.
    #[serde(flatten)]
    tally: &'a Tally,
    latency_ns: &'a Stats,
    wall_seconds: f64,
    clean: bool,
}

fn report(args: &SoakArgs, t: &mut Tally, took: Duration) {
    let latency = Stats::of(t.latency_ns.iter().map(|&ns| ns as f64));
    if args.json {
        let r = SoakReport {
            command: "soak",
            ranks: args.ranks,
            f: args.f,
            episode: args.episode,
            no_faults: args.no_faults,
            failure_timeout_ms: args.failure_timeout_ms,
            seed: args.seed,
            from_episode: args.from_episode,
            elements: args.elements,
            tally: t,
            latency_ns: &latency,
            wall_seconds: took.as_secs_f64(),
            clean: t.clean(),
        };
        crate::out!(
            "{}",
            serde_json::to_string(&r).expect("a report serializes")
        );
    } else {
        crate::out!(
            "{} ranks, f={}, {} operations ({} checked calls), {} faults, {:.1} s",
            args.ranks,
            args.f,
            t.ops,
            t.calls,
            t.faults,
            took.as_secs_f64()
        );
        crate::out!(
            "lost: {}, duplicated: {}, stale: {}, wrong: {}, false suspicions: {}, hangs: {}, torn: {}, unexpected: {}",
            t.lost, t.duplicated, t.stale, t.wrong, t.false_suspicions, t.hangs, t.torn, t.unexpected
        );
        crate::out!(
            "expected losses (root failed): {}, beyond the fault budget (suspicions included): {}",
            t.root_failed,
            t.beyond_budget
        );
        crate::out!(
            "latency per call: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
            latency.p50 / 1e3,
            latency.p99 / 1e3,
            latency.max / 1e3
        );
    }
    if let Some(p) = &t.first_problem {
        eprintln!("first problem: {p}");
    }
    if t.false_suspicions > 0 {
        eprintln!(
            "note: {} ranks were declared failed without a fault (each then left out consistently, as a failed rank): the failure timeout ({} ms) is below the stalls this machine's scheduler made",
            t.false_suspicions, args.failure_timeout_ms
        );
        eprintln!("hint: pass a larger --failure-timeout-ms (docs/benchmarks.md, *Soak and false suspicions*, has the stalls measured here)");
    }
}
