//! What `corrected run` prints: one [`RunReport`], as the JSON object of
//! `docs/cli.md`'s *JSON output* (every key present, null where it does
//! not apply) or as text.

use std::collections::BTreeMap;

use serde::Serialize;

use corrected::sim::Stats;
use corrected::types::Rank;

/// `corrected run --json`: the settings under their flags' names (auto
/// resolved), then the measurements, times in nanoseconds (`_ns`), every
/// per-operation quantity a distribution over the operations.
#[derive(Debug, Serialize)]
pub(super) struct RunReport {
    pub command: &'static str,
    // Settings.
    pub ranks: u32,
    pub op: &'static str,
    pub root: Option<Rank>,
    pub iters: u32,
    pub algorithm: String,
    pub broadcast: Option<String>,
    pub reduce: Option<String>,
    pub allreduce: Option<String>,
    pub tree: String,
    pub correction: Option<String>,
    pub f: Option<u32>,
    pub failure_scheme: Option<String>,
    pub failure_timeout_ms: f64,
    pub timeout: f64,
    pub timeout_ms: Option<f64>,
    pub bytes: Option<u64>,
    pub pace_us: f64,
    pub kill: Vec<Rank>,
    pub kill_after_sends: Vec<(Rank, u32)>,
    pub hang: Vec<Rank>,
    pub panic: Vec<Rank>,
    // Measurements.
    pub latency_ns: Stats,
    pub answer_delay_ns: Option<Stats>,
    pub messages_per_op: Stats,
    pub consistency: Option<Stats>,
    pub g_nodes_per_op: Option<f64>,
    pub timeouts: Option<u64>,
    pub false_suspicions: Option<u64>,
    pub bandwidth_gbs: Option<f64>,
    pub helped_pumps_per_op: f64,
    pub segment_allocations: u64,
    pub delivered: u64,
    pub missing: u64,
    pub missing_by_error: BTreeMap<&'static str, u64>,
    pub wrong: u64,
    pub expected_misses: u64,
    pub root_failed: u64,
    pub violations: u64,
    pub result_consistent: bool,
    pub failed_ranks: Vec<Rank>,
    pub hung_ranks: Vec<Rank>,
    pub panicked_ranks: Vec<Rank>,
    pub wall_seconds: f64,
}

impl RunReport {
    /// Prints the JSON object on one line.
    pub fn print_json(&self) {
        out!(
            "{}",
            serde_json::to_string(self).expect("a report serializes")
        );
    }

    /// Prints the report as text under `headline` (what ran, how long).
    pub fn print_text(&self, headline: &str) {
        out!("{headline}");
        if let Some(c) = &self.consistency {
            out!(
                "consistency (live ranks reached, mean over operations): {:.6}",
                c.mean
            );
        }
        if let Some(g) = self.g_nodes_per_op {
            out!("g-nodes per operation (colored by the gossip phase, the root included): {g:.2}");
        }
        if let (Some(t), Some(s)) = (self.timeouts, self.false_suspicions) {
            out!("timeouts fired: {t}, false suspicions (a live rank suspected): {s}");
        }
        if let Some(a) = &self.answer_delay_ns {
            out!(
                "DATA to ACK taken ({} samples): p50 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs, max {:.1} µs",
                a.samples,
                a.p50 / 1e3,
                a.p99 / 1e3,
                a.p999 / 1e3,
                a.max / 1e3
            );
        }
        let lat = &self.latency_ns;
        if lat.samples == 0 {
            out!("latency per operation: none (no call delivered)");
        } else {
            out!(
                "latency per operation (slowest rank's call): p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
                lat.p50 / 1e3,
                lat.p99 / 1e3,
                lat.max / 1e3
            );
        }
        if let (Some(bytes), Some(gbs), true) = (self.bytes, self.bandwidth_gbs, lat.samples > 0) {
            out!("{bytes} bytes per rank: {gbs:.3} GB/s at the p50 latency");
        }
        out!(
            "messages per operation: {:.2}, helped pumps per operation: {:.2}",
            self.messages_per_op.mean,
            self.helped_pumps_per_op
        );
        let errors: Vec<String> = self
            .missing_by_error
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let errors = if errors.is_empty() {
            String::new()
        } else {
            format!(" ({})", errors.join(", "))
        };
        out!(
            "delivered to live ranks: {}, missing: {}{errors}, wrong: {}, result consistent: {}",
            self.delivered,
            self.missing,
            self.wrong,
            if self.delivered == 0 {
                "none to compare".to_string()
            } else {
                self.result_consistent.to_string()
            }
        );
        out!(
            "expected misses: {}, operations with a failed root: {}, violations: {}",
            self.expected_misses,
            self.root_failed,
            self.violations
        );
        if let (true, Some(root)) = (self.root_failed > 0, self.root) {
            out!(
                "the root {root} failed in {} of {} operations: a failed root gives no delivery guarantee, so their losses are expected misses, not violations",
                self.root_failed,
                self.iters
            );
        }
        out!(
            "failed ranks: {:?}, hung: {:?}, panicked: {:?}",
            self.failed_ranks,
            self.hung_ranks,
            self.panicked_ranks
        );
    }
}
