//! The command line's errors: the library's, and its own bad options. All
//! exit with code 2; every message gets a hint naming the option to change
//! where one helps.

use corrected::{ConfigError, Error};

/// What a subcommand can fail with.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// An error of the library (configuration or a collective's outcome).
    #[error(transparent)]
    Corrected(#[from] Error),
    /// `--op` names no collective this subcommand runs.
    #[error("unknown --op '{op}': expected {expected}")]
    UnknownOp {
        /// The text given.
        op: String,
        /// The collectives the subcommand accepts.
        expected: &'static str,
    },
    /// An option's value is outside what the subcommand accepts (zero or
    /// absurd timeouts, a pace or delay that no operation could wait out,
    /// simulated times that would overflow).
    #[error("{option} {value} is out of range: {why}")]
    OutOfRange {
        /// The option, e.g. `--timeout`.
        option: &'static str,
        /// The value given, as given.
        value: String,
        /// What the value must be, and why.
        why: String,
        /// What to pass instead.
        hint: String,
    },
    /// A rank is named in two fault lists, or twice in one: it can have
    /// one fault only.
    #[error("rank {rank} is named {}: a rank can have one fault only", if first == second { format!("twice in {first}") } else { format!("in {first} and in {second}") })]
    FaultConflict {
        /// The rank.
        rank: corrected::types::Rank,
        /// The first list naming it.
        first: &'static str,
        /// The second list naming it (may be `first` again).
        second: &'static str,
    },
    /// Every rank of the team has a fault: none would survive to report.
    #[error("all {ranks} ranks have a fault (--kill, --hang, --kill-after-sends, --panic): no rank would survive to report a result")]
    NoSurvivor {
        /// The team size.
        ranks: u32,
    },
    /// The run or simulation would need more memory than the machine has
    /// available; refused before allocating.
    #[error("{what} needs about {} of memory ({detail}), but only {} is available", gib(*need), gib(*available))]
    NotEnoughMemory {
        /// What was asked for, e.g. "this simulation".
        what: &'static str,
        /// The estimated need, in bytes.
        need: u64,
        /// The memory available, in bytes.
        available: u64,
        /// How the need comes about (the sizes that drive it).
        detail: String,
        /// The options that shrink it.
        shrink: &'static str,
    },
}

/// Bytes in GiB, with two decimals (MiB below one GiB).
fn gib(bytes: u64) -> String {
    if bytes < 1 << 30 {
        format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
    }
}

impl From<ConfigError> for CliError {
    fn from(e: ConfigError) -> Self {
        CliError::Corrected(e.into())
    }
}

/// The subcommand an error came from, for its hint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subcommand {
    /// `corrected sim`.
    Sim,
    /// `corrected run`.
    Run,
    /// `corrected topo`.
    Topo,
    /// `corrected soak`.
    Soak,
}

impl CliError {
    /// Which option to change: every refusal of the command line has one
    /// (`tests/cli_fuzz.rs` checks it for every line of its table).
    pub fn hint(&self, cmd: Subcommand) -> String {
        let e = match self {
            CliError::Corrected(e) => e,
            CliError::UnknownOp { expected, .. } => return format!("pass --op {expected}"),
            CliError::OutOfRange { hint, .. } => return hint.clone(),
            CliError::FaultConflict { rank, .. } => {
                return format!(
                    "name rank {rank} once, in one of {}",
                    if cmd == Subcommand::Sim {
                        "--dead or --die-at"
                    } else {
                        "--kill, --hang, --kill-after-sends or --panic"
                    }
                )
            }
            CliError::NoSurvivor { .. } => {
                return "leave at least one rank out of --kill, --hang, --kill-after-sends and --panic"
                    .into()
            }
            CliError::NotEnoughMemory { shrink, .. } => return format!("pass {shrink}"),
        };
        let ranks = if cmd == Subcommand::Sim {
            "--procs"
        } else {
            "--ranks"
        };
        let out_of_range = |procs: u32| {
            format!(
                "name ranks from 0 to {}, or pass a larger {ranks}",
                procs.saturating_sub(1)
            )
        };
        match e {
            Error::Config(c) => config_hint(c, cmd, ranks),
            Error::RankOutOfRange { procs, .. } => out_of_range(*procs),
            Error::TooManyFailures { .. } if cmd == Subcommand::Run => {
                "raise the fault budget --f, or pass --allreduce star (it has no up-correction group that failures can empty)".into()
            }
            Error::TooManyFailures { .. } => "raise the fault budget --f".into(),
            Error::Timeout { .. } => "raise --timeout if the machine is only slow".into(),
            _ => "this is an outcome of the run, not of the options: `docs/cli.md` lists what each error means".into(),
        }
    }
}

