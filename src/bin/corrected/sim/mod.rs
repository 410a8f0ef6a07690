//! `corrected sim`: Monte Carlo runs of one broadcast configuration.

use std::process::ExitCode;

use clap::Args;

use indicatif::{ProgressBar, ProgressStyle};

use corrected::protocol::allreduce::AllreduceAlgorithm;
use corrected::protocol::gossip::{
    bfb_expected_latency, bfb_latency, bfb_messages, big_latency, big_messages, CorrectionChoice,
    GossipCorrection, GossipModel, GossipSpec, GossipTime, PhaseEnd,
};
use corrected::protocol::reduce::FailureScheme;
use corrected::sim::bcast::Token;
use corrected::sim::{
    AckTreeScenario, AckTreeSim, AllreduceScenario, AllreduceSim, BcastScenario, BcastSim,
    BcastSummary, BigScenario, BigSim, BlocksScenario, BlocksSim, ColoringCurve, FaultPlan,
    FtcoReduceScenario, FtcoReduceSim, FtcoScenario, FtcoSim, GossipRun, GossipScenario, GossipSim,
    MonteCarlo, ReduceConfig, ReduceScenario, ReduceSim, Trace,
};
use corrected::topology::TreeSpec;
use corrected::types::{Collective, LogP, MessageSize, Rank, Tick};

use crate::error::CliError;
use crate::limits::{at_least_one, out_of_range, ticks_at_most, MAX_WAIT_TICKS};
use crate::op::Op;

mod checks;
mod report;
use checks::{check, check_curve, threads};
use report::{BroadcastReport, SimReport};

