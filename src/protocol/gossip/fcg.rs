//! Failure-proof corrected gossip, FCG (Hoefler et al., IPDPS 2017,
//! Section III-D, Algorithm 3 of Appendix A).
//!
//! **Guarantee** (Claim 4, Corollary 3): integrity (only the root's value is
//! delivered), no duplication, and strong consistency with f(a) = a: if at
//! most f nodes fail during the correction, then at the end either every
//! live node has delivered or none has (and if the root lives, all have),
//! whatever T and whatever nodes died before the operation or during the
//! gossip phase. Every node that receives a message terminates (Corollary
//! 2): a g-node after at most 4(N - 1) correction sends and N - 1 SOS
//! sends, a c-node at once or after its SOS timeout.
//!
//! **Gossip phase**: the one of GOS, OCG and CCG (`super::phase`).
//!
//! **Correction of a g-node** (lines 15-28). From T + L + O it sends
//! backward (<, to i - 1, i - 2, ...) and forward (>, to i + 1, ...)
//! alternately, backward first as the CCG core does, one message per send
//! slot; the slot of a stopped direction passes idle for one O (the pacing
//! the paper's analysis assumes: "we wait O"), so a lone open direction
//! does not outrun what the other g-nodes can tell. It keeps k_<, k_>: the up to f + 1 nearest g-nodes known to be
//! alive in each direction, learnt from the sources of correction messages
//! and from the arrays they carry (lines 21-22): a forward message comes
//! from behind and carries its sender's k_<, merged into the receiver's
//! k_<; a backward message carries k_>, merged into k_>. Transitive
//! knowledge is only ever about nodes that sent a correction message, so
//! about g-nodes alive at the correction's start.
//!
//! Our reading of lines 24-25, where the extraction is garbled and the
//! text says "learns about f other g-nodes": a direction is *complete* once
//! its array holds f + 1 g-nodes other than the node itself (line 24's
//! `|k_dir| > f`; Lemma 2 and Observation 1 need f + 1, since f of them may
//! fail). When k_> becomes complete the node starts the finalization round
//! backward (its backward offset restarts at 1; the backward messages carry
//! the complete k_>), and symmetrically for k_<. A direction *stops* once
//! its array is complete and the node has sent to its (f + 1)-th nearest
//! known g-node there (line 25: offset beyond that distance); a restart
//! reopens it. The node terminates once both directions are stopped, which
//! implies both finalization rounds ran to their (f + 1)-th g-node. If a
//! direction still open has covered all N - 1 other nodes (a full loop of
//! the ring without f + 1 g-nodes, line 28), the node enters SOS.
//!
//! **c-nodes** (lines 11-14): a node first colored by a correction message
//! keeps the set of distinct g-nodes it has heard of (sources and carried
//! arrays); once it holds f + 1 it exits. It never sends a correction
//! message. If [`GossipCorrection::FailureProof::timeout`] ticks pass after
//! its first message without that, it enters SOS.
//!
//! **SOS** (lines 8-10): send the value to every other node (in ring
//! order), then exit. A node that receives an SOS message and has not
//! exited enters SOS too (an uncolored node is colored by it).
//!
//! **Delivery and return**: the output is given as soon as the node has the
//! value (its coloring time, the metric of every gossip variant); the call
//! may return ([`Protocol::may_return`]) only when the node exits, the
//! paper's delivery point.
//!
//! **Messages** carry a [`Known`] array of at most f + 1 ≤ 8 ranks, a fixed
//! array: no allocation per message, generic over the value payload.

use crate::error::{ConfigError, Error};
use crate::protocol::random::RandomStream;
use crate::protocol::{Event, Header, Leave, Msg, Protocol, Tag, Transmit};
use crate::topology::ring;
use crate::types::{LogP, OpId, Rank, Tick};

use super::phase::Phase;
use super::{GossipCorrection, GossipPlan, MAX_FCG_FAULTS};

/// The capacity of a [`Known`] array: f + 1 for the largest f.
pub const KNOWN_CAPACITY: usize = MAX_FCG_FAULTS as usize + 1;

