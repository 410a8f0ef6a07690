//! The options of a simulated broadcast shared by `corrected sim` and
//! `corrected topo`: tree, correction and LogP parameters.

use clap::Args;

use corrected::protocol::bcast::Correction;
use corrected::topology::TreeSpec;
use corrected::types::{LogP, Tick};

use crate::error::CliError;
use crate::limits::{out_of_range, ticks_at_most, MAX_LOGP_TICKS, MAX_WAIT_TICKS};

/// Tree, correction and LogP model of a simulated broadcast.
#[derive(Args, Debug)]
pub struct BcastModelArgs {
    /// Dissemination tree: binomial (the default), lame:K, kary:K, knomial:K, multiroot:K (FTCO 5.2.1; its roots exchange in an FTCO allreduce; K at most the processes) or optimal; prefix inorder- for depth-first numbering.
    #[arg(long)]
    pub tree: Option<String>,
    /// Correction: none, opportunistic:D, optimized:D, relaying:D, forwarding:D, checked, checked-sync (the default) or delayed:DELAY (DELAY in ticks, at most 10^12).
    #[arg(long)]
    pub correction: Option<String>,
    /// LogP latency L, in ticks (1 to 1000000).
    #[arg(long, default_value_t = 2)]
    pub latency: Tick,
    /// LogP overhead o, in ticks (1 to 1000000).
    #[arg(long, default_value_t = 1)]
    pub overhead: Tick,
}

impl BcastModelArgs {
    /// `--tree`, binomial unless given.
    pub fn tree(&self) -> &str {
        self.tree.as_deref().unwrap_or("binomial")
    }

    /// `--correction`, checked-sync unless given.
    pub fn correction(&self) -> &str {
        self.correction.as_deref().unwrap_or("checked-sync")
    }

    /// The parsed tree, correction and model; typed errors on bad input,
    /// and on times beyond what the simulator's clock holds
    /// ([`MAX_LOGP_TICKS`], [`MAX_WAIT_TICKS`]).
    pub fn parse(&self) -> Result<(TreeSpec, Correction, LogP), CliError> {
        let correction: Correction = self.correction().parse()?;
        if let Correction::Delayed { delay } = correction {
            if delay > MAX_WAIT_TICKS {
                return Err(out_of_range(
                    "--correction",
                    self.correction(),
                    format!("the delay is {delay} ticks; at most {MAX_WAIT_TICKS} are simulated"),
                    format!("pass --correction delayed:DELAY with DELAY at most {MAX_WAIT_TICKS}"),
                ));
            }
        }
        ticks_at_most("--latency", self.latency, MAX_LOGP_TICKS)?;
        ticks_at_most("--overhead", self.overhead, MAX_LOGP_TICKS)?;
        Ok((
            self.tree().parse()?,
            correction,
            LogP::new(self.latency, self.overhead)?,
        ))
    }
}
