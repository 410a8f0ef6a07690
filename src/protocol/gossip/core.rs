//! The gossip phase and opportunistic and checked corrected gossip
//! (Hoefler et al., IPDPS 2017, Sections III-A to III-C, Algorithms 1-2).
//!
//! **Gossip phase** (shared with FCG, `super::phase`). The root is
//! colored at the start. Every colored node sends the value to a uniformly
//! random other node, one message per send slot, until the global time T;
//! the phase lasts until T + L + O, so that messages in flight arrive (or
//! until T, flogsim's convention: [`PhaseEnd`](super::PhaseEnd)). A node
//! colored in the phase is a *g-node*; below, T + L + O is the phase's end.
//!
//! **Correction.** [`GossipCorrection::None`] is the paper's GOS baseline:
//! nothing after the phase (weakly consistent). With
//! [`GossipCorrection::Opportunistic`] (OCG), from T + L + O every g-node
//! sends to its ring neighbours at distance 1, 2, 3, ... forward and
//! backward alternately (i + 1, i - 1, i + 2, i - 2, ...) until T + L + O +
//! C; a node colored by correction (a *c-node*) sends nothing. If the
//! longest uncolored chain is K, a correction time C of KO + L + O reaches
//! it (Claim 2; the paper adds one O), which
//! [`GossipModel`](super::GossipModel) estimates. With
//! [`GossipCorrection::Checked`] (CCG, Section III-C, Algorithm 2) each
//! side of a g-node's sweep goes on until it has sent to the nearest g-node
//! it heard a correction message from on that side: the corrected trees'
//! checked correction ([`Sweep`]), which reaches every live node whatever
//! T and the dead set, if no node fails during the correction (Claim 3).
//! Both sweeps start to the left and alternate (the paper starts forward,
//! i + 1; the ring is symmetric).
//!
//! Time: the core reads T from the `now` its engine hands it, virtual time
//! in the simulator, where every node shares one clock (the paper's
//! messages carry a time counter for nodes that do not).

use crate::error::{ConfigError, Error};
use crate::protocol::correction::{Correction, Sweep};
use crate::protocol::random::RandomStream;
use crate::protocol::{Event, Header, Leave, Msg, Protocol, Tag, Transmit};
use crate::topology::ring;
use crate::types::{OpId, Rank, Tick};

use super::phase::Phase;
use super::{GossipCorrection, GossipPlan};

/// One node's state in one gossip broadcast.
#[derive(Clone, Debug)]
pub struct Gossip<'p, P> {
    plan: &'p GossipPlan,
    phase: Phase<P>,
    /// The ring correction's state (a g-node's only).
    sweep: Sweep,
    now: Tick,
}

impl<'p, P: Clone + Send + 'static> Gossip<'p, P> {
    /// Node `me`'s core for operation `op`, drawing its peers from `rng`;
    /// the root passes the value. A plan with
    /// [`GossipCorrection::FailureProof`] is refused: FCG has its own core,
    /// [`Fcg`](super::Fcg).
    pub fn new(
        plan: &'p GossipPlan,
        root: Rank,
        me: Rank,
        op: OpId,
        value: Option<P>,
        rng: RandomStream,
    ) -> Result<Self, Error> {
        if let GossipCorrection::FailureProof { .. } = plan.correction() {
            return Err(ConfigError::BadGossip {
                why: "FCG plans run on the Fcg core, not Gossip".to_string(),
            }
            .into());
        }
        Ok(Gossip {
            plan,
            phase: Phase::new(plan, root, me, op, value, rng)?,
            sweep: Sweep::new(),
            now: 0,
        })
    }

    /// True for a node colored in the gossip phase (or the root).
    pub fn is_g_node(&self) -> bool {
        self.phase.g_node
    }

    /// The correction's sweep kind; `None` for GOS.
    fn kind(&self) -> Option<Correction> {
        self.plan.correction().sweep()
    }

    /// Correction sends still ahead at `now`: before the correction's end
    /// (OCG), and the sweep not finished (the ring covered, or CCG's
    /// nearest g-nodes reached on both sides).
    fn correction_left(&self, now: Tick) -> bool {
        self.kind().is_some_and(|kind| {
            now < self.plan.correction_end() && !self.sweep.finished(kind, self.plan.procs())
        })
    }

    /// A g-node that may correct at `now`.
    fn correcting(&self, now: Tick) -> bool {
        self.phase.g_node
            && self.phase.value.is_some()
            && now >= self.plan.correction_start()
            && self.correction_left(now)
    }

    /// Sends still ahead of this node: gossip before T, or correction.
    fn sends_left(&self) -> bool {
        self.phase.value.is_some()
            && self.phase.g_node
            && (self.now < self.plan.stop() || self.correction_left(self.now))
    }
}

impl<P: Clone + Send + 'static> Protocol for Gossip<'_, P> {
    type Payload = P;
    type Output = P;

