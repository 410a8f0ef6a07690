//! FTCO reduce and allreduce (*Tree-based Fault-Tolerant Collective
//! Operations*, Sections 3-4, Algorithms 1-4, Figures 1-4, Appendix D) as
//! one sans-IO core: the up phase (DATA with the partial reduction from
//! the leaves to the root), and for an allreduce the down phase, which is
//! the FTCO broadcast core ([`Ftco`]) started on the up phase's Down and
//! Up sets.
//!
//! See the [module doc](super) for the choices where the paper is vague.

use std::collections::VecDeque;

use crate::error::Error;
use crate::protocol::reduce::Combine;
use crate::protocol::timer::TimerTable;
use crate::protocol::{Event, Header, Leave, Msg, Protocol, Tag, Transmit};
use crate::topology::{multiroot, ring};
use crate::types::{Collective, OpId, Rank, Tick};

use super::cover::{Covers, Piece};
use super::suspicion::{Known, Suspicions};
use super::{Ftco, FtcoPlan};

mod circumvent;
mod data;
mod exchange;

pub use data::{FtcoCollective, FtcoData, FtcoOutput};

/// A partial or the result, and the nodes (virtual) whose inputs it lacks.
type Held<P> = (P, Vec<Rank>);

/// Up-phase timers: the earliest KEEPALIVE to send or answer to wait for,
/// and the DATA sent up.
const ASK: usize = 0;
const WATCH: usize = 1;

/// A node this node waits on for its partial (Algorithm 3's Down, with
/// Algorithm 4's circumventions).
#[derive(Clone, Copy, Debug)]
struct Pending {
    rank: Rank,
    dist: u32,
    /// When to ask it by KEEPALIVE (once f_ETA has passed, plus the plan's
    /// patience; now once circumvented).
    ask_at: Tick,
    /// Asked: suspected if no answer by then.
    deadline: Option<Tick>,
    /// Times it answered "alive, waiting" (each doubles the next wait).
    backoff: u32,
}

/// The DATA sent up and not yet acknowledged (Algorithm 3 line 5; Appendix
/// D's grand-parent fall-back when it is not).
#[derive(Clone, Copy, Debug)]
struct UpWatch {
    rank: Rank,
    dist: u32,
    /// `None`: still to send.
    deadline: Option<Tick>,
}

/// One node's state in one FTCO reduce or allreduce (Sections 3-4).
#[derive(Clone, Debug)]
pub struct FtcoReduce<'p, P, O> {
    plan: &'p FtcoPlan,
    /// This node, relabelled so that the root is 0.
    me: Rank,
    root: Rank,
    op_id: OpId,
    kind: Collective,
    combine: O,
    own: P,
    acc: P,
    covers: Covers,
    pending: Vec<Pending>,
    /// Nodes this node circumvented (virtual).
    suspects: Vec<Rank>,
    /// The partial once complete, and what it misses.
    part: Option<(P, Vec<Rank>)>,
    up: Option<UpWatch>,
    /// Senders of DATA to acknowledge.
    to_ack: VecDeque<Rank>,
    /// Ancestors asking for the partial: answered with DATA.
    to_answer: Vec<Rank>,
    /// KEEPALIVEs answered with ACK (alive, waiting too).
    to_ack_alive: Vec<Rank>,
    timers: TimerTable<2>,
    /// The down phase (allreduce), once the up phase is done: the result
    /// travels with the nodes (virtual) whose inputs it lacks.
    down: Option<Ftco<'p, Held<P>>>,
    /// The up phase is over: the result is known here.
    settled: bool,
    output: Option<FtcoOutput<P>>,
    delivered: bool,
    now: Tick,
    suspicions: Suspicions,
    /// Roots that never fail (virtual ranks `0..roots`): the multi-root
    /// tree's in an allreduce (Section 5.2.1), else the root alone.
    roots: u32,
    /// A root of several: its peers' partials and what each lacks, by root.
    peer_parts: Vec<Option<Held<P>>>,
    /// A root of several: peers its own partial is still to go to.
    to_peers: VecDeque<Rank>,
    /// Failures the engine's detector reported: routed around at once.
    known: Known,
}