/// Options of `corrected sim`.
#[derive(Args, Debug)]
pub struct SimArgs {
    /// Number of simulated processes P (at most 2^30, and as many as fit in
    /// the memory available: checked before the simulation starts).
    #[arg(long, default_value_t = 65536)]
    procs: u32,
    /// The collective: bcast, reduce (to rank 0), allreduce, or allgather
    /// or reducescatter (--bytes per block: the allreduce of P blocks,
    /// as the library runs them, src/gather.rs; its messages carry
    /// P x --bytes).
    #[arg(long, default_value = "bcast")]
    op: String,
    /// Fault budget f of reduce and allreduce.
    #[arg(long, default_value_t = 1)]
    f: u32,
    /// Allreduce algorithm: tree (up-correction reduce, then the corrected
    /// broadcast), star (inputs straight to a root, the result straight
    /// back), or blocks (the large allreduce by blocks' data phase, each
    /// rank reducing one block of --bytes, in LogGP with --gap-per-byte).
    /// Simulated ranks have a core each, so there is no auto. Default:
    /// tree. With --op allreduce only.
    #[arg(long)]
    allreduce: Option<String>,
    /// Broadcast algorithm: tree (a corrected tree, --tree and --correction),
    /// gossip (corrected gossip: random gossip until --gossip-time, then
    /// the correction --correction names: none (GOS), ocg[:C] (opportunistic
    /// for C ticks, C from Eq. 2 by default), ccg, also spelled checked, or
    /// fcg:F (failure-proof, withstanding F failures during the correction,
    /// F from 1 to 7; fcg alone is fcg:1)), big (the binomial graph
    /// baseline; no --correction), ack-tree (the --tree with an ACK gather,
    /// no fault tolerance) or ftco (FTCO's DATA/KEEPALIVE/ACK broadcast
    /// over the --tree, timeouts of --timeout). For --op reduce and
    /// allreduce: tree (up-correction, --allreduce) or ftco (FTCO's reduce
    /// and allreduce over the --tree, root 0, timeouts of --timeout).
    #[arg(long, default_value = "tree")]
    algorithm: String,
    /// Corrected gossip's T, the tick from which no gossip message starts
    /// (see --gossip-phase-end): ticks of gossip, or auto (Eq. 3 for OCG, Eq. 4
    /// for CCG, Eq. 5 for FCG, for GOS the first T after which Lemma 1
    /// leaves at most δ nodes uncolored; plus one overhead, as the paper
    /// chooses it; the default). With --algorithm gossip only.
    #[arg(long)]
    gossip_time: Option<String>,
    /// Where corrected gossip's phase ends: drained (at T + L + O, once the
    /// last gossip message sent before T is in: the g-nodes are the nodes
    /// colored by then, and the correction starts then; the default) or
    /// at-t (at T: g-nodes colored by T, the correction from T, gossip still
    /// in flight colors c-nodes; the convention of the authors' simulator,
    /// flogsim). With --algorithm gossip only.
    #[arg(long)]
    gossip_phase_end: Option<String>,
    /// Corrected gossip's δ: the chance the estimates behind T and C (auto)
    /// may fail (the paper's 6.93e-7: all of 10^6 runs succeed with
    /// probability about 1/2; the default). With --algorithm gossip only.
    #[arg(long)]
    delta: Option<f64>,
    /// FTCO's timeout unit T in ticks: a message to a node d tree levels
    /// away is suspected after d·T + o·(the two nodes' children) ticks.
    /// Default: one hop's round trip 2(2o + L) (8 for L = 2, o = 1).
    #[arg(long)]
    timeout: Option<Tick>,
    /// Gossip and big: also report, for every tick 0..=CURVE, the mean
    /// number of nodes with the value and the 99th percentile of the
    /// longest uncolored chain on the ring, next to Lemma 1 and Eq. 2
    /// (Figure 1 of the Corrected Gossip paper; with --json only).
    #[arg(long)]
    curve: Option<Tick>,
    /// Bytes of every message (LogGP: a send occupies its process
    /// o + (bytes - 1) x G ticks).
    #[arg(long, default_value_t = 8)]
    bytes: u64,
    /// LogGP's gap per byte G, in ticks (0, the default: plain LogP, the
    /// papers' model).
    #[arg(long, default_value_t = 0)]
    gap_per_byte: Tick,
    /// Failure information of reduce: list, count or bit (the default).
    /// With --op reduce or allreduce only.
    #[arg(long)]
    failure_scheme: Option<String>,
    /// Ticks after a rank dies until every rank is told (failure detector; at most 10^12).
    #[arg(long, default_value_t = 8)]
    detector: Tick,
    #[command(flatten)]
    model: crate::model::BcastModelArgs,
    /// Fraction of processes dead before each run, drawn afresh per run (0.01 = 1 %).
    #[arg(long, default_value_t = 0.0)]
    fault_rate: f64,
    /// Ranks dead before every run, comma separated (the root 0 must stay alive).
    #[arg(long, value_delimiter = ',')]
    dead: Vec<Rank>,
    /// Ranks dying during the run, as RANK:TICK, comma separated (TICK at most 10^12).
    #[arg(long, value_delimiter = ',', value_parser = crate::parse_rank_pair::<Tick>)]
    die_at: Vec<(Rank, Tick)>,
    /// Number of runs (1 or more).
    #[arg(long, default_value_t = 100)]
    runs: u64,
    /// Seed of the first run; run i uses seed + i.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worker threads (default: all cores; each holds one simulation's
    /// state; at most 1024, and no more than --runs are started).
    #[arg(long)]
    threads: Option<usize>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

impl SimArgs {
    /// `--allreduce`, tree unless given.
    fn allreduce(&self) -> &str {
        self.allreduce.as_deref().unwrap_or("tree")
    }

