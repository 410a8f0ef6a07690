//! Corrected gossip (Hoefler et al., *Corrected Gossip Algorithms for Fast
//! Reliable Broadcast on Unreliable Systems*, IPDPS 2017): random gossip
//! until a time T, then a deterministic correction on the ring. So far the
//! choice of T ([`time`]: Lemma 1, Eq. 2-4); the protocol cores (OCG, CCG,
//! FCG and the baselines) are issue 15's next steps.

pub mod time;

pub use time::{gossip_time, GossipModel, GossipVariant};
