//! The command line's errors: the library's, and its own bad options. All
//! exit with code 2; the library's messages get a hint naming the option
//! to change.

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
}

impl CliError {
    /// Which option to change, where the library's message cannot say it.
    pub fn hint(&self, cmd: Subcommand) -> Option<String> {
        let CliError::Corrected(e) = self else {
            return None;
        };
        let ranks = if cmd == Subcommand::Sim {
            "--procs"
        } else {
            "--ranks"
        };
        Some(match e {
            Error::Config(c) => match c {
                ConfigError::ZeroRanks => format!("pass {ranks} 1 or more"),
                ConfigError::TooManyRanks { max, .. } => format!("pass {ranks} {max} or fewer"),
                ConfigError::DeadRoot(_) if cmd == Subcommand::Sim => {
                    "the root is rank 0: leave it out of --dead".into()
                }
                ConfigError::DeadRoot(_) => {
                    "pick another --root, or leave the root out of --kill and --hang".into()
                }
                ConfigError::FaultBudget { procs, .. } => {
                    format!("pass --f {} or less", procs.saturating_sub(1))
                }
                ConfigError::BadLogP { .. } => "pass --latency and --overhead of 1 or more".into(),
                ConfigError::BadFaults(_) if cmd == Subcommand::Topo => {
                    "pass a smaller --kill-domain, or more --ranks".into()
                }
                ConfigError::BadFaults(_) => "pass a --fault-rate of at least 0 and below 1".into(),
                ConfigError::BadTopology(_) => {
                    "pass --synthetic DESC to plan for a machine described by hand".into()
                }
                ConfigError::NotEnoughPus { pus, .. } => {
                    format!("pass --ranks {pus} or fewer, or a larger machine")
                }
                ConfigError::FeatureNotBuilt { feature: "hwloc" } => {
                    "build with `cargo build --features hwloc` (needs libhwloc-dev)".into()
                }
                ConfigError::FeatureNotBuilt { feature } => {
                    format!("build with `cargo build --features {feature}`")
                }
                _ => return None,
            },
            Error::TooManyFailures { .. } => "raise the fault budget --f".into(),
            Error::Timeout { .. } => "raise --timeout if the machine is only slow".into(),
            _ => return None,
        })
    }
}
