//! Up-correction reduce (Küttler, Härtig, *Fault-tolerant Reduce and
//! Allreduce operations based on correction*, Sections 4.2-4.4).
//!
//! Every rank first exchanges its input with the other members of its
//! up-correction group ([`Groups`](crate::topology::Groups)), then a reduce runs up the I(f)-tree
//! ([`IfTree`](crate::topology::IfTree)): a rank waits for each child's partial result (or its
//! failure), combines, and sends one message to its parent with the
//! [`FailureInfo`] of its subtree. The root takes the first child result
//! whose subtree reports no failure and completes it with its own
//! up-corrected value if that subtree holds no member of the root's group.
//!
//! Guarantees with at most f ranks failing (before or during the operation),
//! Section 4.1: the root's result includes every live rank's input exactly
//! once, and a failing rank's input either exactly once or not at all; every
//! live rank delivers once, after finitely many steps, provided every failure
//! it waits on is eventually reported ([`Event::PeerFailed`]). With more than
//! f failures the root may find no complete subtree and says so
//! ([`ReduceOutput::TooManyFailures`]) rather than return a partial result.

mod failure;
mod op;
mod plan;

pub use failure::{FailureInfo, FailureScheme, LIST_CAPACITY};
pub use op::Combine;
pub use plan::ReducePlan;

use crate::error::Error;
use crate::protocol::{Event, Header, Msg, Protocol, Tag, Transmit};
use crate::topology::ring;
use crate::types::{Collective, OpId, Rank, Tick};

/// What a reduce message carries: a partial result, the failure information
/// of the subtree it comes from, and whether it is an allreduce result that a
/// previous round already delivered (such a value absorbs every other, and
/// brings the list of inputs it lacks).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Contribution<P> {
    /// The (partial) reduction.
    pub value: P,
    /// Failures seen below (tree phase) or in up-correction. For a
    /// decided value, the ranks whose inputs that value lacks (its
    /// [`missing`](ReduceOutput::Root::info) list), beside this round's
    /// subtree bit.
    pub info: FailureInfo,
    /// The value is a result some rank has already delivered (allreduce
    /// retry, see [`crate::protocol::allreduce`]); it replaces, not joins.
    pub decided: bool,
}

impl<P: Clone> Contribution<P> {
    /// A fresh input.
    pub fn input(value: P) -> Self {
        Contribution {
            value,
            info: FailureInfo::default(),
            decided: false,
        }
    }

    /// Folds `other`'s value in: a decided value wins, and brings the list
    /// of inputs it lacks; otherwise `op` combines. Failure notes are
    /// merged by the caller.
    fn absorb(&mut self, other: &Contribution<P>, op: &impl Combine<P>) {
        if self.decided {
            return;
        }
        if other.decided {
            self.value = other.value.clone();
            self.decided = true;
            let subtree_failed = self.info.subtree_failed;
            self.info = other.info;
            self.info.subtree_failed = subtree_failed;
        } else {
            op.combine(&mut self.value, &other.value);
        }
    }

    /// The contribution with `notes` as its failure information, unless it
    /// is decided: a decided value keeps the list of inputs it lacks, and
    /// takes only the notes' subtree bit.
    fn noting(mut self, notes: FailureInfo) -> Self {
        if self.decided {
            self.info.subtree_failed = notes.subtree_failed;
        } else {
            self.info = notes;
        }
        self
    }
}

/// What a reduce core delivers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ReduceOutput<P> {
    /// A non-root has sent its partial result to its parent: its part is done.
    Sent,
    /// The root's result.
    Root {
        /// The reduction of every live rank's input.
        value: P,
        /// The value is an allreduce result delivered before.
        decided: bool,
        /// The ranks whose inputs `value` lacks, each once (failed before
        /// they reached the rank that folds them in): with the list scheme
        /// their ranks (up to [`LIST_CAPACITY`]) and number, with the count
        /// scheme their number, with the bit scheme nothing. Its subtree
        /// bit is clear.
        info: FailureInfo,
    },
    /// The root found no subtree without a failure: more than f ranks failed.
    TooManyFailures {
        /// Failures the root learned of.
        info: FailureInfo,
    },
}

