//! One node's gossip phase, shared by every corrected-gossip core (Hoefler
//! et al., IPDPS 2017, Section III-A; Algorithms 1-3, the lines before the
//! correction): the root is colored at the start; every colored node sends
//! the value to a uniformly random other node, one message per send slot
//! (the engine spaces a rank's sends by o), until the global time T; a node
//! colored by a gossip message taken by the phase's end (T + L + O, or T
//! with [`PhaseEnd::AtT`](super::PhaseEnd::AtT)) is a *g-node*, one first
//! colored later (by a correction or a late gossip message) a *c-node*.
//! Peers come from the [`RandomStream`] the engine derives from its seed for
//! each rank and operation, so a seed gives the same run in every engine.
//!
//! Nodes are relabelled so that the root is 0 (`me` below); messages name
//! real ranks.

use crate::error::Error;
use crate::protocol::random::RandomStream;
use crate::protocol::{Header, Msg, Tag};
use crate::topology::ring;
use crate::types::{OpId, Rank, Tick};

use super::GossipPlan;

/// One node's gossip-phase state: who it is, the value once it has it, and
/// whether the phase colored it.
#[derive(Clone, Debug)]
pub(super) struct Phase<P> {
    /// This node, relabelled so that the root is 0.
    pub(super) me: Rank,
    pub(super) root: Rank,
    op: OpId,
    /// The value, once colored.
    pub(super) value: Option<P>,
    /// Colored in the gossip phase (or the root).
    pub(super) g_node: bool,
    /// The output, until taken.
    pub(super) output: Option<P>,
    rng: RandomStream,
}

impl<P: Clone> Phase<P> {
    /// Node `me`'s phase for operation `op` of `plan`; the root passes the
    /// value. Typed errors for ranks out of range and a root without value.
    pub(super) fn new(
        plan: &GossipPlan,
        root: Rank,
        me: Rank,
        op: OpId,
        value: Option<P>,
        rng: RandomStream,
    ) -> Result<Self, Error> {
        let (me, value) = crate::protocol::rooted_value(plan.procs(), root, me, value)?;
        Ok(Phase {
            me,
            root,
            op,
            g_node: me == 0,
            output: value.clone(),
            value,
            rng,
        })
    }

    /// The real rank of relabelled node `v`.
    pub(super) fn real(&self, v: Rank, procs: u32) -> Rank {
        ring::right(v, self.root, procs)
    }

    /// The relabelled node of real rank `r`.
    pub(super) fn relabel(&self, r: Rank, procs: u32) -> Rank {
        ring::left(r, self.root, procs)
    }

    /// True while this node gossips: a g-node before T.
    pub(super) fn gossiping(&self, now: Tick, plan: &GossipPlan) -> bool {
        self.g_node && self.value.is_some() && now < plan.stop()
    }

    /// The real rank of the next gossip message's target at `now`, drawn
    /// from the node's stream, or `None` once the phase's sends are over.
    pub(super) fn gossip_target(&mut self, now: Tick, plan: &GossipPlan) -> Option<Rank> {
        if !self.gossiping(now, plan) {
            return None;
        }
        let to = self.rng.peer_except(self.me, plan.procs());
        Some(self.real(to, plan.procs()))
    }

    /// Takes the value of a message with `tag` received at `now`, if this
    /// node had none: a gossip message taken by the phase's end makes a
    /// g-node (with the phase ending at T + L + O, the last ones, sent just
    /// before T, are taken then), anything else a c-node. True if this
    /// colored the node.
    pub(super) fn color(&mut self, now: Tick, tag: Tag, value: &P, plan: &GossipPlan) -> bool {
        if self.value.is_some() {
            return false;
        }
        self.g_node = tag == Tag::Gossip && now <= plan.correction_start();
        self.output = Some(value.clone());
        self.value = Some(value.clone());
        true
    }

    /// A message of this operation with `tag` and `payload`.
    pub(super) fn msg<Q>(&self, tag: Tag, payload: Q) -> Msg<Q> {
        Msg::broadcast(self.op, self.root, tag, payload)
    }

    /// The operation's header: a broadcast from the root.
    pub(super) fn header(&self) -> Header {
        Header::broadcast(self.op, self.root)
    }
}
