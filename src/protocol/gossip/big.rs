//! BIG, broadcast on a binomial graph: the redundant baseline of the
//! Corrected Gossip paper (Hoefler et al., IPDPS 2017, Section IV-B.3,
//! after Angskun et al.'s binomial graphs).
//!
//! **Topology.** Relabelled so that the root is 0, node p's neighbours are
//! p + 2^x mod N for 0 <= x < m = ⌈log2 N⌉: m distinct other nodes (2^x <
//! N), and p is a neighbour of p - 2^x for every x, so every node can be
//! reached along m vertex-disjoint paths (the paper: "can tolerate up to
//! log2 P - 1 failures using static routing").
//!
//! **Algorithm.** The root, at the start, and every other node, on the
//! first message it receives, delivers the value and sends it to all m
//! neighbours, one send per slot; later copies are dropped. No failure
//! detector, no timer: a node is finished after its m sends, so the work
//! is exactly N·m messages when nobody fails.
//!
//! **Order of the sends** (the paper does not give one). A node first
//! reached over the edge of offset 2^y sends to the offsets 2^(y-1), ...,
//! 2^0 first, then to 2^(m-1), ..., 2^y; the root sends to 2^(m-1), ...,
//! 2^0. The first sends of every node then form a binomial tree (node p's
//! children are p + 2^x for 2^x below p's lowest set bit), which is the
//! paper's "in the optimal case, the completion time is equal to a single
//! binomial tree where the last node receives log2 P more messages". Sent
//! in a fixed order instead, every node would spend its first slots on
//! neighbours already reached, and the last node would wait about
//! m(m - 1)/2 · O longer.
//!
//! **Guarantees.** Weakly consistent: every live node is reached while
//! fewer than m nodes fail (before or during the run), with the root
//! alive; with more it may leave live nodes unreached. Terminates: every
//! node sends at most m messages.

use crate::error::{ConfigError, Error};
use crate::protocol::{Event, Header, Leave, Msg, Protocol, Tag, Transmit};
use crate::topology::ring;
use crate::types::{OpId, Rank, Tick};

/// What every node of one BIG broadcast shares: the number of nodes N and
/// the degree m = ⌈log2 N⌉ (Section IV-B.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BigPlan {
    procs: u32,
    degree: u32,
}

impl BigPlan {
    /// The binomial graph of `procs >= 2` nodes.
    pub fn new(procs: u32) -> Result<Self, ConfigError> {
        if procs < 2 {
            return Err(ConfigError::BadGossip {
                why: format!("a binomial graph needs at least 2 nodes, not {procs}"),
            });
        }
        Ok(BigPlan {
            procs,
            degree: ceil_log2(procs),
        })
    }

    /// N.
    pub fn procs(&self) -> u32 {
        self.procs
    }

    /// m = ⌈log2 N⌉: every node's number of neighbours and of sends.
    pub fn degree(&self) -> u32 {
        self.degree
    }

    /// The exponent x of the `slot`-th send (0-based) of a node first
    /// reached over the edge of offset 2^`first` (`first` = m for the root):
    /// `first` - 1 down to 0, then m - 1 down to `first`; `None` from
    /// slot m on (a node sends m times).
    pub fn exponent(&self, first: u32, slot: u32) -> Option<u32> {
        let first = first.min(self.degree);
        if slot >= self.degree {
            None
        } else if slot < first {
            Some(first - 1 - slot)
        } else {
            Some(self.degree - 1 - (slot - first))
        }
    }
}

/// ⌈log2 n⌉ for `n >= 1` (0 for 1).
pub fn ceil_log2(n: u32) -> u32 {
    match n {
        0 | 1 => 0,
        n => 32 - (n - 1).leading_zeros(),
    }
}

/// One node's state in one BIG broadcast.
#[derive(Clone, Debug)]
pub struct Big<'p, P> {
    plan: &'p BigPlan,
    /// This node, relabelled so that the root is 0.
    me: Rank,
    root: Rank,
    op: OpId,
    value: Option<P>,
    output: Option<P>,
    /// The exponent of the edge that first reached this node (m: the root,
    /// or an edge that is not one of the graph's).
    first: u32,
    /// Sends made so far.
    sent: u32,
}

impl<'p, P: Clone + Send + 'static> Big<'p, P> {
    /// Node `me`'s core for operation `op`; the root passes the value.
    pub fn new(
        plan: &'p BigPlan,
        root: Rank,
        me: Rank,
        op: OpId,
        value: Option<P>,
    ) -> Result<Self, Error> {
        let procs = plan.procs;
        let (me, value) = crate::protocol::rooted_value(procs, root, me, value)?;
        Ok(Big {
            plan,
            me,
            root,
            op,
            output: value.clone(),
            value,
            first: plan.degree,
            sent: 0,
        })
    }

    /// Sends made so far (at most m).
    pub fn sent(&self) -> u32 {
        self.sent
    }
}

