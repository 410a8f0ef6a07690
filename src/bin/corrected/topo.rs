//! `corrected topo`: the machine's failure domains, a placement of ranks on
//! it, and what killing one domain costs (ring gap, simulated correction).

use std::process::ExitCode;

use clap::Args;

use corrected::placement::{
    from_sysfs, from_sysfs_root, gap_lower_bound, synthetic, DomainRef, Machine, Placement, Policy,
};
use corrected::protocol::bcast::Correction;
use corrected::runtime::membarrier_status;
use corrected::sim::domain::{predict, DomainPrediction};
use corrected::topology::TreeSpec;
use corrected::types::LogP;
use corrected::ConfigError;

use crate::error::CliError;

/// Options of `corrected topo`.
#[derive(Args, Debug)]
pub struct TopoArgs {
    /// A synthetic machine instead of this one, e.g. 'package:2 l3:4 core:8 pu:2' (a count list such as l3:3,2 is cycled over the parents).
    #[arg(long)]
    synthetic: Option<String>,
    /// Read a saved sysfs tree (a directory holding cpu/ and node/) instead of /sys/devices/system.
    #[arg(long, conflicts_with = "synthetic")]
    sysfs: Option<String>,
    /// Discover this machine with hwloc (needs the `hwloc` cargo feature).
    #[arg(long, conflicts_with_all = ["synthetic", "sysfs"])]
    hwloc: bool,
    /// Number of ranks (default: one per PU).
    #[arg(long)]
    ranks: Option<u32>,
    /// Placement policy: compact, scatter or separated.
    #[arg(long, default_value = "separated")]
    placement: String,
    /// Kill every rank of this domain (LEVEL:INDEX, e.g. l3:0) and report the ring gap and the simulated correction latency.
    #[arg(long)]
    kill_domain: Option<String>,
    /// Print, per level, the worst gap and correction latency over its domains for every policy (a markdown table).
    #[arg(long)]
    table: bool,
    /// The simulated broadcast.
    #[command(flatten)]
    model: crate::model::BcastModelArgs,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

fn machine(args: &TopoArgs) -> Result<Machine, ConfigError> {
    if let Some(spec) = &args.synthetic {
        return synthetic(spec);
    }
    if let Some(root) = &args.sysfs {
        return from_sysfs_root(root);
    }
    if args.hwloc {
        #[cfg(feature = "hwloc")]
        return corrected::placement::hwloc::from_hwloc();
        #[cfg(not(feature = "hwloc"))]
        return Err(ConfigError::FeatureNotBuilt { feature: "hwloc" });
    }
    from_sysfs()
}

/// The simulated broadcast's settings.
struct SimSettings {
    tree: TreeSpec,
    correction: Correction,
    logp: LogP,
}

impl SimSettings {
    fn predict(&self, p: &Placement, d: DomainRef) -> Result<DomainPrediction, ConfigError> {
        predict(p, d, self.tree, self.correction, self.logp)
    }
}

/// Runs `corrected topo`. Exit code 1 if a simulated broadcast broke a
/// semantic check.
pub fn run(args: TopoArgs) -> Result<ExitCode, CliError> {
    let machine = machine(&args)?;
    let policy: Policy = args.placement.parse()?;
    let ranks = args.ranks.unwrap_or(machine.pus() as u32);
    let (tree, correction, logp) = args.model.parse()?;
    let sim = SimSettings {
        tree,
        correction,
        logp,
    };
    let placement = policy.place(&machine, ranks)?;
    let kill = match &args.kill_domain {
        Some(d) => Some(sim.predict(&placement, d.parse()?)?),
        None => None,
    };
    let table = if args.table {
        table(&machine, ranks, &sim)?
    } else {
        Vec::new()
    };
    let violations = kill.as_ref().map_or(0, |k| k.run.violations)
        + table.iter().map(|r| r.violations).sum::<u32>();
    if args.json {
        let levels: Vec<_> = machine
            .levels()
            .iter()
            .map(|&l| {
                let sizes = machine.domains(l).iter().map(|r| r.len());
                serde_json::json!({
                    "level": l.name(),
                    "domains": machine.domains(l).len(),
                    "min_pus": sizes.clone().min(),
                    "max_pus": sizes.max(),
                })
            })
            .collect();
        let v = serde_json::json!({
            "command": "topo",
            "source": machine.source(),
            "shape": machine.shape(),
            "pus": machine.pus(),
            "levels": levels,
            "ranks": ranks,
            "placement": policy.to_string(),
            "cpus": placement.cpus(),
            "tree": sim.tree.to_string(),
            "correction": sim.correction.to_string(),
            "latency": sim.logp.latency,
            "overhead": sim.logp.overhead,
            "kill_domain": kill.as_ref().map(|k| serde_json::json!({
                "domain": k.domain,
                "dead": k.dead,
                "root": k.root,
                "max_gap": k.max_gap,
                "gap_lower_bound": k.gap_lower_bound,
                "latency_ticks": k.run.coloring_latency,
                "quiescence_ticks": k.run.quiescence_latency,
                "correction_ticks": k.run.correction_latency,
                "messages_per_process": k.run.messages_per_process,
                "uncolored_live": k.run.uncolored_live,
                "violations": k.run.violations,
            })),
            "table": args.table.then_some(&table),
            "violations": violations,
            "membarrier": membarrier_status().err().unwrap_or("available"),
        });
        out!("{v}");
    } else {
        print_machine(&machine);
        print_placement(&placement);
        print_fence();
        if let Some(k) = &kill {
            print_kill(k, &sim);
        }
        if args.table {
            print_table(&machine, ranks, &sim, &table);
        }
    }
    Ok(if violations == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_machine(m: &Machine) {
    out!("machine: {} ({} PUs)", m.source(), m.pus());
    out!("shape: {}", m.shape());
    for &l in m.levels() {
        let d = m.domains(l);
        let lo = d.iter().map(|r| r.len()).min().unwrap_or(0);
        let hi = d.iter().map(|r| r.len()).max().unwrap_or(0);
        let size = if lo == hi {
            format!("{lo}")
        } else {
            format!("{lo}-{hi}")
        };
        out!("  {:<8} {:>5} domains of {size} PUs", l.name(), d.len());
    }
}

/// What the kernel offers the mailbox's doorbell fence (docs/mailbox.md,
/// *The asymmetric fence*).
fn print_fence() {
    match membarrier_status() {
        Ok(()) => out!(
            "doorbell fence: membarrier available (teams with one rank per core use it, \
             crowded ones seqcst)"
        ),
        Err(why) => out!("doorbell fence: seqcst only ({why})"),
    }
}

fn print_placement(p: &Placement) {
    out!(
        "placement {}: {} ranks; rank r runs on cpu (ring order):",
        p.policy(),
        p.ranks()
    );
    for (row, chunk) in p.cpus().chunks(16).enumerate() {
        let cpus: Vec<String> = chunk.iter().map(|c| format!("{c:>4}")).collect();
        out!("  {:>5}: {}", row * 16, cpus.join(""));
    }
}

fn print_kill(k: &DomainPrediction, sim: &SimSettings) {
    out!(
        "kill {}: {} ranks dead; max gap on the ring {} (least possible {})",
        k.domain,
        k.dead.len(),
        k.max_gap,
        k.gap_lower_bound
    );
    out!(
        "simulated broadcast from rank {} ({} tree, {} correction, L={} o={}): correction latency {}, quiescence {}, {} live ranks uncolored, {} violations",
        k.root,
        sim.tree,
        sim.correction,
        sim.logp.latency,
        sim.logp.overhead,
        k.run.correction_latency,
        k.run.quiescence_latency,
        k.run.uncolored_live,
        k.run.violations
    );
}

/// One row of `--table`: a level and, per policy, the worst over its domains.
#[derive(serde::Serialize)]
struct Row {
    level: &'static str,
    domains: usize,
    min_ranks: u32,
    max_ranks: u32,
    /// Worst ⌈|D| / (P − |D|)⌉ over the level's domains (separated's sizes).
    gap_lower_bound: u32,
    /// Per policy (compact, scatter, separated): worst max gap.
    max_gap: [u32; 3],
    /// Per policy: worst simulated correction latency, in ticks.
    correction_ticks: [i64; 3],
    violations: u32,
}

fn table(m: &Machine, ranks: u32, sim: &SimSettings) -> Result<Vec<Row>, ConfigError> {
    let placements = Policy::ALL
        .iter()
        .map(|p| p.place(m, ranks))
        .collect::<Result<Vec<_>, _>>()?;
    let mut rows = Vec::new();
    for &level in m.levels() {
        let n = m.domains(level).len();
        if n < 2 {
            continue;
        }
        let mut row = Row {
            level: level.name(),
            domains: n,
            min_ranks: u32::MAX,
            max_ranks: 0,
            gap_lower_bound: 0,
            max_gap: [0; 3],
            correction_ticks: [i64::MIN; 3],
            violations: 0,
        };
        for index in 0..n {
            let d = DomainRef { level, index };
            let size = placements[2].ranks_in(d)?.len() as u32;
            row.min_ranks = row.min_ranks.min(size);
            row.max_ranks = row.max_ranks.max(size);
            row.gap_lower_bound = row.gap_lower_bound.max(gap_lower_bound(size, ranks));
            for (i, p) in placements.iter().enumerate() {
                let dead = p.ranks_in(d)?.len() as u32;
                if dead == 0 || dead == ranks {
                    continue;
                }
                let k = sim.predict(p, d)?;
                row.max_gap[i] = row.max_gap[i].max(k.max_gap);
                row.correction_ticks[i] = row.correction_ticks[i].max(k.run.correction_latency);
                row.violations += k.run.violations;
            }
        }
        rows.push(row);
    }
    Ok(rows)
}

fn print_table(m: &Machine, ranks: u32, sim: &SimSettings, rows: &[Row]) {
    out!();
    out!(
        "Machine `{}`, {} ranks; worst over the level's domains of the ring gap and of the correction latency of a simulated broadcast ({} tree, {} correction, L={}, o={}):",
        m.shape(),
        ranks,
        sim.tree,
        sim.correction,
        sim.logp.latency,
        sim.logp.overhead
    );
    out!();
    out!("| level | domains | ranks each | least gap | gap compact | gap scatter | gap separated | latency compact | latency scatter | latency separated |");
    out!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let each = if r.min_ranks == r.max_ranks {
            format!("{}", r.min_ranks)
        } else {
            format!("{}-{}", r.min_ranks, r.max_ranks)
        };
        let lat = |x: i64| {
            if x == i64::MIN {
                "-".to_string()
            } else {
                x.to_string()
            }
        };
        out!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.level,
            r.domains,
            each,
            r.gap_lower_bound,
            r.max_gap[0],
            r.max_gap[1],
            r.max_gap[2],
            lat(r.correction_ticks[0]),
            lat(r.correction_ticks[1]),
            lat(r.correction_ticks[2])
        );
    }
}
