//! FTCO broadcast: the timeout-based baseline of *Tree-based
//! Fault-Tolerant Collective Operations* (FTCO), Sections 3-4 and
//! Appendices A and D, as a sans-IO core. The paper is written for
//! Allreduce; a broadcast is its down phase (Figure 2) with the ACKs.
//!
//! **Messages** (Section 3, "Message Flow"): DATA ([`Tag::Tree`], the
//! value along the tree), KEEPALIVE ([`Tag::KeepAlive`]) and ACK
//! ([`Tag::Ack`]). A node that has the value sends DATA to its children
//! (send order of the [`Tree`]), then an ACK to whoever sent it the DATA
//! (Figure 2: the ACK overlaps the wait for the children's ACKs, so
//! fault-free delivery is the plain tree's, and completion one ACK hop
//! later). Every DATA it sends is watched: no ACK within the timeout and
//! the target is suspected, and DATA goes to the target's children instead
//! (Algorithm 4 lines 2-10, Figure 3; repeated further down if they are
//! silent too).
//!
//! **Disruptions** (Section 4, "Data Propagation Disruptions"; Appendix D's
//! grand-parent fall-back): a node without the value once its expected
//! arrival time (fault-free coloring time, f_ETA) has passed, plus the
//! plan's patience ([`FtcoPlan::with_patience`](super::FtcoPlan::with_patience)),
//! sends KEEPALIVE to its parent. An ACK says the parent lives (and waits
//! too): the KEEPALIVE is repeated every timeout until DATA comes. No
//! answer within the timeout and the parent is suspected, and the node
//! asks the grand-parent, and so on up to the root (Figure 4). A node with
//! the value answers a KEEPALIVE with DATA ("responds with DATA and
//! resumes the operation"); one without it, with an ACK.
//!
//! **Priorities** (Algorithm 2: DATA before KEEPALIVE before ACK). An
//! engine hands messages one at a time, so Algorithm 2's order shows in
//! what the node sends: DATA first (to the tree and circumvented targets,
//! then as answers to KEEPALIVEs: a KEEPALIVE pending when DATA arrives
//! is answered with DATA), then ACKs, then its own KEEPALIVEs (Algorithm 4:
//! skip failed nodes, answer ToACK, then send KEEPALIVE).
//!
//! **Timeouts** (Appendix A: "proportional to the degree of destination
//! node and the distance between the source and destination"). With base
//! T ticks (the plan's `timeout`), a message from node a to node x at tree
//! distance d is suspected when nothing came back after
//! d·T + o·(children(x) + children(a)) ticks (strictly more, Algorithm 4
//! line 5): the round trip of one tree hop is 2(2o + L), x forwards to its
//! children before it answers, and a's receive port may be queued behind
//! its other children's ACKs. The default T is that round trip, 2(2o + L):
//! 8 ticks for L = 2, o = 1, which never suspects a live node in a
//! fault-free run. A shorter T (say 1) suspects live nodes falsely: the
//! DATA then also goes to their children (duplicates, acked and ignored)
//! and the result is still correct.
//!
//! **Readings where the paper is vague.** The ACK of a DATA goes to its
//! sender (the parent, or whoever circumvented a failure). DATA sent as an
//! answer to a KEEPALIVE is not watched: the asking node's own KEEPALIVE
//! timeout covers it. A KEEPALIVE walk that passes the root gives up (the
//! root has failed; Definition 3.2 then asks nothing of the value). The
//! counters the simulator reports: timeouts fired (a DATA or KEEPALIVE
//! left unanswered past its timeout) and the suspicions they raised (a
//! suspicion the engine knows was of a live node is a false suspicion;
//! [`Ftco::refuted`] counts those the core itself saw refuted by a later
//! message of the suspect).
//!
//! **Guarantees** (Definition 3.1/3.2 read for a broadcast): with the root
//! alive, every live node delivers the root's value exactly once, whatever
//! fails before or during the operation; every node falls silent after
//! finitely many sends. The root (and every node with the value) must stay
//! to answer KEEPALIVEs (Section 4: "requires the root to remain active
//! throughout"), so a node with the value may return once its DATA is
//! acknowledged but never [finishes](Protocol::is_finished); an engine
//! keeps it until it is pushed out. Trees: any [`TreeSpec`] (k-ary and
//! binomial tested); on the multi-root k-nomial tree (`multiroot:K`,
//! Section 5.2.1) a broadcast from root 0 is the K-nomial tree's.
//!
//! [`TreeSpec`]: crate::topology::TreeSpec
//! [`Tree`]: crate::topology::Tree

