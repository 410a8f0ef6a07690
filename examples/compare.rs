//! The comparison of docs/comparison.md: corrected broadcasts
//! against the timeout/ACK baselines, on the same LogP model, trees and
//! faults, in the simulator.
//!
//!     cargo run --release --example compare -- run --procs P --runs R [--seed S] [--threads T]
//!     cargo run --release --example compare -- report [--results FILE] [--no-figures] [--doc docs/comparison.md]
//!
//! `run` simulates every algorithm of [`ALGORITHMS`] on every fault case
//! of [`CASES`] and prints one JSON line per (case, algorithm). Run `i` of
//! every algorithm and case draws its faults with `FaultPlan::draw` from
//! seed `S + i`, so every algorithm meets the same dead ranks and the same
//! ranks dying at the same ticks. `report` reads `results/comparison.jsonl`
//! (the lines of every `run`; or `--results FILE`), prints the markdown
//! tables (and writes them beside it, `.md` for `.jsonl`), draws
//! `docs/figures/compare-*.svg` (unless `--no-figures`) and, with `--doc`,
//! puts the tables between the doc's `<!-- compare:tables -->` and
//! `<!-- /compare:tables -->`, and the side-by-side latency tables
//! ([`SIDE_BY_SIDE`]: the broadcasts; up-correction against FTCO) between
//! `<!-- compare:summary -->` and `<!-- /compare:summary -->`, and
//! `<!-- compare:reduce-summary -->` and `<!-- /compare:reduce-summary -->`.
//!
//! Adding an algorithm is one entry of [`ALGORITHMS`].

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;

use corrected::error::ConfigError;
use corrected::protocol::bcast::Correction;
use corrected::protocol::gossip::{CorrectionChoice, GossipSpec};
use corrected::sim::reduce::{ReduceConfig, ROOT};
use corrected::sim::{
    AckTreeScenario, AckTreeSim, AllreduceScenario, AllreduceSim, BcastScenario, BcastSim,
    FaultPlan, FtcoReduceScenario, FtcoReduceSim, FtcoScenario, FtcoSim, GossipRun, GossipScenario,
    GossipSim, MonteCarlo, ReduceScenario, ReduceSim, Stats, NEVER,
};
use corrected::topology::{Shape, TreeSpec};
use corrected::types::{Collective, LogP, Tick};
use serde::Serialize;
use serde_json::Value;

mod common;
use common::{line, num, plot, read_lines, Axis, Line, Res, OUT, SIZE};

/// The LogP model of the Corrected Trees paper's evaluation: L = 2, o = 1.
const LOGP: LogP = LogP::PAPER;

/// Every tree-based algorithm's tree: the binomial tree, numbered as the
/// corrected broadcast numbers it (interleaved), root 0.
const TREE: TreeSpec = TreeSpec::interleaved(Shape::Binomial);

/// The results file `run`'s lines go to (the script appends them).
const RESULTS: &str = "results/comparison.jsonl";

/// A fault case: ranks dead before the operation (at random, never the
/// root) and ranks dying during it (at random, never the root, each at a
/// tick drawn uniformly from 1 to the plain tree's fault-free latency).
#[derive(Clone, Copy)]
struct Case {
    name: &'static str,
    inactive: u32,
    dying: u32,
}

const CASES: [Case; 6] = [
    Case {
        name: "0",
        inactive: 0,
        dying: 0,
    },
    Case {
        name: "1 inactive",
        inactive: 1,
        dying: 0,
    },
    Case {
        name: "10 inactive",
        inactive: 10,
        dying: 0,
    },
    Case {
        name: "100 inactive",
        inactive: 100,
        dying: 0,
    },
    Case {
        name: "1 dying",
        inactive: 0,
        dying: 1,
    },
    Case {
        name: "3 dying",
        inactive: 0,
        dying: 3,
    },
];

/// Up-correction's rows run on the cases with at most this many failed
/// ranks: it tolerates f of them (f = 1 or 3 below) and beyond that
/// reports "too many failures" by design. FTCO has no fault budget: its
/// reduce and allreduce run on every case, as the broadcasts do.
const UP_CORRECTION_MAX_FAILURES: u32 = 3;

/// No limit on a case's failed ranks ([`Algorithm::max_failures`]).
const ANY: u32 = u32::MAX;

