//! [`MpiComm`]: the collectives between MPI processes, one rank each,
//! through the engine-neutral call layer ([`crate::call`]) over the MPI
//! transport; what is this engine's own is MPI's initialization, the
//! node's shared memory and the allreduce by blocks ([`super::large`]).

use std::marker::PhantomData;
use std::sync::Arc;

use mpi::topology::SimpleCommunicator;

use crate::buffer::{Buffer, BufferMut};
use crate::call::config::Config;
use crate::call::plans::{Plans, ReductionPlan};
use crate::call::{Caller, Delivered};
use crate::collectives::Collectives;
use crate::driver::Transport;
use crate::error::{ConfigError, Error};
use crate::mpi::engine::{BroadcastCounts, MpiEngine};
use crate::mpi::shm::NodeRegions;
use crate::mpi::transport::MpiTransport;
use crate::op::Operation;
use crate::protocol::allreduce::AllreduceAlgorithm;
use crate::protocol::scatter::BLOCKS_MIN_BYTES;
use crate::types::{Collective, Rank};
use crate::value::data::Data;
use crate::value::data_op;
use crate::value::segment::SegmentPool;

/// One process's handle on a team of MPI processes, one rank each: the
/// collectives of the [`Collectives`] trait, with the fault tolerance of
/// the thread runtime's (Corrected Trees Section 3 for the broadcast,
/// reduce paper Sections 4-5 for reduce and allreduce), run by the same
/// cores through the same driver over an MPI transport.
///
/// What differs from threads, because this Open MPI reports no failure
/// (docs/mpi.md): a corrected broadcast needs no failure notice and
/// survives processes that die before or during it (a SIGKILLed one
/// included); reduce, allreduce, barrier and agreement learn of a process
/// that died unannounced from the timeout detector (its heartbeat stands
/// still for the failure timeout while others wait on it inside an
/// operation), or else wait until the operation timeout
/// ([`Error::Timeout`]). Failures emulated through the configuration's
/// [`FaultSchedule`](crate::call::FaultSchedule) (numbered by call here) are
/// announced, as a detector would, and reduce and allreduce survive those
/// within the fault budget.
///
/// Not `Send`: MPI is initialized for one thread; use it on that thread.
pub struct MpiComm {
    pub(crate) caller: Caller<'static, MpiEngine>,
    /// Whether a large allreduce goes by blocks (the algorithm is
    /// [`AllreduceAlgorithm::Auto`]).
    by_blocks: bool,
    /// Large allreduces that fell back from blocks to the eager algorithm.
    pub(crate) fallbacks: u64,
    /// Ranks every live rank agreed had failed, at the last allreduce by
    /// blocks: the next one leaves them out.
    pub(crate) agreed_failed: Vec<Rank>,
    /// Every process's region of shared memory, if all run on one node
    /// ([`NodeRegions`]): large allreduces go through them.
    pub(crate) regions: Option<NodeRegions>,
    _one_thread: PhantomData<*const ()>,
}

impl MpiComm {
    /// The team of every process of `world`, one rank each (rank and size
    /// are `world`'s), with `config`'s tree, correction, broadcast
    /// algorithm (every [`BroadcastAlgorithm`](crate::call::BroadcastAlgorithm)
    /// the thread runtime runs, docs/mpi.md), seed, fault budget, timeouts,
    /// emulated faults and shared memory: a [`Config`], or a thread team's
    /// [`TeamBuilder`](crate::runtime::TeamBuilder), whose own settings
    /// (ranks, pinning) do not apply. Collective: every process of `world`
    /// calls it.
    ///
    /// Errors: a configuration that does not fit `world`'s size.
    pub fn new(
        world: &SimpleCommunicator,
        config: &impl AsRef<Config>,
    ) -> Result<MpiComm, ConfigError> {
        let config: &'static Config = Box::leak(Box::new(config.as_ref().clone()));
        let (op_timeout, failure_timeout) = (config.op_timeout, config.failure_timeout);
        let mut regions = match config.mpi_shared_memory {
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
        for r in config.faults.ranks() {
            if r >= procs {
                return Err(ConfigError::FaultRank { rank: r, procs });
            }
        }
        let engine = MpiEngine {
            segments,
            faults: config.faults.clone(),
            counts: BroadcastCounts::default(),
        };
        let crowded = crate::call::Engine::crowded(&engine, procs);
        let plans = Plans::build(config, procs, config.budget_for(procs), crowded)?;
        // Leaked: kept cores borrow them for as long as the driver keeps
        // them, and a process makes one communicator or a few.
        let plans: &'static Plans = Box::leak(Box::new(plans));
        Ok(MpiComm {
            caller: Caller::new(transport, engine, plans, config),
            by_blocks: config.allreduce == AllreduceAlgorithm::Auto,
            fallbacks: 0,
            agreed_failed: Vec::new(),
            regions,
            _one_thread: PhantomData,
        })
    }

    /// Whether large allreduces go through shared memory (every process
    /// runs on this node and made its region, [`Config::mpi_shared_memory`]).
    pub fn shares_memory(&self) -> bool {
        self.regions.is_some()
    }

    /// This process's rank (after a [shrink](Collectives::shrink), its
    /// number among the survivors).
    pub fn rank(&self) -> Rank {
        self.caller.rank()
    }

    /// The number of processes (after a shrink, of survivors).
    pub fn size(&self) -> u32 {
        self.caller.size()
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
        self.caller.engine.counts
    }

    /// Frames received that could not be read, and messages that could not
    /// be framed: both 0 unless something is wrong.
    pub fn bad_frames(&self) -> (u64, u64) {
        self.caller.driver.transport().bad_frames()
    }

    /// This process leaves the team of processes for good: it is announced
    /// failed to the others, which go on without it (a hierarchy's proxy
    /// whose process can no longer follow, [`super::hier`]).
    pub(crate) fn leave_upper(&mut self) {
        self.caller.driver.die();
    }

    /// True if the team reduces with FTCO.
    fn ftco_reduces(&self) -> bool {
        matches!(self.caller.plans().reduction, ReductionPlan::Ftco(_))
    }
}

impl Drop for MpiComm {
    /// Serves late messages (corrections others still wait for) until every
    /// process has ended its program or the failure timeout has passed.
    fn drop(&mut self) {
        self.caller.driver.finish();
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
    /// [`crate::Collectives::broadcast_into`]'s; a root that died
    /// unannounced is a [`Error::Timeout`].
    fn broadcast_into<B: BufferMut + ?Sized>(
        &mut self,
        root: Rank,
        buf: &mut B,
    ) -> Result<(), Error> {
        let me = self.rank();
        let pool = &self.caller.engine.segments;
        let value = (root == me).then(|| Data::encode(buf.items(), pool));
        let Delivered { op, value, started } = self.caller.broadcast(root, value)?;
        let result = if root == me {
            Ok(())
        } else {
            value.decode_into(buf.items_mut(), op, None)
        };
        self.caller.record_latency(started);
        result
    }

    /// Reduces every rank's `send` with `op` to `root` (up-correction
    /// reduce). Guarantees and errors as
    /// [`crate::Collectives::reduce_into`]'s, for failures this process
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
        self.caller.check_root(root)?;
        op.check()?;
        let pool = Arc::clone(&self.caller.engine.segments);
        let combine = data_op(&op, &pool);
        let input = Data::encode(send.items(), &pool);
        let Delivered {
            op: id,
            value,
            started,
        } = self.caller.reduce(root, input, &combine)?;
        let result = match value {
            Some(value) => value.decode_into(recv.items_mut(), id, Some(send.items().len())),
            None => Ok(()),
        };
        self.caller.record_latency(started);
        result
    }

