//! Correction against timeouts and acknowledgements on threads
//! (docs/comparison.md, "On threads"): P = 8 and P = 32 ranks
//! (oversubscribed on this 2-core machine, the team's default pinning), a
//! rank killed before and during the operation, the latency of the
//! operation with the failure and of the next one, in one criterion run.
//!
//! `cargo bench --bench compare_threads` (about 3 minutes here; criterion
//! filters apply, e.g. `-- 'bcast/ftco'`). `QUICK=1 cargo bench --bench
//! compare_threads`: a smoke without criterion, [`QUICK_RUNS`] runs per
//! case and the table below, exit code 1 on any problem.
//!
//! **What runs.** Every case is a team built once (binomial tree, root 0,
//! operation records on) and, per run, one [`Team::run`] of two operations
//! of the same collective: operation 0, in which the fault happens, and
//! operation 1, the next one. The ranks line up on a yielding barrier
//! (`benches/common/lineup.rs`, not timed) before operation 0, so that no
//! rank's start skew is in its time, and call operation 1 right after
//! operation 0 returns, as a loop of collectives would: operation 1's time
//! includes waiting for ranks still busy with operation 0 (the dead rank is
//! still dead in it).
//!
//! Collectives:
//! - `bcast`: one `u64` (8 bytes) from rank 0. *checked*: the corrected
//!   tree with checked correction (`BroadcastAlgorithm::Tree`,
//!   `Correction::Checked`); *ftco*: FTCO (`BroadcastAlgorithm::Ftco`,
//!   default T = 50 ms); *ack-tree* (`BroadcastAlgorithm::AckTree`: no
//!   fault tolerance of its own, but the failures the team reports, as
//!   these are, it routes around as a communicator's failed set would);
//!   fault-free only: *plain* (the tree with `Correction::None`: with a
//!   dead inner rank its subtree is never reached and the call ends in the
//!   operation timeout, 10 s).
//! - `allreduce`: one `u64`, sum, every rank's result. *up-correction*:
//!   the up-correction tree allreduce of the paper (`ReduceAlgorithm::
//!   UpCorrection`, f = 1, `AllreduceAlgorithm::Tree`: I(f)-tree reduce to
//!   rank 0, then the checked corrected broadcast); *star*:
//!   `AllreduceAlgorithm::Star`, f = 1, what the team's default `Auto`
//!   runs where ranks outnumber cores, as here (inputs straight to rank 0,
//!   the result straight back, root retry);
//!   *ftco*: `ReduceAlgorithm::Ftco` (root rank 0, T = 50 ms).
//! - `reduce`: one `u64`, sum, to rank 0: *up-correction* (f = 1, the
//!   I(f)-tree) and *ftco*.
//!
//! Fault cases, always on rank [`VICTIM`] = 1, an inner rank (children in
//! the binomial tree that the corrected broadcast, FTCO and the ack tree
//! use, and the top of the first subtree of up-correction's I(f)-tree;
//! checked at start) and never the root, which FTCO assumes immune:
//! - `none`;
//! - `dead`: dead before operation 0 (`FaultSchedule::kill(1, 0)`), so
//!   dead in both;
//! - `dying`: dies during operation 0 right after its first send
//!   (`Fault::DieAfterSends(1)`), dead in operation 1.
//!
//! Why not line up before operation 1 too (`LINEUP=each` does): FTCO needs
//! a rank to stay active after its call returns (the paper's root "remains
//! active throughout"; on threads a returned rank's kept core answers
//! KEEPALIVEs and late DATA only while the rank is inside a later call).
//! Ranks parked on a barrier of the application answer nothing, so with a
//! rank dying in an FTCO reduce its children, whose DATA went around it to
//! the root, wait for the root's ACK while the root waits on the barrier
//! for them: both stall until the operation timeout (10 s, `Error::Timeout`
//! on the children), and live ranks that already returned are suspected
//! and their inputs left out; an FTCO broadcast with a dying rank takes
//! 6T (P = 8) to 15T (P = 32) instead of T. Back to back, the same runs
//! have none of this; nor lined up with `LINEUP=progress`, where the
//! waiting ranks call `Comm::progress` (their kept cores answer).
//! Correction and up-correction need nothing of a rank after its call.
//!
//! **Time.** The slowest live rank's time inside the call, from the
//! team's operation records (`TeamReport::ops[i].latency_ns`, the max over
//! the ranks that completed operation i). Benchmark ids end in `op0` (the
//! operation with the failure) and `op1` (the next one); each criterion
//! iteration is one fresh run of both operations, and the bench returns
//! the sum over iterations of that operation's time. Criterion samples
//! are flat (every sample the same number of runs): an FTCO run with a
//! failure takes 2-3 T per operation. Back to back, operation 1 of an
//! algorithm whose ranks wait for no acknowledgement (plain and corrected
//! trees) can take about a microsecond: the ranks that leave operation 0
//! last find operation 1's messages already waiting.
//!
//! **Messages** (criterion reports only time): every run also records the
//! messages per operation (`OpStats::messages`: every send of that
//! operation number by any rank, late ones included), FTCO's timeouts and
//! false suspicions, and checks every live rank's result (each broadcast
//! delivers the root's value; an allreduce or reduce holds every live
//! rank's input exactly once, the dying rank's in or out, and the same on
//! every rank). At the end a table of all runs (medians of the slowest
//! rank's time, mean messages per operation) goes to stderr and to
//! `target/compare_threads.md`; any problem is listed there and the bench
//! exits with code 1.

