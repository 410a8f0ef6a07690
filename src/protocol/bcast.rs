//! Corrected-tree broadcast (Küttler et al., *Corrected Trees for Reliable
//! Group Communication*, PPoPP 2019): dissemination along an interleaved tree
//! (Section 3.2), then correction on the ring (Section 3.3, [`Correction`]).
//!
//! Guarantees, for a dead set fixed before the operation and a live root:
//! * integrity: a rank delivers only a value that came, hop by hop, from the
//!   root, and delivers it at most once (no duplicates);
//! * non-faulty liveness: with checked (overlapped or synchronized) or
//!   delayed correction every live rank delivers; with opportunistic
//!   correction every live rank delivers if no gap exceeds 2d;
//! * termination: every rank falls silent after finitely many sends.
//!
//! Ranks are relabelled so that the root is virtual rank 0: the tree and the
//! ring are built for root 0 and rotated.

pub use crate::protocol::correction::Correction;

use crate::error::{ConfigError, Error};
use crate::protocol::correction::{Dissemination, Sweep};
use crate::protocol::{Event, Header, Leave, Msg, Protocol, Stranded, Tag, Transmit};
use crate::topology::{ring, Tree, TreeSpec};
use crate::types::{Collective, LogP, OpId, Rank, Tick};

/// Everything the ranks of one broadcast configuration share: the tree, the
/// correction, and when synchronized correction starts. Built once, borrowed
/// by every rank's [`Bcast`] core, for any root.
#[derive(Clone, Debug)]
pub struct BcastPlan {
    tree: Tree,
    correction: Correction,
    sync_start: Tick,
    synchronized: bool,
    /// Cached [`BcastPlan::corrects`]: asked on every poll of every core.
    corrects: bool,
    pace: Tick,
}

impl BcastPlan {
    /// A plan from a built tree. `sync_start` is when synchronized correction
    /// begins (ignored by overlapped corrections).
    pub fn new(tree: Tree, correction: Correction, sync_start: Tick) -> Self {
        // A rank the tree misses lies below a failed inner node (CT 3.3).
        // When every rank is the root's child (two ranks, or the flat tree
        // `kary:P-1`), the tree has no inner node besides the root: it
        // colors every live rank whenever the root lives, and no correction
        // can reach anyone it does not.
        let flat = tree.children(0).len() as u32 + 1 >= tree.procs();
        BcastPlan {
            corrects: !flat && correction != Correction::None,
            tree,
            correction,
            sync_start,
            synchronized: correction.synchronized(),
            pace: 0,
        }
    }

    /// The same plan with correction messages at least `pace` ticks apart.
    /// In LogP the overhead o paces a sweep; on threads a send costs a
    /// fraction of a neighbour's reply time, and an unpaced checked sweep
    /// outruns a descheduled neighbour's answer across the whole ring.
    pub fn with_pace(mut self, pace: Tick) -> Self {
        self.pace = pace;
        self
    }

    /// The least time between two correction messages of one rank.
    pub fn pace(&self) -> Tick {
        self.pace
    }

    /// A plan for the LogP model: synchronized correction starts at the tree's
    /// fault-free dissemination time under `logp`.
    pub fn for_logp(
        spec: TreeSpec,
        procs: u32,
        correction: Correction,
        logp: LogP,
    ) -> Result<Self, ConfigError> {
        let tree = Tree::build(spec, procs, logp)?;
        let start = tree.dissemination_time(logp);
        Ok(BcastPlan::new(tree, correction, start))
    }

    /// The dissemination tree (rooted at virtual rank 0).
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The correction.
    pub fn correction(&self) -> Correction {
        self.correction
    }

    /// The team size.
    pub fn procs(&self) -> u32 {
        self.tree.procs()
    }

    /// When synchronized correction starts.
    pub fn sync_start(&self) -> Tick {
        self.sync_start
    }

    /// True when the cores act on the time they are handed: synchronized
    /// correction (its start, delayed correction's wait) or a pace. Other
    /// cores ignore `now`, and an engine may hand them any.
    pub fn uses_time(&self) -> bool {
        self.synchronized || self.pace > 0
    }

    /// True when correction messages are sent at all: a correction is set
    /// and some rank is not the root's own child. Where every rank is (two
    /// ranks, or a flat tree), the tree has no inner node below which a
    /// rank could be missed (CT Section 3.3): it colors every live rank
    /// whenever the root lives, and no correction can reach anyone it does
    /// not. A root that fails while it sends gives no delivery guarantee
    /// in any case (the ranks it had not reached end in
    /// [`Error::RootFailed`]).
    pub fn corrects(&self) -> bool {
        self.corrects
    }
}

