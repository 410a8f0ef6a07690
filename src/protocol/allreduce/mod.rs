//! Allreduce (Küttler, Härtig, Section 5): an up-correction reduce to a
//! root, then a corrected-tree broadcast of the result from that root; if
//! the root fails before a rank has the result, the rank retries with the
//! next root. Round `k` uses root `k` (ranks 0, 1, 2, ... in turn): a
//! deterministic sequence every rank follows, longer than any f + 1.
//!
//! The paper assumes the roots tried never fail *during* the operation. We
//! also survive that: a root may die after some ranks got its result and
//! before others did. Every rank, with or without the result, moves to round
//! k + 1 once it learns root k failed (or when a message of a later round
//! reaches a rank that has the result); a rank that has the result
//! ("decided") contributes it marked [`decided`](Contribution::decided), and
//! a decided value absorbs every other in the reduce, so the next root
//! broadcasts the same result. A rank that has moved on ignores the older
//! round's messages. Hence every live rank delivers the same value, provided
//! at most f ranks fail (a live decided rank's contribution reaches the next
//! root by Section 4.1). The price: a root that fails right after a
//! complete allreduce makes the ranks still holding its core run one more
//! round, which delivers nothing new.
//!
//! Guarantees (Section 5.1) with at most f failures and a failure detector
//! that eventually reports every failed root: every live rank delivers
//! exactly once; all deliver the same value; it includes every live rank's
//! input, and each failed rank's input either everywhere or nowhere.

use crate::error::Error;
use crate::protocol::bcast::Bcast;
use crate::protocol::pair::PairAllreduce;
use crate::protocol::reduce::{
    Combine, Contribution, FailureInfo, Reduce, ReduceLists, ReduceOutput,
};
use crate::protocol::{Event, Header, Leave, Msg, Protocol, Transmit};
use crate::types::{Collective, OpId, Rank, Tick};

mod plan;

pub use plan::{AllreduceAlgorithm, AllreducePlan};

/// What an allreduce core delivers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AllreduceOutput<P> {
    /// The result, and the root (round) whose broadcast brought it.
    Value {
        /// The reduction.
        value: P,
        /// The root that computed it.
        root: Rank,
        /// The ranks whose inputs `value` lacks, as the root's reduce found
        /// them ([`ReduceOutput::Root`]'s `info`, which the broadcast
        /// carries): the same on every rank that delivers.
        missing: FailureInfo,
    },
    /// The root found no complete result: more than f ranks failed.
    TooManyFailures {
        /// The root that found it.
        root: Rank,
    },
}

/// Calls the same method on whichever core an [`AllreduceCore`] holds.
macro_rules! each {
    ($core:expr, $c:ident => $call:expr) => {
        match $core {
            AllreduceCore::Rooted($c) => $call,
            AllreduceCore::Pair($c) => $call,
        }
    };
}

/// One rank's allreduce (or barrier) core, as its plan chooses: the rooted
/// algorithm of Section 5, or the pair exchange for a team of two.
#[derive(Debug)]
// Unboxed: a call keeps its core on the stack, and boxing the rooted
// variant would allocate in every allreduce.
#[allow(clippy::large_enum_variant)]
pub enum AllreduceCore<'p, P, O> {
    /// Reduce to a root, corrected broadcast, root retry.
    Rooted(Allreduce<'p, P, O>),
    /// A team of two: one exchange.
    Pair(PairAllreduce<P, O>),
}

impl<'p, P, O> AllreduceCore<'p, P, O>
where
    P: Clone + Send + 'static,
    O: Combine<P> + Clone,
{
    /// The core [`AllreducePlan::is_pair`] selects for rank `me`; arguments
    /// as for [`Allreduce::new`].
    pub fn new(
        plan: &'p AllreducePlan,
        me: Rank,
        op_id: OpId,
        kind: Collective,
        input: P,
        op: O,
    ) -> Result<Self, Error> {
        if plan.is_pair() {
            crate::protocol::check_ranks(2, [me])?;
            Ok(AllreduceCore::Pair(PairAllreduce::new(
                me, op_id, kind, input, op,
            )))
        } else {
            Allreduce::new(plan, me, op_id, kind, input, op).map(AllreduceCore::Rooted)
        }
    }

    /// The operation number.
    pub fn op(&self) -> OpId {
        each!(self, c => c.op())
    }

    /// The collective its messages carry (allreduce or barrier).
    pub fn kind(&self) -> Collective {
        each!(self, c => c.kind())
    }
}

