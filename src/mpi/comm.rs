//! [`MpiComm`]: the collectives between MPI processes, through the same
//! driver and the same protocol cores as the thread runtime's
//! [`Comm`](crate::runtime::Comm).

use std::marker::PhantomData;
use std::sync::Arc;

use mpi::topology::SimpleCommunicator;

use crate::buffer::{Buffer, BufferMut};
use crate::collectives::Collectives;
use crate::driver::{Driver, DriverConfig, Transport};
use crate::error::{ConfigError, Error};
use crate::mpi::shm::{NodeRegions, RefList};
use crate::mpi::transport::MpiTransport;
use crate::op::Operation;
use crate::protocol::allreduce::{Allreduce, AllreduceAlgorithm, AllreduceOutput};
use crate::protocol::ftco::{FtcoCollective, FtcoOutput, FtcoPlan, Timeouts};
use crate::protocol::op_clock::OpClock;
use crate::protocol::pair::PairAllreduce;
use crate::protocol::reduce::{Contribution, Reduce, ReduceOutput};
use crate::protocol::scatter::{
    Decision, ScatterAllreduce, ScatterOutput, Verdict, BLOCKS_MIN_BYTES,
};
use crate::protocol::Protocol;
use crate::runtime::broadcast::{drive_broadcast, root_failed, BcastObserver};
use crate::runtime::data::Data;
use crate::runtime::segment::SegmentPool;
use crate::runtime::{
    data_op, drive_ftco_reduction, ftco_allreduce_kind, ftco_allreduce_result,
    ftco_reduce_result_into, Fault, FaultSchedule, Plans, TeamBuilder, FTCO_ALLREDUCE_ROOT,
};
use crate::types::{Collective, OpId, Rank};

/// One process's handle on a team of MPI processes, one rank each: the
/// collectives of the [`Collectives`] trait, with the fault tolerance of
/// the thread runtime's (Corrected Trees Section 3 for the broadcast,
/// reduce paper Sections 4-5 for reduce and allreduce), run by the same
/// cores through the same driver over an MPI transport.
///
/// What differs from threads, because this Open MPI reports no failure
/// (docs/mpi.md): a corrected broadcast needs no failure notice and
/// survives processes that die before or during it (a SIGKILLed one
/// included); reduce, allreduce and barrier wait for a contribution that
/// never comes from a process that died unannounced, until the operation
/// timeout ([`Error::Timeout`]). Failures emulated through the builder's
/// [`FaultSchedule`] are announced, as a detector would, and reduce and
/// allreduce survive those within the fault budget.
///
/// Not `Send`: MPI is initialized for one thread; use it on that thread.
pub struct MpiComm {
    driver: Driver<'static, MpiTransport>,
    /// Leaked: kept cores borrow it for as long as the driver keeps them,
    /// and a process makes one communicator or a few (a few KiB each).
    plans: &'static Plans,
    faults: FaultSchedule,
    /// Calls made so far: what emulated faults are numbered by (a large
    /// allreduce takes three operation numbers, [`BLOCKS_MIN_BYTES`]).
    calls: OpId,
    /// Whether a large allreduce goes by blocks (the algorithm is
    /// [`AllreduceAlgorithm::Auto`]).
    by_blocks: bool,
    /// Large allreduces that fell back from blocks to the eager algorithm.
    fallbacks: u64,
    /// Ranks every live rank agreed had failed, at the last allreduce by
    /// blocks: the next one leaves them out.
    agreed_failed: Vec<Rank>,
    /// Segments of values too large to travel inline (the transport's too).
    segments: Arc<SegmentPool>,
    /// Every process's region of shared memory, if all run on one node
    /// ([`NodeRegions`]): large allreduces go through them.
    regions: Option<NodeRegions>,
    /// What the broadcasts so far counted.
    counts: BroadcastCounts,
    _one_thread: PhantomData<*const ()>,
}