impl<'p, P, O> FtcoReduce<'p, P, O>
where
    P: Clone + Send + 'static,
    O: Combine<P>,
{
    /// Node `me`'s core for FTCO reduce or allreduce (`kind`) `op_id` to
    /// (and, for an allreduce, from) `root`, contributing `input`,
    /// combining by `combine` (Section 4, Algorithm 3, Figures 1-2).
    /// Errors on a rank out of range.
    pub fn new(
        plan: &'p FtcoPlan,
        root: Rank,
        me: Rank,
        op_id: OpId,
        kind: FtcoCollective,
        input: P,
        combine: O,
    ) -> Result<Self, Error> {
        let kind = match kind {
            FtcoCollective::Reduce => Collective::Reduce,
            FtcoCollective::Allreduce => Collective::Allreduce,
            FtcoCollective::Barrier => Collective::Barrier,
        };
        let procs = plan.procs();
        let me = crate::protocol::virtual_rank(procs, root, me)?;
        let roots = match kind {
            Collective::Reduce => 1,
            _ => plan.roots(),
        };
        let pending = plan
            .tree()
            .children(me)
            .iter()
            .filter(|&&c| c >= roots)
            .map(|&c| Pending {
                rank: c,
                dist: 1,
                ask_at: plan.ask_after(plan.up_eta(c)),
                deadline: None,
                backoff: 0,
            })
            .collect();
        let mut core = FtcoReduce {
            plan,
            me,
            root,
            op_id,
            kind,
            combine,
            acc: input.clone(),
            own: input,
            covers: Covers::new(me),
            pending,
            suspects: Vec::new(),
            part: None,
            up: None,
            to_ack: VecDeque::new(),
            to_answer: Vec::new(),
            to_ack_alive: Vec::new(),
            timers: TimerTable::new(),
            down: None,
            settled: false,
            output: None,
            delivered: false,
            now: 0,
            suspicions: Suspicions::default(),
            roots,
            peer_parts: Vec::new(),
            to_peers: VecDeque::new(),
            known: Known::default(),
        };
        if roots > 1 && me < roots {
            core.peer_parts = vec![None; roots as usize];
        }
        core.progress();
        Ok(core)
    }

    /// The same core with `combine` swapped for `other`. A core that has
    /// delivered never combines again (its partial is complete, and late
    /// DATA is only acknowledged), so an engine keeping it after the call
    /// that lent the function, to answer KEEPALIVEs, can swap in any.
    pub fn with_op<O2: Combine<P>>(self, other: O2) -> FtcoReduce<'p, P, O2> {
        FtcoReduce {
            plan: self.plan,
            me: self.me,
            root: self.root,
            op_id: self.op_id,
            kind: self.kind,
            combine: other,
            own: self.own,
            acc: self.acc,
            covers: self.covers,
            pending: self.pending,
            suspects: self.suspects,
            part: self.part,
            up: self.up,
            to_ack: self.to_ack,
            to_answer: self.to_answer,
            to_ack_alive: self.to_ack_alive,
            timers: self.timers,
            down: self.down,
            settled: self.settled,
            output: self.output,
            delivered: self.delivered,
            now: self.now,
            suspicions: self.suspicions,
            roots: self.roots,
            peer_parts: self.peer_parts,
            to_peers: self.to_peers,
            known: self.known,
        }
    }

    /// Timeouts fired: a DATA or KEEPALIVE unanswered past f_timeout, in
    /// both phases.
    pub fn timeouts(&self) -> u32 {
        self.suspicions.count() + self.down.as_ref().map_or(0, |d| d.timeouts())
    }

    /// Suspicions this core raised in both phases, as (real rank, tick): a
    /// live one among them is a false suspicion.
    pub fn suspicions(&self) -> impl Iterator<Item = (Rank, Tick)> + '_ {
        let procs = self.plan.procs();
        let mine = self
            .suspicions
            .iter()
            .map(move |(r, t)| (ring::right(r, self.root, procs), t));
        mine.chain(self.down.iter().flat_map(|d| d.suspicions()))
    }

    /// Suspicions refuted by a later message from the suspect.
    pub fn refuted(&self) -> u32 {
        self.suspicions.refuted() + self.down.as_ref().map_or(0, |d| d.refuted())
    }

    /// The nodes (real ranks) this node's partial does not include, once
    /// it is complete: those it or a node below it circumvented.
    pub fn missing(&self) -> Option<Vec<Rank>> {
        self.part.as_ref().map(|(_, m)| self.real_ranks(m))
    }

    /// Virtual ranks as real ones, ascending.
    fn real_ranks(&self, virtual_ranks: &[Rank]) -> Vec<Rank> {
        let mut real: Vec<Rank> = virtual_ranks.iter().map(|&r| self.real(r)).collect();
        real.sort_unstable();
        real
    }

    fn real(&self, rank: Rank) -> Rank {
        ring::right(rank, self.root, self.plan.procs())
    }

    /// True for a root that never fails (virtual rank): the root, or one
    /// of the multi-root tree's roots in an allreduce.
    fn immune(&self, rank: Rank) -> bool {
        rank < self.roots
    }

    fn msg(&self, tag: Tag, payload: FtcoData<P>) -> Msg<FtcoData<P>> {
        self.header().msg(tag, payload)
    }

    /// Up-phase DATA from `w` (Algorithm 2 lines 12-16, with our routine
    /// for "each value used only once").
    fn on_part(&mut self, w: Rank, value: P, own: P, mut missing: Vec<Rank>) {
        let plan = self.plan;
        if self.exchanges() && w < self.roots {
            // A peer root's partial (Section 5.2.1's clique): roots never
            // fail, so nothing is acknowledged or watched.
            if w != self.me && self.peer_parts[w as usize].is_none() {
                self.peer_parts[w as usize] = Some((value, missing));
                self.try_exchange();
            }
            return;
        }
        if w == self.me || !plan.is_below(w, self.me) {
            return;
        }
        missing.retain(|&m| m != w && plan.is_below(m, w));
        missing.sort_unstable();
        missing.dedup();
        if self.part.is_some() || self.settled {
            // Too late to fold in: acknowledge only what is in (the root
            // acknowledges everything: nothing above it could take it).
            if self.immune(self.me) || self.covers.covers(plan, w) {
                self.to_ack.push_back(w);
            }
            return;
        }
        if !self.covers.overlaps(plan, w, &missing) {
            self.combine.combine(&mut self.acc, &value);
            self.pending.retain(|p| !plan.is_below(p.rank, w));
            self.covers.push(Piece {
                top: w,
                missing,
                whole: true,
            });
        } else if !self.covers.covers(plan, w) {
            self.combine.combine(&mut self.acc, &own);
            self.covers.push(Piece {
                top: w,
                missing: Vec::new(),
                whole: false,
            });
            if let Some(i) = self.pending.iter().position(|p| p.rank == w) {
                self.pending.swap_remove(i);
                self.descend(w);
            }
        }
        self.to_ack.push_back(w);
        self.progress();
    }

    /// Completes the partial once nobody is pending (Algorithm 3 lines
    /// 2-7): the root has the result, another node sends it up.
    fn progress(&mut self) {
        if self.part.is_some() || self.settled || !self.pending.is_empty() {
            self.rearm();
            return;
        }
        let missing = self.covers.missing(self.plan, &self.suspects);
        self.part = Some((self.acc.clone(), missing));
        if self.exchanges() {
            self.to_peers = multiroot::peers(self.me, self.roots).collect();
            self.try_exchange();
            self.rearm();
            return;
        }
        match self.plan.live_above(self.me, 0, &self.known, self.roots) {
            Some((rank, dist)) => {
                self.up = Some(UpWatch {
                    rank,
                    dist,
                    deadline: None,
                })
            }
            None => {
                let result = self.part.clone();
                self.settle(result, None);
            }
        }
        self.rearm();
    }

    /// The up phase is over here: `result` known (the root, or a Result
    /// DATA came), or the DATA sent up acknowledged by `up`. A reduce's
    /// root delivers; an allreduce starts its down phase.
    fn settle(&mut self, result: Option<Held<P>>, up: Option<(Rank, u32)>) {
        if result.is_some() {
            self.settled = true;
            self.pending.clear();
            self.up = None;
        }
        if self.kind == Collective::Reduce {
            if self.output.is_none() && !self.delivered {
                self.output = Some(match result {
                    Some((value, missing)) => FtcoOutput::Value {
                        missing: self.real_ranks(&missing),
                        value,
                    },
                    None => FtcoOutput::Contributed,
                });
            }
            return;
        }
        if self.down.is_some() {
            return;
        }
        let plan = self.plan;
        let depth = plan.depth(self.me);
        // The tree's send order first (fault-free, the plain broadcast's),
        // then the nodes circumvention brought, level by level.
        let mut targets: Vec<(Rank, u32)> = self
            .covers
            .pieces()
            .iter()
            .map(|p| (p.top, plan.depth(p.top) - depth))
            .collect();
        let tree = plan.tree();
        let place = |t: Rank| {
            let siblings = tree.parent(t).map_or(&[][..], |p| tree.children(p));
            siblings.iter().position(|&c| c == t).unwrap_or(0)
        };
        targets.sort_by_key(|&(t, dist)| (dist, place(t), t));
        let patience = plan.ask_after(plan.result_eta(self.me));
        let down = Ftco::resume(
            plan,
            self.root,
            self.me,
            self.op_id,
            if self.immune(self.me) { result } else { None },
            targets,
            up,
            patience,
        )
        .with_immune_roots(self.roots);
        let mut down = down;
        for failed in self.known.iter() {
            down.handle(self.now, Event::PeerFailed(self.real(failed)));
        }
        self.down = Some(down);
    }

    fn up_has_send(&self) -> bool {
        self.up.is_some_and(|u| u.deadline.is_none())
            || !self.to_peers.is_empty()
            || !self.to_answer.is_empty()
            || !self.to_ack.is_empty()
            || !self.to_ack_alive.is_empty()
            || self
                .pending
                .iter()
                .any(|p| p.deadline.is_none() && p.ask_at <= self.now)
    }
}

