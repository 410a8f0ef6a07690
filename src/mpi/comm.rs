//! [`MpiComm`]: the collectives between MPI processes, one rank each,
//! through the engine-neutral call layer ([`crate::call`]) over the MPI
//! transport; what is this engine's own is MPI's initialization, the
//! node's shared memory and the allreduce by blocks ([`super::large`]).

use std::marker::PhantomData;
use std::sync::Arc;

use mpi::topology::SimpleCommunicator;

use crate::buffer::Element;

use crate::call::config::Config;
use crate::call::plans::{Plans, ReductionPlan};
use crate::call::{Caller, Communicator, Control, Reduction};
use crate::contributors::Contributors;
use crate::driver::Transport;
use crate::error::{ConfigError, Error};
use crate::mpi::engine::{BroadcastCounts, MpiEngine};
use crate::mpi::shm::NodeRegions;
use crate::mpi::transport::MpiTransport;
use crate::op::Operation;
use crate::protocol::allreduce::AllreduceAlgorithm;
use crate::protocol::scatter::BLOCKS_MIN_BYTES;
use crate::types::{Collective, OpId, Rank};
use crate::value::data::Data;
use crate::value::data_op;
use crate::value::segment::SegmentPool;

/// One process's handle on a team of MPI processes, one rank each: the
/// collectives of the [`Collectives`](crate::Collectives) trait, with the fault tolerance of
/// the thread runtime's (Corrected Trees Section 3 for the broadcast,
/// reduce paper Sections 4-5 for reduce and allreduce), run by the same
/// cores through the same driver over an MPI transport.
///
/// What differs from threads, because this Open MPI reports no failure
/// (docs/mpi.md): a corrected broadcast needs no failure notice and
/// survives processes that die before or during it (a SIGKILLed one
/// included); reduce, allreduce, barrier and agreement learn of a process
/// that died unannounced from its exit, where it ran on this node (found
/// within milliseconds by the first process that waits on it, so every
/// survivor gets the same outcome), else from the timeout detector (its
/// heartbeat stands still for the failure timeout while others wait on it
/// inside an operation), or, for one that died between two calls, after
/// the operation timeout ([`Error::Timeout`] on the ranks that waited).
/// Failures emulated through the configuration's
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
    /// Every process's region of shared memory, if all run on one node
    /// ([`NodeRegions`]): large allreduces go through them.
    pub(crate) regions: Option<NodeRegions>,
    /// A process that held a slot this one's broadcast wanted for a
    /// failure timeout, and the operation it had finished then: until it
    /// finishes another, large broadcasts go as bytes without waiting
    /// ([`super::shared_broadcast`]).
    pub(crate) stalled: Option<(Rank, OpId)>,
    /// The node's processes outnumber the cores they may run on: a wait
    /// yields the core rather than spin.
    pub(crate) oversubscribed: bool,
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
        let oversubscribed = super::node::oversubscribed(world);
        let segments = Arc::new(SegmentPool::new());
        let transport = MpiTransport::new(
            world,
            Arc::clone(&segments),
            failure_timeout,
            op_timeout,
            rings,
        )
        .yield_when_idle(oversubscribed);
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
            agreed_failed: Vec::new(),
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
            regions,
            stalled: None,
            oversubscribed,
            _one_thread: PhantomData,
        })
    }

    /// Whether large allreduces go through shared memory (every process
    /// runs on this node and made its region, [`Config::mpi_shared_memory`]).
    pub fn shares_memory(&self) -> bool {
        self.regions.is_some()
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

    /// Leaves out `failed` (a list every live process holds alike) and
    /// renumbers the others, without an agreement of its own: the node
    /// team's shrink, whose agreement spans both levels.
    pub(crate) fn renumber(&mut self, failed: &[Rank]) -> Result<(), Error> {
        self.caller.renumber(failed)
    }

    /// Whether a reduce or allreduce of `bytes` of `T` goes through the
    /// node's shared memory: regions made, the value from
    /// [`SHARED_MIN_BYTES`] up to a slot, more than one process, and the
    /// up-correction algorithms (FTCO's carry values).
    fn shares_reduction<T>(&self, bytes: usize) -> bool {
        let fits = self.regions.as_ref().is_some_and(|r| {
            bytes >= SHARED_MIN_BYTES && bytes <= r.slot_bytes() && std::mem::align_of::<T>() <= 64
        });
        fits && !self.ftco_reduces() && self.caller.size() > 1
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

/// The MPI engine's typed buffers: a broadcast, reduce or allreduce through
/// the node's shared memory ([`SHARED_MIN_BYTES`] and up, every process on one
/// node), an allreduce by blocks ([`BLOCKS_MIN_BYTES`] and up) between
/// nodes; otherwise copied into the messages or a segment, as on threads.
/// Every call ends by publishing that this process reads no slot of an
/// earlier one again ([`MpiComm::finish_reads`]).
impl Communicator for MpiComm {
    fn control(&self) -> &dyn Control {
        &self.caller
    }

    fn control_mut(&mut self) -> &mut dyn Control {
        &mut self.caller
    }

    /// Each algorithm keeps the guarantees it has on threads
    /// ([`BroadcastAlgorithm`](crate::call::BroadcastAlgorithm);
    /// docs/mpi.md says which hold against a process that dies
    /// unannounced); a root that died unannounced is a
    /// [`Error::Timeout`].
    fn broadcast_items<T: Element>(&mut self, root: Rank, buf: &mut [T]) -> Result<(), Error> {
        let result = self.broadcast_via(root, buf);
        self.finish_reads();
        result
    }

    fn reduce_items<T, O>(
        &mut self,
        root: Rank,
        call: Reduction<'_, T, O>,
    ) -> Result<Option<Contributors>, Error>
    where
        T: Element,
        O: Operation<T>,
    {
        let result = self.reduce_via(root, call);
        self.finish_reads();
        result
    }

    fn all_reduce_items<T, O>(
        &mut self,
        call: Reduction<'_, T, O>,
    ) -> Result<Option<Contributors>, Error>
    where
        T: Element,
        O: Operation<T>,
    {
        let result = self.all_reduce_via(call);
        self.finish_reads();
        result
    }

    fn knows_contributors(&self) -> Result<(), Error> {
        self.caller.knows_contributors()
    }
}

/// The paths of [`MpiComm`]'s collectives, before each publishes that it
/// has finished reading others' slots ([`MpiComm::finish_reads`]).
impl MpiComm {
    /// A broadcast of `buf` from `root`: a large value on one node by its
    /// name in the root's region ([`super::shared_broadcast`]), else its
    /// bytes.
    fn broadcast_via<T: Element>(&mut self, root: Rank, buf: &mut [T]) -> Result<(), Error> {
        let me = self.caller.rank();
        let value = if root != me {
            None
        } else {
            let bytes: &[u8] = bytemuck::cast_slice(buf);
            let shared = self.shares_broadcast(bytes.len());
            let named = shared.then(|| self.publish_broadcast(bytes)).flatten();
            let pool = &self.caller.engine.segments;
            Some(named.unwrap_or_else(|| Data::encode(buf, pool)))
        };
        let got = self.caller.broadcast(root, value)?;
        match got.value.elsewhere_name() {
            Some(name) if root != me => {
                let result = self.receive_shared(&got, name, buf);
                self.caller.record_latency(got.started);
                result
            }
            _ => self.caller.end_broadcast(root, got, buf),
        }
    }

    fn reduce_via<T, O>(
        &mut self,
        root: Rank,
        call: Reduction<'_, T, O>,
    ) -> Result<Option<Contributors>, Error>
    where
        T: Element,
        O: Operation<T>,
    {
        if self.shares_reduction::<T>(std::mem::size_of_val(call.send)) {
            return self.reduce_shared(root, call.send, call.recv, &call.op);
        }
        let pool = Arc::clone(&self.caller.engine.segments);
        let combine = data_op(&call.op, &pool);
        let input = Data::encode(call.send, &pool);
        let got = self
            .caller
            .reduce(root, Collective::Reduce, input, &combine)?;
        let asked = call.contributors;
        let contributors = asked.then(|| self.caller.contributors(&got)).flatten();
        let result = match got.value {
            Some(value) => value.decode_into(call.recv, got.op, Some(call.send.len())),
            None => Ok(()),
        };
        self.caller.record_latency(got.started);
        result.map(|()| contributors)
    }

    fn all_reduce_via<T, O>(
        &mut self,
        call: Reduction<'_, T, O>,
    ) -> Result<Option<Contributors>, Error>
    where
        T: Element,
        O: Operation<T>,
    {
        let asked = call.contributors;
        let Reduction { send, recv, op, .. } = call;
        let bytes = std::mem::size_of_val(send);
        if self.shares_reduction::<T>(bytes) {
            return self.all_reduce_shared(send, recv, &op);
        }
        let ftco = self.ftco_reduces();
        let several = self.caller.size() > 1;
        if self.by_blocks && !ftco && bytes >= BLOCKS_MIN_BYTES && several {
            return self.all_reduce_by_blocks(send, recv, &op);
        }
        let pool = Arc::clone(&self.caller.engine.segments);
        let input = Data::encode(send, &pool);
        let combine = data_op(&op, &pool);
        let got = self
            .caller
            .allreduce(Collective::Allreduce, input, &combine)?;
        let contributors = asked.then(|| self.caller.contributors(&got)).flatten();
        let result = got.value.decode_into(recv, got.op, Some(send.len()));
        self.caller.record_latency(got.started);
        result.map(|()| contributors)
    }
}

/// Broadcasts and allreduces of values from this size (up to a slot,
/// [`Config::mpi_shared_memory`]) go through the node's shared memory,
/// where every process runs on one node (docs/mpi.md).
pub const SHARED_MIN_BYTES: usize = 64 << 10;