use std::collections::VecDeque;

use crate::error::Error;
use crate::protocol::timer::TimerTable;
use crate::protocol::{rooted_event, Event, Header, Leave, Msg, Protocol, Rooted, Tag, Transmit};
use crate::topology::ring;
use crate::types::{Collective, OpId, Rank, Tick};

use super::suspicion::{Known, Suspicions};
use super::FtcoPlan;

/// The two deadlines of a node: the earliest watched DATA, and the wait
/// on the node above it (patience, or its KEEPALIVE's timeout).
const DOWN: usize = 0;
const UP: usize = 1;

/// A DATA sent and not yet acknowledged (virtual rank, tree distance).
#[derive(Clone, Copy, Debug)]
struct Watch {
    rank: Rank,
    dist: u32,
    deadline: Tick,
}

/// The node a node without the value waits on (Appendix D: parent, then
/// grand-parent, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UpState {
    /// Not asked yet, or it answered: ask (again) at the deadline.
    Patient,
    /// Asked: no answer by the deadline and it is suspected.
    Asked,
}

#[derive(Clone, Copy, Debug)]
struct Up {
    rank: Rank,
    dist: u32,
    state: UpState,
}

/// One node's state in one FTCO broadcast (Sections 3-4).
#[derive(Clone, Debug)]
pub struct Ftco<'p, P> {
    plan: &'p FtcoPlan,
    /// This node, relabelled so that the root is 0.
    me: Rank,
    root: Rank,
    op: OpId,
    value: Option<P>,
    output: Option<P>,
    /// DATA still to send (virtual rank, distance): children, then the
    /// children of suspected targets.
    to_send: VecDeque<(Rank, u32)>,
    /// Where DATA goes once the value is here: the tree children, or an
    /// allreduce's down set after the up phase's circumventions.
    down: Vec<(Rank, u32)>,
    watches: Vec<Watch>,
    /// KEEPALIVE senders to answer (ToACK).
    to_answer: Vec<Rank>,
    /// DATA senders to acknowledge.
    to_ack: VecDeque<Rank>,
    up: Option<Up>,
    keepalive_due: bool,
    gave_up: bool,
    /// Roots that never fail (FTCO Section 2, an allreduce's down phase;
    /// virtual ranks `0..immune`, 0: none): a walk that reaches one keeps
    /// asking it.
    immune: u32,
    /// Repeated KEEPALIVEs answered by ACK (with `immune` roots: each
    /// doubles the wait before the next).
    backoff: u32,
    timers: TimerTable<2>,
    suspicions: Suspicions,
    /// Failures the engine's detector reported: routed around at once.
    known: Known,
}