impl<P, O> Protocol for FtcoReduce<'_, P, O>
where
    P: Clone + Send + 'static,
    O: Combine<P>,
{
    type Payload = FtcoData<P>;
    type Output = FtcoOutput<P>;

    fn handle(&mut self, now: Tick, event: Event<Msg<FtcoData<P>>>) {
        self.expire(now);
        let (from, msg) = match event {
            Event::Message { from, msg } => (from, msg),
            Event::PeerFailed(r) => {
                if let Some(r) = crate::protocol::virtual_peer(self.plan.procs(), self.root, r) {
                    self.peer_failed(r);
                }
                return;
            }
            _ => {
                if let Some(down) = self.down.as_mut() {
                    down.handle(now, Event::Timer);
                }
                return;
            }
        };
        let real = from;
        let Some(from) = crate::protocol::virtual_peer(self.plan.procs(), self.root, from) else {
            return;
        };
        self.suspicions.heard(from);
        let plan = self.plan;
        let from_above = from != self.me && plan.is_below(self.me, from);
        // What the down phase (the broadcast core) is handed.
        let (op, root) = (self.op_id, self.root);
        let down_msg = |tag, v: Option<Held<P>>| Event::Message {
            from: real,
            msg: Msg::broadcast(op, root, tag, v),
        };
        match (msg.tag, msg.payload) {
            (
                Tag::Upward,
                FtcoData::Part {
                    value,
                    own,
                    missing,
                },
            ) => self.on_part(from, value, own, missing),
            (Tag::Tree, FtcoData::Result { value, missing }) if self.kind != Collective::Reduce => {
                let v = (value, missing);
                if !self.settled {
                    let dist = plan.depth(self.me).saturating_sub(plan.depth(from)).max(1);
                    self.settle(Some(v.clone()), Some((from, dist)));
                    self.rearm();
                }
                if let Some(down) = self.down.as_mut() {
                    down.handle(now, down_msg(Tag::Tree, Some(v)));
                }
            }
            (Tag::KeepAlive, _) => {
                let down = self.down.as_mut().filter(|_| self.settled || !from_above);
                if let Some(down) = down {
                    // The result, or a wait for it: the down phase answers.
                    down.handle(now, down_msg(Tag::KeepAlive, None));
                } else if from_above && self.part.is_some() {
                    // "Responds with DATA" (Section 4): the partial.
                    if !self.to_answer.contains(&from) {
                        self.to_answer.push(from);
                    }
                } else if !self.to_ack_alive.contains(&from) {
                    // Algorithm 4 lines 12-17: alive, waiting too.
                    self.to_ack_alive.push(from);
                }
            }
            (Tag::Ack, _) => {
                if let Some(up) = self.up.filter(|u| u.rank == from && u.deadline.is_some()) {
                    self.up = None;
                    self.settle(None, Some((up.rank, up.dist)));
                }
                if let Some(p) = self.pending.iter_mut().find(|p| p.rank == from) {
                    // Alive and waiting too: ask again at the deadline,
                    // later each time (the module doc).
                    if let Some(d) = p.deadline.take() {
                        let wait = plan.f_timeout(self.me, p.rank, p.dist) << p.backoff;
                        p.ask_at = d + wait - plan.f_timeout(self.me, p.rank, p.dist);
                        p.backoff = (p.backoff + 1).min(16);
                    }
                }
                self.rearm();
                if let Some(down) = self.down.as_mut() {
                    down.handle(now, down_msg(Tag::Ack, None));
                }
            }
            _ => {}
        }
    }

    /// An ACK to a later reduce's, allreduce's or barrier's DATA (up or
    /// down) or KEEPALIVE, half a timeout unit on: this node lives (the
    /// team runs them all with FTCO's reduce).
    fn answer_ahead(&self, kind: Collective, tag: Tag) -> Option<(Tick, Tag, FtcoData<P>)> {
        let asks = matches!(tag, Tag::Upward | Tag::Tree | Tag::KeepAlive);
        let reduces = matches!(
            kind,
            Collective::Reduce | Collective::Allreduce | Collective::Barrier
        );
        (asks && reduces).then(|| (self.plan.timeout() / 2, Tag::Ack, FtcoData::Empty))
    }

    fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<FtcoData<P>>>> {
        self.expire(now);
        let part = |s: &Self| {
            let (value, missing) = s.part.clone().expect("checked by the caller");
            FtcoData::Part {
                value,
                own: s.own.clone(),
                missing,
            }
        };
        // DATA first (Algorithm 2's priorities; Algorithm 3 before 4).
        if let Some(q) = self.to_peers.pop_front() {
            return Some(Transmit {
                to: self.real(q),
                msg: self.msg(Tag::Upward, part(self)),
            });
        }
        if let Some(up) = self.up.as_mut().filter(|u| u.deadline.is_none()) {
            let (rank, dist) = (up.rank, up.dist);
            up.deadline = Some(now + self.plan.f_timeout(self.me, rank, dist) + 1);
            self.rearm();
            return Some(Transmit {
                to: self.real(rank),
                msg: self.msg(Tag::Upward, part(self)),
            });
        }
        if self.part.is_some() {
            if let Some(to) = self.to_answer.pop() {
                return Some(Transmit {
                    to: self.real(to),
                    msg: self.msg(Tag::Upward, part(self)),
                });
            }
        }
        if let Some(down) = self.down.as_mut() {
            if let Some(t) = down.poll_transmit(now) {
                let msg = t.msg.map(|v| {
                    v.map_or(FtcoData::Empty, |(value, missing)| FtcoData::Result {
                        value,
                        missing,
                    })
                });
                let (kind, root) = (self.kind, self.root);
                return Some(Transmit {
                    to: t.to,
                    msg: Msg { kind, root, ..msg },
                });
            }
        }
        // Then ACKs, then KEEPALIVEs (Algorithm 4's order).
        if let Some(to) = self.to_ack.pop_front().or_else(|| self.to_ack_alive.pop()) {
            return Some(Transmit {
                to: self.real(to),
                msg: self.msg(Tag::Ack, FtcoData::Empty),
            });
        }
        let me = self.me;
        let plan = self.plan;
        let p = self
            .pending
            .iter_mut()
            .filter(|p| p.deadline.is_none() && p.ask_at <= now)
            .min_by_key(|p| (p.ask_at, p.rank))?;
        p.deadline = Some(now + plan.f_timeout(me, p.rank, p.dist) + 1);
        let to = p.rank;
        self.rearm();
        Some(Transmit {
            to: self.real(to),
            msg: self.msg(Tag::KeepAlive, FtcoData::Empty),
        })
    }

    fn poll_deadline(&self) -> Option<Tick> {
        let down = self.down.as_ref().and_then(|d| d.poll_deadline());
        match (self.timers.next(), down) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn take_output(&mut self) -> Option<FtcoOutput<P>> {
        if self.delivered {
            return None;
        }
        let out = match self.down.as_mut() {
            Some(down) => down
                .take_output()
                .map(|(value, missing)| FtcoOutput::Value {
                    missing: self.real_ranks(&missing),
                    value,
                }),
            None => self.output.take(),
        };
        self.delivered = out.is_some();
        out
    }

    fn is_quiescent(&self) -> bool {
        !self.up_has_send()
            && self.pending.is_empty()
            && self.timers.next().is_none()
            && self.down.as_ref().map_or(true, |d| d.is_quiescent())
    }

    fn header(&self) -> Header {
        Header::rooted(self.op_id, self.kind, self.root)
    }

    /// Once delivered with nothing left to send or wait for: a node stays
    /// (lingers) to answer KEEPALIVEs with its partial or the result.
    fn may_return(&self) -> Leave {
        Leave::once(self.delivered && self.is_quiescent())
    }

    /// Never: a KEEPALIVE may still ask for the partial or the result
    /// (Section 4: nodes "remain active throughout").
    fn is_finished(&self) -> bool {
        false
    }

    fn uses_time(&self) -> bool {
        true
    }

    /// The latest node its timeouts suspected and that has not been heard
    /// from since (then the down phase's): see [`Ftco`]'s.
    fn awaiting(&self) -> Option<Rank> {
        match self.suspicions.unheard() {
            Some(r) => Some(self.real(r)),
            None => self.down.as_ref().and_then(|d| d.awaiting()),
        }
    }
}

#[cfg(test)]
mod tests;