/// The default SOS timeout of a c-node for `procs` nodes in `logp`:
/// (8N + 2)O + L, a bound on the fault-free correction as a c-node sees it.
/// A g-node sends at most 2(N - 1) correction messages per direction (its
/// first sweep and one finalization round, each at most the ring) back to
/// back, one every O, so every correction send has started within
/// 4(N - 1)O of T + L + O, and arrived within O + L more; a node receives
/// at most four of them from each other g-node, one per O, so all have been
/// taken within 4N·O more. A c-node, colored at T + L + O or later, that
/// has not heard of f + 1 g-nodes by then never will from the sweeps: its
/// SOS is needed, and never premature.
pub fn sos_timeout(procs: u32, logp: LogP) -> Tick {
    (8 * Tick::from(procs) + 2) * logp.overhead + logp.latency
}

/// Up to [`KNOWN_CAPACITY`] distinct g-nodes (ranks relabelled so that the
/// root is 0), as a correction message carries them: a fixed array, `Copy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Known {
    len: u8,
    ids: [Rank; KNOWN_CAPACITY],
}

impl Known {
    /// No g-node.
    pub fn new() -> Self {
        Known::default()
    }

    /// The array of `ids` (as a transport that copies messages between
    /// processes rebuilds it): `None` if they are more than
    /// [`KNOWN_CAPACITY`] or not distinct, which no core sends.
    pub fn from_slice(ids: &[Rank]) -> Option<Known> {
        if ids.len() > KNOWN_CAPACITY {
            return None;
        }
        let mut known = Known::new();
        for (i, &id) in ids.iter().enumerate() {
            if ids[..i].contains(&id) {
                return None;
            }
            known.ids[i] = id;
        }
        known.len = ids.len() as u8;
        Some(known)
    }

    /// The g-nodes, nearest first in the direction the message travels
    /// against (the sender's view).
    pub fn as_slice(&self) -> &[Rank] {
        &self.ids[..usize::from(self.len)]
    }

    /// How many.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// True if it names no g-node.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// What an FCG message carries besides its header: the value, whether it
/// is an SOS message, and (correction messages) the sender's known g-nodes
/// in the direction it comes from: k_< on a forward message, k_> on a
/// backward one (Algorithm 3, line 27).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FcgPayload<P> {
    /// The broadcast value.
    pub value: P,
    /// An SOS message (lines 8-10): the receiver enters SOS.
    pub sos: bool,
    /// The sender's up to f + 1 nearest known g-nodes behind the receiver
    /// (as seen along the message's direction).
    pub known: Known,
}

/// Why a node entered SOS (Algorithm 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SosCause {
    /// A g-node's full loop of the ring without f + 1 g-nodes in a
    /// direction (line 28).
    Loop,
    /// A c-node's timeout (line 14).
    Timeout,
    /// An SOS message (line 23, and line 8 for c-nodes).
    Message,
}

/// Backward (<, to lower ranks): [`Tag::Leftward`].
const BACK: usize = 0;
/// Forward (>, to higher ranks): [`Tag::Rightward`].
const FWD: usize = 1;

/// Up to f + 1 ring distances from the node, ascending and distinct.
#[derive(Clone, Copy, Debug, Default)]
struct Near {
    len: u8,
    dist: [u32; KNOWN_CAPACITY],
}

impl Near {
    fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Inserts `d` (not 0: the node itself) keeping the `cap` nearest.
    fn insert(&mut self, d: u32, cap: usize) {
        let len = self.len();
        let held = &self.dist[..len];
        if d == 0 || held.contains(&d) || (len == cap && held[len - 1] < d) {
            return;
        }
        let mut i = if len == cap { len - 1 } else { len };
        while i > 0 && self.dist[i - 1] > d {
            self.dist[i] = self.dist[i - 1];
            i -= 1;
        }
        self.dist[i] = d;
        if len < cap {
            self.len += 1;
        }
    }
}

/// Where a node is in the algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Uncolored, gossiping, correcting (g-node) or waiting (c-node).
    Running,
    /// Exited without SOS: a c-node that heard of f + 1 g-nodes, a g-node
    /// stopped in both directions.
    Exited,
    /// In SOS: the next ring distance to send to (N: done).
    Sos(u32),
}