impl<'p, P: Clone + Send + 'static> Ftco<'p, P> {
    /// Node `me`'s core for operation `op` broadcasting from `root`; the
    /// root passes the value. Errors on a rank out of range or a root
    /// without a value.
    pub fn new(
        plan: &'p FtcoPlan,
        root: Rank,
        me: Rank,
        op: OpId,
        value: Option<P>,
    ) -> Result<Self, Error> {
        let (virtual_me, value) = crate::protocol::rooted_value(plan.procs(), root, me, value)?;
        let down = plan.tree.children(virtual_me).iter().map(|&c| (c, 1));
        let up = plan.tree.parent(virtual_me).map(|p| (p, 1));
        let patience = plan.ask_after(plan.eta[virtual_me as usize]);
        Ok(Self::resume(
            plan,
            root,
            virtual_me,
            op,
            value,
            down.collect(),
            up,
            patience,
        ))
    }

    /// The down phase of an FTCO allreduce (Section 4, Algorithm 3 lines
    /// 8-14): node `me` (virtual) sends the value to `down` (virtual rank,
    /// tree distance: the up phase's Down set after its circumventions)
    /// once it has it, and without it waits on `up` (the node that
    /// acknowledged its up DATA) until `patience`, then asks it by
    /// KEEPALIVE.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn resume(
        plan: &'p FtcoPlan,
        root: Rank,
        me: Rank,
        op: OpId,
        value: Option<P>,
        down: Vec<(Rank, u32)>,
        up: Option<(Rank, u32)>,
        patience: Tick,
    ) -> Self {
        let mut core = Ftco {
            plan,
            me,
            root,
            op,
            output: value.clone(),
            value: None,
            to_send: VecDeque::new(),
            down,
            watches: Vec::new(),
            to_answer: Vec::new(),
            to_ack: VecDeque::new(),
            up: up.map(|(rank, dist)| Up {
                rank,
                dist,
                state: UpState::Patient,
            }),
            keepalive_due: false,
            gave_up: false,
            immune: 0,
            backoff: 0,
            timers: TimerTable::new(),
            suspicions: Suspicions::default(),
            known: Known::default(),
        };
        if let Some(v) = value {
            core.take_value(v);
        } else {
            core.timers.set(UP, patience);
        }
        core
    }

    /// The same core, trusting the `roots` roots (virtual ranks
    /// `0..roots`: the root, or the multi-root tree's roots, Section 5.2.1)
    /// never to fail (Section 2): a
    /// KEEPALIVE walk that reaches a root keeps asking it, however late
    /// its answers, instead of giving up; a KEEPALIVE answered by an ACK is
    /// repeated after a wait that doubles each time (so that askers that
    /// never give up cannot swamp a node with a timeout far too short).
    pub(super) fn with_immune_roots(mut self, roots: u32) -> Self {
        self.immune = roots;
        self
    }

    /// Timeouts fired: DATA or KEEPALIVE unanswered past f_timeout.
    pub fn timeouts(&self) -> u32 {
        self.suspicions.count()
    }

    /// Suspicions this core raised, as (real rank, tick): a live one among
    /// them is a false suspicion.
    pub fn suspicions(&self) -> impl Iterator<Item = (Rank, Tick)> + '_ {
        self.suspicions.iter().map(|(r, t)| (self.real(r), t))
    }

    /// Suspicions refuted by a later message from the suspect: false
    /// suspicions this core saw for itself.
    pub fn refuted(&self) -> u32 {
        self.suspicions.refuted()
    }

    /// True when the KEEPALIVE walk passed the root without an answer.
    pub fn gave_up(&self) -> bool {
        self.gave_up
    }

    fn real(&self, rank: Rank) -> Rank {
        ring::right(rank, self.root, self.plan.procs())
    }

    fn msg(&self, tag: Tag, payload: Option<P>) -> Msg<Option<P>> {
        Msg::broadcast(self.op, self.root, tag, payload)
    }

    fn take_value(&mut self, v: P) {
        self.value = Some(v);
        self.up = None;
        self.keepalive_due = false;
        self.timers.stop(UP);
        let down = std::mem::take(&mut self.down);
        self.to_send.extend(down);
    }

    fn rearm_down(&mut self) {
        match self.watches.iter().map(|w| w.deadline).min() {
            Some(t) => self.timers.set(DOWN, t),
            None => self.timers.stop(DOWN),
        }
    }

    /// Handles every deadline at or before `now` (Algorithm 4).
    fn expire(&mut self, now: Tick) {
        while let Some(which) = self.timers.take_expired(now) {
            if which == DOWN {
                let mut i = 0;
                while i < self.watches.len() {
                    if self.watches[i].deadline <= now {
                        let w = self.watches.swap_remove(i);
                        self.suspicions.raise(w.rank, now);
                        let kids = self.plan.live_children(w.rank, w.dist, &self.known);
                        self.to_send.extend(kids);
                    } else {
                        i += 1;
                    }
                }
                self.rearm_down();
                continue;
            }
            let Some(up) = self.up else { continue };
            if up.state == UpState::Patient || up.rank < self.immune {
                self.keepalive_due = true;
                continue;
            }
            self.suspicions.raise(up.rank, now);
            match self
                .plan
                .live_above(up.rank, up.dist, &self.known, self.immune)
            {
                Some((rank, dist)) => {
                    self.up = Some(Up {
                        rank,
                        dist,
                        state: UpState::Patient,
                    });
                    self.keepalive_due = true;
                }
                None => {
                    self.up = None;
                    self.gave_up = true;
                    self.to_answer.clear();
                }
            }
        }
    }

    /// `rank` failed, as the engine's detector reports (before the
    /// operation or during it): DATA meant for it goes to its children at
    /// once, without a timeout, and a node waiting on it for the value
    /// waits on the first live node above it (Algorithm 4's circumvention
    /// and Appendix D's walk, taken from certain news instead of a
    /// timeout). Roots that never fail are not routed around.
    fn peer_failed(&mut self, rank: Rank) {
        if rank < self.immune || !self.known.add(rank) {
            return;
        }
        let plan = self.plan;
        let reroute = |list: &mut Vec<(Rank, u32)>, known: &Known| {
            if let Some(i) = list.iter().position(|&(r, _)| r == rank) {
                let (_, dist) = list.remove(i);
                let kids = plan.live_children(rank, dist, known);
                list.splice(i..i, kids);
            }
        };
        reroute(&mut self.down, &self.known);
        let mut to_send: Vec<_> = self.to_send.drain(..).collect();
        reroute(&mut to_send, &self.known);
        self.to_send.extend(to_send);
        if let Some(i) = self.watches.iter().position(|w| w.rank == rank) {
            let w = self.watches.swap_remove(i);
            let kids = plan.live_children(rank, w.dist, &self.known);
            self.to_send.extend(kids);
            self.rearm_down();
        }
        if let Some(up) = self.up.filter(|u| u.rank == rank) {
            if let Some((rank, dist)) = plan.live_above(up.rank, up.dist, &self.known, self.immune)
            {
                self.up = Some(Up {
                    rank,
                    dist,
                    state: UpState::Patient,
                });
            }
        }
    }

    fn has_send(&self) -> bool {
        let answers = !self.to_answer.is_empty() && !self.gave_up;
        if self.value.is_some() {
            !self.to_send.is_empty() || answers || !self.to_ack.is_empty()
        } else {
            answers || !self.to_ack.is_empty() || (self.keepalive_due && self.up.is_some())
        }
    }
}