/// One rank's state in one broadcast.
#[derive(Clone, Debug)]
pub struct Bcast<'p, P> {
    plan: &'p BcastPlan,
    /// This rank, relabelled so that the root is 0.
    me: Rank,
    root: Rank,
    op: OpId,
    kind: Collective,
    /// The next child to send to and the end of this rank's children, as
    /// positions in the tree's flat child list.
    next_child: u32,
    child_end: u32,
    value: Option<P>,
    output_ready: bool,
    /// Colored by dissemination: received a tree message (or is the root).
    by_tree: bool,
    correcting: bool,
    /// When the last correction message went out (pacing; `Tick::MAX`:
    /// none yet). Not an `Option`: at 64K simulated ranks every byte of the
    /// core costs cache misses.
    last_correction: Tick,
    /// The nearest tree ancestor known to have failed (virtual;
    /// `Rank::MAX`: none): see [`Bcast::orphaned`].
    cut_by: Rank,
    sweep: Sweep,
}

impl<'p, P: Clone + Send + 'static> Bcast<'p, P> {
    /// The core of rank `me` for operation `op` broadcasting from `root`.
    /// The root passes its value; the others pass `None`. Errors if `me` or
    /// `root` is out of range, or if the root has no value.
    pub fn new(
        plan: &'p BcastPlan,
        root: Rank,
        me: Rank,
        op: OpId,
        value: Option<P>,
    ) -> Result<Self, Error> {
        let (virtual_me, value) = crate::protocol::rooted_value(plan.procs(), root, me, value)?;
        let children = plan.tree.child_range(virtual_me);
        Ok(Bcast {
            plan,
            me: virtual_me,
            root,
            op,
            kind: Collective::Broadcast,
            next_child: children.start,
            child_end: children.end,
            value,
            output_ready: false,
            by_tree: false,
            correcting: false,
            last_correction: Tick::MAX,
            cut_by: Rank::MAX,
            sweep: Sweep::new(),
        })
    }

    /// The same core for the broadcast phase of another collective
    /// (allreduce, barrier): its messages carry `kind`, and it hears only
    /// messages of that kind.
    pub fn with_kind(mut self, kind: Collective) -> Self {
        self.kind = kind;
        self
    }

    /// True while the rank holds the value from a tree message (or, under
    /// [`Correction::Forwarding`], from any message) and still has children
    /// to send it to: it must not leave before.
    pub fn owes_tree_sends(&self) -> bool {
        self.sends_tree() && self.next_child < self.child_end
    }

    /// Whether this rank sends the value to its tree children: it was
    /// colored by the tree, or by correction with [`Correction::Forwarding`].
    fn sends_tree(&self) -> bool {
        self.by_tree || (self.plan.correction.forwards_tree() && self.value.is_some())
    }

    /// The next paced correction send may go at this time.
    fn paced_until(&self) -> Option<Tick> {
        (self.plan.pace > 0 && self.last_correction != Tick::MAX)
            .then(|| self.last_correction + self.plan.pace)
    }

    /// The deadline with pacing: a sweep step held back by the pace is a
    /// reason to wake too.
    #[cold]
    fn paced_deadline(&self, sweep: Option<Tick>) -> Option<Tick> {
        let paced = self.paced_until().filter(|&t| {
            self.correcting
                && self
                    .sweep
                    .clone()
                    .next(self.plan.correction, t, self.plan.procs())
                    .is_some()
        });
        match (sweep, paced) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// True once the rank was colored by a tree message (or is the root).
    pub fn colored_by_tree(&self) -> bool {
        self.by_tree
    }

    /// True when the core will never send again, whatever arrives: it holds
    /// the value, and either it was colored by dissemination and has done
    /// its tree sends and its correction, or no tree message can come any
    /// more because an ancestor failed ([`Event::PeerFailed`]) (and, when
    /// relaying, its own sweep is done). Delayed correction may have to
    /// answer a sweep at any time, so it never is.
    fn finished(&self) -> bool {
        if self.value.is_none() {
            return false;
        }
        if !self.by_tree {
            return self.orphaned()
                && !self.owes_tree_sends()
                && (!self.plan.correction.relays()
                    || self.sweep.finished(self.plan.correction, self.plan.procs()));
        }
        self.next_child == self.child_end
            && (!self.plan.corrects()
                || self.sweep.finished(self.plan.correction, self.plan.procs()))
    }

    /// No tree message will come: a tree ancestor is known to have failed
    /// (under forwarding, the parent: a parent colored by correction still
    /// sends the tree message, so only its own failure rules it out).
    fn orphaned(&self) -> bool {
        if self.cut_by == Rank::MAX {
            return false;
        }
        !self.plan.correction.forwards_tree() || self.plan.tree.parent(self.me) == Some(self.cut_by)
    }

    /// The root of this broadcast.
    pub fn root(&self) -> Rank {
        self.root
    }

    /// True once the rank holds the root's value.
    pub fn colored(&self) -> bool {
        self.value.is_some()
    }

    fn to_actual(&self, virtual_rank: Rank) -> Rank {
        ring::right(virtual_rank, self.root, self.plan.procs())
    }

    fn msg(&self, tag: Tag) -> Msg<P> {
        let payload = self.value.clone().expect("only colored ranks send");
        self.header().msg(tag, payload)
    }

    fn correction_open(&self, now: Tick) -> bool {
        let colored = if self.by_tree {
            self.next_child == self.child_end
        } else {
            // Relaying: a rank colored by correction sweeps too (its tree
            // sends, should the tree message come, go first).
            self.plan.correction.relays() && self.value.is_some()
        };
        self.plan.corrects() && colored && (!self.plan.synchronized || now >= self.plan.sync_start)
    }
}