impl MpiComm {
    /// The team of every process of `world`, one rank each (rank and size
    /// are `world`'s), with `config`'s tree, correction, broadcast
    /// algorithm (every [`BroadcastAlgorithm`](crate::runtime::BroadcastAlgorithm) the thread runtime runs,
    /// docs/mpi.md), seed, fault budget, timeouts and emulated faults (its
    /// rank count and placement do not apply). Collective: every process
    /// of `world` calls it.
    ///
    /// Errors: a configuration that does not fit `world`'s size.
    pub fn new(world: &SimpleCommunicator, config: &TeamBuilder) -> Result<MpiComm, ConfigError> {
        let (op_timeout, failure_timeout) = config.timeouts();
        let mut regions = match config.mpi_shared_memory_bytes() {
            0 => None,
            slot => NodeRegions::new(world, slot),
        };
        let rings = regions.as_mut().and_then(NodeRegions::take_rings);
        let segments = Arc::new(SegmentPool::new());
        let transport = MpiTransport::new(
            world,
            Arc::clone(&segments),
            failure_timeout,
            op_timeout,
            rings,
        )
        .yield_when_idle(super::node::oversubscribed(world));
        let procs = transport.procs();
        for r in config.fault_schedule().ranks() {
            if r >= procs {
                return Err(ConfigError::FaultRank { rank: r, procs });
            }
        }
        let plans = Box::leak(Box::new(Plans::build(
            config,
            procs,
            config.budget_for(procs),
        )?));
        let driver = Driver::new(
            transport,
            DriverConfig {
                op_timeout: crate::driver::nanos(op_timeout),
                failure_timeout: crate::driver::nanos(failure_timeout),
                root_wait: crate::driver::nanos(failure_timeout),
                ..DriverConfig::default()
            },
        );
        Ok(MpiComm {
            driver,
            plans,
            faults: config.fault_schedule().clone(),
            calls: 0,
            fallbacks: 0,
            agreed_failed: Vec::new(),
            by_blocks: config.allreduce_choice() == AllreduceAlgorithm::Auto,
            segments,
            regions,
            counts: BroadcastCounts::default(),
            _one_thread: PhantomData,
        })
    }

    /// Whether large allreduces go through shared memory (every process
    /// runs on this node and made its region, [`TeamBuilder::mpi_shared_memory`]).
    pub fn shares_memory(&self) -> bool {
        self.regions.is_some()
    }

    /// This process's rank.
    pub fn rank(&self) -> Rank {
        self.driver.rank()
    }

    /// The number of processes.
    pub fn size(&self) -> u32 {
        self.driver.size()
    }

