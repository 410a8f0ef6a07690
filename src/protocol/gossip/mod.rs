//! Corrected gossip (Hoefler et al., *Corrected Gossip Algorithms for Fast
//! Reliable Broadcast on Unreliable Systems*, IPDPS 2017): random gossip
//! until a time T, then a deterministic correction on the ring. The choice
//! of T ([`time`]: Lemma 1, Eq. 2-4), the gossip phase with no correction
//! (GOS), opportunistic (OCG) or checked (CCG) correction ([`core`]), and
//! the paper's baselines of Section IV-B: the binomial graph broadcast BIG
//! ([`big`], a core the simulator runs) and the analytic models of BIG and
//! BFB ([`baselines`]).

pub mod baselines;
pub mod big;
pub mod core;
pub mod time;

pub use self::core::{Gossip, GossipCorrection, GossipPlan};
pub use baselines::{bfb_expected_latency, bfb_latency, bfb_messages, big_latency, big_messages};
pub use big::{Big, BigPlan};
pub use time::{gossip_time, GossipModel, GossipVariant};