    /// `--delta`, the paper's 6.93e-7 unless given.
    fn delta(&self) -> f64 {
        self.delta.unwrap_or(6.93e-7)
    }
}

/// Runs `corrected sim`. Exit code 1 if any semantic check failed.
pub fn run(mut args: SimArgs) -> Result<ExitCode, CliError> {
    // An allgather or a reduce-scatter is the allreduce of P blocks.
    let gather = matches!(args.op.as_str(), "allgather" | "reducescatter")
        .then(|| std::mem::replace(&mut args.op, "allreduce".into()));
    if let Some(name) = &gather {
        if args.algorithm != "tree" || args.allreduce() == "blocks" {
            return Err(out_of_range(
                "--op",
                name,
                "an allgather and a reduce-scatter run the up-correction allreduce",
                "pass --algorithm tree and --allreduce tree or star",
            ));
        }
        args.bytes = (args.bytes.checked_mul(u64::from(args.procs))).ok_or_else(|| {
            out_of_range(
                "--bytes",
                args.bytes,
                "--bytes x --procs must fit in 64 bits",
                "pass fewer --bytes",
            )
        })?;
    }
    let op = Op::parse(
        &args.op,
        &[Op::Bcast, Op::Reduce, Op::Allreduce],
        "bcast, reduce or allreduce",
    )?;
    check(&args, op)?;
    if args.timeout.is_some() && args.algorithm != "ftco" {
        return Err(out_of_range(
            "--timeout",
            args.timeout.unwrap_or_default(),
            "only FTCO has a timeout",
            "pass --timeout with --algorithm ftco only",
        ));
    }
    let faults = FaultPlan {
        dead: args.dead.clone(),
        rate: args.fault_rate,
        die_at: args.die_at.clone(),
        ..FaultPlan::none()
    };
    match (args.algorithm.as_str(), op) {
        ("tree", _) => {}
        ("gossip", Op::Bcast) => return run_gossip(&args, faults),
        ("big", Op::Bcast) => return run_big(&args, faults),
        ("ack-tree", Op::Bcast) => return run_timeout_baseline(&args, faults, false),
        ("ftco", Op::Bcast) => return run_timeout_baseline(&args, faults, true),
        ("ftco", _) => return run_ftco_collective(&args, op, faults),
        (other, _) => {
            return Err(out_of_range(
                "--algorithm",
                other,
                "the algorithms are tree and ftco, and gossip, big or ack-tree for --op bcast",
                "pass --algorithm tree or ftco, or gossip, big or ack-tree with --op bcast",
            ))
        }
    }
    let (spec, correction, logp) = args.model.parse()?;
    if op != Op::Bcast {
        return run_collective(&args, op, gather.as_deref(), faults);
    }
    // Live ranks left uncolored are violations only where the correction
    // guarantees delivery: no rank dies during the run (the root lives).
    let guaranteed = correction.guarantees_delivery() && faults.static_only();
    let size = MessageSize::new(args.bytes, args.gap_per_byte)?;
    let scenario =
        BcastScenario::new(spec, args.procs, correction, logp, faults)?.with_message_size(size);
    let (runs, seconds) = monte_carlo(
        &args,
        || BcastSim::new(&scenario),
        |sim: &mut BcastSim, seed| sim.run(seed),
    );
    let summary = BcastSummary::of(args.procs, &runs, seconds);
    let expected_misses = if guaranteed {
        0
    } else {
        summary.uncolored_live_total
    };
    let mut report = SimReport::new(&args, "bcast", "tree", seconds);
    report.tree = Some(spec.to_string());
    report.correction = Some(correction.to_string());
    report.latency = logp.latency;
    report.overhead = logp.overhead;
    Ok(report::tree_bcast(
        report,
        &summary,
        scenario.dissemination_time(),
        expected_misses,
        args.json,
    ))
}

/// Runs `args.runs` seeded simulations over worker threads with a progress bar.
fn monte_carlo<S, R: Send>(
    args: &SimArgs,
    make: impl Fn() -> S + Sync,
    run: impl Fn(&mut S, u64) -> R + Sync,
) -> (Vec<R>, f64) {
    let mc = MonteCarlo {
        runs: args.runs,
        seed: args.seed,
        threads: threads(args),
    };
    let bar = ProgressBar::new(args.runs);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} runs, {per_sec}, eta {eta}")
            .expect("valid template"),
    );
    if args.runs < 50 {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let out = mc.execute(make, run, |_| bar.inc(1));
    bar.finish_and_clear();
    out
}

/// [`monte_carlo`] over a broadcast simulator (gossip, BIG, ack tree,
/// FTCO): each run's metrics and, with `--curve`, its coloring curve.
fn broadcast_runs<S>(
    args: &SimArgs,
    make: impl Fn() -> S + Sync,
    run: impl Fn(&mut S, u64) -> GossipRun + Sync,
    trace: impl Fn(&S) -> &Trace<Token> + Sync,
) -> (Vec<(GossipRun, Option<ColoringCurve>)>, f64) {
    monte_carlo(args, make, |sim: &mut S, seed| {
        let run = run(sim, seed);
        (run, args.curve.map(|u| ColoringCurve::of(trace(sim), u)))
    })
}

