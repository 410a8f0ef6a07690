//! The non-blocking collectives' protocol part, written once for every
//! engine: an immediate call numbers its operation and applies the rank's
//! emulated fault as a blocking call does ([`Caller::begin`]), builds the
//! core the team's plans name, with the value and the reduction it owns,
//! and launches it ([`Driver::launch`]: it sends what it can and stays
//! pending); completing it drives it with a blocking call's loop
//! ([`Driver::wait_pending`]) or takes the output that has come
//! ([`Driver::try_complete`]), and maps it to a value or a typed error as a
//! blocking call does. The cores, messages and kinds are the blocking
//! calls' own: the guarantees are theirs.
//!
//! Values travel as [`Data`] in the engine's pool (inline, or a shared
//! segment), whatever their size: the lending and lazy paths of the thread
//! engine and the node's shared memory of the MPI engine borrow the
//! caller's buffers for the call's duration, which an immediate call does
//! not have.

use std::sync::Arc;

use crate::call::broadcast::root_failed;
use crate::call::ftco::{allreduce_kind, FTCO_ALLREDUCE_ROOT};
use crate::call::plans::{BroadcastPlan, ReductionPlan};
use crate::call::{Caller, Control, Engine};
use crate::contributors::Contributors;
use crate::driver::Outcome;
use crate::error::{ConfigError, Error};
use crate::protocol::ack_tree::AckTree;
use crate::protocol::allreduce::{Allreduce, AllreduceOutput};
use crate::protocol::bcast::Bcast;
use crate::protocol::ftco::{Ftco, FtcoCollective, FtcoOutput, FtcoReduce};
use crate::protocol::gossip::{Big, Fcg, Gossip, GossipCorrection, SlotClock};
use crate::protocol::op_clock::OpClock;
use crate::protocol::pair::PairAllreduce;
use crate::protocol::random::RandomStream;
use crate::protocol::reduce::{Combine, Contribution, Reduce, ReduceLists, ReduceOutput};
use crate::types::{Collective, OpId, Rank};
use crate::value::data::Data;
use crate::value::lazy::LAZY_MIN_BYTES;
use crate::value::segment::SegmentPool;

/// A reduction on values, owned by the operation that applies it (a
/// pending core outlives the call that started it).
pub trait ValueOp: Send + Sync {
    /// `acc = acc ∘ other`, element by element; values larger than a
    /// message go to `pool`.
    fn combine(&self, acc: &mut Data, other: &Data, pool: &SegmentPool);
}

/// A typed [`crate::op::Operation`] as a [`ValueOp`].
pub struct Typed<T, O> {
    /// The operation.
    pub op: O,
    /// Its element type.
    pub element: std::marker::PhantomData<fn(T) -> T>,
}

impl<T, O> ValueOp for Typed<T, O>
where
    T: bytemuck::Pod,
    O: crate::op::Operation<T> + Send,
{
    fn combine(&self, acc: &mut Data, other: &Data, pool: &SegmentPool) {
        Data::combine(acc, other, &self.op, pool);
    }
}

/// What an immediate call starts.
pub enum Start {
    /// A broadcast from `root`; `value` is the root's.
    Broadcast {
        /// The root.
        root: Rank,
        /// The root's value (`None` elsewhere).
        value: Option<Data>,
    },
    /// A reduce of `input` to `root` with `op`.
    Reduce {
        /// The root.
        root: Rank,
        /// This rank's input.
        input: Data,
        /// The reduction.
        op: Arc<dyn ValueOp>,
    },
    /// An allreduce (or, `kind` [`Collective::Barrier`], a barrier) of
    /// `input` with `op`.
    Allreduce {
        /// [`Collective::Allreduce`] or [`Collective::Barrier`].
        kind: Collective,
        /// This rank's input.
        input: Data,
        /// The reduction.
        op: Arc<dyn ValueOp>,
    },
}

/// What a completed immediate operation delivered here.
pub struct Finished {
    /// Its operation.
    pub op: OpId,
    /// The value (a broadcast's, a reduce's at its root, an allreduce's);
    /// `None` at a reduce's other ranks and for a barrier.
    pub value: Option<Data>,
    /// Whose inputs a reduction's value holds, where the communicator
    /// knows it.
    pub contributors: Option<Contributors>,
}

/// A communicator's immediate calls, as the blanket
/// [`Collectives`](crate::Collectives) reaches them (object-safe, as
/// [`super::Control`]).
pub trait Immediate {
    /// Where values larger than a message are written, shared with what
    /// outlives a call (an immediate call's loans).
    fn pool(&self) -> Arc<SegmentPool>;

