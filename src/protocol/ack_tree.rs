//! The ack tree broadcast: the acknowledged tree broadcast the Corrected
//! Trees paper (Küttler et al., PPoPP 2019, Section 5, Figures 6-7) compares
//! against: "Acknowledgments ... are sent along the same tree as for
//! dissemination. A process sends an acknowledgment to the parent after
//! receiving all acknowledgments from the immediate children."
//!
//! **Algorithm.** Over any [`TreeSpec`] tree (relabelled so that the root
//! is virtual rank 0, as in [`crate::protocol::bcast`]): a node delivers the
//! value on its tree message ([`Tag::Tree`]) and sends it to its children in
//! send order; once it has sent them all and holds an [`Tag::Ack`] from
//! every child, it sends one ACK to its parent. The root finishes when all
//! its children have acked: it then knows every node has the value.
//! Fault-free that is exactly 2(P - 1) messages (one value and one ACK per
//! non-root node), delivery as fast as the plain tree, and completion one
//! ACK gather later.
//!
//! **No fault tolerance.** A dead node nobody knows of neither forwards
//! nor acks: its subtree stays without the value and every ancestor waits
//! for its ACK forever. Those ancestors never
//! [finish](Protocol::is_finished) (they may not return either); in the
//! simulator (no failure detector) the run ends with them quiescent and
//! unfinished, and on threads the call ends in the operation timeout, or
//! once the engine's detector finds the silent child failed
//! ([`Protocol::awaiting`]). It is the baseline that shows what timeouts
//! and acknowledgements cost, not a reliable broadcast.
//!
//! **Known failures.** An implementation keeps its communicator's failed
//! set, and so does this one: a node told a rank failed
//! ([`Event::PeerFailed`], before the operation or during it) leaves it
//! out of the tree: a child whose ACK is missing is replaced by its own
//! children, who take the value from this node (again, if the failed child
//! had sent it; they then ack this node too) and ack to it. A failure the
//! engine reports costs no timeout, in its operation or any later one;
//! one nobody reports still stalls the ancestors (the ack tree has no
//! timeouts of its own).
//!
//! **Payload of an ACK.** A message's payload has the core's type, so an
//! ACK carries the node's copy of the value; receivers ignore it.
//!
//! [`TreeSpec`]: crate::topology::TreeSpec

use std::collections::VecDeque;

use crate::error::{ConfigError, Error};
use crate::protocol::{rooted_event, Event, Header, Leave, Msg, Protocol, Rooted, Tag, Transmit};
use crate::topology::{ring, Tree, TreeSpec};
use crate::types::{LogP, OpId, Rank, Tick};

/// The tree every node of an ack tree broadcast shares (Corrected Trees,
/// Section 3.2 for the shapes, Section 5 for the acknowledged baseline).
#[derive(Clone, Debug)]
pub struct AckTreePlan {
    tree: Tree,
}

impl AckTreePlan {
    /// The tree `spec` over `procs` ranks (`logp` matters only for the
    /// optimal tree). Errors on a bad tree or team size.
    pub fn new(spec: TreeSpec, procs: u32, logp: LogP) -> Result<Self, ConfigError> {
        Ok(AckTreePlan {
            tree: Tree::build(spec, procs, logp)?,
        })
    }

    /// The tree (rooted at virtual rank 0).
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// P.
    pub fn procs(&self) -> u32 {
        self.tree.procs()
    }
}

/// One node's state in one ack tree broadcast (Corrected Trees, Section 5).
#[derive(Clone, Debug)]
pub struct AckTree<'p, P> {
    plan: &'p AckTreePlan,
    /// This node, relabelled so that the root is 0.
    me: Rank,
    root: Rank,
    op: OpId,
    value: Option<P>,
    output: Option<P>,
    /// The node the value comes from: the parent, or the first node above
    /// it not known failed.
    parent: Option<Rank>,
    /// Children still to send the value to, in send order (a known-failed
    /// child's own children in its place).
    to_send: VecDeque<Rank>,
    /// Children whose ACK has not come yet (sent to or still to send).
    acks: Vec<Rank>,
    /// Every node that sent this node the value: the parent, and any
    /// node above that took over from it (a failure it was told of); each
    /// gets an ACK once the subtree acked. Fault-free, the parent alone.
    senders: Vec<Rank>,
    /// How many of `senders` have their ACK.
    acked: usize,
    /// Failures the engine's detector reported (virtual ranks).
    known: Vec<Rank>,
}

