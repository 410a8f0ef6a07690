//! What `corrected sim` prints: one [`SimReport`] per simulation, as the
//! JSON object of `docs/cli.md`'s *JSON output* (every key present, null
//! where it does not apply) or as a table.

use std::process::ExitCode;

use serde::Serialize;

use corrected::protocol::gossip::GossipModel;
use corrected::sim::{BcastSummary, CollectiveRun, ColoringCurve, GossipRun, Stats};
use corrected::types::{Rank, Tick};

use super::SimArgs;

/// `corrected sim --json`: the settings under their flags' names, then the
/// estimates and the measurements, times in ticks (`_ticks`), every
/// per-run quantity a distribution over the runs.
#[derive(Debug, Serialize)]
pub(super) struct SimReport {
    command: &'static str,
    // Settings, as the flags name them (resolved: auto shown as chosen).
    pub procs: u32,
    pub op: &'static str,
    pub algorithm: String,
    pub allreduce: Option<String>,
    pub f: Option<u32>,
    pub failure_scheme: Option<String>,
    pub detector: Option<Tick>,
    pub tree: Option<String>,
    pub correction: Option<String>,
    pub gossip_time: Option<Tick>,
    pub gossip_phase_end: Option<String>,
    pub delta: Option<f64>,
    pub timeout_ticks: Option<Tick>,
    pub latency: Tick,
    pub overhead: Tick,
    pub bytes: u64,
    pub gap_per_byte: Tick,
    pub block_bytes: Option<u64>,
    pub fault_rate: f64,
    pub dead: Vec<Rank>,
    pub die_at: Vec<(Rank, Tick)>,
    pub runs: u64,
    pub seed: u64,
    // What the model predicts.
    pub estimated_latency_ticks: Option<Tick>,
    pub estimated_messages_per_process: Option<f64>,
    pub bfb_latency_ticks: Option<Tick>,
    pub bfb_expected_latency_ticks: Option<f64>,
    pub bfb_messages_per_process: Option<f64>,
    // What the runs measured.
    pub latency_ticks: Stats,
    pub quiescence_ticks: Stats,
    pub correction_ticks: Option<Stats>,
    pub messages_per_process: Stats,
    pub correction_messages_per_process: Option<Stats>,
    pub max_gap: Option<Stats>,
    pub rounds: Option<Stats>,
    pub consistency: Option<Stats>,
    pub gossip_colored: Option<Stats>,
    pub sos_runs: Option<u64>,
    pub sos_nodes: Option<Stats>,
    pub timeouts: Option<u64>,
    pub false_suspicions: Option<u64>,
    pub incomplete_runs: Option<u64>,
    pub uncolored_live_total: Option<u64>,
    pub consistent_runs: Option<u64>,
    pub result_consistent: Option<bool>,
    pub expected_misses: u64,
    pub violations: u64,
    pub curve: Option<serde_json::Value>,
    pub sims_per_second: f64,
    pub wall_seconds: f64,
}

impl SimReport {
    /// The settings of `args` for `op` (LogP from the model flags), no
    /// measurement yet.
    pub fn new(args: &SimArgs, op: &'static str, algorithm: &str, seconds: f64) -> Self {
        let m = &args.model;
        SimReport {
            command: "sim",
            procs: args.procs,
            op,
            algorithm: algorithm.to_string(),
            allreduce: None,
            f: None,
            failure_scheme: None,
            detector: None,
            tree: None,
            correction: None,
            gossip_time: None,
            gossip_phase_end: None,
            delta: None,
            timeout_ticks: None,
            latency: m.latency,
            overhead: m.overhead,
            bytes: args.bytes,
            gap_per_byte: args.gap_per_byte,
            block_bytes: None,
            fault_rate: args.fault_rate,
            dead: args.dead.clone(),
            die_at: args.die_at.clone(),
            runs: args.runs,
            seed: args.seed,
            estimated_latency_ticks: None,
            estimated_messages_per_process: None,
            bfb_latency_ticks: None,
            bfb_expected_latency_ticks: None,
            bfb_messages_per_process: None,
            latency_ticks: Stats::default(),
            quiescence_ticks: Stats::default(),
            correction_ticks: None,
            messages_per_process: Stats::default(),
            correction_messages_per_process: None,
            max_gap: None,
            rounds: None,
            consistency: None,
            gossip_colored: None,
            sos_runs: None,
            sos_nodes: None,
            timeouts: None,
            false_suspicions: None,
            incomplete_runs: None,
            uncolored_live_total: None,
            consistent_runs: None,
            result_consistent: None,
            expected_misses: 0,
            violations: 0,
            curve: None,
            sims_per_second: args.runs as f64 / seconds.max(1e-9),
            wall_seconds: seconds,
        }
    }