    fn handle(&mut self, now: Tick, event: Event<Msg<P>>) {
        self.now = self.now.max(now);
        if let Event::Message { from, msg } = event {
            if msg.tag.is_correction() {
                if let Some(kind) = self.kind() {
                    let procs = self.plan.procs();
                    let (me, from) = (self.phase.me, self.phase.relabel(from, procs));
                    let dist = if msg.tag.from_right() {
                        ring::left(from, me, procs)
                    } else {
                        ring::left(me, from, procs)
                    };
                    self.sweep.observe(kind, msg.tag, dist, self.phase.g_node);
                }
            }
            self.phase.color(now, msg.tag, &msg.payload, self.plan);
        }
    }

    fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<P>>> {
        self.now = self.now.max(now);
        if let Some(to) = self.phase.gossip_target(now, self.plan) {
            let value = self.phase.value.clone()?;
            let msg = self.phase.msg(Tag::Gossip, value);
            return Some(Transmit { to, msg });
        }
        if !self.correcting(now) {
            return None;
        }
        let kind = self.kind()?;
        let procs = self.plan.procs();
        let step = self.sweep.next(kind, now, procs)?;
        let to = match step.tag {
            Tag::Rightward => ring::right(self.phase.me, step.dist, procs),
            _ => ring::left(self.phase.me, step.dist, procs),
        };
        let msg = self.phase.msg(step.tag, self.phase.value.clone()?);
        Some(Transmit {
            to: self.phase.real(to, procs),
            msg,
        })
    }

    fn poll_deadline(&self) -> Option<Tick> {
        // A g-node idle between T and T + L + O wakes to correct.
        let start = self.plan.correction_start();
        (self.now < start && self.correcting(start)).then_some(start)
    }

    fn take_output(&mut self) -> Option<P> {
        self.phase.output.take()
    }

    fn is_quiescent(&self) -> bool {
        let now = self.now;
        !self.phase.gossiping(now, self.plan)
            && !self.correcting(now)
            && self.poll_deadline().is_none()
    }

    fn header(&self) -> Header {
        self.phase.header()
    }

    fn may_return(&self) -> Leave {
        Leave::once(self.is_finished())
    }

    /// Once colored and past its part: a c-node at once, a g-node at the
    /// end of its correction (GOS: of the phase).
    fn is_finished(&self) -> bool {
        self.phase.value.is_some() && !self.sends_left()
    }

    fn uses_time(&self) -> bool {
        true
    }

    fn output_from_root(&self) -> bool {
        self.phase.value.is_none()
    }
}

/// Its only deadline is the correction's start, a wait for messages in
/// flight.
impl<P: Clone + Send + 'static> super::SlotTimed for Gossip<'_, P> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Collective, LogP};

    const UNIT: LogP = LogP {
        latency: 1,
        overhead: 1,
    };

    /// The gossip phase stops exactly at T: a g-node polled at every tick
    /// sends gossip at every tick before T and none at or after it, then
    /// (OCG) correction from T + L + O until T + L + O + C, then nothing.
    #[test]
    fn gossip_stops_exactly_at_t() {
        let (stop, duration) = (7, 4);
        let ocg = GossipCorrection::Opportunistic { duration };
        let plan = GossipPlan::new(16, UNIT, stop, ocg).unwrap();
        let rng = RandomStream::for_rank(3, 0, 0);
        let mut root = Gossip::new(&plan, 0, 0, 0, Some(1u8), rng).unwrap();
        root.handle(0, Event::Start);
        let mut sends = Vec::new();
        for now in 0..30 {
            if let Some(tx) = root.poll_transmit(now) {
                sends.push((now, tx.msg.tag));
            }
        }
        let gossip = crate::protocol::gossip::gossip_ticks(&sends);
        assert_eq!(gossip, (0..stop).collect::<Vec<_>>());
        let start = plan.correction_start();
        assert!(sends
            .iter()
            .filter(|(_, t)| *t != Tag::Gossip)
            .all(|&(n, t)| t.is_correction() && (start..start + duration).contains(&n)));
        assert_eq!(sends.len() as Tick, stop + duration);
        assert!(root.is_finished());
    }

    /// A node first colored by a correction message is a c-node: it
    /// delivers and sends nothing.
    #[test]
    fn a_c_node_delivers_and_stays_silent() {
        let plan = GossipPlan::new(16, UNIT, 5, GossipCorrection::Checked).unwrap();
        let rng = RandomStream::for_rank(3, 4, 0);
        let mut node = Gossip::new(&plan, 0, 4, 0, None::<u8>, rng).unwrap();
        node.handle(0, Event::Start);
        let msg = Msg {
            op: 0,
            kind: Collective::Broadcast,
            root: 0,
            tag: Tag::Rightward,
            payload: 9u8,
        };
        node.handle(plan.correction_start() + 3, Event::Message { from: 3, msg });
        assert_eq!(node.take_output(), Some(9));
        assert!(!node.is_g_node());
        assert!((0..40).all(|now| node.poll_transmit(now + 8).is_none()));
        assert!(node.is_finished());
    }
}