impl<'p, P: Clone + Send + 'static> AckTree<'p, P> {
    /// Node `me`'s core for operation `op` broadcasting from `root`; the
    /// root passes the value. Errors on a rank out of range or a root
    /// without a value.
    pub fn new(
        plan: &'p AckTreePlan,
        root: Rank,
        me: Rank,
        op: OpId,
        value: Option<P>,
    ) -> Result<Self, Error> {
        let (virtual_me, value) = crate::protocol::rooted_value(plan.procs(), root, me, value)?;
        let children = plan.tree.children(virtual_me);
        Ok(AckTree {
            plan,
            me: virtual_me,
            root,
            op,
            output: value.clone(),
            value,
            parent: plan.tree.parent(virtual_me),
            to_send: children.iter().copied().collect(),
            acks: children.to_vec(),
            senders: Vec::new(),
            acked: 0,
            known: Vec::new(),
        })
    }

    /// Children whose ACK has not come yet.
    pub fn acks_missing(&self) -> u32 {
        self.acks.len() as u32
    }

    fn msg(&self, tag: Tag, payload: P) -> Msg<P> {
        Msg::broadcast(self.op, self.root, tag, payload)
    }

    fn real(&self, rank: Rank) -> Rank {
        ring::right(rank, self.root, self.plan.procs())
    }

    /// Owes an ACK now: has the value, has sent it to every child and
    /// heard every child's ACK, and a sender has no ACK yet.
    fn owes_ack(&self) -> bool {
        self.acked < self.senders.len()
            && self.value.is_some()
            && self.to_send.is_empty()
            && self.acks.is_empty()
    }

    /// `rank` failed, as the engine's detector reports (before the
    /// operation or during it): it is left out of the tree as a
    /// communicator's failed set would leave it. A child of this node
    /// whose ACK is missing is replaced by its own children: they get the
    /// value from this node (again, if the failed child had sent it) and
    /// ack to it.
    fn peer_failed(&mut self, rank: Rank) {
        if self.known.contains(&rank) {
            return;
        }
        self.known.push(rank);
        if let Some(i) = self.acks.iter().position(|&c| c == rank) {
            self.acks.swap_remove(i);
            let kids = self.live_children(rank);
            let at = match self.to_send.iter().position(|&c| c == rank) {
                Some(at) => {
                    self.to_send.remove(at);
                    at
                }
                None => self.to_send.len(),
            };
            for (j, &k) in kids.iter().enumerate() {
                self.to_send.insert(at + j, k);
            }
            self.acks.extend(kids);
        }
        if self.value.is_none() && self.parent == Some(rank) {
            let mut above = self.plan.tree.parent(rank);
            while let Some(a) = above.filter(|a| self.known.contains(a)) {
                above = self.plan.tree.parent(a);
            }
            self.parent = above;
        }
    }

    /// `rank`'s children, each replaced by its own where it is known
    /// failed.
    fn live_children(&self, rank: Rank) -> Vec<Rank> {
        let mut out = Vec::new();
        for &c in self.plan.tree.children(rank) {
            if self.known.contains(&c) {
                out.extend(self.live_children(c));
            } else {
                out.push(c);
            }
        }
        out
    }
}

impl<P: Clone + Send + 'static> Protocol for AckTree<'_, P> {
    type Payload = P;
    type Output = P;

    fn handle(&mut self, _now: Tick, event: Event<Msg<P>>) {
        let (from, msg) = match rooted_event(self.plan.procs(), self.root, event) {
            Rooted::Message(from, msg) => (from, msg),
            Rooted::Failed(rank) => return self.peer_failed(rank),
            Rooted::Other => return,
        };
        match msg.tag {
            // From the parent, or from the node above that took it over
            // (this node may learn of the parent's failure later): the ACK
            // goes to the sender.
            Tag::Tree => {
                if self.value.is_none() {
                    self.output = Some(msg.payload.clone());
                    self.value = Some(msg.payload);
                }
                // The parent, or a node above that took over from it: each
                // waits for this node's ACK.
                if !self.senders.contains(&from) && !self.known.contains(&from) {
                    self.senders.push(from);
                }
            }
            Tag::Ack => self.acks.retain(|&c| c != from),
            _ => {}
        }
    }