impl<P: Clone + Send + 'static> Protocol for Ftco<'_, P> {
    type Payload = Option<P>;
    type Output = P;

    fn handle(&mut self, now: Tick, event: Event<Msg<Option<P>>>) {
        self.expire(now);
        let (from, msg) = match rooted_event(self.plan.procs(), self.root, event) {
            Rooted::Message(from, msg) => (from, msg),
            Rooted::Failed(rank) => return self.peer_failed(rank),
            Rooted::Other => return,
        };
        self.suspicions.heard(from);
        match msg.tag {
            Tag::Tree => {
                let Some(v) = msg.payload else { return };
                self.to_ack.push_back(from);
                self.watches.retain(|w| w.rank != from);
                self.rearm_down();
                if self.value.is_none() {
                    self.output = Some(v.clone());
                    self.take_value(v);
                }
            }
            Tag::KeepAlive if !self.gave_up && !self.to_answer.contains(&from) => {
                self.to_answer.push(from);
            }
            Tag::Ack => {
                let before = self.watches.len();
                self.watches.retain(|w| w.rank != from);
                if self.watches.len() != before {
                    self.rearm_down();
                }
                if let Some(up) = self.up.as_mut().filter(|u| u.rank == from) {
                    // It lives and waits too: ask again at the deadline.
                    up.state = UpState::Patient;
                    if self.immune > 0 {
                        // Past the deadline, twice as long each time: with
                        // a timeout far below the network's, askers that
                        // never give up would swamp the node they ask.
                        let wait = self.plan.f_timeout(self.me, up.rank, up.dist) << self.backoff;
                        self.backoff = (self.backoff + 1).min(16);
                        let at = self.timers.get(UP).unwrap_or(now);
                        self.timers.set(UP, at + wait);
                    }
                }
            }
            _ => {}
        }
    }