    /// Reduces every rank's `send` with `op` and gives every rank the
    /// result (up-correction reduce, then corrected broadcast, retried on
    /// the next root if the root fails). Guarantees and errors as
    /// [`crate::Collectives::all_reduce_into`]'s, for failures this
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
        let ftco = self.ftco_reduces();
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
        let pool = Arc::clone(&self.caller.engine.segments);
        let input = Data::encode(send.items(), &pool);
        let combine = data_op(&op, &pool);
        let kind = Collective::Allreduce;
        let Delivered {
            op: id,
            value,
            started,
        } = self.caller.allreduce(kind, input, &combine)?;
        let result = value.decode_into(recv.items_mut(), id, Some(send.items().len()));
        self.caller.record_latency(started);
        result
    }

    /// Returns once every live rank has entered the barrier (an allreduce
    /// of nothing).
    fn barrier(&mut self) -> Result<(), Error> {
        let Delivered { started, .. } = self.caller.barrier()?;
        self.caller.record_latency(started);
        Ok(())
    }

    /// The fault budget f of reduce, allreduce and barrier.
    fn fault_budget(&self) -> u32 {
        self.caller.fault_budget()
    }

    /// Serves the operations this process returned from, sends what they
    /// owe, and its heartbeat if due; never waits.
    fn progress(&mut self) -> Result<(), Error> {
        self.caller.progress()?;
        self.caller.driver.transport_mut().beat_if_due();
        Ok(())
    }

    /// Ranks known failed, as this process knows them now.
    fn failed_ranks(&self) -> Vec<Rank> {
        self.caller.failed_ranks()
    }

    /// Gives every live process the same list of failed processes (the
    /// rotating coordinator of [`crate::Collectives::agree_failed`], run
    /// by the call layer). A process that died unannounced (SIGKILL) is
    /// found by the timeout detector while the others wait on it in a
    /// round (its heartbeat stands still for the failure timeout), and
    /// then skipped as a coordinator. The list agrees on every live
    /// process if the detector makes no mistake: a live process that is
    /// silent for a whole failure timeout (descheduled, stopped) is
    /// declared failed for good (docs/mpi.md).
    fn agree_failed(&mut self) -> Result<Vec<Rank>, Error> {
        self.caller.agree_failed()
    }

    /// Goes on with the survivors of [`MpiComm::agree_failed`]'s list,
    /// renumbered densely (as [`crate::Collectives::shrink`]); this
    /// communicator becomes theirs. Allreduces by blocks and through the
    /// node's shared memory go on over the survivors.
    fn shrink(&mut self) -> Result<Vec<Rank>, Error> {
        let failed = self.caller.shrink()?;
        // The blocks' agreed list is in the old numbering; the survivors'
        // next exchange starts from the agreement just made.
        self.agreed_failed.clear();
        Ok(failed)
    }
}

/// Allreduces of values from this size (up to a slot,
/// [`Config::mpi_shared_memory`]) go through the node's shared memory,
/// where every process runs on one node (docs/mpi.md).
pub const SHARED_MIN_BYTES: usize = 64 << 10;