impl Case {
    /// The case's fault plan for `procs` ranks; `within` is the latest tick
    /// a rank dies at during the operation.
    fn plan(&self, procs: u32, within: Tick) -> FaultPlan {
        // ⌊rate·P⌋ = inactive exactly: the rate is put half a rank above.
        let rate = if self.inactive == 0 {
            0.0
        } else {
            (self.inactive as f64 + 0.5) / procs as f64
        };
        FaultPlan {
            dying: corrected::sim::Dying {
                count: self.dying,
                within,
            },
            ..FaultPlan::rate(rate)
        }
    }

    fn failures(&self) -> u32 {
        self.inactive + self.dying
    }
}

/// Broadcasts (every live rank should get the root's value) or reductions
/// (the result of every rank that lives, Section 4.1 / 5.1).
#[derive(Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Family {
    Broadcast,
    Reduction,
}

/// One algorithm of the comparison: its name, its family, the cases it
/// runs on, and how to make its experiment for P ranks and a fault plan.
struct Algorithm {
    name: &'static str,
    family: Family,
    /// It runs on the cases with at most this many failed ranks.
    max_failures: u32,
    build: fn(u32, &FaultPlan) -> Res<Box<dyn Experiment>>,
}

/// The algorithms compared. Adding one is one entry.
const ALGORITHMS: &[Algorithm] = &[
    Algorithm {
        name: "corrected tree, checked-sync",
        family: Family::Broadcast,
        max_failures: ANY,
        build: |p, faults| tree(p, faults, Correction::CheckedSync),
    },
    Algorithm {
        name: "corrected tree, optimized:4",
        family: Family::Broadcast,
        max_failures: ANY,
        build: |p, faults| tree(p, faults, Correction::Optimized { distance: 4 }),
    },
    Algorithm {
        name: "corrected gossip, CCG",
        family: Family::Broadcast,
        max_failures: ANY,
        build: |p, faults| gossip(p, faults, CorrectionChoice::Checked),
    },
    Algorithm {
        name: "corrected gossip, FCG (f = 1)",
        family: Family::Broadcast,
        max_failures: ANY,
        build: |p, faults| gossip(p, faults, CorrectionChoice::FailureProof(1)),
    },
    Algorithm {
        name: "FTCO",
        family: Family::Broadcast,
        max_failures: ANY,
        build: |p, faults| boxed(FtcoScenario::new(TREE, p, LOGP, None, faults.clone())),
    },
    Algorithm {
        name: "ack tree",
        family: Family::Broadcast,
        max_failures: ANY,
        build: |p, faults| boxed(AckTreeScenario::new(TREE, p, LOGP, faults.clone())),
    },
    Algorithm {
        name: "plain tree",
        family: Family::Broadcast,
        max_failures: ANY,
        build: |p, faults| tree(p, faults, Correction::None),
    },
    Algorithm {
        name: "up-correction reduce, f = 1",
        family: Family::Reduction,
        max_failures: UP_CORRECTION_MAX_FAILURES,
        build: |p, faults| boxed(ReduceScenario::new(reduction(p, 1, faults))),
    },
    Algorithm {
        name: "up-correction reduce, f = 3",
        family: Family::Reduction,
        max_failures: UP_CORRECTION_MAX_FAILURES,
        build: |p, faults| boxed(ReduceScenario::new(reduction(p, 3, faults))),
    },
    Algorithm {
        name: "up-correction allreduce, f = 1",
        family: Family::Reduction,
        max_failures: UP_CORRECTION_MAX_FAILURES,
        build: |p, faults| allreduce(p, 1, faults),
    },
    Algorithm {
        name: "up-correction allreduce, f = 3",
        family: Family::Reduction,
        max_failures: UP_CORRECTION_MAX_FAILURES,
        build: |p, faults| allreduce(p, 3, faults),
    },
    Algorithm {
        name: "FTCO reduce",
        family: Family::Reduction,
        max_failures: ANY,
        build: |p, faults| ftco_reduction(p, faults, Collective::Reduce),
    },
    Algorithm {
        name: "FTCO allreduce",
        family: Family::Reduction,
        max_failures: ANY,
        build: |p, faults| ftco_reduction(p, faults, Collective::Allreduce),
    },
];

/// An experiment, or why its parameters are wrong.
fn boxed<E: Experiment + 'static>(e: Result<E, ConfigError>) -> Res<Box<dyn Experiment>> {
    Ok(Box::new(e?))
}