    /// A buffer an immediate call is done with, kept for the next one's
    /// output (`None`, or a `Vec` of some element type).
    fn spare(&mut self) -> &mut Option<Box<dyn std::any::Any>>;

    /// The bytes from which a reduction's input goes as a lazy sum (a copy
    /// of it, reduced by chunks once the inputs are agreed,
    /// [`crate::value::lazy`]), on an engine whose values may refer to its
    /// memory and a team that reduces by up-correction; `None` elsewhere.
    fn lazy_from(&self) -> Option<usize>;

    /// Starts `start` without waiting; its operation's number.
    fn start(&mut self, start: Start) -> Result<OpId, Error>;

    /// Operation `op` (rooted at `root`, if it is), once done: waited for
    /// if `wait`, else `None` while it has not completed.
    fn complete(
        &mut self,
        op: OpId,
        root: Option<Rank>,
        wait: bool,
    ) -> Option<Result<Finished, Error>>;
}

/// An owned reduction as a core's combining function.
#[derive(Clone)]
struct Owned {
    op: Arc<dyn ValueOp>,
    pool: Arc<SegmentPool>,
}

impl Combine<Data> for Owned {
    fn combine(&self, acc: &mut Data, other: &Data) {
        self.op.combine(acc, other, &self.pool);
    }
}

impl<'t, E: Engine<'t>> Immediate for Caller<'t, E> {
    fn pool(&self) -> Arc<SegmentPool> {
        self.engine.lasting_pool()
    }

    fn spare(&mut self) -> &mut Option<Box<dyn std::any::Any>> {
        &mut self.spare
    }

    fn lazy_from(&self) -> Option<usize> {
        let up_correction = matches!(self.plans().reduction, ReductionPlan::UpCorrection { .. });
        (self.engine.values_by_reference() && up_correction).then_some(LAZY_MIN_BYTES)
    }

    fn start(&mut self, start: Start) -> Result<OpId, Error> {
        match start {
            Start::Broadcast { root, value } => self.start_broadcast(root, value),
            Start::Reduce { root, input, op } => self.start_reduction(Some(root), None, input, op),
            Start::Allreduce { kind, input, op } => {
                self.start_reduction(None, Some(kind), input, op)
            }
        }
    }

    fn complete(
        &mut self,
        op: OpId,
        root: Option<Rank>,
        wait: bool,
    ) -> Option<Result<Finished, Error>> {
        let got = if wait {
            self.driver.wait_pending(op)
        } else {
            self.driver.try_complete(op)?
        };
        let finished = got.and_then(|out| self.finished(op, out));
        Some(finished.map_err(|e| match root {
            Some(root) => root_failed(&self.driver, e, op, root),
            None => e,
        }))
    }
}

