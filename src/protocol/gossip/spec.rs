//! Corrected gossip's settings as a user states them, and the plan they
//! give (Hoefler et al., IPDPS 2017, Section III): the gossip time T, given
//! or chosen by Eq. 3 / Eq. 4 ([`gossip_time`]), and the correction, whose
//! OCG time C is given or chosen by Claim 2 (C = (K + 1)O + L + O, with the
//! longest uncolored chain K from Eq. 2 and the paper's one O of margin).
//! One piece serves `corrected sim`, `corrected run` and
//! [`crate::runtime::TeamBuilder::broadcast`].

use std::fmt;
use std::str::FromStr;

use crate::error::ConfigError;
use crate::protocol::gossip::{
    gossip_time, sos_timeout, GossipCorrection, GossipModel, GossipPlan, GossipVariant, PhaseEnd,
    MAX_FCG_FAULTS,
};
use crate::types::{LogP, Tick};

/// The longest gossip time T and OCG correction time C taken, in ticks:
/// thousands of times what Eq. 3-5 choose (T = 50 at 64K ranks), and
/// bounded because both cost in proportion (a rank gossips a message
/// every send slot until T, and the model behind an automatic C holds a
/// word per tick: T = 10^12 asked for 8 TB).
pub const MAX_GOSSIP_TICKS: Tick = 1 << 16;

/// The paper's δ for its examples (Figures 3 and 5): the chance that the
/// estimates behind an automatic T or C fall short.
pub const DEFAULT_DELTA: f64 = 6.93e-7;

/// The gossip time T, the tick from which no gossip message starts (where
/// the phase ends, T + L + O or T, is [`PhaseEnd`]): a number of ticks of
/// the model, or chosen: to
/// minimise the correction's latency (Eq. 3 for OCG, Eq. 4 for CCG, Eq. 5
/// for FCG), and for GOS, which has no correction, the first T after which
/// Lemma 1 leaves at most δ nodes uncolored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GossipTime {
    /// Chosen by Eq. 3-5 or Lemma 1 (GOS), plus the paper's one O.
    #[default]
    Auto,
    /// T ticks.
    Ticks(Tick),
}

impl FromStr for GossipTime {
    type Err = ConfigError;
    /// `auto` or a number of ticks.
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        if s.eq_ignore_ascii_case("auto") {
            return Ok(GossipTime::Auto);
        }
        s.parse()
            .map(GossipTime::Ticks)
            .map_err(|_| ConfigError::BadGossip {
                why: format!("gossip time {s:?}: a number of ticks, or auto"),
            })
    }
}

impl fmt::Display for GossipTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GossipTime::Auto => write!(f, "auto"),
            GossipTime::Ticks(t) => write!(f, "{t}"),
        }
    }
}

/// The correction after the gossip phase, as a user names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CorrectionChoice {
    /// GOS: none (weakly consistent).
    None,
    /// OCG (Section III-B) for C ticks, or C from Claim 2 and Eq. 2.
    Opportunistic(Option<Tick>),
    /// CCG (Section III-C).
    Checked,
    /// FCG (Section III-D) surviving f failures during the correction,
    /// `1 <= f <=` [`MAX_FCG_FAULTS`]; its c-nodes' SOS timeout is
    /// [`sos_timeout`].
    FailureProof(u8),
}

impl CorrectionChoice {
    /// The variant whose latency an automatic T minimises (GOS: OCG's).
    pub fn variant(self) -> GossipVariant {
        match self {
            CorrectionChoice::Checked => GossipVariant::Ccg,
            CorrectionChoice::FailureProof(f) => GossipVariant::Fcg { f },
            _ => GossipVariant::Ocg,
        }
    }
}