fn tree(procs: u32, faults: &FaultPlan, correction: Correction) -> Res<Box<dyn Experiment>> {
    boxed(BcastScenario::new(
        TREE,
        procs,
        correction,
        LOGP,
        faults.clone(),
    ))
}

fn gossip(procs: u32, faults: &FaultPlan, choice: CorrectionChoice) -> Res<Box<dyn Experiment>> {
    let spec = GossipSpec {
        correction: choice,
        ..GossipSpec::default()
    };
    let plan = spec.choose(procs, LOGP)?.plan;
    boxed(GossipScenario::new(plan, LOGP, faults.clone()))
}

/// Up-correction over the binomial tree (`TREE`), single-bit failure
/// information, a failure detector telling every rank 8 ticks after a death
/// (`ReduceConfig::new`'s defaults, the CLI's).
fn reduction(procs: u32, f: u32, faults: &FaultPlan) -> ReduceConfig {
    ReduceConfig {
        tree: TREE,
        logp: LOGP,
        faults: faults.clone(),
        ..ReduceConfig::new(procs, f)
    }
}

/// Up-correction reduce, then the checked-sync corrected broadcast.
fn allreduce(procs: u32, f: u32, faults: &FaultPlan) -> Res<Box<dyn Experiment>> {
    boxed(AllreduceScenario::new(
        reduction(procs, f, faults),
        Correction::CheckedSync,
    ))
}

/// FTCO's reduce or allreduce to rank 0 over the binomial tree (`TREE`),
/// its default timeout unit, no failure detector: the root never fails
/// (FTCO's Section 2), and no draw kills it (`FaultPlan::draw` exempts the
/// root, 0 here as for up-correction).
fn ftco_reduction(procs: u32, faults: &FaultPlan, kind: Collective) -> Res<Box<dyn Experiment>> {
    boxed(FtcoReduceScenario::new(
        kind,
        TREE,
        procs,
        LOGP,
        None,
        faults.clone(),
    ))
}

/// What one run of any algorithm reports.
#[derive(Clone, Copy, Default)]
struct Row {
    /// Broadcast: when the last live rank reached got the value; reduce:
    /// when the root had the result; allreduce: the last live rank.
    latency: Tick,
    /// When all activity ended: the last message, or the result if it
    /// came later (FTCO's root may get its result from a timeout, with
    /// nothing left to send).
    quiescence: Tick,
    messages_per_process: f64,
    /// Broadcast: live ranks reached over live ranks; reduction: 1 if the
    /// result is consistent, else 0.
    reached: f64,
    /// Timeouts fired (FTCO).
    timeouts: u32,
    /// Of the ranks those timeouts suspected, those alive then (FTCO).
    false_suspicions: u32,
    /// Broken guarantees, as each simulator counts them.
    violations: u32,
}

/// Runs one seed with the given death times.
type Simulator<'a> = Box<dyn FnMut(u64, &[Tick]) -> Row + 'a>;

/// An algorithm on one P and fault plan: makes simulators, one per worker.
trait Experiment: Sync {
    /// A simulator: runs one seed with the given death times.
    fn simulator(&self) -> Simulator<'_>;
}

fn live(death: &[Tick]) -> f64 {
    death.iter().filter(|&&d| d == NEVER).count().max(1) as f64
}

impl Row {
    /// A row without timeouts. The engine's quiescence counts messages
    /// only (the last send, receive or arrival), so a result produced by a
    /// timer after the last message extends it here.
    fn new(latency: Tick, quiescence: Tick, messages: f64, reached: f64, violations: u32) -> Self {
        Row {
            latency,
            quiescence: quiescence.max(latency),
            messages_per_process: messages,
            reached,
            violations,
            ..Row::default()
        }
    }
}

fn broadcast_row(r: GossipRun) -> Row {
    Row {
        timeouts: r.timeouts,
        false_suspicions: r.false_suspicions,
        ..Row::new(
            r.latency,
            r.quiescence_latency,
            r.messages_per_process,
            r.consistency,
            r.violations,
        )
    }
}

impl Experiment for BcastScenario {
    fn simulator(&self) -> Simulator<'_> {
        let mut sim = BcastSim::new(self);
        Box::new(move |_, death| {
            let r = sim.run_with(death);
            let reached = 1.0 - r.uncolored_live as f64 / live(death);
            let (latency, quiescence) = (r.coloring_latency, r.quiescence_latency);
            Row::new(
                latency,
                quiescence,
                r.messages_per_process,
                reached,
                r.violations,
            )
        })
    }
}

