//! `corrected sim`: Monte Carlo runs of one broadcast configuration.

use std::process::ExitCode;

use clap::Args;

use indicatif::{ProgressBar, ProgressStyle};

use corrected::sim::{BcastScenario, BcastSim, BcastSummary, FaultPlan, MonteCarlo, Stats};
use corrected::types::{Rank, Tick};
use corrected::Error;

/// Options of `corrected sim`.
#[derive(Args, Debug)]
pub struct SimArgs {
    /// Number of simulated processes P.
    #[arg(long, default_value_t = 65536)]
    procs: u32,
    #[command(flatten)]
    model: crate::model::BcastModelArgs,
    /// Fraction of processes dead before each run, drawn afresh per run (0.01 = 1 %).
    #[arg(long, default_value_t = 0.0)]
    fault_rate: f64,
    /// Ranks dead before every run, comma separated (the root 0 must stay alive).
    #[arg(long, value_delimiter = ',')]
    dead: Vec<Rank>,
    /// Ranks dying during the run, as RANK:TICK, comma separated.
    #[arg(long, value_delimiter = ',', value_parser = crate::parse_rank_pair::<Tick>)]
    die_at: Vec<(Rank, Tick)>,
    /// Number of runs.
    #[arg(long, default_value_t = 100)]
    runs: u64,
    /// Seed of the first run; run i uses seed + i.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `corrected sim`. Exit code 1 if any semantic check failed.
pub fn run(args: SimArgs) -> Result<ExitCode, Error> {
    if args.procs == 0 {
        return Err(Error::ZeroRanks);
    }
    let (spec, correction, logp) = args.model.parse()?;
    let faults = FaultPlan {
        dead: args.dead.clone(),
        rate: args.fault_rate,
        die_at: args.die_at.clone(),
    };
    let scenario = BcastScenario::new(spec, args.procs, correction, logp, faults)?;
    let mc = MonteCarlo {
        runs: args.runs,
        seed: args.seed,
        threads: args
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
    };
    let bar = ProgressBar::new(args.runs);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} runs, {per_sec}, eta {eta}")
            .expect("valid template"),
    );
    if args.runs < 50 {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let (runs, seconds) = mc.execute(
        || BcastSim::new(&scenario),
        |sim, seed| sim.run(seed),
        |_| bar.inc(1),
    );
    bar.finish_and_clear();
    let summary = BcastSummary::of(args.procs, &runs, seconds);
    if args.json {
        let mut value = serde_json::to_value(&summary).expect("plain data");
        let extra = serde_json::json!({
            "tree": spec.to_string(),
            "correction": correction.to_string(),
            "latency": logp.latency,
            "overhead": logp.overhead,
            "fault_rate": args.fault_rate,
            "seed": args.seed,
            "dissemination_time": scenario.dissemination_time(),
        });
        if let (Some(obj), serde_json::Value::Object(more)) = (value.as_object_mut(), extra) {
            obj.extend(more);
        }
        out!("{value}");
    } else {
        print_table(&summary, &args, scenario.dissemination_time());
    }
    Ok(if summary.violations == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_table(s: &BcastSummary, args: &SimArgs, dissemination: Tick) {
    out!(
        "P={} tree={} correction={} L={} o={} fault-rate={} runs={} ({:.1} sims/s)",
        s.procs,
        args.model.tree,
        args.model.correction,
        args.model.latency,
        args.model.overhead,
        args.fault_rate,
        s.runs,
        s.sims_per_second
    );
    out!("fault-free dissemination time: {dissemination}");
    out!(
        "{:<34} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "metric",
        "mean",
        "p50",
        "p99",
        "p99.9",
        "max"
    );
    let row = |name: &str, st: &Stats| {
        out!(
            "{name:<34} {:>9.3} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
            st.mean,
            st.p50,
            st.p99,
            st.p999,
            st.max
        )
    };
    row("coloring_latency", &s.coloring_latency);
    row("quiescence_latency", &s.quiescence_latency);
    row("correction_latency", &s.correction_latency);
    row("messages_per_process", &s.messages_per_process);
    row(
        "correction_messages_per_process",
        &s.correction_messages_per_process,
    );
    row("max_gap", &s.max_gap);
    out!(
        "incomplete_runs: {}  uncolored live ranks: {}  violations: {}",
        s.incomplete_runs,
        s.uncolored_live_total,
        s.violations
    );
}
