//! The gossip phase and opportunistic and checked corrected gossip
//! (Hoefler et al., IPDPS 2017, Sections III-A to III-C, Algorithms 1-2).
//!
//! **Gossip phase.** The root is colored at the start. Every colored node
//! sends the value to a uniformly random other node, one message per send
//! slot (the engine spaces a rank's sends by o), until the global time T;
//! the phase lasts until T + L + O, so that messages in flight arrive. A
//! node colored in the phase is a *g-node*. Peers come from the
//! [`RandomStream`] the plan derives from its seed for each rank and
//! operation, so a seed gives the same run in every engine.
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

use crate::error::Error;
use crate::protocol::correction::{Correction, Sweep};
use crate::protocol::random::RandomStream;
use crate::protocol::{Event, Header, Leave, Msg, Protocol, Tag, Transmit};
use crate::topology::ring;
use crate::types::{Collective, LogP, OpId, Rank, Tick};

/// What follows the gossip phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GossipCorrection {
    /// None: GOS, gossip until T only (Section IV's baseline).
    None,
    /// OCG (Section III-B): g-nodes correct in both directions, alternately,
    /// for `duration` ticks after the phase.
    Opportunistic {
        /// C, the correction time.
        duration: Tick,
    },
    /// CCG (Section III-C): g-nodes correct in both directions,
    /// alternately, each side until it has sent to the nearest g-node it
    /// heard a correction message from on that side: the checked
    /// correction of the corrected trees ([`Correction::Checked`]).
    Checked,
}

impl GossipCorrection {
    /// The ring correction a g-node's [`Sweep`] runs; `None` for GOS.
    fn sweep(self) -> Option<Correction> {
        match self {
            GossipCorrection::None => None,
            // Bounded by time, not by distance.
            GossipCorrection::Opportunistic { .. } => {
                Some(Correction::Opportunistic { distance: u32::MAX })
            }
            GossipCorrection::Checked => Some(Correction::Checked),
        }
    }
}

/// What every node of one gossip configuration shares.
#[derive(Clone, Debug)]
pub struct GossipPlan {
    procs: u32,
    logp: LogP,
    /// T: no gossip message starts at or after it.
    stop: Tick,
    correction: GossipCorrection,
}

impl GossipPlan {
    /// A plan for `procs >= 2` nodes in `logp`, gossiping until `stop` (T),
    /// then `correction`.
    pub fn new(
        procs: u32,
        logp: LogP,
        stop: Tick,
        correction: GossipCorrection,
    ) -> Result<Self, crate::error::ConfigError> {
        crate::protocol::gossip::GossipModel::new(procs, procs, logp)?;
        Ok(GossipPlan {
            procs,
            logp,
            stop,
            correction,
        })
    }

    /// T.
    pub fn stop(&self) -> Tick {
        self.stop
    }

    /// N.
    pub fn procs(&self) -> u32 {
        self.procs
    }

    /// The model the plan's times are ticks of.
    pub fn logp(&self) -> LogP {
        self.logp
    }

    /// When the correction starts: T + L + O.
    pub fn correction_start(&self) -> Tick {
        self.stop + self.logp.latency + self.logp.overhead
    }

    /// When the correction ends at the latest: T + L + O + C for OCG, the
    /// phase's end for GOS, never for CCG (it ends by what it hears).
    pub fn correction_end(&self) -> Tick {
        match self.correction {
            GossipCorrection::None => self.correction_start(),
            GossipCorrection::Opportunistic { duration } => self.correction_start() + duration,
            GossipCorrection::Checked => Tick::MAX,
        }
    }

    /// The correction.
    pub fn correction(&self) -> GossipCorrection {
        self.correction
    }
}

/// One node's state in one gossip broadcast.
#[derive(Clone, Debug)]
pub struct Gossip<'p, P> {
    plan: &'p GossipPlan,
    /// This node, relabelled so that the root is 0.
    me: Rank,
    root: Rank,
    op: OpId,
    value: Option<P>,
    /// Colored in the gossip phase (or the root).
    g_node: bool,
    output: Option<P>,
    rng: RandomStream,
    /// The ring correction's state (a g-node's only).
    sweep: Sweep,
    now: Tick,
}