    /// Prints the JSON object; exit code 1 on a violation.
    pub fn print_json(&self) -> ExitCode {
        out!(
            "{}",
            serde_json::to_string(self).expect("a report serializes")
        );
        self.exit_code()
    }

    /// 1 on a violation, 0 otherwise.
    pub fn exit_code(&self) -> ExitCode {
        if self.violations == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        }
    }
}

/// A corrected tree's broadcast (`--algorithm tree --op bcast`).
pub(super) fn tree_bcast(
    mut report: SimReport,
    s: &BcastSummary,
    dissemination: Tick,
    expected_misses: u64,
    json: bool,
) -> ExitCode {
    report.estimated_latency_ticks = Some(dissemination);
    report.latency_ticks = s.coloring_latency;
    report.quiescence_ticks = s.quiescence_latency;
    report.correction_ticks = Some(s.correction_latency);
    report.messages_per_process = s.messages_per_process;
    report.correction_messages_per_process = Some(s.correction_messages_per_process);
    report.max_gap = Some(s.max_gap);
    report.consistency = Some(s.consistency);
    report.incomplete_runs = Some(s.incomplete_runs);
    report.uncolored_live_total = Some(s.uncolored_live_total);
    report.expected_misses = expected_misses;
    report.violations = s.violations;
    if json {
        return report.print_json();
    }
    out!(
        "P={} tree={} correction={} L={} o={} fault-rate={} runs={} ({:.1} sims/s)",
        report.procs,
        report.tree.as_deref().unwrap_or("-"),
        report.correction.as_deref().unwrap_or("-"),
        report.latency,
        report.overhead,
        report.fault_rate,
        report.runs,
        report.sims_per_second
    );
    out!("fault-free dissemination time: {dissemination}");
    stats_table(&[
        ("latency_ticks (coloring)", &s.coloring_latency),
        ("quiescence_ticks", &s.quiescence_latency),
        ("correction_ticks", &s.correction_latency),
        ("messages_per_process", &s.messages_per_process),
        (
            "correction_messages_per_process",
            &s.correction_messages_per_process,
        ),
        ("max_gap", &s.max_gap),
        ("consistency", &s.consistency),
    ]);
    out!(
        "incomplete_runs: {}  uncolored live ranks: {}  expected misses: {}  violations: {}",
        s.incomplete_runs,
        s.uncolored_live_total,
        expected_misses,
        s.violations
    );
    report.exit_code()
}

/// A table of metrics: mean and quantiles of each.
fn stats_table(rows: &[(&str, &Stats)]) {
    out!(
        "{:<34} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "metric",
        "mean",
        "p50",
        "p99",
        "p99.9",
        "max"
    );
    for (name, st) in rows {
        out!(
            "{name:<34} {:>9.3} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
            st.mean,
            st.p50,
            st.p99,
            st.p999,
            st.max
        );
    }
}

/// How a gossip, BIG, ack-tree or FTCO broadcast names itself in its
/// report.
pub(super) struct BroadcastReport {
    /// Gossip's correction (none for GOS); None for BIG, ack tree, FTCO.
    pub correction: Option<String>,
    /// Eq. 3 / Eq. 4 (gossip), T_BIG (big) or the tree's dissemination
    /// time (ack tree, FTCO).
    pub estimated_latency: Tick,
    pub estimated_messages_per_process: Option<f64>,
    /// A live node left unreached is a violation.
    pub guaranteed: bool,
    /// The gossip model, for Lemma 1 and Eq. 2 beside the curve.
    pub model: Option<GossipModel>,
    /// BFB's analytic minimal latency, expected latency and messages per
    /// node with this run's failures (reported beside BIG).
    pub bfb: Option<(Tick, f64, f64)>,
    /// Whether timeouts and false suspicions are reported (ack-tree, ftco).
    pub timeouts: bool,
}