#[path = "common/lineup.rs"]
mod lineup;
use corrected::Collectives;
use lineup::YieldBarrier;

use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, SamplingMode};

use corrected::protocol::correction::Correction;
use corrected::protocol::ftco::FtcoPlan;
use corrected::runtime::{
    AllreduceAlgorithm, BroadcastAlgorithm, Comm, Fault, FaultSchedule, ReduceAlgorithm,
    SystemOperation, Team, TeamReport, DEFAULT_FTCO_TIMEOUT, FTCO_LOGP,
};
use corrected::topology::{IfTree, Tree, TreeSpec};
use corrected::types::{LogP, Rank};
use corrected::Error;

/// Team sizes: both oversubscribe this machine's 2 cores.
const RANKS: [u32; 2] = [8, 32];

/// Operations per run: the one with the failure, and the next one.
const OPS: usize = 2;

/// The rank that fails: inner in every tree used here, never the root.
const VICTIM: Rank = 1;

/// Runs per case with `QUICK=1`.
const QUICK_RUNS: usize = 2;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Collective {
    Bcast,
    Allreduce,
    Reduce,
}

impl Collective {
    fn name(self) -> &'static str {
        match self {
            Collective::Bcast => "bcast",
            Collective::Allreduce => "allreduce",
            Collective::Reduce => "reduce",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Algo {
    /// The corrected tree, checked correction (broadcast).
    Checked,
    /// FTCO: broadcast, reduce or allreduce.
    Ftco,
    /// The ack tree (broadcast, fault-free only).
    AckTree,
    /// The tree without correction (broadcast, fault-free only).
    Plain,
    /// Up-correction, f = 1: the I(f)-tree reduce (and for an allreduce,
    /// the tree allreduce of the paper).
    UpCorrection,
    /// The team's default allreduce where ranks outnumber cores, f = 1.
    Star,
}

impl Algo {
    fn name(self) -> &'static str {
        match self {
            Algo::Checked => "checked",
            Algo::Ftco => "ftco",
            Algo::AckTree => "ack-tree",
            Algo::Plain => "plain",
            Algo::UpCorrection => "up-correction",
            Algo::Star => "star",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Faults {
    None,
    /// [`VICTIM`] dead before operation 0.
    Dead,
    /// [`VICTIM`] dies in operation 0 after its first send.
    Dying,
}

impl Faults {
    fn name(self) -> &'static str {
        match self {
            Faults::None => "none",
            Faults::Dead => "dead",
            Faults::Dying => "dying",
        }
    }

    fn schedule(self) -> FaultSchedule {
        match self {
            Faults::None => FaultSchedule::none(),
            Faults::Dead => FaultSchedule::none().kill(VICTIM, 0),
            Faults::Dying => FaultSchedule::none().at(VICTIM, 0, Fault::DieAfterSends(1)),
        }
    }
}

const ALL_FAULTS: [Faults; 3] = [Faults::None, Faults::Dead, Faults::Dying];

#[derive(Clone, Copy)]
struct Case {
    collective: Collective,
    algo: Algo,
    faults: Faults,
    ranks: u32,
}

impl Case {
    /// `bcast/ftco/dead/8`: the benchmark id without its `op0`/`op1`.
    fn label(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.collective.name(),
            self.algo.name(),
            self.faults.name(),
            self.ranks
        )
    }

    fn team(&self) -> Team {
        let builder = Team::builder()
            .ranks(self.ranks)
            .tree(binomial())
            .faults(self.faults.schedule())
            .op_records(true);
        let builder = match (self.algo, self.collective) {
            (Algo::Checked, _) => builder.correction(Correction::Checked),
            (Algo::Plain, _) => builder.correction(Correction::None),
            (Algo::AckTree, _) => builder.broadcast(BroadcastAlgorithm::AckTree),
            (Algo::Ftco, Collective::Bcast) => {
                builder.broadcast(BroadcastAlgorithm::Ftco { timeout: None })
            }
            (Algo::Ftco, _) => builder.reduce(ReduceAlgorithm::Ftco { timeout: None }),
            (Algo::UpCorrection, _) => builder.fault_budget(1).allreduce(AllreduceAlgorithm::Tree),
            (Algo::Star, _) => builder.fault_budget(1).allreduce(AllreduceAlgorithm::Star),
        };
        builder.build().expect("a valid team")
    }

    /// The ranks alive at the end of the run.
    fn live(&self) -> impl Iterator<Item = Rank> + '_ {
        (0..self.ranks).filter(move |&r| self.faults == Faults::None || r != VICTIM)
    }
}

/// Every case of the run, in order.
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let mut add = |collective, algo, faults: &[Faults]| {
        for ranks in RANKS {
            for &faults in faults {
                out.push(Case {
                    collective,
                    algo,
                    faults,
                    ranks,
                });
            }
        }
    };
    add(Collective::Bcast, Algo::Checked, &ALL_FAULTS);
    add(Collective::Bcast, Algo::Ftco, &ALL_FAULTS);
    add(Collective::Bcast, Algo::AckTree, &ALL_FAULTS);
    add(Collective::Bcast, Algo::Plain, &[Faults::None]);
    add(Collective::Allreduce, Algo::UpCorrection, &ALL_FAULTS);
    add(Collective::Allreduce, Algo::Star, &ALL_FAULTS);
    add(Collective::Allreduce, Algo::Ftco, &ALL_FAULTS);
    add(Collective::Reduce, Algo::UpCorrection, &ALL_FAULTS);
    add(Collective::Reduce, Algo::Ftco, &ALL_FAULTS);
    out
}

