//! The FTCO paper's evaluation (*Tree-based Fault-Tolerant Collective
//! Operations*, Section 5.2), from this code's FTCO allreduce in the LogP
//! simulator, L = 10, o = 1 (Section 5.2.1):
//!
//!     cargo run --release --example ftco_figures -- fig7 [--max-k K]
//!     cargo run --release --example ftco_figures -- fig89 --procs P --runs R [--seed S] [--k K]
//!     cargo run --release --example ftco_figures -- report
//!
//! * `fig7` (Figure 7): the fault-free allreduce latency on the k-nomial
//!   tree (`knomial:K`) and the multi-root k-nomial tree (`multiroot:K`),
//!   each with the best K in 2..=max-k (16 by default) per P = 1K..64K
//!   (powers of two), against the LogP-optimal tree (`optimal`). Prints a
//!   markdown table, writes `results/ftco-fig7.jsonl` and
//!   `docs/figures/ftco-fig7.svg`. One simulation per (tree, K, P): the run
//!   is fault-free and deterministic.
//! * `fig89` (Figures 8 and 9): R allreduces on `multiroot:K` (K: the best
//!   of Figure 7 at P, unless given) with 1, 10 and 100 inactive nodes
//!   drawn at random for every run (never a root: the roots never fail,
//!   Section 2), on one thread; prints one JSON line per inactive count
//!   with the latency penalty per inactive node (mean latency minus the
//!   fault-free latency, divided by the count: Figure 8), the messages per
//!   live node and their increase per inactive node (Figure 9), and the
//!   simulations per second. `scripts/ftco-figures.sh` appends the lines to
//!   `results/ftco-fig89.jsonl`.
//! * `report`: draws `docs/figures/ftco-fig8.svg` and `ftco-fig9.svg` from
//!   `results/ftco-fig89.jsonl` and prints their table.

use std::fs;
use std::io::Write as _;
use std::time::Instant;

use corrected::sim::{FaultPlan, FtcoReduceScenario, FtcoReduceSim};
use corrected::topology::{Shape, TreeSpec};
use corrected::types::{Collective, LogP, Tick};
use serde_json::json;

mod common;
use common::{chart, line, num, read_lines, Axis, Res};

/// Section 5.2.1's model: L = 10, o = 1.
fn logp() -> LogP {
    LogP::new(10, 1).expect("valid")
}

/// Figure 7's team sizes: 1K..64K.
const SIZES: [u32; 7] = [
    1 << 10,
    1 << 11,
    1 << 12,
    1 << 13,
    1 << 14,
    1 << 15,
    1 << 16,
];

/// Inactive nodes of Figures 8-9.
const INACTIVE: [u32; 3] = [1, 10, 100];

/// One fault-free FTCO allreduce on `spec` over `procs` nodes: its latency
/// and messages per node (checked: a consistent result, no violation, no
/// timeout).
fn fault_free(spec: TreeSpec, procs: u32) -> Res<(Tick, f64)> {
    let none = FaultPlan::none();
    let sc = FtcoReduceScenario::new(Collective::Allreduce, spec, procs, logp(), None, none)?;
    let run = FtcoReduceSim::new(&sc).run(0);
    if !run.result_consistent || run.violations > 0 || run.timeouts > 0 {
        return Err(format!("{spec} P = {procs}: fault-free run failed: {run:?}").into());
    }
    Ok((run.latency, run.messages_per_process))
}

/// The best K of `shape(K)` for K in 2..=max_k at `procs`: (K, latency);
/// the smallest K among equals.
fn best(shape: fn(u32) -> Shape, procs: u32, max_k: u32) -> Res<(u32, Tick)> {
    let mut out: Option<(u32, Tick)> = None;
    for k in 2..=max_k {
        let (lat, _) = fault_free(TreeSpec::interleaved(shape(k)), procs)?;
        if out.map_or(true, |(_, l)| lat < l) {
            out = Some((k, lat));
        }
    }
    Ok(out.expect("max_k >= 2"))
}