impl Experiment for GossipScenario {
    fn simulator(&self) -> Simulator<'_> {
        let mut sim = GossipSim::new(self);
        Box::new(move |seed, death| broadcast_row(sim.run_with(seed, death, &[])))
    }
}

/// A reduction's row; timeouts and false suspicions are FTCO's (0 for
/// up-correction, which has a failure detector instead).
fn reduction_row(r: corrected::sim::CollectiveRun) -> Row {
    let consistent = f64::from(u8::from(r.result_consistent));
    let (latency, quiescence) = (r.latency, r.quiescence_latency);
    Row {
        timeouts: r.timeouts,
        false_suspicions: r.false_suspicions,
        ..Row::new(
            latency,
            quiescence,
            r.messages_per_process,
            consistent,
            r.violations,
        )
    }
}

/// [`Experiment`] for scenarios whose simulator runs `run_with(death,
/// budgets)`, its result made a [`Row`] by `$row`.
macro_rules! experiment {
    ($scenario:ty, $sim:ident, $row:ident) => {
        impl Experiment for $scenario {
            fn simulator(&self) -> Simulator<'_> {
                let mut sim = $sim::new(self);
                Box::new(move |_, death| $row(sim.run_with(death, &[])))
            }
        }
    };
}

experiment!(FtcoScenario, FtcoSim, broadcast_row);
experiment!(AckTreeScenario, AckTreeSim, broadcast_row);
experiment!(ReduceScenario, ReduceSim, reduction_row);
experiment!(AllreduceScenario, AllreduceSim, reduction_row);
experiment!(FtcoReduceScenario, FtcoReduceSim, reduction_row);

/// One (P, case, algorithm) over all runs: a line of the results file.
#[derive(Serialize)]
struct Summary<'a> {
    procs: u32,
    case: &'a str,
    inactive: u32,
    dying: u32,
    /// The latest tick of an in-operation death.
    dying_within: Tick,
    algorithm: &'a str,
    family: Family,
    runs: u64,
    seed: u64,
    seconds: f64,
    latency: Stats,
    quiescence: Stats,
    messages_per_process: Stats,
    reached: Stats,
    /// The smallest `reached` of any run.
    reached_min: f64,
    /// Broadcast: runs that left a live rank without the value;
    /// reduction: runs without a consistent result.
    incomplete_runs: u64,
    timeouts: Stats,
    false_suspicions: Stats,
    violations: u64,
    /// The command that made this line.
    command: &'a str,
}

/// `--name value` from `args`, parsed, or `default`.
fn flag<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> Res<T> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => {
            let v = args.get(i + 1).ok_or(format!("{name} needs a value"))?;
            v.parse().map_err(|_| format!("bad {name}: {v}").into())
        }
    }
}

fn run(args: &[String]) -> Res<()> {
    let procs: u32 = flag(args, "--procs", 1024)?;
    let runs: u64 = flag(args, "--runs", 100)?;
    let seed: u64 = flag(args, "--seed", 1)?;
    let threads: usize = flag(args, "--threads", 1)?;
    let command = format!(
        "cargo run --release --example compare -- run --procs {procs} --runs {runs} --seed {seed} --threads {threads}"
    );
    // In-operation deaths fall within the plain tree's fault-free latency.
    let within = BcastScenario::new(TREE, procs, Correction::None, LOGP, FaultPlan::none())?
        .dissemination_time();
    let mc = MonteCarlo {
        runs,
        seed,
        threads,
    };
    for case in CASES {
        let faults = case.plan(procs, within);
        for algorithm in ALGORITHMS {
            if case.failures() > algorithm.max_failures {
                continue;
            }
            let experiment = (algorithm.build)(procs, &faults)?;
            let (rows, seconds) = mc.execute(
                || experiment.simulator(),
                |sim, seed| sim(seed, &faults.draw(procs, ROOT, seed)),
                |_| {},
            );
            let stat = |f: fn(&Row) -> f64| Stats::of(rows.iter().map(f));
            let summary = Summary {
                procs,
                case: case.name,
                inactive: case.inactive,
                dying: case.dying,
                dying_within: within,
                algorithm: algorithm.name,
                family: algorithm.family,
                runs,
                seed,
                seconds,
                latency: stat(|r| r.latency as f64),
                quiescence: stat(|r| r.quiescence as f64),
                messages_per_process: stat(|r| r.messages_per_process),
                reached: stat(|r| r.reached),
                reached_min: rows.iter().map(|r| r.reached).fold(1.0, f64::min),
                incomplete_runs: rows.iter().filter(|r| r.reached < 1.0).count() as u64,
                timeouts: stat(|r| r.timeouts as f64),
                false_suspicions: stat(|r| r.false_suspicions as f64),
                violations: rows.iter().map(|r| r.violations as u64).sum(),
                command: &command,
            };
            println!("{}", serde_json::to_string(&summary)?);
            eprintln!(
                "  P = {procs}, {}: {} ({seconds:.1} s)",
                case.name, algorithm.name
            );
        }
    }
    Ok(())
}

