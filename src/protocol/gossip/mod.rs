//! Corrected gossip (Hoefler et al., *Corrected Gossip Algorithms for Fast
//! Reliable Broadcast on Unreliable Systems*, IPDPS 2017): random gossip
//! until a time T, then a deterministic correction on the ring. So far: the
//! choice of T ([`time`]: Lemma 1, Eq. 2-4) and the gossip phase with no
//! correction (GOS) or opportunistic correction (OCG) ([`core`], in the
//! simulator); CCG, FCG, BIG, the thread engine and the CLI are issue 15's
//! next steps.

pub mod clock;
pub mod core;
pub mod spec;
pub mod time;

pub use self::clock::{SlotClock, SlotTimed, Stamped};
pub use self::core::{Gossip, GossipCorrection, GossipPlan};
pub use spec::{ChosenGossip, CorrectionChoice, GossipSpec, GossipTime, DEFAULT_DELTA};
pub use time::{gossip_time, GossipModel, GossipVariant};