fn binomial() -> TreeSpec {
    "binomial".parse().expect("a tree")
}

/// Panics unless [`VICTIM`] has children in every tree a case uses: the
/// broadcast tree (corrected tree, ack tree; FTCO's plan builds the same
/// tree in its own model) and up-correction's I(f)-tree with f = 1.
/// Returns them, for the table.
fn victim_children() -> String {
    let mut out = String::new();
    for ranks in RANKS {
        let tree = Tree::build(binomial(), ranks, LogP::PAPER).expect("a tree");
        let ftco = FtcoPlan::new(binomial(), ranks, FTCO_LOGP, Some(1)).expect("a plan");
        let itree = IfTree::build(binomial(), ranks, 1, LogP::PAPER).expect("an I(f)-tree");
        let bcast = tree.children(VICTIM).to_vec();
        let ftco = ftco.tree().children(VICTIM).to_vec();
        let up: Vec<Rank> = itree.children(VICTIM).collect();
        assert!(
            !bcast.is_empty() && !ftco.is_empty() && !up.is_empty(),
            "rank {VICTIM} must be inner at P = {ranks}: {bcast:?} {ftco:?} {up:?}"
        );
        assert_eq!(tree.parent(VICTIM), Some(0));
        let _ = writeln!(
            out,
            "P = {ranks}: rank {VICTIM}'s children: binomial tree {bcast:?}, \
             FTCO's tree {ftco:?}, I(f)-tree (f = 1) {up:?}"
        );
    }
    out
}