    fn poll_transmit(&mut self, _now: Tick) -> Option<Transmit<Msg<P>>> {
        let value = self.value.clone()?;
        if let Some(child) = self.to_send.pop_front() {
            return Some(Transmit {
                to: self.real(child),
                msg: self.msg(Tag::Tree, value),
            });
        }
        if self.owes_ack() {
            let to = self.senders[self.acked];
            self.acked += 1;
            return Some(Transmit {
                to: self.real(to),
                msg: self.msg(Tag::Ack, value),
            });
        }
        None
    }

    fn poll_deadline(&self) -> Option<Tick> {
        None
    }

    fn take_output(&mut self) -> Option<P> {
        self.output.take()
    }

    fn is_quiescent(&self) -> bool {
        self.value.is_none() || (self.to_send.is_empty() && !self.owes_ack())
    }

    fn header(&self) -> Header {
        Header::broadcast(self.op, self.root)
    }

    /// The root once every child acked; another node once its ACK is out:
    /// the ACK gather is what the call waits for.
    fn may_return(&self) -> Leave {
        let done = if self.me == 0 {
            self.is_finished()
        } else {
            self.acked > 0 && self.acked == self.senders.len()
        };
        Leave::once(done)
    }

    /// The root: every child acked. Another node never: a node above that
    /// takes over from its failed parent sends it the value again and
    /// waits for its ACK, so an engine keeps it after its call.
    fn is_finished(&self) -> bool {
        self.me == 0 && self.to_send.is_empty() && self.acks.is_empty()
    }

    fn output_from_root(&self) -> bool {
        self.value.is_none()
    }