    /// An ACK to a later broadcast's DATA or KEEPALIVE, half a timeout
    /// unit on: this node lives.
    fn answer_ahead(&self, kind: Collective, tag: Tag) -> Option<(Tick, Tag, Option<P>)> {
        let asks = matches!(tag, Tag::Tree | Tag::KeepAlive);
        (kind == Collective::Broadcast && asks).then(|| (self.plan.timeout() / 2, Tag::Ack, None))
    }

    fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<Option<P>>>> {
        self.expire(now);
        if let Some(v) = self.value.clone() {
            if let Some((to, dist)) = self.to_send.pop_front() {
                let deadline = now + self.plan.f_timeout(self.me, to, dist) + 1;
                self.watches.push(Watch {
                    rank: to,
                    dist,
                    deadline,
                });
                self.rearm_down();
                return Some(Transmit {
                    to: self.real(to),
                    msg: self.msg(Tag::Tree, Some(v)),
                });
            }
            if let Some(to) = self.to_answer.pop() {
                return Some(Transmit {
                    to: self.real(to),
                    msg: self.msg(Tag::Tree, Some(v)),
                });
            }
        }
        if let Some(to) = self.to_ack.pop_front() {
            return Some(Transmit {
                to: self.real(to),
                msg: self.msg(Tag::Ack, None),
            });
        }
        if self.value.is_some() || self.gave_up {
            return None;
        }
        if let Some(to) = self.to_answer.pop() {
            return Some(Transmit {
                to: self.real(to),
                msg: self.msg(Tag::Ack, None),
            });
        }
        if !self.keepalive_due {
            return None;
        }
        let up = self.up.as_mut()?;
        self.keepalive_due = false;
        up.state = UpState::Asked;
        let (to, dist) = (up.rank, up.dist);
        self.timers
            .set(UP, now + self.plan.f_timeout(self.me, to, dist) + 1);
        Some(Transmit {
            to: self.real(to),
            msg: self.msg(Tag::KeepAlive, None),
        })
    }

    fn poll_deadline(&self) -> Option<Tick> {
        self.timers.next()
    }

    fn take_output(&mut self) -> Option<P> {
        self.output.take()
    }

    fn is_quiescent(&self) -> bool {
        !self.has_send() && self.timers.next().is_none()
    }

    fn header(&self) -> Header {
        Header::broadcast(self.op, self.root)
    }

    /// Once every DATA it sent is acknowledged or circumvented, and its
    /// ACKs are out ("Once all the DATA messages were acknowledged, this
    /// collective operation is complete", Section 4).
    fn may_return(&self) -> Leave {
        if self.value.is_some() && self.is_quiescent() {
            Leave::Now
        } else {
            Leave::Not
        }
    }

    /// Only a node that gave up (the root failed) and owes nothing: a node
    /// with the value may still be asked for it by a KEEPALIVE.
    fn is_finished(&self) -> bool {
        self.gave_up && !self.has_send()
    }

    fn output_from_root(&self) -> bool {
        self.value.is_none()
    }

    fn uses_time(&self) -> bool {
        true
    }

    /// The latest node its timeouts suspected and that has not been heard
    /// from since: not what it waits on any more (it routed around it), but
    /// what an engine's detector should watch, so that a failed node is
    /// found failed and later operations route around it from the start.
    fn awaiting(&self) -> Option<Rank> {
        self.suspicions.unheard().map(|r| self.real(r))
    }
}

#[cfg(test)]
#[path = "bcast_tests.rs"]
mod tests;