impl<'t, E: Engine<'t>> Caller<'t, E> {
    /// Launches a broadcast from `root` with the team's algorithm (every
    /// one: the corrected tree, gossip, FCG, BIG, FTCO, the ack tree).
    fn start_broadcast(&mut self, root: Rank, value: Option<Data>) -> Result<OpId, Error> {
        self.check_root(root)?;
        let op = self.begin()?;
        let me = self.rank();
        let plans = self.plans();
        let launched = match &plans.broadcast {
            BroadcastPlan::Tree(plan) => {
                Bcast::new(plan, root, me, op, value).and_then(|core| self.driver.launch(op, core))
            }
            BroadcastPlan::AckTree(plan) => AckTree::new(plan, root, me, op, value)
                .and_then(|core| self.driver.launch(op, core)),
            BroadcastPlan::Big(plan) => {
                Big::new(plan, root, me, op, value).and_then(|core| self.driver.launch(op, core))
            }
            BroadcastPlan::Ftco(plan) => Ftco::new(plan, root, me, op, value)
                .and_then(|core| self.driver.launch(op, OpClock::new(core))),
            BroadcastPlan::Gossip(plan, seed) => {
                let rng = RandomStream::for_rank(*seed, me, op);
                if let GossipCorrection::FailureProof { .. } = plan.correction() {
                    // A c-node's SOS timeout as a blocking call's
                    // (`broadcast::drive_broadcast`).
                    let timeout = self.driver.config().failure_timeout / 4;
                    Fcg::new(plan, root, me, op, value, rng).and_then(|core| {
                        let clock = SlotClock::new(core, plan.logp());
                        self.driver.launch(op, clock.with_real_timeouts(timeout))
                    })
                } else {
                    Gossip::new(plan, root, me, op, value, rng)
                        .and_then(|core| self.driver.launch(op, SlotClock::new(core, plan.logp())))
                }
            }
        };
        self.launched(op, launched)
    }

    /// Launches a reduce to `root` (`Some`) or an allreduce or barrier
    /// (`kind`) with the team's reduction (up-correction, the pair
    /// exchange, or FTCO).
    fn start_reduction(
        &mut self,
        root: Option<Rank>,
        kind: Option<Collective>,
        input: Data,
        op: Arc<dyn ValueOp>,
    ) -> Result<OpId, Error> {
        if let Some(root) = root {
            self.check_root(root)?;
        }
        let id = self.begin()?;
        let me = self.rank();
        let combine = Owned {
            op,
            pool: self.engine.lasting_pool(),
        };
        let plans = self.plans();
        let launched = match (&plans.reduction, root) {
            (ReductionPlan::UpCorrection { reduce, .. }, Some(root)) => Reduce::new_in(
                reduce,
                root,
                me,
                id,
                Collective::Reduce,
                Contribution::input(input),
                combine,
                ReduceLists::default(),
            )
            .and_then(|core| self.driver.launch(id, core)),
            (ReductionPlan::UpCorrection { allreduce, .. }, None) => {
                let kind = kind.unwrap_or(Collective::Allreduce);
                if allreduce.is_pair() {
                    let core = PairAllreduce::new(me, id, kind, input, combine);
                    self.driver.launch(id, core)
                } else {
                    let lists = ReduceLists::default();
                    Allreduce::new_in(allreduce, me, id, kind, input, combine, lists)
                        .and_then(|core| self.driver.launch(id, core))
                }
            }
            (ReductionPlan::Ftco(plan), root) => {
                let (root, kind) = match root {
                    Some(root) => (root, FtcoCollective::Reduce),
                    None => (
                        FTCO_ALLREDUCE_ROOT,
                        allreduce_kind(kind.unwrap_or(Collective::Allreduce)),
                    ),
                };
                FtcoReduce::new(plan, root, me, id, kind, input, combine)
                    .and_then(|core| self.driver.launch(id, OpClock::new(core)))
            }
        };
        self.launched(id, launched)
    }

    /// Operation `op` after its launch: its number, or the error of a core
    /// that could not be built (published as returned) or of the launch.
    fn launched(&mut self, op: OpId, launched: Result<(), Error>) -> Result<OpId, Error> {
        match launched {
            Ok(()) => Ok(op),
            Err(e) => Err(self.abandon(op, e)),
        }
    }

    /// What pending operation `op` delivered, as a blocking call maps its
    /// core's output (whose type the core that was launched fixes).
    fn finished(&self, op: OpId, out: Outcome) -> Result<Finished, Error> {
        let done = |value, contributors| Finished {
            op,
            value,
            contributors,
        };
        let out = match out.downcast::<Data>() {
            Ok(value) => return Ok(done(Some(*value), None)),
            Err(out) => out,
        };
        let knows = self.knows_contributors().is_ok();
        let size = self.size();
        let out = match out.downcast::<ReduceOutput<Data>>() {
            Ok(got) => {
                return match *got {
                    ReduceOutput::Sent => Ok(done(None, None)),
                    ReduceOutput::Root { value, info, .. } => {
                        let who = knows.then(|| Contributors::from_info(size, &info));
                        Ok(done(Some(value), who))
                    }
                    ReduceOutput::TooManyFailures { .. } => Err(self.too_many_failures(op)),
                }
            }
            Err(out) => out,
        };
        let out = match out.downcast::<AllreduceOutput<Data>>() {
            Ok(got) => {
                return match *got {
                    AllreduceOutput::Value { value, missing, .. } => {
                        let who = knows.then(|| Contributors::from_info(size, &missing));
                        Ok(done(Some(value), who))
                    }
                    AllreduceOutput::TooManyFailures { .. } => Err(self.too_many_failures(op)),
                }
            }
            Err(out) => out,
        };
        match out.downcast::<FtcoOutput<Data>>() {
            Ok(got) => Ok(match *got {
                FtcoOutput::Value { value, missing } => {
                    done(Some(value), Some(Contributors::all_but(size, &missing)))
                }
                FtcoOutput::Contributed => done(None, None),
            }),
            Err(_) => Err(Error::Config(ConfigError::Unsupported {
                what: "completing this request",
                why: "its core delivered an output no immediate call starts (a bug)",
            })),
        }
    }
}