impl<P> Dissemination for Bcast<'_, P> {
    fn colored_by_dissemination(&self) -> bool {
        self.by_tree
    }
}

impl<P: Clone + Send + 'static> Protocol for Bcast<'_, P> {
    type Payload = P;
    type Output = P;

    fn handle(&mut self, _now: Tick, event: Event<Msg<P>>) {
        match event {
            Event::Start => {
                if self.me == 0 {
                    self.by_tree = true;
                    self.output_ready = true;
                }
            }
            Event::Message { from, msg } => {
                if msg.op != self.op || msg.kind != self.kind || msg.root != self.root {
                    return;
                }
                if self.value.is_none() {
                    self.value = Some(msg.payload);
                    self.output_ready = true;
                }
                if msg.tag == Tag::Tree {
                    self.by_tree = true;
                } else {
                    let procs = self.plan.procs();
                    let from = ring::left(from, self.root, procs);
                    let dist = if msg.tag.from_right() {
                        ring::left(from, self.me, procs)
                    } else {
                        ring::left(self.me, from, procs)
                    };
                    self.sweep
                        .observe(self.plan.correction, msg.tag, dist, self.by_tree);
                }
            }
            Event::PeerFailed(rank) => {
                let procs = self.plan.procs();
                if let Some(failed) = crate::protocol::virtual_peer(procs, self.root, rank) {
                    let tree = &self.plan.tree;
                    // The nearest failed ancestor: the first on the path up
                    // that is `failed` or the one noted before.
                    let mut ancestors =
                        std::iter::successors(tree.parent(self.me), |&a| tree.parent(a));
                    if let Some(a) = ancestors.find(|&a| a == failed || a == self.cut_by) {
                        self.cut_by = a;
                    }
                }
            }
            Event::Timer => {}
        }
    }

    fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<P>>> {
        let procs = self.plan.procs();
        if self.owes_tree_sends() {
            let child = self.plan.tree.child_at(self.next_child);
            self.next_child += 1;
            return Some(Transmit {
                to: self.to_actual(child),
                msg: self.msg(Tag::Tree),
            });
        }
        if !self.correction_open(now) {
            return None;
        }
        self.correcting = true;
        if self.paced_until().is_some_and(|t| now < t) {
            return None;
        }
        let step = self.sweep.next(self.plan.correction, now, procs)?;
        self.last_correction = now;
        let to = match step.tag {
            Tag::Rightward => ring::right(self.me, step.dist, procs),
            _ => ring::left(self.me, step.dist, procs),
        };
        Some(Transmit {
            to: self.to_actual(to),
            msg: self.msg(step.tag),
        })
    }