impl FromStr for CorrectionChoice {
    type Err = ConfigError;
    /// `none`, `ocg`, `ocg:C`, `ccg` (`checked` is a synonym), `fcg`
    /// (f = 1) or `fcg:F`.
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        let s = s.to_ascii_lowercase();
        let fcg = |f: u8| {
            if (1..=MAX_FCG_FAULTS).contains(&f) {
                Ok(CorrectionChoice::FailureProof(f))
            } else {
                Err(ConfigError::BadGossip {
                    why: format!("FCG's f is 1 to {MAX_FCG_FAULTS}, not {f}"),
                })
            }
        };
        match s.as_str() {
            "none" | "gos" => Ok(CorrectionChoice::None),
            "ccg" | "checked" => Ok(CorrectionChoice::Checked),
            "ocg" => Ok(CorrectionChoice::Opportunistic(None)),
            "fcg" => fcg(1),
            other => match (
                other.strip_prefix("ocg:").map(str::parse::<Tick>),
                other.strip_prefix("fcg:").map(str::parse::<u8>),
            ) {
                (Some(Ok(c)), _) => Ok(CorrectionChoice::Opportunistic(Some(c))),
                (_, Some(Ok(f))) => fcg(f),
                _ => Err(ConfigError::BadGossip {
                    why: format!(
                        "unknown gossip correction {s:?}: none, ocg, ocg:C, ccg (checked), fcg or fcg:F"
                    ),
                }),
            },
        }
    }
}

impl fmt::Display for CorrectionChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CorrectionChoice::None => write!(f, "none"),
            CorrectionChoice::Opportunistic(None) => write!(f, "ocg"),
            CorrectionChoice::Opportunistic(Some(c)) => write!(f, "ocg:{c}"),
            CorrectionChoice::Checked => write!(f, "ccg"),
            CorrectionChoice::FailureProof(faults) => write!(f, "fcg:{faults}"),
        }
    }
}

/// Corrected gossip as a user configures it: T, the correction, and the δ
/// that automatic choices are made for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GossipSpec {
    /// T.
    pub time: GossipTime,
    /// The correction.
    pub correction: CorrectionChoice,
    /// The chance the estimates behind an automatic T or C fall short.
    pub delta: f64,
    /// Where the gossip phase ends: T + L + O (the default) or T, flogsim's
    /// convention ([`PhaseEnd`]).
    pub phase_end: PhaseEnd,
}

impl Default for GossipSpec {
    /// T auto, CCG (reaches every live rank whatever T, if none fails
    /// during the correction: Claim 3), the paper's δ.
    fn default() -> Self {
        GossipSpec {
            time: GossipTime::Auto,
            correction: CorrectionChoice::Checked,
            delta: DEFAULT_DELTA,
            phase_end: PhaseEnd::Drained,
        }
    }
}

/// A spec made concrete for one team or simulation.
#[derive(Clone, Debug)]
pub struct ChosenGossip {
    /// The plan every node shares.
    pub plan: GossipPlan,
    /// The latency Eq. 3 (OCG) or Eq. 4 (CCG) predicts for it, Eq. 5's
    /// estimate (FCG), or the gossip phase's end T + L + O (GOS).
    pub estimated_latency: Tick,
}