impl<P, O> Protocol for AllreduceCore<'_, P, O>
where
    P: Clone + Send + 'static,
    O: Combine<P> + Clone,
{
    type Payload = Contribution<P>;
    type Output = AllreduceOutput<P>;

    fn handle(&mut self, now: Tick, event: Event<Msg<Contribution<P>>>) {
        each!(self, c => c.handle(now, event))
    }

    fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<Contribution<P>>>> {
        each!(self, c => c.poll_transmit(now))
    }

    fn poll_deadline(&self) -> Option<Tick> {
        each!(self, c => c.poll_deadline())
    }

    fn take_output(&mut self) -> Option<AllreduceOutput<P>> {
        each!(self, c => c.take_output())
    }

    fn is_quiescent(&self) -> bool {
        each!(self, c => c.is_quiescent())
    }

    fn awaiting(&self) -> Option<Rank> {
        each!(self, c => c.awaiting())
    }

    fn header(&self) -> Header {
        each!(self, c => c.header())
    }

    fn may_return(&self) -> Leave {
        each!(self, c => c.may_return())
    }

    fn is_finished(&self) -> bool {
        each!(self, c => c.is_finished())
    }

    fn retired_by(&self, completed: &Header) -> bool {
        each!(self, c => c.retired_by(completed))
    }

    fn uses_time(&self) -> bool {
        each!(self, c => c.uses_time())
    }
}

/// One rank's state in one allreduce (or barrier) of the rooted algorithm.
#[derive(Debug)]
pub struct Allreduce<'p, P, O> {
    plan: &'p AllreducePlan,
    me: Rank,
    op_id: OpId,
    kind: Collective,
    input: P,
    op: O,
    /// The current round's root.
    root: Rank,
    reduce: Reduce<'p, P, O>,
    bcast: Bcast<'p, Contribution<P>>,
    /// The result, once known.
    decided: Option<Contribution<P>>,
    output: Option<AllreduceOutput<P>>,
    /// Messages of later rounds, until this rank gets there.
    held: Vec<(Rank, Msg<Contribution<P>>)>,
    /// Ranks reported failed.
    failed: Vec<Rank>,
    /// No further round is possible: every root was tried, or a root found
    /// too many failures.
    exhausted: bool,
    /// The round's root found too many failures, and its broadcast said
    /// so: this rank relays that finding (so that every live rank gets it)
    /// but takes part in no further round.
    poisoned: bool,
    /// The latest time handed in: the inner cores of a round started in
    /// between calls get it, so their time never runs backwards.
    now: Tick,
}