fn text<'v>(v: &'v Value, key: &str) -> &'v str {
    v[key].as_str().unwrap_or("")
}

/// The markdown tables of the results: per P, the broadcasts, then the
/// reductions, each under the command that made its rows.
fn tables(rows: &[Value]) -> String {
    let mut out = String::new();
    let procs: BTreeSet<u64> = rows.iter().filter_map(|r| r["procs"].as_u64()).collect();
    let f = |v: &Value, path: &[&str]| num(v, path).unwrap_or(f64::NAN);
    for p in procs {
        for family in ["broadcast", "reduction"] {
            let sel: Vec<&Value> = rows
                .iter()
                .filter(|r| r["procs"].as_u64() == Some(p) && text(r, "family") == family)
                .collect();
            let Some(first) = sel.first() else { continue };
            let commands: BTreeSet<&str> = sel.iter().map(|r| text(r, "command")).collect();
            let (title, reached) = if family == "broadcast" {
                (
                    "Broadcasts",
                    "reached: live ranks with the value, min over runs",
                )
            } else {
                (
                    "Reduce and allreduce (up-correction, FTCO)",
                    "reached: share of runs with a consistent result (every live rank's input \
                     once, the same value on every live rank)",
                )
            };
            let _ = writeln!(
                out,
                "### {title}, P = {p}, {} runs per row\n",
                first["runs"]
            );
            for c in commands {
                let _ = writeln!(out, "`{c}` (via `scripts/compare.sh`)\n");
            }
            let _ = writeln!(
                out,
                "Latency and quiescence in ticks (L = 2, o = 1); messages: all sent, over P, mean; {reached}; \
                 incomplete: runs below 1; timeouts, false suspicions (a live rank suspected): mean per run.\n"
            );
            out.push_str(
                "| faults | algorithm | latency p50 | p99 | max | quiescence p50 | p99 | max | msgs/process | reached | incomplete | timeouts | false susp. | violations |\n",
            );
            out.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
            for r in sel {
                let reached = if family == "broadcast" {
                    format!("{:.4}", f(r, &["reached_min"]))
                } else {
                    format!("{:.3}", f(r, &["reached", "mean"]))
                };
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {:.3} | {} | {} | {:.2} | {:.2} | {} |",
                    text(r, "case"),
                    text(r, "algorithm"),
                    f(r, &["latency", "p50"]),
                    f(r, &["latency", "p99"]),
                    f(r, &["latency", "max"]),
                    f(r, &["quiescence", "p50"]),
                    f(r, &["quiescence", "p99"]),
                    f(r, &["quiescence", "max"]),
                    f(r, &["messages_per_process", "mean"]),
                    reached,
                    r["incomplete_runs"],
                    f(r, &["timeouts", "mean"]),
                    f(r, &["false_suspicions", "mean"]),
                    r["violations"],
                );
            }
            out.push('\n');
        }
    }
    out
}

/// The x positions of the inactive cases in the broadcast figures.
const INACTIVE_NAMES: [&str; 4] = ["0", "1 inactive", "10 inactive", "100 inactive"];
const INACTIVE_AXIS: &[&str] = &["0", "1", "10", "100"];

/// The x positions of the reduce and allreduce figures: the cases every
/// reduction row runs on (up-correction's stop at 3 failed ranks).
const REDUCTION_NAMES: [&str; 4] = ["0", "1 inactive", "1 dying", "3 dying"];
const REDUCTION_AXIS: &[&str] = &["none", "1 dead before", "1 dying", "3 dying"];

/// One family's figures: which rows, which cases on the x axis.
struct Figures {
    family: Family,
    /// File names start with this.
    prefix: &'static str,
    title: &'static str,
    cases: &'static [&'static str],
    axis: &'static [&'static str],
    x_label: &'static str,
}