/// `corrected sim --algorithm gossip`: corrected gossip (Hoefler et al.,
/// IPDPS 2017), Monte Carlo over the fault plan and the peers' draws.
fn run_gossip(args: &SimArgs, faults: FaultPlan) -> Result<ExitCode, CliError> {
    let m = &args.model;
    ticks_at_most("--latency", m.latency, crate::limits::MAX_LOGP_TICKS)?;
    ticks_at_most("--overhead", m.overhead, crate::limits::MAX_LOGP_TICKS)?;
    let logp = LogP::new(m.latency, m.overhead)?;
    let correction = m.correction.as_deref().unwrap_or("ccg");
    let choice: CorrectionChoice = correction.parse().map_err(|_| {
        out_of_range(
            "--correction",
            correction,
            "corrected gossip's corrections are none, ocg[:C], ccg (checked) and fcg[:F] (F from 1 to 7)",
            "pass --correction ccg, ocg, ocg:C, fcg, fcg:F or none",
        )
    })?;
    if let CorrectionChoice::Opportunistic(Some(c)) = choice {
        ticks_at_most("--correction", c, MAX_WAIT_TICKS)?;
    }
    let gossip_time = args.gossip_time.as_deref().unwrap_or("auto");
    let time: GossipTime = gossip_time.parse().map_err(|_| {
        out_of_range(
            "--gossip-time",
            gossip_time,
            "T is a number of ticks, or auto",
            "pass --gossip-time auto or a number of ticks",
        )
    })?;
    if let GossipTime::Ticks(t) = time {
        ticks_at_most("--gossip-time", t, MAX_WAIT_TICKS)?;
    }
    check_curve(args)?;
    // T and C as given, or from Eq. 3-5, Lemma 1 (GOS) and Claim 2
    // (`GossipSpec`), and the latency the model predicts.
    let phase_end = match args.gossip_phase_end.as_deref() {
        None => PhaseEnd::Drained,
        Some(end) => end.parse().map_err(|_| {
            out_of_range(
                "--gossip-phase-end",
                end,
                PhaseEnd::SPELLINGS,
                "pass --gossip-phase-end drained or at-t",
            )
        })?,
    };
    let chosen = GossipSpec {
        time,
        correction: choice,
        delta: args.delta(),
        phase_end,
    }
    .choose(args.procs, logp)?;
    let model = GossipModel::new(args.procs, args.procs, logp)?;
    let (plan, estimate) = (chosen.plan, chosen.estimated_latency);
    let (stop, correction) = (plan.stop(), plan.correction());
    let scenario = GossipScenario::new(plan, logp, faults.clone())?;
    let (runs, seconds) = broadcast_runs(
        args,
        || GossipSim::new(&scenario),
        GossipSim::run,
        GossipSim::last_trace,
    );
    // CCG reaches every live node when no node fails during the run
    // (Claim 3), FCG too (Corollary 3; the root never fails before the
    // run): a miss there is a violation; GOS and OCG promise it only with
    // high probability.
    let guaranteed = matches!(
        correction,
        GossipCorrection::Checked | GossipCorrection::FailureProof { .. }
    ) && faults.static_only();
    let correction_name = match correction {
        GossipCorrection::None => "none".to_string(),
        GossipCorrection::Opportunistic { duration } => format!("ocg:{duration}"),
        GossipCorrection::Checked => "ccg".to_string(),
        GossipCorrection::FailureProof { f, .. } => format!("fcg:{f}"),
    };
    let mut report = SimReport::new(args, "bcast", "gossip", seconds);
    report.gossip_time = Some(stop);
    report.gossip_phase_end = Some(phase_end.to_string());
    report.delta = Some(args.delta());
    let printer = BroadcastReport {
        correction: Some(correction_name),
        estimated_latency: estimate,
        estimated_messages_per_process: None,
        guaranteed,
        model: Some(model),
        bfb: None,
        timeouts: false,
    };
    Ok(printer.print(report, args.curve, args.json, &runs))
}

