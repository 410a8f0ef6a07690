//! Corrected gossip (Hoefler et al., *Corrected Gossip Algorithms for Fast
//! Reliable Broadcast on Unreliable Systems*, IPDPS 2017): random gossip
//! until a time T, then a deterministic correction on the ring. The plan
//! every node shares ([`plan`]), the choice of T ([`time`]: Lemma 1, Eq.
//! 2-5), the gossip phase both cores run (`phase`), the [`core`] of GOS,
//! OCG and CCG (Sections III-A to III-C), the failure-proof corrected
//! gossip core [`fcg`] (Section III-D, Algorithm 3), the settings a user
//! gives ([`spec`]) and the time counter engines without a shared clock
//! carry in messages ([`clock`]); and the paper's baselines of Section
//! IV-B: the binomial graph broadcast BIG ([`big`], a core the simulator
//! runs) and the analytic models of BIG and BFB ([`baselines`]).

pub mod baselines;
pub mod big;
pub mod clock;
pub mod core;
pub mod fcg;
mod phase;
pub mod plan;
pub mod spec;
pub mod time;

pub use self::clock::{SlotClock, SlotTimed, Stamped};
pub use self::core::Gossip;
pub use baselines::{bfb_expected_latency, bfb_latency, bfb_messages, big_latency, big_messages};
pub use big::{Big, BigPlan};
pub use fcg::{sos_timeout, Fcg, FcgPayload, Known, SosCause, KNOWN_CAPACITY};
pub use plan::{GossipCorrection, GossipPlan, PhaseEnd, MAX_FCG_FAULTS};
pub use spec::{ChosenGossip, CorrectionChoice, GossipSpec, GossipTime, DEFAULT_DELTA};
pub use time::{gossip_time, GossipModel, GossipVariant};

/// The ticks of the gossip-phase messages (Section III-A) among `sends`,
/// each a send's tick and tag, in order: what the cores' tests check
/// against one send per slot until T.
#[cfg(test)]
fn gossip_ticks(sends: &[(crate::types::Tick, crate::protocol::Tag)]) -> Vec<crate::types::Tick> {
    sends
        .iter()
        .filter(|(_, tag)| *tag == crate::protocol::Tag::Gossip)
        .map(|&(tick, _)| tick)
        .collect()
}