fn fig7(max_k: u32) -> Res<()> {
    fs::create_dir_all("results")?;
    let mut file = fs::File::create("results/ftco-fig7.jsonl")?;
    println!("| P | knomial: best K | latency | multiroot: best K | latency | optimal tree | multiroot / optimal |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut lines = vec![Vec::new(), Vec::new(), Vec::new()];
    for procs in SIZES {
        let (kn_k, kn) = best(Shape::KNomial, procs, max_k)?;
        let (mr_k, mr) = best(Shape::MultiRoot, procs, max_k)?;
        let (opt, _) = fault_free(TreeSpec::interleaved(Shape::Optimal), procs)?;
        let row = json!({"procs": procs, "knomial_k": kn_k, "knomial": kn,
            "multiroot_k": mr_k, "multiroot": mr, "optimal": opt, "max_k": max_k});
        writeln!(file, "{row}")?;
        println!(
            "| {procs} | {kn_k} | {kn} | {mr_k} | {mr} | {opt} | {:.2} |",
            mr as f64 / opt as f64
        );
        let x = f64::from(procs).log2();
        for (l, v) in lines.iter_mut().zip([kn, mr, opt]) {
            l.push((x, v as f64));
        }
    }
    let [kn, mr, opt] = <[_; 3]>::try_from(lines).expect("three lines");
    chart(
        "ftco-fig7.svg",
        "FTCO Figure 7: fault-free allreduce, L = 10, o = 1",
        Axis::log2("P (nodes)"),
        "latency (steps)",
        &[
            line("k-nomial, best K", 0, false, kn),
            line("multi-root k-nomial, best K", 1, false, mr),
            line("LogP-optimal tree", 2, true, opt),
        ],
    )
}

fn fig89(procs: u32, runs: u64, seed: u64, k: Option<u32>) -> Res<()> {
    let k = match k {
        Some(k) => k,
        None => best(Shape::MultiRoot, procs, 16)?.0,
    };
    let spec = TreeSpec::interleaved(Shape::MultiRoot(k));
    let (base, base_msgs) = fault_free(spec, procs)?;
    for inactive in INACTIVE {
        if inactive + k >= procs {
            continue;
        }
        // Exactly `inactive` ranks: ⌊rate·P⌋ with rate (n + ½)/P.
        let rate = (f64::from(inactive) + 0.5) / f64::from(procs);
        let plan = FaultPlan::rate(rate);
        let sc = FtcoReduceScenario::new(Collective::Allreduce, spec, procs, logp(), None, plan)?;
        let mut sim = FtcoReduceSim::new(&sc);
        let (mut latency, mut per_node, mut timeouts, mut bad) = (0.0, 0.0, 0.0, 0u64);
        let mut false_suspicions = 0u64;
        let start = Instant::now();
        for i in 0..runs {
            let run = sim.run(seed + i);
            assert_eq!(run.failed, inactive, "exactly the inactive nodes");
            latency += run.latency as f64;
            per_node += run.messages as f64 / f64::from(procs - inactive);
            timeouts += f64::from(run.timeouts);
            false_suspicions += u64::from(run.false_suspicions);
            bad += u64::from(run.violations > 0 || !run.result_consistent);
        }
        let seconds = start.elapsed().as_secs_f64();
        let n = runs as f64;
        let (latency, per_node) = (latency / n, per_node / n);
        let row = json!({
            "procs": procs, "k": k, "inactive": inactive, "runs": runs, "seed": seed,
            "fault_free_latency": base, "latency_mean": latency,
            "latency_penalty_per_inactive": (latency - base as f64) / f64::from(inactive),
            "fault_free_messages_per_node": base_msgs, "messages_per_node": per_node,
            "messages_penalty_per_inactive": (per_node - base_msgs) / f64::from(inactive),
            "timeouts_mean": timeouts / n, "false_suspicions": false_suspicions,
            "bad_runs": bad, "seconds": seconds, "sims_per_second": n / seconds,
        });
        println!("{row}");
        if bad > 0 {
            return Err(format!("{bad} runs broke Definition 3.2").into());
        }
    }
    Ok(())
}

fn report() -> Res<()> {
    let Some(rows) = read_lines("results/ftco-fig89.jsonl")? else {
        println!("no results/ftco-fig89.jsonl: run scripts/ftco-figures.sh first");
        return Ok(());
    };
    println!("| P | K | inactive | runs | latency penalty / inactive | messages / node | message penalty / inactive | sims/s |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut fig8 = vec![Vec::new(); INACTIVE.len()];
    let mut fig9 = vec![Vec::new(); INACTIVE.len()];
    for r in &rows {
        let get = |k: &str| num(r, &[k]).unwrap_or(f64::NAN);
        println!(
            "| {} | {} | {} | {} | {:.2} | {:.3} | {:.3} | {:.0} |",
            get("procs"),
            get("k"),
            get("inactive"),
            get("runs"),
            get("latency_penalty_per_inactive"),
            get("messages_per_node"),
            get("messages_penalty_per_inactive"),
            get("sims_per_second")
        );
        let i = INACTIVE
            .iter()
            .position(|&n| f64::from(n) == get("inactive"));
        if let Some(i) = i {
            let x = get("procs").log2();
            fig8[i].push((x, get("latency_penalty_per_inactive")));
            fig9[i].push((x, get("messages_penalty_per_inactive")));
        }
    }
    let lines = |pts: Vec<Vec<(f64, f64)>>| {
        let mut out = Vec::new();
        for (i, mut p) in pts.into_iter().enumerate() {
            p.sort_by(|a, b| a.0.total_cmp(&b.0));
            out.push(line(&format!("{} inactive", INACTIVE[i]), i, false, p));
        }
        out
    };
    chart(
        "ftco-fig8.svg",
        "FTCO Figure 8: allreduce latency penalty per inactive node",
        Axis::log2("P (nodes)"),
        "steps per inactive node",
        &lines(fig8),
    )?;
    chart(
        "ftco-fig9.svg",
        "FTCO Figure 9: messages per node, increase per inactive node",
        Axis::log2("P (nodes)"),
        "messages per node per inactive node",
        &lines(fig9),
    )
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| -> Option<String> {
        let i = args.iter().position(|a| a == name)?;
        args.get(i + 1).cloned()
    };
    let parsed = |name: &str, default: u64| -> Res<u64> {
        match flag(name) {
            Some(v) => Ok(v
                .parse()
                .map_err(|_| format!("{name}: not a number: {v}"))?),
            None => Ok(default),
        }
    };
    match args.first().map(String::as_str) {
        Some("fig7") => fig7(parsed("--max-k", 16)? as u32),
        Some("fig89") => fig89(
            parsed("--procs", 1024)? as u32,
            parsed("--runs", 10_000)?,
            parsed("--seed", 1)?,
            flag("--k").map(|k| k.parse()).transpose()?,
        ),
        Some("report") => report(),
        _ => Err("usage: ftco_figures fig7 [--max-k K] | fig89 --procs P --runs R [--seed S] [--k K] | report".into()),
    }
}