impl<'p, P, O> Allreduce<'p, P, O>
where
    P: Clone + Send + 'static,
    O: Combine<P> + Clone,
{
    /// The core of rank `me` for operation `op_id`, contributing `input`.
    /// `kind` is [`Collective::Allreduce`] or [`Collective::Barrier`].
    pub fn new(
        plan: &'p AllreducePlan,
        me: Rank,
        op_id: OpId,
        kind: Collective,
        input: P,
        op: O,
    ) -> Result<Self, Error> {
        Self::new_in(plan, me, op_id, kind, input, op, ReduceLists::default())
    }

    /// [`Allreduce::new`], its first round's reduce keeping its lists in
    /// `lists` ([`Allreduce::take_reduce_lists`] of an earlier core).
    pub fn new_in(
        plan: &'p AllreducePlan,
        me: Rank,
        op_id: OpId,
        kind: Collective,
        input: P,
        op: O,
        lists: ReduceLists<P>,
    ) -> Result<Self, Error> {
        let (reduce, bcast) = Self::round(
            plan,
            0,
            me,
            op_id,
            kind,
            Contribution::input(input.clone()),
            &op,
            lists,
        )?;
        Ok(Allreduce {
            plan,
            me,
            op_id,
            kind,
            input,
            op,
            root: 0,
            reduce,
            bcast,
            decided: None,
            output: None,
            held: Vec::new(),
            failed: Vec::new(),
            exhausted: false,
            poisoned: false,
            now: 0,
        })
    }

    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    fn round(
        plan: &'p AllreducePlan,
        root: Rank,
        me: Rank,
        op_id: OpId,
        kind: Collective,
        input: Contribution<P>,
        op: &O,
        lists: ReduceLists<P>,
    ) -> Result<(Reduce<'p, P, O>, Bcast<'p, Contribution<P>>), Error> {
        let reduce = Reduce::new_in(
            plan.reduce(),
            root,
            me,
            op_id,
            kind,
            input.clone(),
            op.clone(),
            lists,
        )?;
        // The root's value is set when its reduce delivers.
        let bcast = Bcast::new(plan.bcast(), root, me, op_id, Some(input))?.with_kind(kind);
        Ok((reduce, bcast))
    }

    /// The operation number.
    pub fn op(&self) -> OpId {
        self.op_id
    }

    /// Once this rank has the result, its round's reduce lists, emptied,
    /// for the engine's next core ([`Allreduce::new_in`]); `None` before.
    /// The round's reduce is retired ([`Reduce::retire`]): nobody needs it
    /// once a rank has the result, and a later round, if a root fails,
    /// gets a new one.
    pub fn take_reduce_lists(&mut self) -> Option<ReduceLists<P>> {
        self.decided.as_ref()?;
        Some(self.reduce.retire())
    }

    /// The same core with another reduction function. Once a rank has its
    /// result the function is never called again (its decided value absorbs
    /// every other), so an engine keeping the core after the call that lent
    /// the function can swap in any.
    pub fn with_op<O2: Combine<P> + Clone>(self, op: O2) -> Allreduce<'p, P, O2> {
        Allreduce {
            plan: self.plan,
            me: self.me,
            op_id: self.op_id,
            kind: self.kind,
            input: self.input,
            reduce: self.reduce.with_op(op.clone()),
            op,
            root: self.root,
            bcast: self.bcast,
            decided: self.decided,
            output: self.output,
            held: self.held,
            failed: self.failed,
            exhausted: self.exhausted,
            poisoned: self.poisoned,
            now: self.now,
        }
    }

    /// The collective its messages carry (allreduce or barrier).
    pub fn kind(&self) -> Collective {
        self.kind
    }

    /// The current round's root.
    pub fn root(&self) -> Rank {
        self.root
    }

    /// The current round's reduce core.
    pub fn reduce_phase(&self) -> &Reduce<'p, P, O> {
        &self.reduce
    }

    /// The current round's broadcast core.
    pub fn broadcast_phase(&self) -> &Bcast<'p, Contribution<P>> {
        &self.bcast
    }

    /// The result, once this rank has it.
    pub fn result(&self) -> Option<P> {
        self.decided.as_ref().map(|c| c.value.clone())
    }

    /// Starts round `root` (abandoning the current one).
    fn enter(&mut self, root: Rank) {
        let input = self
            .decided
            .clone()
            .unwrap_or_else(|| Contribution::input(self.input.clone()));
        let lists = self.reduce.retire();
        let (reduce, bcast) = Self::round(
            self.plan, root, self.me, self.op_id, self.kind, input, &self.op, lists,
        )
        .expect("ranks were checked when the core was made");
        self.root = root;
        self.reduce = reduce;
        self.bcast = bcast;
        let now = self.now;
        for &r in &self.failed {
            self.reduce.handle(now, Event::PeerFailed(r));
            self.bcast.handle(now, Event::PeerFailed(r));
        }
        self.reduce.handle(now, Event::Start);
        self.take_reduce_output();
        let held = std::mem::take(&mut self.held);
        for (from, msg) in held {
            self.route(from, msg);
        }
    }

    /// Moves on while the current round's root is known failed. A decided
    /// rank moves on too: an undecided rank may be waiting in the next round
    /// for contributions, and a decided leaf without live group peers would
    /// never hear of that round otherwise.
    fn retry_if_root_failed(&mut self) {
        while !self.exhausted && self.failed.contains(&self.root) {
            let next = self.root + 1;
            if next >= self.plan.procs() {
                self.exhausted = true;
                return;
            }
            self.enter(next);
        }
    }

    fn route(&mut self, from: Rank, msg: Msg<Contribution<P>>) {
        if msg.root == self.root {
            if msg.tag.is_broadcast() {
                self.bcast.handle(self.now, Event::Message { from, msg });
                self.take_bcast_value();
            } else {
                self.reduce.handle(self.now, Event::Message { from, msg });
                self.take_reduce_output();
            }
        } else if msg.root > self.root {
            if self.decided.is_some() {
                if !self.failed.contains(&msg.root) {
                    self.enter(msg.root);
                    self.route(from, msg);
                }
            } else {
                self.held.push((from, msg));
            }
        }
        // Older rounds: abandoned, their messages are dropped.
    }

    fn take_reduce_output(&mut self) {
        match self.reduce.take_output() {
            Some(ReduceOutput::Root { value, info, .. }) => {
                // The result travels with the list of inputs it lacks.
                self.start_bcast(Contribution {
                    info,
                    ..Contribution::input(value)
                });
            }
            Some(ReduceOutput::TooManyFailures { info }) => {
                let mut poison = Contribution::input(self.input.clone());
                poison.info = info;
                poison.info.subtree_failed = true;
                self.start_bcast(poison);
            }
            Some(ReduceOutput::Sent) | None => {}
        }
    }

    /// The root of the round broadcasts what its reduce found.
    fn start_bcast(&mut self, payload: Contribution<P>) {
        let bcast = Bcast::new(
            self.plan.bcast(),
            self.root,
            self.me,
            self.op_id,
            Some(payload),
        )
        .expect("checked ranks")
        .with_kind(self.kind);
        self.bcast = bcast;
        for &r in &self.failed {
            self.bcast.handle(self.now, Event::PeerFailed(r));
        }
        self.bcast.handle(self.now, Event::Start);
        self.take_bcast_value();
    }

    fn take_bcast_value(&mut self) {
        let Some(got) = self.bcast.take_output() else {
            return;
        };
        // A decided rank relays a later round's broadcast but delivers once.
        if self.decided.is_none() {
            self.deliver(got);
        }
    }

    fn deliver(&mut self, got: Contribution<P>) {
        if got.info.subtree_failed {
            self.exhausted = true;
            self.poisoned = true;
            self.output = Some(AllreduceOutput::TooManyFailures { root: self.root });
            return;
        }
        self.decided = Some(Contribution {
            decided: true,
            ..got.clone()
        });
        // What this rank still owes the reduce carries the result.
        self.reduce.adopt_decided(got.value.clone(), got.info);
        self.output = Some(AllreduceOutput::Value {
            value: got.value,
            root: self.root,
            missing: got.info,
        });
    }
}

