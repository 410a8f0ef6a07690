//! Draws the Corrected Gossip paper's figures (Hoefler et al., IPDPS 2017)
//! as SVG from the results files of `scripts/reproduce-gossip.sh` and
//! `scripts/reproduce-gossip-fig7.sh`:
//!
//! * `results/gossip-fig1.jsonl` → `docs/figures/gossip-fig1.svg` (Figure 1:
//!   Lemma 1's expected g-nodes against the simulated mean, Eq. 2's
//!   99 %-probable longest uncolored chain against the simulated one);
//! * `results/gossip-fig7-scaling.jsonl` → `gossip-fig7a.svg`,
//!   `gossip-fig7b.svg` (Figures 7a and 7b: median latency against N);
//! * `results/gossip-fig35.jsonl` → `gossip-fig3.svg`, `gossip-fig5.svg`
//!   (Figures 3 and 5: OCG's and CCG's time against T).
//!
//! A missing results file skips its figures with a message; the example
//! exits 0 then, so CI may run it on a fresh checkout.
//!
//!     cargo run --release --example gossip_figures

use std::fs;

use plotters::prelude::*;
use serde_json::Value;

mod common;
use common::{chart, line, num, plot, read_lines, Axis, Res, OUT, SIZE};

/// Figure 1: c(t) and the simulated mean (top), K(t) by Eq. 2 and the
/// simulated 99th percentile (bottom, at most 64 shown).
fn figure_1(rows: &[Value]) -> Res<()> {
    let pick = |key: &str, cap: f64| -> Vec<(f64, f64)> {
        rows.iter()
            .filter_map(|r| Some((num(r, &["t"])?, num(r, &[key])?)))
            .filter(|&(_, v)| v <= cap)
            .collect()
    };
    fs::create_dir_all(OUT)?;
    let path = format!("{OUT}/gossip-fig1.svg");
    let root = SVGBackend::new(&path, (SIZE.0, SIZE.1 + 240)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(SIZE.1 - 40);
    let t = Axis::plain("time t");
    plot(
        &top,
        "Figure 1: expected g-nodes, N = n = 1024, L = O = 1",
        t,
        "g-nodes",
        &[
            line("c(t), Lemma 1", 0, true, pick("lemma1", f64::MAX)),
            line("simulated mean", 1, false, pick("colored_mean", f64::MAX)),
        ],
        SeriesLabelPosition::UpperLeft,
    )?;
    plot(
        &bottom,
        "99%-probable longest uncolored chain K (64 at most shown)",
        t,
        "K",
        &[
            line("K(t), Eq. 2 at c(t)", 2, true, pick("eq2_k99", 64.0)),
            line("simulated, p99", 3, false, pick("longest_gap_p99", 64.0)),
        ],
        SeriesLabelPosition::UpperRight,
    )?;
    root.present()?;
    println!("wrote {path}");
    Ok(())
}

/// The name of a scaling row: GOS, OCG, CCG, FCG, BIG or opt.
fn name(r: &Value) -> String {
    let algorithm = r["algorithm"].as_str().unwrap_or("");
    match algorithm {
        "big" => "BIG".into(),
        "opt" => "opt".into(),
        _ => match r["correction"].as_str().unwrap_or("").split(':').next() {
            Some("none") => "GOS".into(),
            Some(c) => c.to_uppercase(),
            None => algorithm.into(),
        },
    }
}

/// Figures 7a and 7b: median latency against N.
fn figure_7(rows: &[Value], fig: &str) -> Res<()> {
    let sel: Vec<&Value> = rows.iter().filter(|r| r["figure"] == fig).collect();
    let series = |who: &str, path: &[&str]| -> Vec<(f64, f64)> {
        let mut v: Vec<(f64, f64)> = sel
            .iter()
            .filter(|r| name(r) == who)
            .filter_map(|r| Some((num(r, &["procs"])?.log2(), num(r, path)?)))
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v
    };
    let mut lines = Vec::new();
    for (i, who) in ["OCG", "CCG", "FCG", "BIG"].iter().enumerate() {
        let points = series(who, &["latency_ticks", "p50"]);
        if !points.is_empty() {
            let label = if *who == "BIG" {
                "BIG (simulated)"
            } else {
                who
            };
            lines.push(line(label, i, false, points));
        }
    }
    lines.push(line(
        "BIG (analytic)",
        3,
        true,
        series("BIG", &["estimated_latency_ticks"]),
    ));
    lines.push(line(
        "BFB (analytic, best case)",
        4,
        true,
        series("BIG", &["bfb_latency_ticks"]),
    ));
    if fig == "7a" {
        lines.push(line(
            "opt (optimal tree)",
            6,
            true,
            series("opt", &["latency_ticks", "p50"]),
        ));
    }
    lines.retain(|l| !l.points.is_empty());
    let title = if fig == "7a" {
        "Figure 7a: median latency, fault-free (L = 2, O = 1)"
    } else {
        "Figure 7b: median latency, N/64 nodes dead (L = 2, O = 1)"
    };
    let n = Axis::log2("N");
    chart(
        &format!("gossip-fig{fig}.svg"),
        title,
        n,
        "latency [ticks]",
        &lines,
    )
}

/// Figures 3 and 5: the simulated maximum against Eq. 3 / Eq. 4, by T.
fn figures_3_and_5(rows: &[Value]) -> Res<()> {
    for (kind, file, title, eq) in [
        (
            "ocg",
            "gossip-fig3.svg",
            "Figure 3: OCG's time against T (N = 1024, L = O = 1)",
            "Eq. 3",
        ),
        (
            "ccg",
            "gossip-fig5.svg",
            "Figure 5: CCG's time against T (N = 1024, L = O = 1)",
            "Eq. 4",
        ),
    ] {
        let sel: Vec<&Value> = rows
            .iter()
            .filter(|r| {
                r["correction"]
                    .as_str()
                    .is_some_and(|c| c.split(':').next() == Some(kind))
            })
            .collect();
        let pick = |path: &[&str]| -> Vec<(f64, f64)> {
            sel.iter()
                .filter_map(|r| Some((num(r, &["gossip_time"])?, num(r, path)?)))
                .collect()
        };
        chart(
            file,
            title,
            Axis::plain("gossip time T"),
            "ticks",
            &[
                line(eq, 0, true, pick(&["estimated_latency_ticks"])),
                line(
                    "simulated max latency",
                    1,
                    false,
                    pick(&["latency_ticks", "max"]),
                ),
                line(
                    "simulated median latency",
                    2,
                    false,
                    pick(&["latency_ticks", "p50"]),
                ),
                line(
                    "simulated max completion",
                    3,
                    false,
                    pick(&["quiescence_ticks", "max"]),
                ),
            ],
        )?;
    }
    Ok(())
}

fn main() -> Res<()> {
    let mut drawn = 0;
    match read_lines("results/gossip-fig1.jsonl")? {
        Some(rows) => {
            figure_1(&rows)?;
            drawn += 1;
        }
        None => {
            println!("results/gossip-fig1.jsonl missing: run scripts/reproduce-gossip-fig7.sh fig1")
        }
    }
    match read_lines("results/gossip-fig7-scaling.jsonl")? {
        Some(rows) => {
            figure_7(&rows, "7a")?;
            figure_7(&rows, "7b")?;
            drawn += 2;
        }
        None => println!(
            "results/gossip-fig7-scaling.jsonl missing: run scripts/reproduce-gossip-fig7.sh scaling"
        ),
    }
    match read_lines("results/gossip-fig35.jsonl")? {
        Some(rows) => {
            figures_3_and_5(&rows)?;
            drawn += 2;
        }
        None => println!("results/gossip-fig35.jsonl missing: run scripts/reproduce-gossip.sh"),
    }
    println!("{drawn} of 5 gossip figures drawn into {OUT}/");
    Ok(())
}