/// A rank's input to the reductions: a count in the high bits and the
/// rank's own bit, so that a sum shows whom it holds and how often.
fn input(rank: Rank) -> u64 {
    (1 << 40) | (1 << rank)
}

const RANK_BITS: u64 = (1 << 40) - 1;

/// The ranks a sum holds, if it holds each at most once.
fn members(sum: u64) -> Option<u64> {
    let set = sum & RANK_BITS;
    (sum >> 40 == u64::from(set.count_ones())).then_some(set)
}

fn mask(ranks: impl Iterator<Item = Rank>) -> u64 {
    ranks.fold(0, |m, r| m | (1 << r))
}

/// The root's value in broadcast `i`.
fn value(i: usize) -> u64 {
    0x5eed_0000_0000 | i as u64
}

type Report = TeamReport<Vec<Result<u64, Error>>>;

/// Whether ranks line up before every operation (`LINEUP=each`, or
/// `LINEUP=progress`: calling `Comm::progress` while they wait), not only
/// before the first.
fn lineup_each() -> bool {
    std::env::var("LINEUP").is_ok_and(|v| v == "each" || v == "progress")
}

/// Whether ranks waiting at the lineup make progress (`LINEUP=progress`).
fn lineup_progress() -> bool {
    std::env::var("LINEUP").is_ok_and(|v| v == "progress")
}

/// One run: both operations, lined up before the first (or each). A rank
/// that failed goes on calling (its calls return at once), so that it
/// lines up with the rest.
fn run(case: &Case, team: &Team, each: bool) -> Report {
    let barrier = YieldBarrier::new(case.ranks as usize);
    let collective = case.collective;
    let progress = lineup_progress();
    team.run(|comm: &mut Comm<'_>| {
        let me = comm.rank();
        (0..OPS)
            .map(|i| {
                if i == 0 || each {
                    barrier.wait_with(|| {
                        if progress {
                            // A failed rank's progress is an error: it
                            // still lines up.
                            let _ = comm.progress();
                        }
                    });
                }
                let mut out = 0u64;
                match collective {
                    Collective::Bcast => {
                        out = if me == 0 { value(i) } else { 0 };
                        comm.broadcast_into(0, &mut out)
                    }
                    Collective::Allreduce => {
                        comm.all_reduce_into(&input(me), &mut out, SystemOperation::sum())
                    }
                    Collective::Reduce => {
                        comm.reduce_into(0, &input(me), &mut out, SystemOperation::sum())
                    }
                }
                .map(|()| out)
            })
            .collect()
    })
}

/// What one run measured and found.
struct Sample {
    /// Per operation: the slowest live rank's time inside the call.
    ns: [u64; OPS],
    messages: [u64; OPS],
    timeouts: u64,
    false_suspicions: u64,
    /// Live ranks whose input a reduction left out, allowed by FTCO's
    /// Definition 3.2 only for a falsely suspected rank.
    left_out: u64,
    problems: Vec<String>,
}

