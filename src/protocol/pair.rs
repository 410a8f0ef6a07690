//! Allreduce of a team of two: a pair exchange. Each rank sends its input to
//! the other and, once it has the other's input or news of its failure,
//! delivers the combination, in rank order (lower rank's value first), of
//! what it has.
//!
//! This is what the up-correction of Section 4.2 does within a group, taken
//! to its end: when the team is one group of two, each member holds the full
//! reduction after the exchange, and no reduce tree or broadcast is needed.
//! It gives the guarantees of Section 5.1 for f = 1 with one message per
//! rank and one message delay instead of the four delays of reduce plus
//! broadcast: if both ranks live, both combine the same two values in the
//! same order; if one fails, the survivor is the only live rank, and it
//! delivers its own input combined with the failed rank's input or without
//! it, never part of it. It does not extend past two ranks: with three, two
//! live ranks could learn of a third rank's failure at different points of
//! its sends and deliver different values, which is what the root's
//! broadcast prevents.

use crate::protocol::allreduce::AllreduceOutput;
use crate::protocol::reduce::{Combine, Contribution, FailureInfo};
use crate::protocol::{Event, Header, Msg, Protocol, Tag, Transmit};
use crate::types::{Collective, OpId, Rank, Tick};

/// One rank's state in the allreduce (or barrier) of a team of two.
#[derive(Clone, Debug)]
pub struct PairAllreduce<P, O> {
    me: Rank,
    op_id: OpId,
    kind: Collective,
    input: P,
    op: O,
    started: bool,
    sent: bool,
    peer_failed: bool,
    decided: bool,
    output: Option<AllreduceOutput<P>>,
}

impl<P: Clone + Send + 'static, O: Combine<P>> PairAllreduce<P, O> {
    /// The core of rank `me` (0 or 1) for operation `op_id`, contributing
    /// `input`. `kind` is [`Collective::Allreduce`] or [`Collective::Barrier`].
    pub fn new(me: Rank, op_id: OpId, kind: Collective, input: P, op: O) -> Self {
        debug_assert!(me < 2, "a pair has ranks 0 and 1");
        PairAllreduce {
            me,
            op_id,
            kind,
            input,
            op,
            started: false,
            sent: false,
            peer_failed: false,
            decided: false,
            output: None,
        }
    }

    /// The operation number.
    pub fn op(&self) -> OpId {
        self.op_id
    }

    /// The collective its messages carry (allreduce or barrier).
    pub fn kind(&self) -> Collective {
        self.kind
    }

    fn peer(&self) -> Rank {
        1 - self.me
    }

    fn owes_send(&self) -> bool {
        self.started && !self.sent && !self.peer_failed
    }

    /// Delivers the peer's input combined with this rank's, lower rank
    /// first (both ranks compute the same bits), or this rank's alone,
    /// missing the peer's, if the peer failed first. The single round is reported as root 0.
    #[inline]
    fn decide(&mut self, peer: Option<P>) {
        if self.decided {
            return;
        }
        self.decided = true;
        let mut missing = FailureInfo::default();
        let value = match peer {
            Some(peer) => {
                let (mut acc, other) = if self.me == 0 {
                    (self.input.clone(), peer)
                } else {
                    (peer, self.input.clone())
                };
                self.op.combine(&mut acc, &other);
                acc
            }
            None => {
                missing = FailureInfo::from_parts(false, 1, &[self.peer()]);
                self.input.clone()
            }
        };
        self.output = Some(AllreduceOutput::Value {
            value,
            root: 0,
            missing,
        });
    }
}

impl<P: Clone + Send + 'static, O: Combine<P>> Protocol for PairAllreduce<P, O> {
    type Payload = Contribution<P>;
    type Output = AllreduceOutput<P>;

    fn handle(&mut self, _now: Tick, event: Event<Msg<Contribution<P>>>) {
        match event {
            Event::Start => self.started = true,
            Event::Message { from, msg } => {
                if from == self.peer() && msg.tag == Tag::UpCorrection {
                    self.decide(Some(msg.payload.value));
                }
            }
            Event::PeerFailed(r) => {
                if r == self.peer() {
                    self.peer_failed = true;
                    self.decide(None);
                }
            }
            Event::Timer => {}
        }
    }

    fn poll_transmit(&mut self, _now: Tick) -> Option<Transmit<Msg<Contribution<P>>>> {
        if !self.owes_send() {
            return None;
        }
        self.sent = true;
        Some(Transmit {
            to: self.peer(),
            msg: Msg {
                op: self.op_id,
                kind: self.kind,
                root: 0,
                tag: Tag::UpCorrection,
                payload: Contribution::input(self.input.clone()),
            },
        })
    }

    fn poll_deadline(&self) -> Option<Tick> {
        None
    }

    fn take_output(&mut self) -> Option<AllreduceOutput<P>> {
        self.output.take()
    }

    fn is_quiescent(&self) -> bool {
        !self.owes_send()
    }

    fn awaiting(&self) -> Option<Rank> {
        (!self.decided).then(|| self.peer())
    }

    fn header(&self) -> Header {
        Header::any_root(self.op_id, self.kind)
    }

    /// Once its one message is out (or its peer failed): the exchange has
    /// nothing else to send.
    fn is_finished(&self) -> bool {
        self.started && !self.owes_send()
    }
}