/// The lists a reduce core keeps its group peers' and tree children's
/// values in, empty: handed from a core an engine is done with to its next
/// ([`Reduce::retire`], [`Reduce::new_in`]), so that a loop of reduces
/// and allreduces allocates them once (`tests/allocations.rs`).
#[derive(Debug)]
pub struct ReduceLists<P> {
    peers: Vec<(Rank, Slot<Contribution<P>>)>,
    children: Vec<(Rank, Slot<Contribution<P>>)>,
}

impl<P> Default for ReduceLists<P> {
    fn default() -> Self {
        ReduceLists {
            peers: Vec::new(),
            children: Vec::new(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Slot<P> {
    Pending,
    Got(P),
    Failed,
}

/// One rank's state in one reduce.
#[derive(Clone, Debug)]
pub struct Reduce<'p, P, O> {
    plan: &'p ReducePlan,
    op: O,
    /// This rank, relabelled so the root is 0.
    me: Rank,
    root: Rank,
    op_id: OpId,
    kind: Collective,
    input: Contribution<P>,
    /// Group peers (virtual) and what they sent: a value, or a decided
    /// allreduce result with the list of inputs it lacks.
    peers: Vec<(Rank, Slot<Contribution<P>>)>,
    next_peer: usize,
    /// Tree children (virtual) and their partial results.
    children: Vec<(Rank, Slot<Contribution<P>>)>,
    /// Failures seen in up-correction and of children.
    info: FailureInfo,
    /// Failures seen in up-correction alone (the root's own group peers).
    peer_info: FailureInfo,
    sent_up: bool,
    /// The latest time handed in (see [`Reduce::now`]).
    now: Tick,
    output: Option<ReduceOutput<P>>,
    /// The output has been produced (it is given out once).
    finished: bool,
}

impl<'p, P: Clone + Send + 'static, O: Combine<P>> Reduce<'p, P, O> {
    /// The core of rank `me` for operation `op_id` reducing `input` to
    /// `root` with `op`. `kind` is the collective the messages carry
    /// (reduce, or the reduce phase of allreduce or barrier). Errors if `me`
    /// or `root` is out of range.
    pub fn new(
        plan: &'p ReducePlan,
        root: Rank,
        me: Rank,
        op_id: OpId,
        kind: Collective,
        input: Contribution<P>,
        op: O,
    ) -> Result<Self, Error> {
        Self::new_in(
            plan,
            root,
            me,
            op_id,
            kind,
            input,
            op,
            ReduceLists::default(),
        )
    }

    /// [`Reduce::new`], keeping its lists in `lists` (those of a core the
    /// engine is done with, [`Reduce::retire`]): a loop of reduces then
    /// allocates them once.
    #[allow(clippy::too_many_arguments)]
    pub fn new_in(
        plan: &'p ReducePlan,
        root: Rank,
        me: Rank,
        op_id: OpId,
        kind: Collective,
        input: Contribution<P>,
        op: O,
        lists: ReduceLists<P>,
    ) -> Result<Self, Error> {
        let procs = plan.procs();
        let v = crate::protocol::virtual_rank(procs, root, me)?;
        // Empty: a `ReduceLists` is made empty or by `retire`.
        let ReduceLists {
            mut peers,
            mut children,
        } = lists;
        peers.extend(plan.groups.peers(v).map(|p| (p, Slot::Pending)));
        if !plan.star {
            children.extend(plan.tree.children(v).map(|c| (c, Slot::Pending)));
        } else if v == 0 {
            children.extend((1..procs).map(|c| (c, Slot::Pending)));
        }
        Ok(Reduce {
            plan,
            op,
            me: v,
            root,
            op_id,
            kind,
            input,
            peers,
            next_peer: 0,
            children,
            info: FailureInfo::default(),
            peer_info: FailureInfo::default(),
            sent_up: false,
            now: 0,
            output: None,
            finished: false,
        })
    }

    /// The operation number.
    pub fn op(&self) -> OpId {
        self.op_id
    }

    /// Ends this core whatever its state, and returns its lists, emptied
    /// (their values dropped now), for the engine's next core
    /// ([`Reduce::new_in`]): it sends nothing more, gives no output and
    /// ignores the messages of its operation. For a reduce whose call
    /// returned, and for an allreduce round this rank has the result of
    /// (nobody needs its reduce any more: the root that broadcast the
    /// result had its own, and a later round, if that root fails, runs new
    /// cores) or that gives way to the next.
    pub fn retire(&mut self) -> ReduceLists<P> {
        self.sent_up = true;
        self.finished = true;
        self.output = None;
        self.next_peer = 0;
        let mut lists = ReduceLists {
            peers: std::mem::take(&mut self.peers),
            children: std::mem::take(&mut self.children),
        };
        lists.peers.clear();
        lists.children.clear();
        lists
    }

    /// Replaces this rank's input by a result already delivered (allreduce),
    /// lacking the inputs `missing` lists: whatever it still sends up
    /// carries that result and that list, which absorb every other value,
    /// so the reduction function is not called again.
    pub fn adopt_decided(&mut self, value: P, missing: FailureInfo) {
        let mut info = missing;
        info.subtree_failed = false;
        self.input = Contribution {
            value,
            info,
            decided: true,
        };
    }

    /// The same core with another reduction function (an engine keeping a
    /// core beyond the call that lent it the function swaps in its own).
    pub fn with_op<O2>(self, op: O2) -> Reduce<'p, P, O2> {
        Reduce {
            plan: self.plan,
            op,
            me: self.me,
            root: self.root,
            op_id: self.op_id,
            kind: self.kind,
            input: self.input,
            peers: self.peers,
            next_peer: self.next_peer,
            children: self.children,
            info: self.info,
            peer_info: self.peer_info,
            sent_up: self.sent_up,
            now: self.now,
            output: self.output,
            finished: self.finished,
        }
    }

    /// The root.
    pub fn root(&self) -> Rank {
        self.root
    }

    /// The latest `now` this core was handed. A reduce does not act on
    /// time; the value lets a test check that a core embedding it (an
    /// allreduce round) never hands it a time earlier than before.
    pub fn now(&self) -> Tick {
        self.now
    }

    fn real(&self, v: Rank) -> Rank {
        ring::right(v, self.root, self.plan.procs())
    }

    fn virt(&self, r: Rank) -> Rank {
        ring::left(r, self.root, self.plan.procs())
    }

    fn msg(&self, tag: Tag, payload: Contribution<P>) -> Msg<Contribution<P>> {
        self.header().msg(tag, payload)
    }

    fn peers_done(&self) -> bool {
        self.next_peer == self.peers.len() && self.peers.iter().all(|(_, s)| !pending(s))
    }

    /// Own input folded with every group peer's, in peer order: the value
    /// this rank uses in the tree phase.
    fn up_corrected(&self) -> Contribution<P> {
        let mut acc = self.input.clone();
        for (_, slot) in &self.peers {
            if let Slot::Got(c) = slot {
                acc.absorb(c, &self.op);
            }
        }
        acc
    }

    /// Every group peer and child has delivered or failed.
    fn all_in(&self) -> bool {
        self.peers_done() && !self.children.iter().any(|(_, s)| pending(s))
    }

    /// A non-root's message to its parent, once everything below is in.
    fn partial_result(&self) -> Option<Contribution<P>> {
        if !self.all_in() {
            return None;
        }
        let mut acc = self.up_corrected();
        let mut notes = self.info;
        for (_, slot) in &self.children {
            if let Slot::Got(c) = slot {
                acc.absorb(c, &self.op);
                notes.merge(&c.info);
            }
        }
        Some(acc.noting(notes))
    }

    /// The root's decision, as soon as one is possible.
    fn decide_root(&mut self) {
        if self.finished || self.next_peer < self.peers.len() {
            return;
        }
        if self.plan.star {
            self.decide_star();
            return;
        }
        let groups = self.plan.groups;
        if groups.covers_team() {
            // One group holds every rank: the up-corrected value is complete.
            if self.peers_done() {
                // The root's tree children are its group peers here: each
                // failure is noted once, as a peer.
                self.deliver_root(self.up_corrected().noting(self.peer_info));
            }
            return;
        }
        // Subtrees 1..a hold a member of the root's group, so their results
        // already include the root's up-corrected value.
        let a = groups.root_group_size();
        let complete = self.children.iter().find_map(|(k, s)| match s {
            Slot::Got(c) if !c.info.subtree_failed && (*k < a || self.peers_done()) => {
                Some((*k, c.clone()))
            }
            _ => None,
        });
        if let Some((k, c)) = complete {
            // The inputs the result lacks, each once (Section 4.4: merged
            // lists come from disjoint sets): those the chosen subtree
            // noted, plus the root's failed group peers when the root adds
            // its own up-corrected value (otherwise a group member inside
            // the subtree already noted them). A failed child of the root is
            // in the root's children's group, so the chosen child noted it.
            let mut notes = c.info;
            let mut acc = c;
            if k >= a {
                let own = self.up_corrected();
                notes.merge(&self.peer_info);
                acc.absorb(&own, &self.op);
            }
            self.deliver_root(acc.noting(notes));
        } else if self.children.iter().all(|(_, s)| !pending(s)) && self.peers_done() {
            // No complete subtree, but a result an earlier allreduce round
            // delivered came in (Section 5: a decided value replaces the
            // reduction): it is the answer, complete by the round that made
            // it. Only beyond the budget does this happen; without it, ranks
            // that delivered it would disagree with the rest.
            let own = self.up_corrected();
            let decided = self
                .children
                .iter()
                .find_map(|(_, s)| match s {
                    Slot::Got(c) if c.decided => Some(c.clone()),
                    _ => None,
                })
                .or(own.decided.then_some(own));
            if let Some(c) = decided {
                self.deliver_root(c);
                return;
            }
            // Best effort beyond the budget: the root's own notes only where
            // no delivered subtree can have them (no child delivered at all,
            // or none holding a member of the root's group).
            let delivered = |range: std::ops::Range<Rank>| {
                self.children
                    .iter()
                    .any(|(k, s)| range.contains(k) && matches!(s, Slot::Got(_)))
            };
            let mut info = FailureInfo::default();
            if !delivered(0..Rank::MAX) {
                info = self.info;
            } else if !delivered(0..a) {
                info = self.peer_info;
            }
            for (_, s) in &self.children {
                if let Slot::Got(c) = s {
                    info.merge(&c.info);
                }
            }
            self.set_output(ReduceOutput::TooManyFailures { info });
        }
    }

    /// The star root's decision: once every rank has sent or failed, its own
    /// input and every input it got, in ring order from the root (a decided
    /// value absorbs the rest). Failed ranks are in `info`, whose subtree bit stays clear:
    /// a failed leaf of a star hides nobody's input.
    fn decide_star(&mut self) {
        if self.children.iter().any(|(_, s)| pending(s)) {
            return;
        }
        let mut acc = self.input.clone();
        for (_, slot) in &self.children {
            if let Slot::Got(c) = slot {
                acc.absorb(c, &self.op);
            }
        }
        let notes = self.info;
        self.deliver_root(acc.noting(notes));
    }

    /// Delivers `acc`, whose information lists the inputs it lacks.
    fn deliver_root(&mut self, acc: Contribution<P>) {
        let mut info = acc.info;
        info.subtree_failed = false;
        self.set_output(ReduceOutput::Root {
            value: acc.value,
            decided: acc.decided,
            info,
        });
    }

    fn fail_peer(&mut self, v: Rank) {
        let scheme = self.plan.scheme;
        let real = self.real(v);
        if let Some((_, s)) = self.peers.iter_mut().find(|(p, _)| *p == v) {
            if pending(s) {
                *s = Slot::Failed;
                self.info.note_failed(real, false, scheme);
                self.peer_info.note_failed(real, false, scheme);
            }
        }
        if let Some((_, s)) = self.children.iter_mut().find(|(c, _)| *c == v) {
            if pending(s) {
                *s = Slot::Failed;
                self.info.note_failed(real, true, scheme);
            }
        }
    }

    /// True once this rank's part is done: it sent its partial result up, or
    /// (at the root) it has decided.
    pub fn is_done(&self) -> bool {
        self.finished
    }

    fn set_output(&mut self, out: ReduceOutput<P>) {
        self.output = Some(out);
        self.finished = true;
    }
}

impl<P: Clone + Send + 'static, O: Combine<P>> Protocol for Reduce<'_, P, O> {
    type Payload = Contribution<P>;
    type Output = ReduceOutput<P>;

