//! Corrected gossip (Hoefler et al., *Corrected Gossip Algorithms for Fast
//! Reliable Broadcast on Unreliable Systems*, IPDPS 2017): random gossip
//! until a time T, then a deterministic correction on the ring. The plan
//! every node shares ([`plan`]), the choice of T ([`time`]: Lemma 1, Eq.
//! 2-5), the gossip phase both cores run ([`phase`]), the [`core`] of GOS,
//! OCG and CCG (Sections III-A to III-C), and the failure-proof corrected
//! gossip core [`fcg`] (Section III-D, Algorithm 3); in the simulator
//! ([`crate::sim::gossip`]) and the CLI. BIG and the thread engine are
//! issue 15's next steps.

pub mod clock;
pub mod core;
pub mod fcg;
mod phase;
pub mod plan;
pub mod spec;
pub mod time;

pub use self::clock::{SlotClock, SlotTimed, Stamped};
pub use self::core::Gossip;
pub use fcg::{sos_timeout, Fcg, FcgPayload, Known, SosCause};
pub use plan::{GossipCorrection, GossipPlan, MAX_FCG_FAULTS};
pub use spec::{ChosenGossip, CorrectionChoice, GossipSpec, GossipTime, DEFAULT_DELTA};
pub use time::{gossip_time, GossipModel, GossipVariant};