/// `corrected sim --algorithm big`: the binomial graph broadcast (Corrected
/// Gossip, Section IV-B.3), Monte Carlo over the fault plan.
fn run_big(args: &SimArgs, faults: FaultPlan) -> Result<ExitCode, CliError> {
    let m = &args.model;
    ticks_at_most("--latency", m.latency, crate::limits::MAX_LOGP_TICKS)?;
    ticks_at_most("--overhead", m.overhead, crate::limits::MAX_LOGP_TICKS)?;
    let logp = LogP::new(m.latency, m.overhead)?;
    check_curve(args)?;
    let scenario = BigScenario::new(args.procs, logp, faults.clone())?;
    let (runs, seconds) = broadcast_runs(
        args,
        || BigSim::new(&scenario),
        BigSim::run,
        BigSim::last_trace,
    );
    // Consistent while fewer than ⌈log2 N⌉ nodes fail, before or during
    // the run: a miss then is a violation.
    let failures = faults.dead.len() as u64
        + u64::from(faults.random_count(args.procs))
        + faults.die_at.len() as u64;
    let guaranteed = failures < u64::from(scenario.plan().degree());
    let report = SimReport::new(args, "bcast", "big", seconds);
    let printer = BroadcastReport {
        correction: None,
        estimated_latency: big_latency(args.procs, logp)?,
        estimated_messages_per_process: Some(
            big_messages(args.procs)? as f64 / f64::from(args.procs),
        ),
        guaranteed,
        model: None,
        // BFB beside it, analytic (Section IV-B.2 and IV-D): 20 % of the
        // failures happen during the operation and restart it.
        bfb: Some((
            bfb_latency(args.procs, logp)?,
            bfb_expected_latency(args.procs, logp, 0.2 * failures as f64)?,
            bfb_messages(args.procs, 0.2 * failures as f64)? / f64::from(args.procs),
        )),
        timeouts: false,
    };
    Ok(printer.print(report, args.curve, args.json, &runs))
}

/// The tree and model of a timeout/ACK baseline (ack tree, FTCO), its
/// ticks and `--timeout` checked.
fn timeout_model(args: &SimArgs) -> Result<(TreeSpec, LogP), CliError> {
    let m = &args.model;
    ticks_at_most("--latency", m.latency, crate::limits::MAX_LOGP_TICKS)?;
    ticks_at_most("--overhead", m.overhead, crate::limits::MAX_LOGP_TICKS)?;
    if let Some(t) = args.timeout {
        at_least_one("--timeout", t)?;
        ticks_at_most("--timeout", t, MAX_WAIT_TICKS)?;
    }
    let (spec, _, logp) = m.parse()?;
    Ok((spec, logp))
}

/// `corrected sim --algorithm ack-tree|ftco`: the timeout/ACK baselines
/// over `--tree` (Corrected Trees Section 5's acknowledged tree; FTCO,
/// Sections 3-4), Monte Carlo over the fault plan. FTCO guarantees every
/// live node the value whatever fails (Definition 3.2, the root alive);
/// the ack tree only without failures.
fn run_timeout_baseline(
    args: &SimArgs,
    faults: FaultPlan,
    ftco: bool,
) -> Result<ExitCode, CliError> {
    let (spec, logp) = timeout_model(args)?;
    check_curve(args)?;
    let failures = faults.dead.len() as u64
        + u64::from(faults.random_count(args.procs))
        + faults.die_at.len() as u64;
    let (runs, seconds, estimated_latency, algorithm, timeout) = if ftco {
        let scenario = FtcoScenario::new(spec, args.procs, logp, args.timeout, faults)?;
        let (runs, seconds) = broadcast_runs(
            args,
            || FtcoSim::new(&scenario),
            FtcoSim::run,
            FtcoSim::last_trace,
        );
        let latency = scenario.plan().tree().dissemination_time(logp);
        (
            runs,
            seconds,
            latency,
            "ftco",
            Some(scenario.plan().timeout()),
        )
    } else {
        let scenario = AckTreeScenario::new(spec, args.procs, logp, faults)?;
        let (runs, seconds) = broadcast_runs(
            args,
            || AckTreeSim::new(&scenario),
            AckTreeSim::run,
            AckTreeSim::last_trace,
        );
        let latency = scenario.plan().tree().dissemination_time(logp);
        (runs, seconds, latency, "ack-tree", None)
    };
    let procs = f64::from(args.procs);
    let mut report = SimReport::new(args, "bcast", algorithm, seconds);
    report.tree = Some(spec.to_string());
    report.timeout_ticks = timeout;
    let printer = BroadcastReport {
        correction: None,
        // Fault-free delivery: the plain tree's dissemination time.
        estimated_latency,
        // One DATA and one ACK per non-root node, fault-free.
        estimated_messages_per_process: Some(2.0 * (procs - 1.0) / procs),
        guaranteed: ftco || failures == 0,
        model: None,
        bfb: None,
        timeouts: true,
    };
    Ok(printer.print(report, args.curve, args.json, &runs))
}