    /// The node the value comes from, before it came; then a child whose
    /// ACK is missing: an engine's detector that finds it silent reports
    /// it failed, and this node stops waiting for it.
    fn awaiting(&self) -> Option<Rank> {
        let peer = match self.value {
            None => self.parent?,
            Some(_) => *self.acks.iter().find(|c| !self.to_send.contains(c))?,
        };
        Some(self.real(peer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Shape;
    use crate::types::Collective;

    fn sends(core: &mut AckTree<'_, u8>) -> Vec<(Rank, Tag)> {
        std::iter::from_fn(|| core.poll_transmit(0).map(|t| (t.to, t.msg.tag))).collect()
    }

    fn msg(tag: Tag) -> Msg<u8> {
        Msg {
            op: 0,
            kind: Collective::Broadcast,
            root: 0,
            tag,
            payload: 5,
        }
    }

    /// Binary tree of 7 (interleaved: 0 -> 1, 2; 1 -> 3, 5): node 1 sends
    /// the value to 3 and 5, and acks its parent only after both acked.
    #[test]
    fn ack_after_the_children() {
        let plan = AckTreePlan::new(
            TreeSpec::interleaved(Shape::KAry(2)),
            7,
            LogP::new(2, 1).unwrap(),
        )
        .unwrap();
        let kids = plan.tree().children(1).to_vec();
        let mut node = AckTree::new(&plan, 0, 1, 0, None::<u8>).unwrap();
        node.handle(0, Event::Start);
        assert!(sends(&mut node).is_empty());
        node.handle(
            4,
            Event::Message {
                from: 0,
                msg: msg(Tag::Tree),
            },
        );
        assert_eq!(node.take_output(), Some(5));
        let out = sends(&mut node);
        assert_eq!(
            out,
            kids.iter().map(|&c| (c, Tag::Tree)).collect::<Vec<_>>()
        );
        node.handle(
            9,
            Event::Message {
                from: kids[0],
                msg: msg(Tag::Ack),
            },
        );
        assert!(sends(&mut node).is_empty() && !node.is_finished());
        assert_eq!(node.may_return(), Leave::Not);
        node.handle(
            10,
            Event::Message {
                from: kids[1],
                msg: msg(Tag::Ack),
            },
        );
        assert_eq!(sends(&mut node), vec![(0, Tag::Ack)]);
        assert!(node.may_return() == Leave::Now && node.is_quiescent());
    }

    /// A child known failed is left out: its children get the value from
    /// here and ack here, and the ACK up goes once they have; reported
    /// after the value went to it, the same, a grandchild that had the
    /// value acking again.
    #[test]
    fn a_known_failed_child_is_left_out_of_the_tree() {
        let plan = AckTreePlan::new(
            TreeSpec::interleaved(Shape::KAry(2)),
            7,
            LogP::new(2, 1).unwrap(),
        )
        .unwrap();
        let kids = plan.tree().children(1).to_vec();
        let (dead, live) = (kids[0], kids[1]);
        assert!(plan.tree().children(dead).is_empty() && plan.tree().children(live).is_empty());
        let mut node = AckTree::new(&plan, 0, 1, 0, None::<u8>).unwrap();
        node.handle(0, Event::Start);
        node.handle(0, Event::PeerFailed(dead));
        let tree = Event::Message {
            from: 0,
            msg: msg(Tag::Tree),
        };
        node.handle(4, tree);
        assert_eq!(sends(&mut node), vec![(live, Tag::Tree)]);
        let ack = Event::Message {
            from: live,
            msg: msg(Tag::Ack),
        };
        node.handle(9, ack);
        assert_eq!(sends(&mut node), vec![(0, Tag::Ack)]);
        assert_eq!(node.may_return(), Leave::Now);
        // The root knows 1 failed: it sends to 1's children, and needs
        // their ACKs and 2's only.
        let mut root = AckTree::new(&plan, 0, 0, 0, Some(5u8)).unwrap();
        root.handle(0, Event::Start);
        root.handle(0, Event::PeerFailed(1));
        let mut want: Vec<(Rank, Tag)> = kids.iter().map(|&c| (c, Tag::Tree)).collect();
        want.push((2, Tag::Tree));
        assert_eq!(sends(&mut root), want);
        for from in [dead, live, 2] {
            let ack = msg(Tag::Ack);
            root.handle(9, Event::Message { from, msg: ack });
        }
        assert!(root.is_finished());
        // Reported during the operation, after the root sent to it: its
        // children get the value from the root, and one that had it and
        // acked its failed parent already acks the root too.
        let mut root = AckTree::new(&plan, 0, 0, 0, Some(5u8)).unwrap();
        root.handle(0, Event::Start);
        assert_eq!(sends(&mut root), vec![(1, Tag::Tree), (2, Tag::Tree)]);
        root.handle(5, Event::PeerFailed(1));
        let want: Vec<(Rank, Tag)> = kids.iter().map(|&c| (c, Tag::Tree)).collect();
        assert_eq!(sends(&mut root), want);
        let mut leaf = AckTree::new(&plan, 0, dead, 0, None::<u8>).unwrap();
        leaf.handle(0, Event::Start);
        let from_parent = msg(Tag::Tree);
        leaf.handle(
            3,
            Event::Message {
                from: 1,
                msg: from_parent,
            },
        );
        assert_eq!(sends(&mut leaf), vec![(1, Tag::Ack)]);
        let from_root = msg(Tag::Tree);
        leaf.handle(
            6,
            Event::Message {
                from: 0,
                msg: from_root,
            },
        );
        assert_eq!(leaf.may_return(), Leave::Not);
        assert_eq!(sends(&mut leaf), vec![(0, Tag::Ack)]);
        assert_eq!(leaf.may_return(), Leave::Now);
        for from in [dead, live, 2] {
            let ack = msg(Tag::Ack);
            root.handle(9, Event::Message { from, msg: ack });
        }
        assert!(root.is_finished());
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        let logp = LogP::new(2, 1).unwrap();
        assert!(AckTreePlan::new(TreeSpec::interleaved(Shape::Binomial), 0, logp).is_err());
        let plan = AckTreePlan::new(TreeSpec::interleaved(Shape::Binomial), 4, logp).unwrap();
        assert!(AckTree::new(&plan, 4, 0, 0, Some(1u8)).is_err());
        assert!(AckTree::new(&plan, 0, 4, 0, Some(1u8)).is_err());
        assert!(AckTree::new(&plan, 0, 0, 0, None::<u8>).is_err());
    }
}