    /// Large allreduces so far whose blocks did not reach every live rank
    /// (a rank failed during the exchange), so that every live rank fell
    /// back to the eager allreduce ([`crate::protocol::scatter`]).
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks
    }

    /// What this process's broadcasts so far counted: the gossip ones in
    /// which it was a g-node, and the timeouts FTCO's fired here.
    pub fn broadcast_counts(&self) -> BroadcastCounts {
        self.counts
    }

    /// Frames received that could not be read, and messages that could not
    /// be framed: both 0 unless something is wrong.
    pub fn bad_frames(&self) -> (u64, u64) {
        self.driver.transport().bad_frames()
    }

    fn allreduce(
        &mut self,
        kind: Collective,
        input: Data,
        combine: &(dyn Fn(&mut Data, &Data) + Sync),
    ) -> Result<(OpId, Data), Error> {
        if let Some(plan) = &self.plans.ftco_reduce {
            let (root, kind) = (FTCO_ALLREDUCE_ROOT, ftco_allreduce_kind(kind));
            let (id, output) = self.ftco_reduction(plan, root, kind, input, combine)?;
            return Ok((id, ftco_allreduce_result(output)));
        }
        let id = self.begin_call()?;
        self.allreduce_op(id, kind, input, combine)
    }

    /// An FTCO reduce to `root`, or an allreduce or barrier rooted at
    /// [`FTCO_ALLREDUCE_ROOT`] ([`ReduceAlgorithm::Ftco`](crate::runtime::ReduceAlgorithm::Ftco)): its own
    /// timeouts detect failures, so it needs no failure notice and survives
    /// processes that die unannounced, the root excepted.
    fn ftco_reduction(
        &mut self,
        plan: &'static FtcoPlan,
        root: Rank,
        kind: FtcoCollective,
        input: Data,
        combine: &(dyn Fn(&mut Data, &Data) + Sync),
    ) -> Result<(OpId, FtcoOutput<Data>), Error> {
        let id = self.begin_call()?;
        let started = self.driver.call_started();
        let counts = &mut self.counts;
        let driver = &mut self.driver;
        let output = drive_ftco_reduction(
            driver, plan, root, id, started, kind, input, combine, counts,
        )?;
        Ok((id, output))
    }

    /// Allreduce (or barrier) `id`, entered already: the pair exchange for
    /// two processes, else the rooted algorithm of the plan.
    fn allreduce_op(
        &mut self,
        id: OpId,
        kind: Collective,
        input: Data,
        combine: &(dyn Fn(&mut Data, &Data) + Sync),
    ) -> Result<(OpId, Data), Error> {
        let started = self.driver.call_started();
        let me = self.rank();
        let output = if self.plans.allreduce.is_pair() {
            let mut core = PairAllreduce::new(me, id, kind, input, combine);
            self.driver.drive(id, started, &mut core)?
        } else {
            let plans = self.plans;
            let core = Allreduce::new(&plans.allreduce, me, id, kind, input, combine);
            let mut core = core.map_err(|e| self.abandon(id, e))?;
            let output = self.driver.drive(id, started, &mut core)?;
            if let AllreduceOutput::Value { .. } = output {
                // A kept core never combines again (it is decided).
                let never: fn(&mut Data, &Data) = |_, _| {};
                self.driver.keep(core.with_op(never));
            }
            output
        };
        match output {
            AllreduceOutput::Value { value, .. } => Ok((id, value)),
            AllreduceOutput::TooManyFailures { .. } => Err(self.too_many_failures(id)),
        }
    }

    /// An allreduce of `send` by blocks ([`crate::protocol::scatter`]):
    /// the blocks are exchanged and reduced (one operation), the ranks
    /// agree on whether every live rank has every block (a second one, an
    /// allreduce of a [`Verdict`]), and either deliver the blocks or all
    /// fall back to the eager allreduce of their inputs (a third). Every
    /// element of the result is the reduction over one and the same set
    /// of inputs, on every live rank.
    fn all_reduce_by_blocks<T: bytemuck::Pod>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        op: &impl Operation<T>,
    ) -> Result<(), Error> {
        let first = self.driver.next_op();
        let result = self.by_blocks(send, recv, op);
        // The call takes its three operation numbers whichever way it
        // ended, so that a rank that left it early (an error) numbers its
        // next call as the others do; except when its first operation met
        // another call (a mismatch): every rank of this operation then
        // ends it with that error, the others' calls take one number each
        // (an allreduce of a value on the other side of
        // `BLOCKS_MIN_BYTES`, or another collective), and so does this one.
        let mismatched = matches!(result, Err(Error::Mismatch { op, .. }) if op == first);
        while !mismatched && self.driver.next_op() < first + 3 {
            let Ok(op) = self.driver.enter() else { break };
            self.driver.returned(op);
        }
        result
    }

    /// An allreduce through the node's shared memory ([`NodeRegions`]):
    /// this process copies its input into its region, the allreduce of
    /// Section 5 runs on lists of region references (combining joins
    /// them), and the processes fold the inputs the list names, in rank
    /// order, from the regions into `recv`, by blocks each folds once and
    /// the others copy from its region. What Section 5.1 proves of the
    /// value holds of the list (every live process delivers the same one,
    /// every live process's input in it once, a failed one's everywhere or
    /// nowhere), so every element of every live process's result is the
    /// reduction over one and the same set of inputs, bit for bit. A
    /// process that died after it published its input leaves it readable.
    /// A block copied from a region that changed under the copy is folded
    /// here instead; an input slot that changed (only a process the others
    /// left out as failed can see that) ends this process: [`Error::Failed`].
    fn all_reduce_shared<T: bytemuck::Pod>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        op: &impl Operation<T>,
    ) -> Result<(), Error> {
        let me = self.rank();
        let bytes: &[u8] = bytemuck::cast_slice(send);
        let regions = self.regions.as_mut().expect("the caller checked");
        let mine = regions.publish(bytes);
        let pool = Arc::clone(&self.segments);
        let list = RefList {
            len: bytes.len() as u64,
            refs: vec![mine],
        };
        let input = Data::encode(&list.encode(), &pool);
        let combine = |acc: &mut Data, other: &Data| join_refs(acc, other, &pool);
        let (id, value) = self
            .allreduce(Collective::SharedAllreduce, input, &combine)
            .map_err(|e| lengths_may_differ(e, bytes.len(), ""))?;
        let list = match value.to_wire() {
            Some(Ok(b)) => RefList::decode(b),
            _ => None,
        };
        let Some(list) = list else {
            // A mismatch of lengths.
            return value.decode_into(recv, id, Some(send.len()));
        };
        let out: &mut [u8] = bytemuck::cast_slice_mut(recv);
        if list.len != out.len() as u64 {
            let size = std::mem::size_of::<T>().max(1) as u64;
            return Err(Error::LengthMismatch {
                op: id,
                mine: recv.len(),
                theirs: (list.len / size) as usize,
            });
        }
        let regions = self.regions.as_ref().expect("the caller checked");
        // Each process starts at its own share of the blocks.
        let share = (me as usize, self.size().max(1) as usize);
        if regions.fold(&list, u64::from(id) + 1, share, op, recv) {
            return Ok(());
        }
        Err(self.taken_for_failed())
    }

    /// An input slot this process read was written again: its owner went
    /// on without this process, which it took for failed. So it has.
    fn taken_for_failed(&mut self) -> Error {
        self.driver.die();
        Error::Failed(self.rank())
    }

    /// [`MpiComm::all_reduce_by_blocks`]'s operations: the blocks, the
    /// verdict, the fall-back if needed.
    fn by_blocks<T: bytemuck::Pod>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        op: &impl Operation<T>,
    ) -> Result<(), Error> {
        let (me, procs) = (self.rank(), self.size());
        let members: Vec<Rank> = (0..procs)
            .filter(|r| !self.agreed_failed.contains(r))
            .collect();
        let pool = Arc::clone(&self.segments);
        let combine = data_op(op, &pool);
        let bounds = |j: usize| j * send.len() / members.len();
        let blocks = (0..members.len())
            .map(|j| Data::encode(&send[bounds(j)..bounds(j + 1)], &pool))
            .collect();
        let id = self.begin_call()?;
        if !members.contains(&me) {
            // The others agreed this rank had failed: by decree it has.
            self.driver.die();
            return Err(self.abandon(id, Error::Failed(me)));
        }
        let started = self.driver.call_started();
        let core = ScatterAllreduce::new(me, id, members.clone(), blocks, &combine);
        let mut core = core.map_err(|e| self.abandon(id, e))?;
        let exchanged = self
            .driver
            .drive(id, started, &mut core)
            .map_err(|e| lengths_may_differ(e, std::mem::size_of_val(send), ", by blocks"))?;
        // Not kept: its call returns once its sends are made, and then it
        // is finished.
        debug_assert!(crate::protocol::Protocol::is_finished(&core));
        let len = std::mem::size_of_val(send) as u64;
        let known = self.driver.failed_members();
        let left_out = std::mem::take(&mut self.agreed_failed);
        let verdict = Verdict::new(exchanged.is_complete(), len, procs, &known, &left_out);
        let agree_id = self.driver.enter()?;
        let unreadable = || Verdict::new(false, len, procs, &known, &left_out);
        let read = |d: &Data| verdict_of(d, procs).unwrap_or_else(unreadable);
        let (_, agreed) = self.allreduce_op(
            agree_id,
            Collective::Allreduce,
            Data::encode(&verdict.to_words(), &pool),
            &|acc: &mut Data, other: &Data| {
                let mut v = read(acc);
                v.combine(&read(other));
                *acc = Data::encode(&v.to_words(), &pool);
            },
        )?;
        let agreed = read(&agreed);
        self.agreed_failed = (0..procs).filter(|&r| agreed.has_failed(r)).collect();
        match agreed.decision() {
            Decision::Deliver => {
                let ScatterOutput::Complete(blocks) = exchanged else {
                    unreachable!("every live rank has every block, this one included")
                };
                for (j, block) in blocks.iter().enumerate() {
                    block.decode_into(&mut recv[bounds(j)..bounds(j + 1)], id, None)?;
                }
                Ok(())
            }
            Decision::LengthsDiffer(shortest, longest) => {
                let size = std::mem::size_of::<T>().max(1) as u64;
                let theirs = if shortest == len { longest } else { shortest };
                Err(Error::LengthMismatch {
                    op: id,
                    mine: send.len(),
                    theirs: (theirs / size) as usize,
                })
            }
            Decision::FallBack => {
                self.fallbacks += 1;
                let input = Data::encode(send, &pool);
                let fallback_id = self.driver.enter()?;
                let (id, value) =
                    self.allreduce_op(fallback_id, Collective::Allreduce, input, &combine)?;
                value.decode_into(recv, id, Some(send.len()))
            }
        }
    }

    /// Numbers the first operation of a call and applies this rank's
    /// emulated fault for the call (as on threads: dead before it, dead
    /// after n sends, hung, stalled).
    fn begin_call(&mut self) -> Result<OpId, Error> {
        self.driver.check_alive()?;
        let me = self.driver.transport().rank();
        let fault = self.faults.lookup(me, self.calls);
        self.calls += 1;
        if let Some(Fault::Dead | Fault::DieAfterSends(0)) = fault {
            self.driver.die();
            return Err(Error::Failed(me));
        }
        let op = self.driver.enter()?;
        match fault {
            Some(Fault::Hang) => {
                // Silent from here on: nobody is told.
                self.driver.hang();
                Err(Error::Hung(me))
            }
            Some(Fault::DieAfterSends(n)) => {
                self.driver.die_after_sends(n);
                Ok(op)
            }
            Some(Fault::Stall(pause)) => {
                std::thread::sleep(pause);
                Ok(op)
            }
            _ => Ok(op),
        }
    }

    /// This process leaves the team of processes for good: it is announced
    /// failed to the others, which go on without it (a hierarchy's proxy
    /// whose process can no longer follow, [`super::hier`]).
    pub(crate) fn leave_upper(&mut self) {
        self.driver.die();
    }

    fn abandon(&mut self, op: OpId, e: Error) -> Error {
        self.driver.returned(op);
        e
    }

    fn too_many_failures(&self, op: OpId) -> Error {
        Error::TooManyFailures {
            op,
            f: self.plans.reduce.f(),
            failed: self.failed_ranks(),
        }
    }

    fn root_failed(&self, e: Error, op: OpId, root: Rank) -> Error {
        root_failed(&self.driver, e, op, root)
    }

    fn check_root(&self, root: Rank) -> Result<(), Error> {
        let procs = self.size();
        if root >= procs {
            return Err(Error::RankOutOfRange { rank: root, procs });
        }
        Ok(())
    }
}