    // Inlined: the simulator asks every core after every event.
    #[inline]
    fn poll_deadline(&self) -> Option<Tick> {
        if !self.plan.corrects() {
            return None;
        }
        if self.by_tree && self.plan.synchronized && !self.correcting {
            return Some(self.plan.sync_start);
        }
        let sweep = self.sweep.deadline(self.plan.correction, self.plan.procs());
        if self.plan.pace == 0 {
            return sweep;
        }
        self.paced_deadline(sweep)
    }

    fn take_output(&mut self) -> Option<P> {
        if std::mem::take(&mut self.output_ready) {
            self.value.clone()
        } else {
            None
        }
    }

    fn is_quiescent(&self) -> bool {
        if self.poll_deadline().is_some() || self.owes_tree_sends() {
            return false;
        }
        // Without a deadline nothing depends on time any more: what
        // `poll_transmit` would send at the end of time it would send at
        // any `now`. A closed correction, or a sweep that will never send
        // again (every kind but delayed, whose stop replies only a copy
        // asked for its next send can tell), sends nothing; the copy is
        // asked otherwise (it clones the core: the common cases above are
        // on every call's path).
        let asked = || self.clone().poll_transmit(Tick::MAX).is_none();
        if !self.correction_open(Tick::MAX)
            || !matches!(self.plan.correction, Correction::Delayed { .. })
                && self.sweep.finished(self.plan.correction, self.plan.procs())
        {
            // Every test build checks the shortcut against the copy.
            debug_assert!(asked(), "a quiescent sweep would send");
            return true;
        }
        asked()
    }

    fn header(&self) -> Header {
        Header::rooted(self.op, self.kind, self.root)
    }

    /// A broadcast lets its rank return once it has nothing left to send
    /// without news: its tree sends are done and its correction sweep has
    /// heard from both sides (or covered the ring). Returning earlier would
    /// leave the ranks a dead or hung neighbour cut off to sweeps that only
    /// progress when their ranks call again: a deadlock if user code waits
    /// on something outside the library. A rank colored only by correction
    /// still owes its subtree the tree message: it waits for it (or for its
    /// ancestor's failure) for the engine's grace period, so that no rank
    /// returns while its children depend on it, yet a hung ancestor cannot
    /// hold it for long.
    fn may_return(&self) -> Leave {
        if !self.is_quiescent() || self.owes_tree_sends() {
            Leave::Not
        } else if self.by_tree || self.finished() {
            Leave::Now
        } else {
            Leave::AfterGrace
        }
    }

    fn is_finished(&self) -> bool {
        self.finished()
    }

    /// See [`BcastPlan::uses_time`].
    fn waits_once(&self) -> bool {
        true
    }

    fn uses_time(&self) -> bool {
        self.plan.uses_time()
    }

    /// Until it holds the value.
    fn output_from_root(&self) -> bool {
        self.value.is_none()
    }

    /// Without correction, a child of the root gets the value from the
    /// root's tree message alone; the root is its only ancestor, so it is
    /// orphaned exactly when the root failed.
    fn root_lost(&self) -> bool {
        self.value.is_none()
            && self.orphaned()
            && !self.plan.corrects()
            && self.plan.tree.parent(self.me) == Some(0)
    }

    /// Below a failed ancestor, without a value, where the correction does
    /// not guarantee delivery (CT Section 3.3: opportunistic correction
    /// misses a gap longer than 2d). Certain where no correction runs and
    /// the tree parent itself failed: the parent's tree message was the
    /// only way.
    fn stranded(&self) -> Option<Stranded> {
        if self.value.is_some() || self.plan.correction.guarantees_delivery() {
            return None;
        }
        let tree = &self.plan.tree;
        let cut_by = std::iter::successors(tree.parent(self.me), |&a| tree.parent(a))
            .find(|&a| a == self.cut_by)?;
        Some(Stranded {
            cut_by: self.to_actual(cut_by),
            certain: !self.plan.corrects() && tree.parent(self.me) == Some(cut_by),
        })
    }

    /// The tree parent, while this rank waits for its tree message: it has
    /// none, and no ancestor is known to have failed. (Correction messages
    /// come from whichever neighbours live; only the tree message has one
    /// sender to wait on.) A hung parent is thereby found by the timeout
    /// detector once, and from then on the rank is orphaned at the start of
    /// every broadcast instead of waiting out a grace period in each.
    fn awaiting(&self) -> Option<Rank> {
        if self.by_tree || self.orphaned() {
            return None;
        }
        self.plan.tree.parent(self.me).map(|p| self.to_actual(p))
    }
}