/// One node's state in one FCG broadcast (Section III-D, Algorithm 3).
#[derive(Clone, Debug)]
pub struct Fcg<'p, P> {
    plan: &'p GossipPlan,
    phase: Phase<P>,
    /// f + 1: how many g-nodes complete a direction (or free a c-node).
    need: u8,
    stage: Stage,
    /// Next ring distance to send to, backward and forward.
    off: [u32; 2],
    /// k_< and k_> as distances; a c-node's set of g-nodes in `near[0]`
    /// (as forward distances).
    near: [Near; 2],
    /// The next correction send goes backward if both directions are open.
    back_next: bool,
    /// A c-node's SOS deadline.
    sos_at: Tick,
    /// A g-node's idle slot ends (a stopped direction's turn).
    idle_until: Tick,
    /// Why it entered SOS, if it did (for the metrics).
    sos: Option<SosCause>,
    now: Tick,
}

impl<'p, P: Clone + Send + 'static> Fcg<'p, P> {
    /// Node `me`'s core for operation `op` of `plan`, drawing its gossip
    /// peers from `rng`; the root passes the value. Typed errors for ranks
    /// out of range, a root without value, and a plan whose correction is
    /// not [`GossipCorrection::FailureProof`].
    pub fn new(
        plan: &'p GossipPlan,
        root: Rank,
        me: Rank,
        op: OpId,
        value: Option<P>,
        rng: RandomStream,
    ) -> Result<Self, Error> {
        let GossipCorrection::FailureProof { f, .. } = plan.correction() else {
            return Err(ConfigError::BadGossip {
                why: "the Fcg core needs a plan with the FCG correction".to_string(),
            }
            .into());
        };
        Ok(Fcg {
            plan,
            phase: Phase::new(plan, root, me, op, value, rng)?,
            need: f + 1,
            stage: Stage::Running,
            off: [1, 1],
            near: [Near::default(); 2],
            back_next: true,
            sos_at: Tick::MAX,
            idle_until: 0,
            sos: None,
            now: 0,
        })
    }

    /// True for a node colored in the gossip phase (or the root).
    pub fn is_g_node(&self) -> bool {
        self.phase.g_node
    }

    /// True if this node entered SOS (by its own loop or timeout, or by an
    /// SOS message).
    pub fn entered_sos(&self) -> bool {
        self.sos.is_some()
    }

    /// Why this node entered SOS, if it did.
    pub fn sos_cause(&self) -> Option<SosCause> {
        self.sos
    }

    /// True once the node has exited: without SOS (a c-node that heard of
    /// f + 1 g-nodes, a g-node stopped in both directions), or after its
    /// SOS sends.
    pub fn exited(&self) -> bool {
        match self.stage {
            Stage::Exited => true,
            Stage::Sos(next) => next >= self.plan.procs(),
            Stage::Running => false,
        }
    }

    fn timeout(&self) -> Tick {
        match self.plan.correction() {
            GossipCorrection::FailureProof { timeout, .. } => timeout,
            _ => Tick::MAX,
        }
    }

    /// True once direction `d` is complete and sent past its (f + 1)-th
    /// nearest known g-node (line 25).
    fn stopped(&self, d: usize) -> bool {
        let near = &self.near[d];
        let need = usize::from(self.need);
        near.len() >= need && self.off[d] > near.dist[need - 1]
    }

    /// A g-node's termination (line 18): stopped both ways.
    fn settle(&mut self) {
        if self.stage == Stage::Running
            && self.phase.g_node
            && self.stopped(BACK)
            && self.stopped(FWD)
        {
            self.stage = Stage::Exited;
        }
    }

    fn enter_sos(&mut self, cause: SosCause) {
        if self.stage == Stage::Running {
            self.stage = Stage::Sos(1);
            self.sos = Some(cause);
        }
    }

    /// Ring distance of relabelled node `x` from this node in direction `d`.
    fn dist(&self, d: usize, x: Rank) -> u32 {
        let (me, procs) = (self.phase.me, self.plan.procs());
        if d == BACK {
            ring::left(me, x, procs)
        } else {
            ring::left(x, me, procs)
        }
    }

    /// Lines 12-13 and 20-24: what a correction message from relabelled
    /// node `src` travelling `tag` teaches this node.
    fn learn(&mut self, tag: Tag, src: Rank, known: &Known) {
        let need = usize::from(self.need);
        if !self.phase.g_node {
            // A c-node: a set of distinct g-nodes, any direction.
            for &x in std::iter::once(&src).chain(known.as_slice()) {
                let d = self.dist(FWD, x);
                self.near[0].insert(d, need);
            }
            if self.near[0].len() >= need {
                self.stage = Stage::Exited;
            }
            return;
        }
        // A forward message comes from behind: k_<; a backward one: k_>.
        let d = if tag == Tag::Rightward { BACK } else { FWD };
        let before = self.near[d].len();
        for &x in std::iter::once(&src).chain(known.as_slice()) {
            let dist = self.dist(d, x);
            self.near[d].insert(dist, need);
        }
        if before < need && self.near[d].len() >= need {
            // Line 24: the finalization round in the other direction.
            self.off[1 - d] = 1;
        }
        self.settle();
    }

    fn receive(&mut self, now: Tick, from: Rank, msg: Msg<FcgPayload<P>>) {
        if self.stage != Stage::Running {
            return;
        }
        let colored = self
            .phase
            .color(now, msg.tag, &msg.payload.value, self.plan);
        if colored && !self.phase.g_node {
            self.sos_at = now.saturating_add(self.timeout());
        }
        if msg.payload.sos {
            self.enter_sos(SosCause::Message);
        } else if msg.tag.is_correction() {
            let src = self.phase.relabel(from, self.plan.procs());
            self.learn(msg.tag, src, &msg.payload.known);
        }
    }

    /// The known g-nodes of direction `d` as relabelled ranks.
    fn known(&self, d: usize) -> Known {
        let (me, procs) = (self.phase.me, self.plan.procs());
        let near = &self.near[d];
        let mut k = Known {
            len: near.len,
            ids: [0; KNOWN_CAPACITY],
        };
        for (id, &dist) in k.ids.iter_mut().zip(&near.dist[..near.len()]) {
            *id = if d == BACK {
                ring::left(me, dist, procs)
            } else {
                ring::right(me, dist, procs)
            };
        }
        k
    }

    fn send(
        &self,
        to: Rank,
        tag: Tag,
        sos: bool,
        known: Known,
    ) -> Option<Transmit<Msg<FcgPayload<P>>>> {
        let value = self.phase.value.clone()?;
        let payload = FcgPayload { value, sos, known };
        Some(Transmit {
            to: self.phase.real(to, self.plan.procs()),
            msg: self.phase.msg(tag, payload),
        })
    }

    /// A g-node's next correction send (lines 19-28), or SOS.
    fn correct(&mut self, now: Tick) -> Option<Transmit<Msg<FcgPayload<P>>>> {
        if now < self.idle_until {
            // In an idle slot (a message woke the node): wait it out.
            return None;
        }
        let procs = self.plan.procs();
        let open = [!self.stopped(BACK), !self.stopped(FWD)];
        if !open[BACK] && !open[FWD] {
            self.stage = Stage::Exited;
            return None;
        }
        if (open[BACK] && self.off[BACK] >= procs) || (open[FWD] && self.off[FWD] >= procs) {
            // A full loop without f + 1 g-nodes (line 28).
            self.enter_sos(SosCause::Loop);
            return self.sos_send();
        }
        // Backward and forward slots alternate; the slot of a stopped
        // direction passes idle (the paper's analysis: "we wait O").
        let d = if self.back_next { BACK } else { FWD };
        self.back_next = !self.back_next;
        if !open[d] {
            self.idle_until = now + self.plan.logp().overhead;
            return None;
        }
        let dist = self.off[d];
        self.off[d] += 1;
        let me = self.phase.me;
        let (to, tag) = if d == BACK {
            (ring::left(me, dist, procs), Tag::Leftward)
        } else {
            (ring::right(me, dist, procs), Tag::Rightward)
        };
        // A backward message carries k_>, a forward one k_<.
        let known = self.known(1 - d);
        let tx = self.send(to, tag, false, known);
        self.settle();
        tx
    }

    /// The next SOS send (line 9).
    fn sos_send(&mut self) -> Option<Transmit<Msg<FcgPayload<P>>>> {
        let Stage::Sos(next) = self.stage else {
            return None;
        };
        let procs = self.plan.procs();
        if next >= procs {
            return None;
        }
        self.stage = Stage::Sos(next + 1);
        let to = ring::right(self.phase.me, next, procs);
        self.send(to, Tag::Rightward, true, Known::new())
    }
}