fn check(case: &Case, report: &Report) -> Sample {
    let mut problems = Vec::new();
    let mut left_out = 0;
    let live: Vec<Rank> = case.live().collect();
    let live_mask = mask(live.iter().copied());
    let all_mask = mask(0..case.ranks);
    let mut ns = [0; OPS];
    let mut messages = [0; OPS];
    for (i, op) in report.ops.iter().take(OPS).enumerate() {
        ns[i] = op.latency_ns.iter().copied().max().unwrap_or(0);
        messages[i] = op.messages;
        if (op.completed as usize) < live.len() {
            problems.push(format!(
                "op {i}: {} of {} live ranks completed",
                op.completed,
                live.len()
            ));
        }
    }
    if report.ops.len() < OPS {
        problems.push(format!("{} operation records", report.ops.len()));
    }
    // The reductions' results, per operation: one value, on every rank that
    // has one, holding every live rank once (the dying rank in operation 0
    // in or out).
    for i in 0..OPS {
        let allowed = if case.faults == Faults::Dying && i == 0 {
            all_mask
        } else {
            live_mask
        };
        let mut seen: Option<u64> = None;
        for &r in &live {
            let got = match report.outcomes[r as usize].returned() {
                Some(results) => results.get(i),
                None => {
                    problems.push(format!("rank {r} panicked"));
                    continue;
                }
            };
            let got = match got {
                Some(Ok(v)) => *v,
                Some(Err(e)) => {
                    problems.push(format!("op {i}: rank {r}: {e}"));
                    continue;
                }
                None => {
                    problems.push(format!("op {i}: rank {r}: no result"));
                    continue;
                }
            };
            match case.collective {
                Collective::Bcast => {
                    if got != value(i) {
                        problems.push(format!("op {i}: rank {r} got {got:#x}"));
                    }
                }
                Collective::Reduce if r != 0 => {}
                Collective::Reduce | Collective::Allreduce => {
                    if seen.is_some_and(|s| s != got) {
                        problems.push(format!("op {i}: results differ ({got:#x} at rank {r})"));
                    }
                    seen = Some(got);
                    match members(got) {
                        Some(set) if set & !allowed != 0 => {
                            problems.push(format!("op {i}: rank {r}: holds {set:#x}, dead in it"))
                        }
                        Some(set) => left_out += u64::from((live_mask & !set).count_ones()),
                        None => problems.push(format!("op {i}: rank {r}: {got:#x} counts twice")),
                    }
                }
            }
        }
    }
    if case.collective == Collective::Allreduce {
        // Each live rank's result counted the same left-out ranks.
        left_out /= live.len() as u64;
    }
    if left_out > 0 && (case.algo != Algo::Ftco || report.false_suspicions == 0) {
        problems.push(format!("{left_out} live inputs left out"));
    }
    Sample {
        ns,
        messages,
        timeouts: report.timeouts,
        false_suspicions: report.false_suspicions,
        left_out,
        problems,
    }
}

/// Everything the runs of one case recorded.
#[derive(Default)]
struct Stats {
    runs: u64,
    ns: [Vec<u64>; OPS],
    messages: [u64; OPS],
    timeouts: u64,
    false_suspicions: u64,
    left_out: u64,
    bad_runs: u64,
    problems: Vec<String>,
}

/// Per case label, in the order cases first ran.
static STATS: Mutex<Vec<(String, Stats)>> = Mutex::new(Vec::new());

/// One run of `case` on `team`, checked and recorded.
fn sample(case: &Case, team: &Team) -> [u64; OPS] {
    let report = run(case, team, lineup_each());
    let s = check(case, &report);
    let mut all = STATS.lock().unwrap_or_else(|e| e.into_inner());
    let label = case.label();
    let at = match all.iter().position(|(l, _)| *l == label) {
        Some(at) => at,
        None => {
            all.push((label, Stats::default()));
            all.len() - 1
        }
    };
    let st = &mut all[at].1;
    st.runs += 1;
    for i in 0..OPS {
        st.ns[i].push(s.ns[i]);
        st.messages[i] += s.messages[i];
    }
    st.timeouts += s.timeouts;
    st.false_suspicions += s.false_suspicions;
    st.left_out += s.left_out;
    if !s.problems.is_empty() {
        st.bad_runs += 1;
        if st.problems.len() < 3 {
            st.problems.push(s.problems.join("; "));
        }
    }
    s.ns
}

/// The median of `xs` (nanoseconds), in microseconds (`sim::Stats`; 0
/// for none).
fn median_us(xs: &[u64]) -> f64 {
    corrected::sim::Stats::of(xs.iter().map(|&x| x as f64)).p50 / 1e3
}