const FIGURES: [Figures; 2] = [
    Figures {
        family: Family::Broadcast,
        prefix: "compare-",
        title: "Broadcasts",
        cases: &INACTIVE_NAMES,
        axis: INACTIVE_AXIS,
        x_label: "ranks dead before the operation",
    },
    Figures {
        family: Family::Reduction,
        prefix: "compare-reduce-",
        title: "Reduce and allreduce",
        cases: &REDUCTION_NAMES,
        axis: REDUCTION_AXIS,
        x_label: "failed ranks",
    },
];

/// Per family and metric, one SVG with a panel per P: the broadcasts
/// against the number of ranks dead before the operation; reduce and
/// allreduce against the fault cases they all run on.
fn figures(rows: &[Value]) -> Res<()> {
    let procs: BTreeSet<u64> = rows.iter().filter_map(|r| r["procs"].as_u64()).collect();
    for fig in &FIGURES {
        let names: Vec<&str> = ALGORITHMS
            .iter()
            .filter(|a| a.family == fig.family)
            .map(|a| a.name)
            .collect();
        for (file, metric, label, path) in [
            (
                "latency-p99.svg",
                "p99 latency",
                "latency p99 [ticks]",
                ["latency", "p99"],
            ),
            (
                "messages.svg",
                "messages per process",
                "messages / process (mean)",
                ["messages_per_process", "mean"],
            ),
        ] {
            fs::create_dir_all(OUT)?;
            let out = format!("{OUT}/{}{file}", fig.prefix);
            let n = procs.len().max(1) as u32;
            let root =
                plotters::prelude::SVGBackend::new(&out, (SIZE.0, SIZE.1 * n)).into_drawing_area();
            use plotters::prelude::*;
            root.fill(&WHITE)?;
            for (area, &p) in root.split_evenly((n as usize, 1)).iter().zip(&procs) {
                let mut lines: Vec<Line> = names
                    .iter()
                    .enumerate()
                    .map(|(i, name)| {
                        let points = fig
                            .cases
                            .iter()
                            .enumerate()
                            .filter_map(|(x, case)| {
                                let r = rows.iter().find(|r| {
                                    r["procs"].as_u64() == Some(p)
                                        && text(r, "case") == *case
                                        && text(r, "algorithm") == *name
                                })?;
                                Some((x as f64, num(r, &path)?))
                            })
                            .collect();
                        line(name, i, false, points)
                    })
                    .filter(|l: &Line| !l.points.is_empty())
                    .collect();
                // A line equal to an earlier one (the ack tree's latency is
                // the plain tree's) is dashed over it and says so.
                for i in 1..lines.len() {
                    if let Some(same) = lines[..i].iter().find(|l| l.points == lines[i].points) {
                        let name = format!("{} (= {})", lines[i].name, same.name);
                        lines[i].name = name;
                        lines[i].dashed = true;
                    }
                }
                plot(
                    area,
                    &format!("{}: {metric}, P = {p}, L = 2, o = 1", fig.title),
                    Axis::named(fig.x_label, fig.axis),
                    label,
                    &lines,
                    SeriesLabelPosition::UpperLeft,
                )?;
            }
            root.present()?;
            println!("wrote {out}");
        }
    }
    Ok(())
}

/// A side-by-side latency table of the doc, between its markers
/// `<!-- compare:NAME -->` and `<!-- /compare:NAME -->`.
struct SideBySide {
    /// The markers' NAME.
    marker: &'static str,
    /// The algorithms, a column each: latency p50 / p99 / max.
    columns: &'static [&'static str],
    /// The algorithms whose timeouts per run have a column each.
    timeouts: &'static [&'static str],
    /// The fault-free case too, or only the cases with failures.
    fault_free: bool,
}

const SIDE_BY_SIDE: [SideBySide; 2] = [
    // The broadcasts under failures.
    SideBySide {
        marker: "summary",
        columns: &[
            "corrected tree, checked-sync",
            "corrected tree, optimized:4",
            "corrected gossip, CCG",
            "FTCO",
        ],
        timeouts: &["FTCO"],
        fault_free: false,
    },
    // Up-correction against FTCO: reduce and allreduce.
    SideBySide {
        marker: "reduce-summary",
        columns: &[
            "up-correction reduce, f = 3",
            "FTCO reduce",
            "up-correction allreduce, f = 3",
            "FTCO allreduce",
        ],
        timeouts: &["FTCO reduce", "FTCO allreduce"],
        fault_free: true,
    },
];