    fn handle(&mut self, now: Tick, event: Event<Msg<Contribution<P>>>) {
        debug_assert!(now >= self.now, "time ran backwards: {now} < {}", self.now);
        self.now = now;
        match event {
            Event::Start | Event::Timer => {}
            Event::Message { from, msg } => {
                let v = self.virt(from);
                match msg.tag {
                    Tag::UpCorrection => {
                        if let Some(i) = self.peers.iter().position(|(p, _)| *p == v) {
                            if pending(&self.peers[i].1) {
                                self.peers[i].1 = Slot::Got(msg.payload);
                            }
                        }
                    }
                    Tag::Upward => {
                        if let Some((_, s)) = self.children.iter_mut().find(|(c, _)| *c == v) {
                            if pending(s) {
                                *s = Slot::Got(msg.payload);
                            }
                        }
                    }
                    _ => {}
                }
            }
            Event::PeerFailed(r) => {
                if r < self.plan.procs() {
                    self.fail_peer(self.virt(r));
                }
            }
        }
        if self.me == 0 {
            self.decide_root();
        }
    }

    fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<Contribution<P>>>> {
        debug_assert!(now >= self.now, "time ran backwards: {now} < {}", self.now);
        self.now = now;
        if let Some(&(p, _)) = self.peers.get(self.next_peer) {
            self.next_peer += 1;
            let tx = Transmit {
                to: self.real(p),
                msg: self.msg(Tag::UpCorrection, self.input.clone()),
            };
            if self.me == 0 {
                self.decide_root();
            }
            return Some(tx);
        }
        if self.me == 0 || self.sent_up {
            return None;
        }
        let up = self.partial_result()?;
        self.sent_up = true;
        self.set_output(ReduceOutput::Sent);
        let parent = if self.plan.star {
            0
        } else {
            self.plan.tree.parent(self.me).expect("non-root")
        };
        Some(Transmit {
            to: self.real(parent),
            msg: self.msg(Tag::Upward, up),
        })
    }

    fn poll_deadline(&self) -> Option<Tick> {
        None
    }

    fn take_output(&mut self) -> Option<ReduceOutput<P>> {
        self.output.take()
    }

    fn is_quiescent(&self) -> bool {
        self.next_peer == self.peers.len() && (self.me == 0 || self.sent_up || !self.all_in())
    }

    fn header(&self) -> Header {
        Header::rooted(self.op_id, self.kind, self.root)
    }

    /// Its group sends are out and its one message up (a non-root) too: a
    /// reduce core sends nothing else, whatever it hears.
    fn is_finished(&self) -> bool {
        self.next_peer == self.peers.len() && (self.me == 0 || self.sent_up)
    }

    fn awaiting(&self) -> Option<Rank> {
        if self.finished {
            return None;
        }
        let peer = self.peers.iter().find(|(_, s)| pending(s)).map(|&(p, _)| p);
        let child = || {
            self.children
                .iter()
                .find(|(_, s)| pending(s))
                .map(|&(c, _)| c)
        };
        peer.or_else(child).map(|v| self.real(v))
    }
}

fn pending<T>(slot: &Slot<T>) -> bool {
    matches!(slot, Slot::Pending)
}