impl BroadcastReport {
    /// Prints the table or the JSON object of `runs` into `report` (its
    /// settings filled); exit code 1 on a violation.
    pub fn print(
        &self,
        mut report: SimReport,
        curve: Option<Tick>,
        json: bool,
        runs: &[(GossipRun, Option<ColoringCurve>)],
    ) -> ExitCode {
        let stats = |f: &dyn Fn(&GossipRun) -> f64| Stats::of(runs.iter().map(|(r, _)| f(r)));
        let sum = |f: &dyn Fn(&GossipRun) -> u32| runs.iter().map(|(r, _)| u64::from(f(r))).sum();
        let incomplete = runs.iter().filter(|(r, _)| r.consistency < 1.0).count() as u64;
        report.correction = self.correction.clone();
        report.estimated_latency_ticks = Some(self.estimated_latency);
        report.estimated_messages_per_process = self.estimated_messages_per_process;
        if let Some((min, expected, messages)) = self.bfb {
            report.bfb_latency_ticks = Some(min);
            report.bfb_expected_latency_ticks = Some(expected);
            report.bfb_messages_per_process = Some(messages);
        }
        report.latency_ticks = stats(&|r| r.latency as f64);
        report.quiescence_ticks = stats(&|r| r.quiescence_latency as f64);
        report.messages_per_process = stats(&|r| r.messages_per_process);
        report.consistency = Some(stats(&|r| r.consistency));
        report.incomplete_runs = Some(incomplete);
        report.violations = sum(&|r| r.violations) + if self.guaranteed { incomplete } else { 0 };
        report.expected_misses = if self.guaranteed { 0 } else { incomplete };
        if self.model.is_some() {
            report.gossip_colored = Some(stats(&|r| f64::from(r.gossip_colored)));
            // FCG's SOS (Algorithm 3, lines 8-10): runs in which a node
            // entered it, and how many nodes did.
            report.sos_runs = Some(runs.iter().filter(|(r, _)| r.sos_nodes > 0).count() as u64);
            report.sos_nodes = Some(stats(&|r| f64::from(r.sos_nodes)));
        }
        if self.timeouts {
            report.timeouts = Some(sum(&|r| r.timeouts));
            report.false_suspicions = Some(sum(&|r| r.false_suspicions));
        }
        if let Some(until) = curve {
            report.curve = Some(self.curve(until, runs));
        }
        if json {
            return report.print_json();
        }
        let t = report.gossip_time.map_or(String::new(), |t| {
            match report.gossip_phase_end.as_deref() {
                Some("at-t") => format!(" T={t} (phase ends at T)"),
                _ => format!(" T={t}"),
            }
        });
        out!(
            "P={} {}{t} correction={} L={} o={} fault-rate={} runs={} ({:.1} sims/s)",
            report.procs,
            report.algorithm,
            self.correction.as_deref().unwrap_or("none"),
            report.latency,
            report.overhead,
            report.fault_rate,
            report.runs,
            report.sims_per_second
        );
        out!("estimated latency: {}", self.estimated_latency);
        if let Some((min, expected, messages)) = self.bfb {
            out!("BFB (analytic): latency {min}, expected {expected:.1} with this run's failures, {messages:.2} messages per process");
        }
        let mut rows = vec![
            ("latency_ticks (coloring)", &report.latency_ticks),
            ("quiescence_ticks", &report.quiescence_ticks),
            ("messages_per_process", &report.messages_per_process),
        ];
        rows.extend(report.consistency.as_ref().map(|s| ("consistency", s)));
        rows.extend(
            report
                .gossip_colored
                .as_ref()
                .map(|s| ("gossip_colored", s)),
        );
        stats_table(&rows);
        if self.timeouts {
            out!(
                "timeouts: {}  false_suspicions: {}",
                report.timeouts.unwrap_or(0),
                report.false_suspicions.unwrap_or(0)
            );
        }
        out!(
            "incomplete_runs: {incomplete}  sos runs: {}  expected misses: {}  violations: {}",
            report.sos_runs.unwrap_or(0),
            report.expected_misses,
            report.violations
        );
        report.exit_code()
    }