impl<P: Clone + Send + 'static> Protocol for Big<'_, P> {
    type Payload = P;
    type Output = P;

    fn handle(&mut self, _now: Tick, event: Event<Msg<P>>) {
        let Event::Message { from, msg } = event else {
            return;
        };
        if self.value.is_some() {
            return;
        }
        let procs = self.plan.procs;
        let Some(from) = crate::protocol::virtual_peer(procs, self.root, from) else {
            return;
        };
        let offset = ring::left(self.me, from, procs);
        self.first = if offset.is_power_of_two() {
            offset.trailing_zeros().min(self.plan.degree)
        } else {
            self.plan.degree
        };
        self.output = Some(msg.payload.clone());
        self.value = Some(msg.payload);
    }

    fn poll_transmit(&mut self, _now: Tick) -> Option<Transmit<Msg<P>>> {
        let value = self.value.as_ref()?;
        let x = self.plan.exponent(self.first, self.sent)?;
        self.sent += 1;
        let procs = self.plan.procs;
        let to = ring::right(self.me, 1 << x, procs);
        Some(Transmit {
            to: ring::right(to, self.root, procs),
            msg: Msg::broadcast(self.op, self.root, Tag::Tree, value.clone()),
        })
    }

    fn poll_deadline(&self) -> Option<Tick> {
        None
    }

    fn take_output(&mut self) -> Option<P> {
        self.output.take()
    }

    fn is_quiescent(&self) -> bool {
        self.value.is_none() || self.sent >= self.plan.degree
    }

    fn header(&self) -> Header {
        Header::broadcast(self.op, self.root)
    }

    /// Once all m sends are out: they are what makes BIG survive failures.
    fn may_return(&self) -> Leave {
        Leave::once(self.is_finished())
    }

    fn is_finished(&self) -> bool {
        self.value.is_some() && self.sent >= self.plan.degree
    }

    fn waits_once(&self) -> bool {
        true
    }

    fn output_from_root(&self) -> bool {
        self.value.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Collective;

    fn sends(core: &mut Big<'_, u8>) -> Vec<Rank> {
        std::iter::from_fn(|| core.poll_transmit(0).map(|t| t.to)).collect()
    }

    #[test]
    fn ceil_log2_of_small_numbers() {
        let got: Vec<u32> = [1, 2, 3, 4, 5, 16, 17, 4096, 65536].map(ceil_log2).to_vec();
        assert_eq!(got, vec![0, 1, 2, 2, 3, 4, 5, 12, 16]);
    }

    /// The root sends to 8, 4, 2, 1 (N = 16); a node reached over the edge
    /// of offset 4 sends to +2, +1 (its binomial-tree children), then +8,
    /// +4; a second message changes nothing.
    #[test]
    fn binomial_tree_first_then_the_rest() {
        let plan = BigPlan::new(16).unwrap();
        let mut root = Big::new(&plan, 0, 0, 0, Some(7u8)).unwrap();
        root.handle(0, Event::Start);
        assert_eq!(root.take_output(), Some(7));
        assert_eq!(sends(&mut root), vec![8, 4, 2, 1]);
        assert!(root.is_finished());
        let mut node = Big::new(&plan, 0, 5, 0, None::<u8>).unwrap();
        node.handle(0, Event::Start);
        assert!(node.is_quiescent() && !node.is_finished());
        let msg = |payload| Msg {
            op: 0,
            kind: Collective::Broadcast,
            root: 0,
            tag: Tag::Tree,
            payload,
        };
        node.handle(
            4,
            Event::Message {
                from: 1,
                msg: msg(3),
            },
        );
        node.handle(
            5,
            Event::Message {
                from: 4,
                msg: msg(9),
            },
        );
        assert_eq!(node.take_output(), Some(3));
        assert_eq!(node.take_output(), None);
        assert_eq!(sends(&mut node), vec![7, 6, 13, 9]);
        assert_eq!(node.sent(), 4);
    }

    /// With root 3 of N = 12 (m = 4) the labels are shifted: the root sends
    /// to 3 + 8, 3 + 4, 3 + 2, 3 + 1 mod 12.
    #[test]
    fn relabelled_around_the_root() {
        let plan = BigPlan::new(12).unwrap();
        let mut root = Big::new(&plan, 3, 3, 0, Some(1u8)).unwrap();
        assert_eq!(sends(&mut root), vec![11, 7, 5, 4]);
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        assert!(BigPlan::new(1).is_err());
        let order: Vec<_> = (0..5)
            .map(|slot| BigPlan::new(16).unwrap().exponent(2, slot))
            .collect();
        assert_eq!(order, vec![Some(1), Some(0), Some(3), Some(2), None]);
        let plan = BigPlan::new(8).unwrap();
        assert!(Big::new(&plan, 8, 0, 0, Some(1u8)).is_err());
        assert!(Big::new(&plan, 0, 9, 0, Some(1u8)).is_err());
        assert!(Big::new(&plan, 0, 0, 0, None::<u8>).is_err());
    }
}