/// The latency side by side: per P (largest first) and fault case, p50 /
/// p99 / max of the algorithms in `table.columns` ("-" where one has no
/// row), and the timeouts per run of those in `table.timeouts`.
fn side_by_side(rows: &[Value], table: &SideBySide) -> String {
    let mut out = String::new();
    let procs: BTreeSet<u64> = rows.iter().filter_map(|r| r["procs"].as_u64()).collect();
    let find = |p: u64, case: &str, name: &str| {
        rows.iter().find(|r| {
            r["procs"].as_u64() == Some(p)
                && text(r, "case") == case
                && text(r, "algorithm") == name
        })
    };
    let commands: BTreeSet<&str> = rows.iter().map(|r| text(r, "command")).collect();
    for c in commands {
        let _ = writeln!(out, "`{c}` (via `scripts/compare.sh`)\n");
    }
    out.push_str("Latency p50 / p99 / max in ticks, from the tables above.\n\n| P | faults |");
    for name in table.columns {
        let _ = write!(out, " {name} |");
    }
    for name in table.timeouts {
        let _ = write!(out, " {name} timeouts per run |");
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---|".repeat(table.columns.len() + table.timeouts.len()));
    out.push('\n');
    for &p in procs.iter().rev() {
        for case in CASES
            .iter()
            .filter(|c| table.fault_free || c.failures() > 0)
        {
            let _ = write!(out, "| {p} | {} |", case.name);
            for name in table.columns {
                let cell = find(p, case.name, name).map_or("-".to_string(), |r| {
                    let v = |k: &str| num(r, &["latency", k]).unwrap_or(f64::NAN);
                    format!("{} / {} / {}", v("p50"), v("p99"), v("max"))
                });
                let _ = write!(out, " {cell} |");
            }
            for name in table.timeouts {
                let cell = find(p, case.name, name)
                    .and_then(|r| num(r, &["timeouts", "mean"]))
                    .map_or("-".to_string(), |t| format!("{t:.2}"));
                let _ = write!(out, " {cell} |");
            }
            out.push('\n');
        }
    }
    out
}

/// Puts `text` between the doc's markers `<!-- compare:NAME -->` and
/// `<!-- /compare:NAME -->`.
fn splice(path: &str, name: &str, text: &str) -> Res<()> {
    let (begin, end) = (
        format!("<!-- compare:{name} -->"),
        format!("<!-- /compare:{name} -->"),
    );
    let doc = fs::read_to_string(path)?;
    let (Some(b), Some(e)) = (doc.find(&begin), doc.find(&end)) else {
        return Err(format!("{path}: no {begin} ... {end}").into());
    };
    let spliced = format!("{}{begin}\n\n{text}{}", &doc[..b], &doc[e..]);
    fs::write(path, spliced)?;
    println!("{name} written into {path}");
    Ok(())
}

fn report(args: &[String]) -> Res<()> {
    let results: String = flag(args, "--results", RESULTS.to_string())?;
    let Some(rows) = read_lines(&results)? else {
        return Err(format!("{results} missing: run scripts/compare.sh").into());
    };
    let tables = tables(&rows);
    let summaries: Vec<String> = SIDE_BY_SIDE
        .iter()
        .map(|t| side_by_side(&rows, t))
        .collect();
    let mut all = tables.clone();
    for (t, summary) in SIDE_BY_SIDE.iter().zip(&summaries) {
        let _ = write!(all, "### Side by side ({})\n\n{summary}\n", t.marker);
    }
    fs::write(results.replace(".jsonl", ".md"), &all)?;
    print!("{all}");
    if !args.iter().any(|a| a == "--no-figures") {
        figures(&rows)?;
    }
    let doc: String = flag(args, "--doc", String::new())?;
    if !doc.is_empty() {
        splice(&doc, "tables", &tables)?;
        for (t, summary) in SIDE_BY_SIDE.iter().zip(&summaries) {
            splice(&doc, t.marker, &format!("{summary}\n"))?;
        }
    }
    Ok(())
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("run") => run(&args),
        Some("report") => report(&args),
        _ => Err(
            "usage: compare run --procs P --runs R [--seed S] [--threads T] \
                  | compare report [--results FILE] [--no-figures] [--doc FILE]"
                .into(),
        ),
    }
}