/// `corrected sim --op allreduce --allreduce blocks`: the data phase of the
/// large allreduce by blocks in LogGP (`sim::blocks`), every message as
/// large as its block.
fn run_blocks(args: &SimArgs, faults: FaultPlan) -> Result<ExitCode, CliError> {
    let (_, _, logp) = args.model.parse()?;
    if args.procs < 2 || args.bytes < u64::from(args.procs) {
        return Err(out_of_range(
            "--bytes",
            args.bytes,
            format!(
                "an allreduce by blocks cuts the input into one block per rank: at least 2 ranks \
                 and as many bytes as ranks ({})",
                args.procs
            ),
            "pass --bytes of at least --procs, and --procs 2 or more",
        ));
    }
    let size = MessageSize::new(args.bytes, args.gap_per_byte)?;
    let sc = BlocksScenario::new(args.procs, logp, size, args.detector, faults)?;
    let (runs, seconds) = monte_carlo(
        args,
        || BlocksSim::new(&sc),
        |sim: &mut BlocksSim, s| sim.run(s),
    );
    let (mut report, tail) = collective_head(args, Op::Allreduce, logp, seconds);
    report.allreduce = Some("blocks".into());
    report.block_bytes = Some(sc.block_bytes(0));
    let title = format!(
        "P={} op=allreduce by blocks (data phase; rounds 2: the run falls back) bytes={} \
         G={} {tail}",
        args.procs, size.bytes, size.gap_per_byte,
    );
    Ok(report::collective(report, &title, &runs, false, args.json))
}

/// What every reduce and allreduce report of the detector's algorithms
/// (tree, star, blocks) shows: the report's settings with the fault
/// budget and detector, and the title's tail with the model, detector,
/// fault rate and runs. The caller adds its algorithm.
fn collective_head(args: &SimArgs, op: Op, logp: LogP, seconds: f64) -> (SimReport, String) {
    let mut report = SimReport::new(args, op.name(), &args.algorithm, seconds);
    report.latency = logp.latency;
    report.overhead = logp.overhead;
    report.f = Some(args.f);
    report.detector = Some(args.detector);
    let tail = format!(
        "L={} o={} detector={} fault-rate={} runs={}",
        logp.latency, logp.overhead, args.detector, args.fault_rate, args.runs
    );
    (report, tail)
}