    /// Figure 1's columns for every tick `0..=until`: the simulated mean
    /// of colored nodes and the 99th percentile of the longest uncolored
    /// chain, Lemma 1's c(t) and Eq. 2's 99 %-probable K at c(t).
    fn curve(&self, until: Tick, runs: &[(GossipRun, Option<ColoringCurve>)]) -> serde_json::Value {
        let curves: Vec<&ColoringCurve> = runs.iter().filter_map(|(_, c)| c.as_ref()).collect();
        let lemma = self.model.map(|m| m.expected_colored(until));
        let rows: Vec<serde_json::Value> = (0..=until as usize)
            .map(|t| {
                let colored = Stats::of(curves.iter().map(|c| f64::from(c.colored[t])));
                let gap = Stats::of(curves.iter().map(|c| f64::from(c.longest_gap[t])));
                let expected = lemma.as_ref().map(|c| c[t]);
                let k99 = self
                    .model
                    .zip(expected)
                    .map(|(m, c)| m.longest_gap(c, 0.01));
                serde_json::json!({
                    "t": t,
                    "colored_mean": colored.mean,
                    "longest_gap_p99": gap.p99,
                    "lemma1": expected,
                    "eq2_k99": k99,
                })
            })
            .collect();
        serde_json::Value::Array(rows)
    }
}

/// Prints the table (under `title`) or the JSON object of reduce or
/// allreduce `runs` into `report` (its settings filled), with the timeouts
/// fired and false suspicions if `timeouts`; exit code 1 on a violation.
pub(super) fn collective(
    mut report: SimReport,
    title: &str,
    runs: &[CollectiveRun],
    timeouts: bool,
    json: bool,
) -> ExitCode {
    let consistent = runs.iter().filter(|r| r.result_consistent).count() as u64;
    report.latency_ticks = Stats::of(runs.iter().map(|r| r.latency as f64));
    report.quiescence_ticks = Stats::of(runs.iter().map(|r| r.quiescence_latency as f64));
    report.messages_per_process = Stats::of(runs.iter().map(|r| r.messages_per_process));
    report.rounds = Some(Stats::of(runs.iter().map(|r| f64::from(r.rounds))));
    report.violations = runs.iter().map(|r| u64::from(r.violations)).sum();
    report.consistent_runs = Some(consistent);
    report.result_consistent = Some(consistent == report.runs);
    // Runs without a consistent result that broke no guarantee: more than
    // f ranks failed (or the root of a reduce), so none was promised.
    report.expected_misses = runs
        .iter()
        .filter(|r| !r.result_consistent && r.violations == 0)
        .count() as u64;
    if timeouts {
        report.timeouts = Some(runs.iter().map(|r| u64::from(r.timeouts)).sum());
        report.false_suspicions = Some(runs.iter().map(|r| u64::from(r.false_suspicions)).sum());
    }
    if json {
        return report.print_json();
    }
    out!("{title}");
    let mut rows = vec![
        ("latency_ticks", &report.latency_ticks),
        ("quiescence_ticks", &report.quiescence_ticks),
        ("messages_per_process", &report.messages_per_process),
    ];
    rows.extend(report.rounds.as_ref().map(|s| ("rounds", s)));
    stats_table(&rows);
    if timeouts {
        out!(
            "timeouts: {}  false_suspicions: {}",
            report.timeouts.unwrap_or(0),
            report.false_suspicions.unwrap_or(0)
        );
    }
    out!(
        "consistent runs: {consistent}/{}  expected misses: {}  violations: {}",
        report.runs,
        report.expected_misses,
        report.violations
    );
    report.exit_code()
}