impl Drop for MpiComm {
    /// Serves late messages (corrections others still wait for) until every
    /// process has ended its program or the failure timeout has passed.
    fn drop(&mut self) {
        self.driver.finish();
    }
}

impl Collectives for MpiComm {
    fn rank(&self) -> Rank {
        MpiComm::rank(self)
    }

    fn size(&self) -> u32 {
        MpiComm::size(self)
    }

    /// Broadcasts `buf` from `root` with the configured algorithm (by
    /// default the corrected tree with the configured tree and correction:
    /// every live rank's `buf` gets the root's, also when processes died
    /// before or during the call, without any failure notice, as long as
    /// the root lives). Each algorithm keeps the guarantees it has on
    /// threads ([`BroadcastAlgorithm`](crate::runtime::BroadcastAlgorithm); docs/mpi.md says which hold against
    /// a process that dies unannounced). Errors as
    /// [`crate::runtime::Comm::broadcast_into`]'s; a root that died
    /// unannounced is a [`Error::Timeout`].
    fn broadcast_into<B: BufferMut + ?Sized>(
        &mut self,
        root: Rank,
        buf: &mut B,
    ) -> Result<(), Error> {
        self.check_root(root)?;
        let me = self.rank();
        let value = (root == me).then(|| Data::encode(buf.items(), &self.segments));
        let op = self.begin_call()?;
        let started = self.driver.call_started();
        let plans = self.plans;
        let counts = &mut self.counts;
        let got = drive_broadcast(&mut self.driver, plans, root, op, started, value, counts)?;
        if root == me {
            return Ok(());
        }
        got.decode_into(buf.items_mut(), op, None)
    }