impl<P, O> Protocol for Allreduce<'_, P, O>
where
    P: Clone + Send + 'static,
    O: Combine<P> + Clone,
{
    type Payload = Contribution<P>;
    type Output = AllreduceOutput<P>;

    fn handle(&mut self, now: Tick, event: Event<Msg<Contribution<P>>>) {
        self.now = self.now.max(now);
        let now = self.now;
        match event {
            Event::Start => {
                self.reduce.handle(now, Event::Start);
                self.take_reduce_output();
                self.retry_if_root_failed();
            }
            Event::Message { from, msg } => self.route(from, msg),
            Event::PeerFailed(r) => {
                if !self.failed.contains(&r) {
                    self.failed.push(r);
                    self.reduce.handle(now, Event::PeerFailed(r));
                    self.take_reduce_output();
                    self.bcast.handle(now, Event::PeerFailed(r));
                    self.retry_if_root_failed();
                }
            }
            Event::Timer => self.bcast.handle(now, Event::Timer),
        }
    }

    fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<Contribution<P>>>> {
        self.now = self.now.max(now);
        let now = self.now;
        if let Some(tx) = self.reduce.poll_transmit(now) {
            self.take_reduce_output();
            return Some(tx);
        }
        if self.exhausted && self.decided.is_none() && !self.poisoned {
            return None;
        }
        self.bcast.poll_transmit(now)
    }

    fn poll_deadline(&self) -> Option<Tick> {
        self.bcast.poll_deadline()
    }

    fn take_output(&mut self) -> Option<AllreduceOutput<P>> {
        self.output.take()
    }

    fn is_quiescent(&self) -> bool {
        self.reduce.is_quiescent()
            && ((self.exhausted && !self.poisoned) || self.bcast.is_quiescent())
    }

    fn header(&self) -> Header {
        Header::any_root(self.op_id, self.kind)
    }

    fn may_return(&self) -> Leave {
        if self.reduce.is_quiescent() {
            self.bcast.may_return()
        } else {
            Leave::Not
        }
    }

    /// Never: even with its result, a rank joins the next round if this
    /// round's root fails (and contributes its decided value), so the core
    /// is kept until a later allreduce retires it.
    fn is_finished(&self) -> bool {
        false
    }

    /// Once this rank completed a later allreduce or barrier, every live
    /// rank has entered that operation (Section 5.1, property 1), so no
    /// round of this one can start any more.
    fn retired_by(&self, completed: &Header) -> bool {
        completed.op > self.op_id && completed.kind.is_allreduce()
    }

    fn uses_time(&self) -> bool {
        self.bcast.uses_time()
    }

    fn awaiting(&self) -> Option<Rank> {
        if self.decided.is_some() {
            // What is left serves others; nothing here is worth suspecting for.
            return None;
        }
        self.reduce.awaiting().or_else(|| {
            // Waiting for the round's result: its root is what we wait on.
            (self.decided.is_none() && !self.exhausted).then_some(self.root)
        })
    }
}