/// The hint of a configuration the library refused, in `cmd`'s options
/// (`ranks`: the option giving the team's size).
fn config_hint(c: &ConfigError, cmd: Subcommand, ranks: &str) -> String {
    match c {
        ConfigError::ZeroRanks => format!("pass {ranks} 1 or more"),
        ConfigError::TooManyRanks { max, .. } => format!("pass {ranks} {max} or fewer"),
        ConfigError::DeadRoot(root) if cmd == Subcommand::Sim => {
            format!("rank {root} is a root of this operation: leave it out of --dead")
        }
        ConfigError::DeadRoot(_) => {
            "pick another --root, or leave the root out of --kill and --hang".into()
        }
        ConfigError::FaultRank { procs, .. } => format!(
            "name ranks from 0 to {}, or pass a larger {ranks}",
            procs.saturating_sub(1)
        ),
        ConfigError::FaultBudget { procs, .. } => {
            format!("pass --f {} or less", procs.saturating_sub(1))
        }
        ConfigError::BadTree { .. } => {
            "pass --tree binomial, lame:K (K >= 1), kary:K, knomial:K or multiroot:K (K from 2 to the ranks), or optimal".into()
        }
        ConfigError::BadCorrection { .. } => {
            "pass --correction checked (the default), checked-sync, none, or NAME:D with D a whole number of ticks or nanoseconds".into()
        }
        ConfigError::BadLogP { .. } => "pass --latency and --overhead of 1 or more".into(),
        ConfigError::BadMessageSize { .. } => "pass a smaller --bytes or --gap-per-byte".into(),
        ConfigError::BadFaults(_) if cmd == Subcommand::Topo => {
            "pass a smaller --kill-domain, or more --ranks".into()
        }
        ConfigError::BadFaults(_) => "pass a --fault-rate of at least 0 and below 1".into(),
        ConfigError::BadTopology(_) => {
            "pass --synthetic DESC to plan for a machine described by hand".into()
        }
        ConfigError::BadSynthetic { .. } => {
            "pass e.g. --synthetic 'package:1 core:2 pu:1' (levels package, numa, l3, l2, core, pu)"
                .into()
        }
        ConfigError::UnknownDomain { .. } => {
            "pass --kill-domain LEVEL:INDEX with a level and index the machine has (`topo --table` lists them)".into()
        }
        ConfigError::BadPlacement(_) => "pass --placement compact, scatter or separated".into(),
        ConfigError::NotEnoughPus { pus, .. } => {
            format!("pass --ranks {pus} or fewer, or a larger machine")
        }
        ConfigError::FeatureNotBuilt { feature: "hwloc" } => {
            "build with `cargo build --features hwloc` (needs libhwloc-dev)".into()
        }
        ConfigError::FeatureNotBuilt { feature } => {
            format!("build with `cargo build --features {feature}`")
        }
        ConfigError::BadGossip { why } if why.contains("ticks") => {
            "pass --gossip-time auto and --correction ccg, ocg, ocg:C (C from 1 to 65536), fcg or none".into()
        }
        ConfigError::BadGossip { why } if why.contains("correction") || why.contains("FCG") => {
            "pass --correction ccg, ocg, ocg:C, fcg, fcg:F (F from 1 to 7) or none".into()
        }
        ConfigError::BadGossip { .. } => {
            "pass --procs 2 or more and a --delta above 0 and below 1".into()
        }
        ConfigError::BadAllreduce { .. } if cmd == Subcommand::Sim => {
            "pass --allreduce tree, star or blocks".into()
        }
        ConfigError::BadAllreduce { .. } => "pass --allreduce auto, tree or star".into(),
        ConfigError::BadFailureScheme { .. } => "pass --failure-scheme list, count or bit".into(),
        ConfigError::BadTimeout { .. } => {
            "pass --timeout-ms (run) or --timeout (sim) above 0, or leave it out".into()
        }
        _ => "the options name a configuration the library refuses: `corrected <command> --help` lists what each option takes".into(),
    }
}
