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

/// Where the gossip phase ends: which nodes are g-nodes (the nodes that
/// correct) and when the correction starts. Either way T is the tick at
/// which no gossip message starts any more (Section III-A: "until the
/// global time T"); the paper leaves open whether the messages sent just
/// before T still make g-nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PhaseEnd {
    /// The phase ends at T + L + O, when the last gossip message sent
    /// before T has been received: a node colored by a gossip message by
    /// then is a g-node, and the correction starts then (our reading of
    /// Algorithm 1, where a node corrects once the gossip it could receive
    /// is in). The default.
    #[default]
    Drained,
    /// The phase ends at T: the g-nodes are the nodes whose gossip message
    /// was received at or before T, the correction starts at T, and a
    /// gossip message still in flight colors a c-node (one that never
    /// corrects). The convention of the authors' simulator, flogsim
    /// (`checked_corrected_gossip_bcast`), which `docs/reproduction.md`
    /// puts our runs beside: its g-nodes at T are ours at T - L - O.
    AtT,
}

impl PhaseEnd {
    /// The spellings the CLI takes: `drained` and `at-t`.
    pub const SPELLINGS: &'static str = "drained (g-nodes colored by T + L + O, the default) or at-t (g-nodes colored by T, flogsim's)";
}

impl std::str::FromStr for PhaseEnd {
    type Err = ConfigError;
    /// `drained` or `at-t`.
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        match s.to_ascii_lowercase().as_str() {
            "drained" => Ok(PhaseEnd::Drained),
            "at-t" => Ok(PhaseEnd::AtT),
            _ => Err(ConfigError::BadGossip {
                why: format!("gossip phase end {s:?}: {}", PhaseEnd::SPELLINGS),
            }),
        }
    }
}

impl std::fmt::Display for PhaseEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PhaseEnd::Drained => "drained",
            PhaseEnd::AtT => "at-t",
        })
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
    phase_end: PhaseEnd,
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
            phase_end: PhaseEnd::Drained,
        })
    }

    /// The same plan with the gossip phase ending as `end` says.
    pub fn with_phase_end(mut self, end: PhaseEnd) -> Self {
        self.phase_end = end;
        self
    }

    /// Where the gossip phase ends.
    pub fn phase_end(&self) -> PhaseEnd {
        self.phase_end
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

    /// When the gossip phase ends and the correction starts: T + L + O
    /// ([`PhaseEnd::Drained`]) or T ([`PhaseEnd::AtT`]). A node colored by
    /// a gossip message received at or before it is a g-node.
    pub fn correction_start(&self) -> Tick {
        match self.phase_end {
            PhaseEnd::Drained => self.stop + self.logp.latency + self.logp.overhead,
            PhaseEnd::AtT => self.stop,
        }
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