/// `corrected sim --op reduce|allreduce`: Monte Carlo over the fault plan.
fn run_collective(
    args: &SimArgs,
    op: Op,
    gather: Option<&str>,
    faults: FaultPlan,
) -> Result<ExitCode, CliError> {
    if op == Op::Allreduce && args.allreduce() == "blocks" {
        return run_blocks(args, faults);
    }
    let (spec, correction, logp) = args.model.parse()?;
    let scheme: FailureScheme = args.failure_scheme.as_deref().unwrap_or("bit").parse()?;
    let config = ReduceConfig {
        tree: spec,
        procs: args.procs,
        f: args.f,
        scheme,
        logp,
        faults,
        detector: args.detector,
    };
    let size = MessageSize::new(args.bytes, args.gap_per_byte)?;
    let (runs, seconds) = if op == Op::Reduce {
        let sc = ReduceScenario::new(config)?.with_message_size(size);
        monte_carlo(
            args,
            || ReduceSim::new(&sc),
            |sim: &mut ReduceSim, s| sim.run(s),
        )
    } else {
        let sc = match args.allreduce().parse()? {
            AllreduceAlgorithm::Star => AllreduceScenario::star(config)?,
            AllreduceAlgorithm::Tree => AllreduceScenario::new(config, correction)?,
            AllreduceAlgorithm::Auto => {
                return Err(CliError::OutOfRange {
                    option: "--allreduce",
                    value: args.allreduce().to_string(),
                    why: "auto picks by the cores ranks share, and simulated ranks have one each"
                        .into(),
                    hint: "pass tree or star".into(),
                })
            }
        }
        .with_message_size(size);
        monte_carlo(
            args,
            || AllreduceSim::new(&sc),
            |sim: &mut AllreduceSim, s| sim.run(s),
        )
    };
    let (mut report, tail) = collective_head(args, op, logp, seconds);
    report.failure_scheme = Some(scheme.to_string());
    report.tree = Some(spec.to_string());
    report.correction = Some(correction.to_string());
    report.allreduce = (op == Op::Allreduce).then(|| args.allreduce().to_string());
    let name = match gather {
        Some(name) => {
            report.op = if name == "allgather" {
                "allgather"
            } else {
                "reducescatter"
            };
            format!(
                "{name} (the allreduce of P blocks, messages of {} bytes)",
                args.bytes
            )
        }
        None => op.name().to_string(),
    };
    let title = format!(
        "P={} op={name} f={} tree={spec} correction={correction} {tail}",
        args.procs, args.f,
    );
    Ok(report::collective(report, &title, &runs, false, args.json))
}

/// `corrected sim --algorithm ftco --op reduce|allreduce`: FTCO's reduce
/// and allreduce over `--tree` (Sections 3-4), root 0 (never failing, as
/// the paper assumes), Monte Carlo over the fault plan. Definition 3.2 is
/// checked in every run; a live rank left out is a violation only in runs
/// without false suspicions (the one guarantee a timeout below the
/// network's round trip loses).
fn run_ftco_collective(args: &SimArgs, op: Op, faults: FaultPlan) -> Result<ExitCode, CliError> {
    let (spec, logp) = timeout_model(args)?;
    let kind = if op == Op::Reduce {
        Collective::Reduce
    } else {
        Collective::Allreduce
    };
    let sc = FtcoReduceScenario::new(kind, spec, args.procs, logp, args.timeout, faults)?;
    let (runs, seconds) = monte_carlo(
        args,
        || FtcoReduceSim::new(&sc),
        |sim: &mut FtcoReduceSim, s| sim.run(s),
    );
    let plan = sc.plan();
    // Fault-free: the plain tree's reduce (and broadcast), and one DATA and
    // one ACK per tree edge and phase; on R > 1 roots (multiroot:K), R - 1
    // DATA from each root to its peers instead of the edges between them.
    let procs = f64::from(args.procs);
    let (estimated_latency, messages) = if op == Op::Reduce {
        (plan.reduce_time(), 2.0 * (procs - 1.0))
    } else {
        let r = f64::from(plan.roots());
        (plan.allreduce_time(), 4.0 * (procs - r) + r * (r - 1.0))
    };
    let timeout = plan.timeout();
    let mut report = SimReport::new(args, op.name(), "ftco", seconds);
    report.tree = Some(spec.to_string());
    report.timeout_ticks = Some(timeout);
    report.latency = logp.latency;
    report.overhead = logp.overhead;
    report.estimated_latency_ticks = Some(estimated_latency);
    report.estimated_messages_per_process = Some(messages / procs);
    let title = format!(
        "P={} op={} ftco tree={} timeout={timeout} L={} o={} fault-rate={} runs={}\nestimated latency: {estimated_latency}",
        args.procs,
        op.name(),
        spec,
        logp.latency,
        logp.overhead,
        args.fault_rate,
        args.runs
    );
    Ok(report::collective(report, &title, &runs, true, args.json))
}