    /// Reduces every rank's `send` with `op` to `root` (up-correction
    /// reduce). Guarantees and errors as
    /// [`crate::runtime::Comm::reduce_into`]'s, for failures this process
    /// learns of (see the type's doc).
    fn reduce_into<S, R>(
        &mut self,
        root: Rank,
        send: &S,
        recv: &mut R,
        op: impl Operation<S::Item>,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
    {
        self.check_root(root)?;
        op.check()?;
        let pool = Arc::clone(&self.segments);
        let combine = data_op(&op, &pool);
        if let Some(plan) = &self.plans.ftco_reduce {
            let input = Data::encode(send.items(), &pool);
            let kind = FtcoCollective::Reduce;
            let (id, result) = self.ftco_reduction(plan, root, kind, input, &combine)?;
            return ftco_reduce_result_into(result, recv.items_mut(), id, send.items().len());
        }
        let input = Contribution::input(Data::encode(send.items(), &pool));
        let id = self.begin_call()?;
        let started = self.driver.call_started();
        let me = self.rank();
        let plan = &self.plans.reduce;
        let core = Reduce::new(plan, root, me, id, Collective::Reduce, input, &combine);
        let mut core = core.map_err(|e| self.abandon(id, e))?;
        let result = match self.driver.drive(id, started, &mut core) {
            Ok(ReduceOutput::Sent) => None,
            Ok(ReduceOutput::Root { value, .. }) => Some(value),
            Ok(ReduceOutput::TooManyFailures { .. }) => return Err(self.too_many_failures(id)),
            Err(e) => return Err(self.root_failed(e, id, root)),
        };
        match result {
            Some(value) => value.decode_into(recv.items_mut(), id, Some(send.items().len())),
            None => Ok(()),
        }
    }

    /// Reduces every rank's `send` with `op` and gives every rank the
    /// result (up-correction reduce, then corrected broadcast, retried on
    /// the next root if the root fails). Guarantees and errors as
    /// [`crate::runtime::Comm::all_reduce_into`]'s, for failures this
    /// process learns of (see the type's doc).
    fn all_reduce_into<S, R>(
        &mut self,
        send: &S,
        recv: &mut R,
        op: impl Operation<S::Item>,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
    {
        op.check()?;
        let bytes = std::mem::size_of_val(send.items());
        let ftco = self.plans.ftco_reduce.is_some();
        let shared = self.regions.as_ref().is_some_and(|r| {
            bytes >= SHARED_MIN_BYTES
                && bytes <= r.slot_bytes()
                && std::mem::align_of::<S::Item>() <= 64
        });
        if shared && !ftco && self.size() > 1 {
            return self.all_reduce_shared(send.items(), recv.items_mut(), &op);
        }
        if self.by_blocks && !ftco && bytes >= BLOCKS_MIN_BYTES && self.size() > 1 {
            return self.all_reduce_by_blocks(send.items(), recv.items_mut(), &op);
        }
        let pool = Arc::clone(&self.segments);
        let input = Data::encode(send.items(), &pool);
        let combine = data_op(&op, &pool);
        let (id, value) = self.allreduce(Collective::Allreduce, input, &combine)?;
        value.decode_into(recv.items_mut(), id, Some(send.items().len()))
    }

    /// Returns once every live rank has entered the barrier (an allreduce
    /// of nothing).
    fn barrier(&mut self) -> Result<(), Error> {
        self.allreduce(
            Collective::Barrier,
            Data::EMPTY,
            &|_: &mut Data, _: &Data| {},
        )
        .map(|_| ())
    }

    /// The fault budget f of reduce, allreduce and barrier.
    fn fault_budget(&self) -> u32 {
        self.plans.reduce.f()
    }

    /// Serves the operations this process returned from, sends what they
    /// owe, and its heartbeat if due; never waits.
    fn progress(&mut self) -> Result<(), Error> {
        self.driver.progress()?;
        self.driver.transport_mut().beat_if_due();
        Ok(())
    }

    /// Ranks known failed, as this process knows them now.
    fn failed_ranks(&self) -> Vec<Rank> {
        self.driver.failed_members()
    }

    /// Not over MPI: agreement needs a perfect failure detector, and this
    /// Open MPI cannot tell a dead process from a slow one (docs/mpi.md).
    fn agree_failed(&mut self) -> Result<Vec<Rank>, Error> {
        Err(no_perfect_detector("agreement on failed ranks over MPI"))
    }

    /// Not over MPI, for the reason of [`MpiComm::agree_failed`].
    fn shrink(&mut self) -> Result<Vec<Rank>, Error> {
        Err(no_perfect_detector("shrinking over MPI"))
    }
}

/// A mismatch met by an allreduce whose path depends on its value's size
/// (`bytes`, gone `how`): says so, since two allreduces of different
/// lengths meet as different collectives there. Other errors pass.
fn lengths_may_differ(e: Error, bytes: usize, how: &str) -> Error {
    match e {
        Error::Mismatch { op, mine, theirs } => Error::Mismatch {
            op,
            mine: format!("{mine} of {bytes} bytes{how}"),
            theirs: format!("{theirs} (if both are allreduces, their lengths differ)"),
        },
        e => e,
    }
}

/// Allreduces of values from this size (up to a slot,
/// [`TeamBuilder::mpi_shared_memory`]) go through the node's shared memory,
/// where every process runs on one node ([`crate::mpi::shm`]).
pub const SHARED_MIN_BYTES: usize = 64 << 10;

/// `acc` joined with `other`, two lists of region references
/// ([`RefList::join`]); lists of inputs of different lengths give a
/// mismatch of the lengths, and so does a value that is not a list (which
/// no process sends: every value of a [`Collective::SharedAllreduce`] is
/// one).
fn join_refs(acc: &mut Data, other: &Data, pool: &SegmentPool) {
    let list = |d: &Data| -> Result<RefList, Option<[u64; 2]>> {
        match d.to_wire() {
            Some(Ok(bytes)) => RefList::decode(bytes).ok_or(Some([bytes.len() as u64; 2])),
            Some(Err(lens)) => Err(Some(lens)),
            None => Err(None),
        }
    };
    *acc = match (list(acc), list(other)) {
        (Ok(a), Ok(b)) if a.len == b.len => Data::encode(&a.join(&b).encode(), pool),
        (Ok(a), Ok(b)) => Data::mismatch([a.len, b.len]),
        (Err(Some(lens)), _) => Data::mismatch(lens),
        (Ok(a), Err(Some(lens))) => Data::mismatch([a.len, lens[0]]),
        (_, Err(None)) | (Err(None), _) => Data::mismatch([0, 0]),
    };
}

/// The verdict `data` carries, in a team of `procs`; `None` if unreadable
/// (no rank sends such a one).
fn verdict_of(data: &Data, procs: u32) -> Option<Verdict> {
    let mut words = vec![0u64; Verdict::words(procs)];
    data.decode_into(&mut words, 0, None).ok()?;
    Verdict::from_words(&words, procs)
}

/// The error of `what` (agreement, shrinking), which needs a perfect failure
/// detector that no engine over this MPI has (docs/mpi.md).
pub(crate) fn no_perfect_detector(what: &'static str) -> Error {
    Error::Config(ConfigError::Unsupported {
        what,
        why: "this MPI reports no failures, so no detector is perfect",
    })
}

/// What an [`MpiComm`]'s broadcasts counted, for a report
/// ([`MpiComm::broadcast_counts`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BroadcastCounts {
    /// Gossip broadcasts ([`BroadcastAlgorithm::Gossip`](crate::runtime::BroadcastAlgorithm::Gossip)) in which this
    /// process was a g-node (colored by the gossip phase, or the root).
    pub gossip_colored: u64,
    /// Timeouts FTCO's broadcasts ([`BroadcastAlgorithm::Ftco`](crate::runtime::BroadcastAlgorithm::Ftco)),
    /// reduces, allreduces and barriers
    /// ([`ReduceAlgorithm::Ftco`](crate::runtime::ReduceAlgorithm::Ftco)) fired on
    /// this process, each suspecting one process (FTCO, Appendix A). Not
    /// told apart into true and false suspicions as on threads: no process
    /// knows when another died.
    pub ftco_timeouts: u64,
}

impl BcastObserver<'static, MpiTransport> for BroadcastCounts {
    fn gossip_ended(&mut self, _: &Driver<'static, MpiTransport>, g_node: bool) {
        self.gossip_colored += u64::from(g_node);
    }

    fn ftco_ended<C: Protocol + Timeouts>(
        &mut self,
        _: &Driver<'static, MpiTransport>,
        _: OpId,
        clock: &OpClock<C>,
    ) {
        self.ftco_timeouts += u64::from(clock.core().timeouts());
    }
}
