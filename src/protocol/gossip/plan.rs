//! What every node of one corrected-gossip configuration shares (Hoefler
//! et al., IPDPS 2017, Section III): N, the LogP model, the gossip time T
//! and the correction that follows the gossip phase (GOS, OCG, CCG or FCG).

use crate::error::ConfigError;
use crate::protocol::correction::Correction;
use crate::types::{LogP, Tick};

/// The largest f failure-proof corrected gossip accepts: a message carries
/// at most f + 1 known g-nodes in a fixed array of this many plus one.
pub const MAX_FCG_FAULTS: u8 = 7;

/// What follows the gossip phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GossipCorrection {
    /// None: GOS, gossip until T only (Section IV's baseline).
    None,
    /// OCG (Section III-B): g-nodes correct in both directions, alternately,
    /// for `duration` ticks after the phase.
    Opportunistic {
        /// C, the correction time.
        duration: Tick,
    },
    /// CCG (Section III-C): g-nodes correct in both directions,
    /// alternately, each side until it has sent to the nearest g-node it
    /// heard a correction message from on that side: the checked
    /// correction of the corrected trees ([`Correction::Checked`]).
    Checked,
    /// FCG (Section III-D, Algorithm 3), run by
    /// [`Fcg`](super::Fcg): CCG's sweeps carrying the up to f + 1 nearest
    /// known g-nodes, a finalization round, and the SOS protocol. All live
    /// nodes deliver or none if at most `f` nodes fail during the
    /// correction (Claim 4).
    FailureProof {
        /// f, the failures during the correction it withstands
        /// (1 ..= [`MAX_FCG_FAULTS`]).
        f: u8,
        /// A c-node that has not heard of f + 1 g-nodes this many ticks
        /// after its first correction message enters SOS
        /// ([`sos_timeout`](super::fcg::sos_timeout) is the default).
        timeout: Tick,
    },
}

impl GossipCorrection {
    /// The ring correction a g-node's [`Sweep`](crate::protocol::correction::Sweep)
    /// runs in the [`Gossip`](super::Gossip) core; `None` for GOS and for
    /// FCG (its own core).
    pub(super) fn sweep(self) -> Option<Correction> {
        match self {
            GossipCorrection::None | GossipCorrection::FailureProof { .. } => None,
            // Bounded by time, not by distance.
            GossipCorrection::Opportunistic { .. } => {
                Some(Correction::Opportunistic { distance: u32::MAX })
            }
            GossipCorrection::Checked => Some(Correction::Checked),
        }
    }
}

/// What every node of one gossip configuration shares.
#[derive(Clone, Debug)]
pub struct GossipPlan {
    procs: u32,
    logp: LogP,
    /// T: no gossip message starts at or after it.
    stop: Tick,
    correction: GossipCorrection,
}

impl GossipPlan {
    /// A plan for `procs >= 2` nodes in `logp`, gossiping until `stop` (T),
    /// then `correction`. Typed errors for fewer than 2 nodes, a bad LogP
    /// model, and an FCG f outside 1 ..= [`MAX_FCG_FAULTS`] or a zero SOS
    /// timeout.
    pub fn new(
        procs: u32,
        logp: LogP,
        stop: Tick,
        correction: GossipCorrection,
    ) -> Result<Self, ConfigError> {
        crate::protocol::gossip::GossipModel::new(procs, procs, logp)?;
        if let GossipCorrection::FailureProof { f, timeout } = correction {
            if f == 0 || f > MAX_FCG_FAULTS {
                return Err(ConfigError::BadGossip {
                    why: format!(
                        "FCG's f must be 1 to {MAX_FCG_FAULTS} (f + 1 known g-nodes travel in a fixed array), not {f}"
                    ),
                });
            }
            if timeout == 0 {
                return Err(ConfigError::BadGossip {
                    why: "FCG's SOS timeout must be at least 1 tick".to_string(),
                });
            }
        }
        Ok(GossipPlan {
            procs,
            logp,
            stop,
            correction,
        })
    }

    /// T.
    pub fn stop(&self) -> Tick {
        self.stop
    }

    /// N.
    pub fn procs(&self) -> u32 {
        self.procs
    }

    /// The LogP model.
    pub fn logp(&self) -> LogP {
        self.logp
    }

    /// When the correction starts: T + L + O.
    pub fn correction_start(&self) -> Tick {
        self.stop + self.logp.latency + self.logp.overhead
    }

    /// When the correction ends at the latest: T + L + O + C for OCG, the
    /// phase's end for GOS, never for CCG and FCG (they end by what they
    /// hear).
    pub fn correction_end(&self) -> Tick {
        match self.correction {
            GossipCorrection::None => self.correction_start(),
            GossipCorrection::Opportunistic { duration } => self.correction_start() + duration,
            GossipCorrection::Checked | GossipCorrection::FailureProof { .. } => Tick::MAX,
        }
    }

    /// The correction.
    pub fn correction(&self) -> GossipCorrection {
        self.correction
    }
}