impl<'p, P: Clone + Send + 'static> Gossip<'p, P> {
    /// Node `me`'s core for operation `op`, drawing its peers from `rng`;
    /// the root passes the value.
    pub fn new(
        plan: &'p GossipPlan,
        root: Rank,
        me: Rank,
        op: OpId,
        value: Option<P>,
        rng: RandomStream,
    ) -> Result<Self, Error> {
        let procs = plan.procs;
        for rank in [root, me] {
            if rank >= procs {
                return Err(Error::RankOutOfRange { rank, procs });
            }
        }
        if me == root && value.is_none() {
            return Err(Error::NoRootValue(root));
        }
        Ok(Gossip {
            plan,
            me: ring::left(me, root, procs),
            root,
            op,
            g_node: me == root,
            output: if me == root { value.clone() } else { None },
            value: if me == root { value } else { None },
            rng,
            sweep: Sweep::new(),
            now: 0,
        })
    }

    /// True for a node colored in the gossip phase (or the root).
    pub fn is_g_node(&self) -> bool {
        self.g_node
    }

    fn real(&self, v: Rank) -> Rank {
        ring::right(v, self.root, self.plan.procs)
    }

    /// Correction sends still ahead at `now`: before the correction's end
    /// (OCG), and the sweep not finished (the ring covered, or CCG's
    /// nearest g-nodes reached on both sides).
    fn correction_left(&self, now: Tick) -> bool {
        self.plan.correction.sweep().is_some_and(|kind| {
            now < self.plan.correction_end() && !self.sweep.finished(kind, self.plan.procs)
        })
    }

    /// A g-node that may correct at `now`.
    fn correcting(&self, now: Tick) -> bool {
        self.g_node
            && self.value.is_some()
            && now >= self.plan.correction_start()
            && self.correction_left(now)
    }

    /// Sends still ahead of this node: gossip before T, or correction.
    fn sends_left(&self) -> bool {
        self.value.is_some()
            && self.g_node
            && (self.now < self.plan.stop || self.correction_left(self.now))
    }

    fn msg(&self, tag: Tag, payload: P) -> Msg<P> {
        Msg {
            op: self.op,
            kind: Collective::Broadcast,
            root: self.root,
            tag,
            payload,
        }
    }
}

impl<P: Clone + Send + 'static> Protocol for Gossip<'_, P> {
    type Payload = P;
    type Output = P;

    fn handle(&mut self, now: Tick, event: Event<Msg<P>>) {
        self.now = self.now.max(now);
        if let Event::Message { from, msg } = event {
            if msg.tag.is_correction() {
                if let Some(kind) = self.plan.correction.sweep() {
                    let procs = self.plan.procs;
                    let from = ring::left(from, self.root, procs);
                    let dist = if msg.tag.from_right() {
                        ring::left(from, self.me, procs)
                    } else {
                        ring::left(self.me, from, procs)
                    };
                    self.sweep.observe(kind, msg.tag, dist, self.g_node);
                }
            }
            if self.value.is_none() {
                // A gossip message colors a g-node: the last ones, sent just
                // before T, are taken at T + L + O, the phase's end. A
                // correction message colors a c-node.
                self.g_node = msg.tag == Tag::Gossip && now <= self.plan.correction_start();
                self.output = Some(msg.payload.clone());
                self.value = Some(msg.payload);
            }
        }
    }

    fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<P>>> {
        self.now = self.now.max(now);
        let value = self.value.as_ref()?;
        if self.g_node && now < self.plan.stop {
            let to = self.rng.peer_except(self.me, self.plan.procs);
            return Some(Transmit {
                to: self.real(to),
                msg: self.msg(Tag::Gossip, value.clone()),
            });
        }
        if !self.correcting(now) {
            return None;
        }
        let kind = self.plan.correction.sweep()?;
        let procs = self.plan.procs;
        let step = self.sweep.next(kind, now, procs)?;
        let to = match step.tag {
            Tag::Rightward => ring::right(self.me, step.dist, procs),
            _ => ring::left(self.me, step.dist, procs),
        };
        let msg = self.msg(step.tag, value.clone());
        Some(Transmit {
            to: self.real(to),
            msg,
        })
    }

    fn poll_deadline(&self) -> Option<Tick> {
        // A g-node idle between T and T + L + O wakes to correct.
        let start = self.plan.correction_start();
        (self.now < start && self.correcting(start)).then_some(start)
    }

    fn take_output(&mut self) -> Option<P> {
        self.output.take()
    }

    fn is_quiescent(&self) -> bool {
        let now = self.now;
        let gossiping = self.value.is_some() && self.g_node && now < self.plan.stop;
        !gossiping && !self.correcting(now) && self.poll_deadline().is_none()
    }

    fn header(&self) -> Header {
        Header {
            op: self.op,
            kind: Collective::Broadcast,
            root: Some(self.root),
        }
    }

    fn may_return(&self) -> Leave {
        if self.is_finished() {
            Leave::Now
        } else {
            Leave::Not
        }
    }

    /// Once colored and past its part: a c-node at once, a g-node at the
    /// end of its correction (GOS: of the phase).
    fn is_finished(&self) -> bool {
        self.value.is_some() && !self.sends_left()
    }

    fn uses_time(&self) -> bool {
        true
    }

    fn output_from_root(&self) -> bool {
        self.value.is_none()
    }
}

/// Its only deadline is the correction's start, a wait for messages in
/// flight.
impl<P: Clone + Send + 'static> super::SlotTimed for Gossip<'_, P> {}

#[cfg(test)]
mod tests {
    use super::*;

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
        let gossip: Vec<Tick> = sends
            .iter()
            .filter(|(_, t)| *t == Tag::Gossip)
            .map(|&(n, _)| n)
            .collect();
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
