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
//! **No fault tolerance.** A dead node neither forwards nor acks: its
//! subtree stays without the value and every ancestor waits for its ACK
//! forever. Those ancestors never [finish](Protocol::is_finished) (they
//! may not return either); in the simulator the run ends with them
//! quiescent and unfinished, and on threads the call would end in the
//! operation timeout. It is the baseline that shows what timeouts and
//! acknowledgements cost, not a reliable broadcast.
//!
//! **Payload of an ACK.** A message's payload has the core's type, so an
//! ACK carries the node's copy of the value; receivers ignore it.
//!
//! [`TreeSpec`]: crate::topology::TreeSpec

use crate::error::{ConfigError, Error};
use crate::protocol::{Event, Header, Leave, Msg, Protocol, Tag, Transmit};
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
    /// The next child to send to and the end of this node's children, as
    /// positions in the tree's flat child list.
    next_child: u32,
    child_end: u32,
    /// Children whose ACK has not come yet.
    acks_missing: u32,
    ack_sent: bool,
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
        let children = plan.tree.child_range(virtual_me);
        Ok(AckTree {
            plan,
            me: virtual_me,
            root,
            op,
            output: value.clone(),
            value,
            next_child: children.start,
            child_end: children.end,
            acks_missing: children.end - children.start,
            ack_sent: false,
        })
    }

    /// Children whose ACK has not come yet.
    pub fn acks_missing(&self) -> u32 {
        self.acks_missing
    }

    fn msg(&self, tag: Tag, payload: P) -> Msg<P> {
        Msg::broadcast(self.op, self.root, tag, payload)
    }

    fn real(&self, rank: Rank) -> Rank {
        ring::right(rank, self.root, self.plan.procs())
    }

    /// Owes its parent the ACK now: has the value, has sent it to every
    /// child and heard every child's ACK.
    fn owes_ack(&self) -> bool {
        self.me != 0
            && !self.ack_sent
            && self.value.is_some()
            && self.next_child == self.child_end
            && self.acks_missing == 0
    }
}

impl<P: Clone + Send + 'static> Protocol for AckTree<'_, P> {
    type Payload = P;
    type Output = P;

    fn handle(&mut self, _now: Tick, event: Event<Msg<P>>) {
        let Event::Message { from, msg } = event else {
            return;
        };
        let Some(from) = crate::protocol::virtual_peer(self.plan.procs(), self.root, from) else {
            return;
        };
        match msg.tag {
            Tag::Tree if self.value.is_none() && self.plan.tree.parent(self.me) == Some(from) => {
                self.output = Some(msg.payload.clone());
                self.value = Some(msg.payload);
            }
            Tag::Ack if self.plan.tree.parent(from) == Some(self.me) => {
                self.acks_missing = self.acks_missing.saturating_sub(1);
            }
            _ => {}
        }
    }

    fn poll_transmit(&mut self, _now: Tick) -> Option<Transmit<Msg<P>>> {
        let value = self.value.clone()?;
        if self.next_child < self.child_end {
            let child = self.plan.tree.child_at(self.next_child);
            self.next_child += 1;
            return Some(Transmit {
                to: self.real(child),
                msg: self.msg(Tag::Tree, value),
            });
        }
        if self.owes_ack() {
            self.ack_sent = true;
            let parent = self.plan.tree.parent(self.me)?;
            return Some(Transmit {
                to: self.real(parent),
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
        self.value.is_none() || (self.next_child == self.child_end && !self.owes_ack())
    }

    fn header(&self) -> Header {
        Header::broadcast(self.op, self.root)
    }

    /// Once finished: the ACK gather is what the call waits for.
    fn may_return(&self) -> Leave {
        Leave::once(self.is_finished())
    }

    /// The root: every child acked; another node: its ACK is out.
    fn is_finished(&self) -> bool {
        if self.me == 0 {
            self.next_child == self.child_end && self.acks_missing == 0
        } else {
            self.ack_sent
        }
    }

    fn output_from_root(&self) -> bool {
        self.value.is_none()
    }

    /// The parent, before the value came.
    fn awaiting(&self) -> Option<Rank> {
        if self.value.is_some() {
            return None;
        }
        self.plan.tree.parent(self.me).map(|p| self.real(p))
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
        assert!(node.is_finished() && node.is_quiescent());
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