/// The table of every case that ran, and whether any run had a problem.
fn table(children: &str, wall: Duration) -> (String, bool) {
    let all = STATS.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = String::new();
    let _ = writeln!(
        out,
        "compare_threads: {} cases, {:.0} s; FTCO's T = {} ms; victim rank {VICTIM}; \
         lined up before {}\n{children}",
        all.len(),
        wall.as_secs_f64(),
        DEFAULT_FTCO_TIMEOUT.as_millis(),
        if lineup_progress() {
            "each operation, making progress while waiting (LINEUP=progress)"
        } else if lineup_each() {
            "each operation (LINEUP=each)"
        } else {
            "operation 0, operation 1 back to back"
        }
    );
    let _ = writeln!(
        out,
        "Time: the slowest live rank's time inside the call, median over runs (warm-up \
         included). Messages: mean per operation over runs. Timeouts, false suspicions: \
         per run (both operations).\n"
    );
    let _ = writeln!(
        out,
        "| case | runs | op0 µs | op1 µs | msgs op0 | msgs op1 | timeouts | false susp. | left out | bad runs |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
    let mut bad = false;
    for (label, st) in all.iter() {
        let runs = st.runs.max(1) as f64;
        let _ = writeln!(
            out,
            "| {label} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} | {:.2} | {} | {} |",
            st.runs,
            median_us(&st.ns[0]),
            median_us(&st.ns[1]),
            st.messages[0] as f64 / runs,
            st.messages[1] as f64 / runs,
            st.timeouts as f64 / runs,
            st.false_suspicions as f64 / runs,
            st.left_out,
            st.bad_runs,
        );
        bad |= st.bad_runs > 0;
    }
    for (label, st) in all.iter().filter(|(_, st)| st.bad_runs > 0) {
        let _ = writeln!(out, "\nPROBLEM {label}: {}", st.problems.join(" | "));
    }
    (out, bad)
}

/// Prints the table to stderr and writes it to `target/compare_threads.md`.
fn report(children: &str, wall: Duration) -> bool {
    let (text, bad) = table(children, wall);
    if STATS.lock().map_or(true, |s| s.is_empty()) {
        return false;
    }
    eprintln!("\n{text}");
    let dir = std::env::var("CARGO_TARGET_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/target").to_string());
    let path = std::path::Path::new(&dir).join("compare_threads.md");
    if let Err(e) = std::fs::write(&path, &text) {
        eprintln!("could not write {}: {e}", path.display());
    } else {
        eprintln!("(also in {})", path.display());
    }
    bad
}

fn bench_case(group: &mut BenchmarkGroup<'_, WallTime>, case: Case) {
    let team = case.team();
    for op in 0..OPS {
        let name = format!("{}/{}/{}", case.algo.name(), case.faults.name(), case.ranks);
        let id = BenchmarkId::new(name, format!("op{op}"));
        group.bench_function(id, |b| {
            b.iter_custom(|iters| {
                let ns: u64 = (0..iters).map(|_| sample(&case, &team)[op]).sum();
                Duration::from_nanos(ns)
            })
        });
    }
}

fn main() {
    let children = victim_children();
    let started = Instant::now();
    let all = cases();
    if std::env::var("QUICK").is_ok_and(|v| !v.is_empty() && v != "0") {
        for case in &all {
            let team = case.team();
            for _ in 0..QUICK_RUNS {
                sample(case, &team);
            }
        }
    } else {
        let mut c = Criterion::default().configure_from_args();
        for collective in [Collective::Bcast, Collective::Allreduce, Collective::Reduce] {
            let mut group = c.benchmark_group(collective.name());
            // Every iteration is a fresh run of two operations (a team's
            // start and end included in its wall time, not in its measured
            // time); FTCO with a failure takes 2-3 T per operation.
            group
                .sample_size(10)
                .sampling_mode(SamplingMode::Flat)
                .warm_up_time(Duration::from_millis(300))
                .measurement_time(Duration::from_secs(1));
            for case in all.iter().filter(|c| c.collective == collective) {
                bench_case(&mut group, *case);
            }
            group.finish();
        }
        c.final_summary();
    }
    if report(&children, started.elapsed()) {
        eprintln!("compare_threads: some runs had problems (above)");
        std::process::exit(1);
    }
}
