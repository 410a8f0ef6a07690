//! The options of a simulated broadcast shared by `corrected sim` and
//! `corrected topo`: tree, correction and LogP parameters.

use clap::Args;

use corrected::protocol::bcast::Correction;
use corrected::topology::TreeSpec;
use corrected::types::{LogP, Tick};
use corrected::ConfigError;

/// Tree, correction and LogP model of a simulated broadcast.
#[derive(Args, Debug)]
pub struct BcastModelArgs {
    /// Dissemination tree: binomial, lame:K, kary:K or optimal; prefix inorder- for depth-first numbering.
    #[arg(long, default_value = "binomial")]
    pub tree: String,
    /// Correction: none, opportunistic:D, optimized:D, relaying:D, forwarding:D, checked, checked-sync or delayed:DELAY.
    #[arg(long, default_value = "checked-sync")]
    pub correction: String,
    /// LogP latency L, in ticks.
    #[arg(long, default_value_t = 2)]
    pub latency: Tick,
    /// LogP overhead o, in ticks.
    #[arg(long, default_value_t = 1)]
    pub overhead: Tick,
}

impl BcastModelArgs {
    /// The parsed tree, correction and model; typed errors on bad input.
    pub fn parse(&self) -> Result<(TreeSpec, Correction, LogP), ConfigError> {
        Ok((
            self.tree.parse()?,
            self.correction.parse()?,
            LogP::new(self.latency, self.overhead)?,
        ))
    }
}