impl<P: Clone + Send + 'static> Protocol for Fcg<'_, P> {
    type Payload = FcgPayload<P>;
    type Output = P;

    fn handle(&mut self, now: Tick, event: Event<Msg<FcgPayload<P>>>) {
        self.now = self.now.max(now);
        match event {
            Event::Message { from, msg } => self.receive(now, from, msg),
            Event::Timer if self.waiting_c_node() && now >= self.sos_at => {
                self.enter_sos(SosCause::Timeout)
            }
            _ => {}
        }
    }

    fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<FcgPayload<P>>>> {
        self.now = self.now.max(now);
        match self.stage {
            Stage::Exited => None,
            Stage::Sos(_) => self.sos_send(),
            Stage::Running => {
                if let Some(to) = self.phase.gossip_target(now, self.plan) {
                    return self.send_gossip(to);
                }
                if self.waiting_c_node() && now >= self.sos_at {
                    self.enter_sos(SosCause::Timeout);
                    return self.sos_send();
                }
                if self.phase.g_node
                    && self.phase.value.is_some()
                    && now >= self.plan.correction_start()
                {
                    return self.correct(now);
                }
                None
            }
        }
    }

    fn poll_deadline(&self) -> Option<Tick> {
        if self.stage != Stage::Running || self.phase.value.is_none() {
            return None;
        }
        if !self.phase.g_node {
            return Some(self.sos_at);
        }
        // A g-node idle between T and T + L + O wakes to correct, and
        // one idle in a stopped direction's slot to send the other way.
        let start = self.plan.correction_start();
        if self.now >= self.plan.stop() && self.now < start {
            return Some(start);
        }
        (self.idle_until > self.now).then_some(self.idle_until)
    }