impl GossipSpec {
    /// The plan for `procs` nodes, all alive, in `logp`: T and C as given,
    /// or chosen (see the module docs). Errors on fewer than 2 nodes, a bad
    /// model, a δ outside (0, 1), a T or C above [`MAX_GOSSIP_TICKS`], GOS
    /// with a T of 0 (it reaches nobody), or an OCG correction of 0 ticks
    /// (that is GOS).
    pub fn choose(&self, procs: u32, logp: LogP) -> Result<ChosenGossip, ConfigError> {
        if let GossipTime::Ticks(t) = self.time {
            if t == 0 && self.correction == CorrectionChoice::None {
                return Err(ConfigError::BadGossip {
                    why: "GOS with a gossip time of 0 ticks reaches nobody: only the root would hold the value; give T of 1 or more ticks, or auto".into(),
                });
            }
            if t > MAX_GOSSIP_TICKS {
                return Err(ConfigError::BadGossip {
                    why: format!(
                        "gossip time {t} ticks: each rank would gossip about {} messages per broadcast; at most {MAX_GOSSIP_TICKS} ticks are taken (auto chooses tens)",
                        t / (2 * logp.overhead).max(1)
                    ),
                });
            }
        }
        match self.correction {
            CorrectionChoice::Opportunistic(Some(0)) => {
                return Err(ConfigError::BadGossip {
                    why: "OCG's correction of 0 ticks corrects nothing: that is GOS (none); give ocg:C with C of 1 or more, or ocg for Claim 2's C".into(),
                })
            }
            CorrectionChoice::Opportunistic(Some(c)) if c > MAX_GOSSIP_TICKS => {
                return Err(ConfigError::BadGossip {
                    why: format!(
                        "OCG's correction time {c} ticks: at most {MAX_GOSSIP_TICKS} are taken (a correction of C ticks sends about C / O messages per rank)"
                    ),
                })
            }
            _ => {}
        }
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return Err(ConfigError::BadGossip {
                why: format!("delta {} must be above 0 and below 1", self.delta),
            });
        }
        let model = GossipModel::new(procs, procs, logp)?;
        let variant = self.correction.variant();
        // The model's g-nodes are those colored by T + L + O: with the
        // phase ending at T, the same g-nodes come from T - L - O, and an
        // automatic T is the model's plus L + O.
        let flight = match self.phase_end {
            PhaseEnd::Drained => 0,
            PhaseEnd::AtT => logp.latency + logp.overhead,
        };
        let stop = match (self.time, self.correction) {
            // GOS: long enough for gossip alone to reach all with 1 - δ.
            (GossipTime::Auto, CorrectionChoice::None) => {
                model.gossip_only_time(self.delta)? + logp.overhead
            }
            (GossipTime::Auto, _) => gossip_time(procs, logp, self.delta, variant)? + flight,
            (GossipTime::Ticks(t), _) => t,
        };
        let model_stop = stop.saturating_sub(flight);
        let correction = match self.correction {
            CorrectionChoice::None => GossipCorrection::None,
            CorrectionChoice::Checked => GossipCorrection::Checked,
            CorrectionChoice::FailureProof(f) => GossipCorrection::FailureProof {
                f,
                timeout: sos_timeout(procs, logp),
            },
            CorrectionChoice::Opportunistic(c) => GossipCorrection::Opportunistic {
                duration: c.unwrap_or_else(|| {
                    let (_, k) = model.latency(model_stop, self.delta, GossipVariant::Ocg);
                    (Tick::from(k) + 1) * logp.overhead + logp.latency + logp.overhead
                }),
            },
        };
        let estimated_latency = match self.correction {
            CorrectionChoice::None => stop + logp.latency + logp.overhead,
            _ => model.latency(model_stop, self.delta, variant).0,
        };
        Ok(ChosenGossip {
            plan: GossipPlan::new(procs, logp, stop, correction)?.with_phase_end(self.phase_end),
            estimated_latency,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_parse_and_print_back() {
        for s in ["none", "ocg", "ocg:12", "ccg", "fcg:1", "fcg:7"] {
            let c: CorrectionChoice = s.parse().unwrap();
            assert_eq!(c.to_string(), s);
        }
        assert_eq!("checked".parse(), Ok(CorrectionChoice::Checked));
        assert!("ocg:x".parse::<CorrectionChoice>().is_err());
        assert_eq!("fcg".parse(), Ok(CorrectionChoice::FailureProof(1)));
        assert!("fcg:0".parse::<CorrectionChoice>().is_err());
        assert!("fcg:8".parse::<CorrectionChoice>().is_err());
        assert_eq!("auto".parse(), Ok(GossipTime::Auto));
        assert_eq!("17".parse(), Ok(GossipTime::Ticks(17)));
        assert!("-1".parse::<GossipTime>().is_err());
    }

    /// A T or C whose cost grows without bound, and an OCG that corrects
    /// nothing, are refused before anything runs (a T of 10^12 once asked
    /// the model for 8 TB and aborted).
    #[test]
    fn times_beyond_the_bound_and_an_empty_ocg_are_refused() {
        let logp = LogP {
            latency: 2,
            overhead: 1,
        };
        let spec = |time, correction| GossipSpec {
            time,
            correction,
            ..GossipSpec::default()
        };
        let refused =
            |s: GossipSpec| matches!(s.choose(8, logp), Err(ConfigError::BadGossip { .. }));
        assert!(refused(spec(
            GossipTime::Ticks(MAX_GOSSIP_TICKS + 1),
            CorrectionChoice::Checked
        )));
        assert!(refused(spec(
            GossipTime::Ticks(999_999_999_999),
            CorrectionChoice::None
        )));
        assert!(refused(spec(
            GossipTime::Auto,
            CorrectionChoice::Opportunistic(Some(0))
        )));
        let long_ocg = CorrectionChoice::Opportunistic(Some(MAX_GOSSIP_TICKS + 1));
        assert!(refused(spec(GossipTime::Auto, long_ocg)));
        // GOS without gossip reaches nobody: refused. With a correction,
        // T = 0 is the degenerate but meaningful case where the
        // correction alone spreads the value: taken, as is the bound.
        assert!(refused(spec(GossipTime::Ticks(0), CorrectionChoice::None)));
        assert!(spec(GossipTime::Ticks(0), CorrectionChoice::Checked)
            .choose(8, logp)
            .is_ok());
        let at_bound = spec(
            GossipTime::Ticks(MAX_GOSSIP_TICKS),
            CorrectionChoice::Checked,
        );
        assert!(at_bound.choose(8, logp).is_ok());
        let ocg_at_bound = CorrectionChoice::Opportunistic(Some(MAX_GOSSIP_TICKS));
        assert!(spec(GossipTime::Auto, ocg_at_bound).choose(8, logp).is_ok());
    }

    /// The paper's case (N = 1024, L = O = 1): OCG's T is Eq. 3's 24
    /// (Figure 3) plus the paper's one O, and C covers Eq. 2's chain at
    /// T + L + O with one O of margin.
    #[test]
    fn auto_gives_the_papers_ocg_time() {
        let logp = LogP {
            latency: 1,
            overhead: 1,
        };
        let spec = GossipSpec {
            correction: CorrectionChoice::Opportunistic(None),
            ..GossipSpec::default()
        };
        let chosen = spec.choose(1024, logp).unwrap();
        assert_eq!(chosen.plan.stop(), 25);
        let GossipCorrection::Opportunistic { duration } = chosen.plan.correction() else {
            panic!("OCG asked for");
        };
        let model = GossipModel::new(1024, 1024, logp).unwrap();
        let (_, k) = model.latency(25, DEFAULT_DELTA, GossipVariant::Ocg);
        assert_eq!(duration, Tick::from(k) + 1 + 2);
        let bad = GossipSpec { delta: 0.0, ..spec };
        assert!(bad.choose(1024, logp).is_err());
        assert!(GossipSpec::default().choose(1, logp).is_err());
    }

    /// With the phase ending at T (flogsim's convention), an automatic T
    /// is the model's plus L + O, so the g-nodes, the correction's start
    /// and the estimate are those of the default convention.
    #[test]
    fn auto_with_the_phase_ending_at_t_keeps_the_schedule() {
        let logp = LogP {
            latency: 2,
            overhead: 1,
        };
        let drained = GossipSpec::default().choose(65536, logp).unwrap();
        let at_t = GossipSpec {
            phase_end: PhaseEnd::AtT,
            ..GossipSpec::default()
        }
        .choose(65536, logp)
        .unwrap();
        assert_eq!(at_t.plan.stop(), drained.plan.stop() + 3);
        assert_eq!(
            at_t.plan.correction_start(),
            drained.plan.correction_start()
        );
        assert_eq!(at_t.estimated_latency, drained.estimated_latency);
        assert_eq!(at_t.plan.phase_end(), PhaseEnd::AtT);
        for end in [PhaseEnd::Drained, PhaseEnd::AtT] {
            assert_eq!(end.to_string().parse::<PhaseEnd>(), Ok(end));
        }
        assert!("at-T+L".parse::<PhaseEnd>().is_err());
    }
}
