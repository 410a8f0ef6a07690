//! The MPI engine as the call layer's [`Engine`]: the MPI transport, a
//! segment pool of this process, emulated faults numbered by call, leaked
//! generations (a process makes one communicator or a few), and the
//! broadcasts' counters.

use std::sync::Arc;

use crate::call::broadcast::BcastObserver;
use crate::call::faults::{Fault, FaultSchedule};
use crate::call::plans::Generation;
use crate::call::Engine;
use crate::driver::Driver;
use crate::mpi::transport::MpiTransport;
use crate::protocol::ftco::Timeouts;
use crate::protocol::op_clock::OpClock;
use crate::protocol::Protocol;
use crate::types::{OpId, Rank};
use crate::value::segment::SegmentPool;

/// One process's MPI engine.
pub(crate) struct MpiEngine {
    /// Segments of values too large to travel inline (the transport's too).
    pub(crate) segments: Arc<SegmentPool>,
    /// The emulated faults, numbered by call (a large allreduce takes
    /// three operation numbers, [`crate::protocol::scatter::BLOCKS_MIN_BYTES`]).
    pub(crate) faults: FaultSchedule,
    /// What the broadcasts so far counted.
    pub(crate) counts: BroadcastCounts,
    /// Ranks every live rank agreed had failed, at the last allreduce by
    /// blocks: the next one leaves them out (in the communicator's
    /// numbering, so a shrink clears it: the survivors' next exchange
    /// starts from the agreement just made).
    pub(crate) agreed_failed: Vec<Rank>,
}

impl Engine<'static> for MpiEngine {
    type Transport = MpiTransport;

    fn pool(&self) -> &SegmentPool {
        &self.segments
    }

    fn lasting_pool(&self) -> Arc<SegmentPool> {
        Arc::clone(&self.segments)
    }

    /// Faults between processes are numbered by call.
    fn fault(&self, rank: Rank, op: OpId, call: Option<u32>) -> Option<Fault> {
        self.faults.lookup(rank, op, call)
    }

    /// Beats the heartbeat if due, so that a process that only calls
    /// progress is not taken for dead.
    fn served(&mut self, driver: &mut Driver<'static, MpiTransport>) {
        driver.transport_mut().beat_if_due();
    }

    fn shrunk(&mut self) {
        self.agreed_failed.clear();
    }

    /// Leaked: kept cores borrow it for as long as the driver keeps them,
    /// and a process shrinks a few times at most (a few KiB each).
    fn keep_generation(&self, generation: Generation) -> &'static Generation {
        Box::leak(Box::new(generation))
    }

    /// More processes than this process may run on (the processes of a
    /// one-node job share its cores).
    fn crowded(&self, ranks: u32) -> bool {
        ranks as usize > crate::runtime::pin::available_cores().len()
    }
}

/// What an [`MpiComm`](crate::mpi::MpiComm)'s broadcasts counted, for a report
/// ([`MpiComm::broadcast_counts`](crate::mpi::MpiComm::broadcast_counts)).
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
    /// Broadcasts this process rooted through the node's shared memory
    /// (docs/mpi.md, *Large broadcasts through shared memory*).
    pub shared: u64,
    /// Broadcasts this process would have rooted through the shared memory
    /// but sent as bytes: a live process still held the slot after a
    /// failure timeout (busy outside the library, or stopped).
    pub held_slot: u64,
}

impl BcastObserver<'static, MpiTransport> for MpiEngine {
    fn gossip_ended(&mut self, _: &Driver<'static, MpiTransport>, g_node: bool) {
        self.counts.gossip_colored += u64::from(g_node);
    }

    fn ftco_ended<C: Protocol + Timeouts>(
        &mut self,
        _: &Driver<'static, MpiTransport>,
        _: OpId,
        clock: &OpClock<C>,
    ) {
        self.counts.ftco_timeouts += u64::from(clock.core().timeouts());
    }
}