    fn take_output(&mut self) -> Option<P> {
        self.phase.output.take()
    }

    fn is_quiescent(&self) -> bool {
        match self.stage {
            Stage::Exited => true,
            Stage::Sos(next) => next >= self.plan.procs(),
            // Uncolored: silent until a message comes; colored: gossip,
            // correction or a deadline ahead.
            Stage::Running => self.phase.value.is_none(),
        }
    }

    fn header(&self) -> Header {
        self.phase.header()
    }

    /// Once exited (the paper's delivery): not before.
    fn may_return(&self) -> Leave {
        Leave::once(self.is_finished())
    }

    fn is_finished(&self) -> bool {
        self.exited()
    }

    fn uses_time(&self) -> bool {
        true
    }

    fn output_from_root(&self) -> bool {
        self.phase.value.is_none()
    }
}

/// A c-node's wait for word of f + 1 g-nodes is a timeout (it ends in SOS);
/// a g-node's deadlines (the correction's start, an idle slot) are waits
/// in the model's time.
impl<P: Clone + Send + 'static> super::SlotTimed for Fcg<'_, P> {
    fn timeout_pending(&self) -> bool {
        self.waiting_c_node()
    }
}

impl<P: Clone + Send + 'static> Fcg<'_, P> {
    fn waiting_c_node(&self) -> bool {
        self.stage == Stage::Running && !self.phase.g_node && self.phase.value.is_some()
    }

    fn send_gossip(&self, to: Rank) -> Option<Transmit<Msg<FcgPayload<P>>>> {
        let value = self.phase.value.clone()?;
        let payload = FcgPayload {
            value,
            sos: false,
            known: Known::new(),
        };
        Some(Transmit {
            to,
            msg: self.phase.msg(Tag::Gossip, payload),
        })
    }
}

#[cfg(test)]
#[path = "fcg_tests.rs"]
mod tests;
