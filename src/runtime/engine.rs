//! The thread runtime as the call layer's [`Engine`]: the mailbox
//! transport, the team's segment pool, its fault schedule numbered by
//! operation, its shrunk communicators, and its counters.

use std::sync::Arc;
use std::time::Duration;

use crate::call::broadcast::BcastObserver;
use crate::call::faults::Fault;
use crate::call::plans::Generation;
use crate::call::Engine;
use crate::driver::{Driver, Transport};
use crate::protocol::ftco::Timeouts;
use crate::protocol::op_clock::OpClock;
use crate::protocol::Protocol;
use crate::runtime::shared::Shared;
use crate::runtime::transport::MailboxTransport;
use crate::types::{OpId, Rank, Tick};
use crate::value::segment::SegmentPool;

/// One rank's thread engine: what its team shares.
pub(crate) struct ThreadEngine<'t> {
    pub(crate) shared: &'t Shared<'t>,
}

impl<'t> Engine<'t> for ThreadEngine<'t> {
    type Transport = MailboxTransport<'t>;

    fn pool(&self) -> &SegmentPool {
        &self.shared.segments
    }

    fn lasting_pool(&self) -> Arc<SegmentPool> {
        Arc::clone(&self.shared.segments)
    }

    /// Threads of one process: a large reduction's value is a lazy sum.
    fn values_by_reference(&self) -> bool {
        true
    }

    /// Faults on threads are numbered by operation
    /// ([`crate::runtime::FaultSchedule`]).
    fn fault(&self, rank: Rank, op: OpId, call: Option<u32>) -> Option<Fault> {
        let fault = self.shared.faults().lookup(rank, op, call)?;
        // Release: a rank that reads it (Acquire) counts the silence from
        // here.
        let fired = &self.shared.counters[rank as usize].fault_fired;
        let _ = fired.compare_exchange(
            0,
            op + 1,
            crate::sync::Ordering::Release,
            crate::sync::Ordering::Relaxed,
        );
        Some(fault)
    }

    /// Silent until the rest of the team is done: what arrives is taken
    /// and dropped.
    fn hang(&mut self, driver: &mut Driver<'t, MailboxTransport<'t>>) {
        driver.transport().publish_served_epoch(u64::MAX);
        let shared = self.shared;
        shared.finish_one();
        while !shared.all_finished() {
            driver.transport_mut().nap(Duration::from_millis(2));
            driver.drain_and_drop();
        }
    }

    fn keep_generation(&self, generation: Generation) -> &'t Generation {
        self.shared.generations.push_get(Box::new(generation))
    }

    fn crowded(&self, ranks: u32) -> bool {
        crate::runtime::pin::crowded(ranks)
    }
}

/// A broadcast's g-node count, FTCO's timeouts, false suspicions and answer
/// delays, into the team's counters for its report.
impl<'t> BcastObserver<'t, MailboxTransport<'t>> for ThreadEngine<'t> {
    /// Counts a gossip broadcast in which this rank was a g-node
    /// ([`crate::runtime::TeamReport::gossip_colored`]).
    fn gossip_ended(&mut self, driver: &Driver<'t, MailboxTransport<'t>>, g_node: bool) {
        if g_node {
            // The team's numbering, which a shrink does not change.
            let me = driver.transport().rank();
            self.shared.counters[me as usize]
                .g_node_ops
                .fetch_add(1, crate::sync::Ordering::Relaxed);
        }
    }

    /// Counts an FTCO call's timeouts and, with operation records on,
    /// keeps its answer delays
    /// ([`crate::runtime::TeamReport::answer_delays_ns`]); and its false
    /// suspicions ([`crate::runtime::TeamReport::false_suspicions`]): a
    /// suspected rank that the fault schedule does not silence from the
    /// operation's start and that the liveness registry had not marked
    /// failed by the time of the suspicion (the engine's time of the
    /// core's tick).
    fn ftco_ended<C: Protocol + Timeouts>(
        &mut self,
        driver: &Driver<'t, MailboxTransport<'t>>,
        op: OpId,
        clock: &OpClock<C>,
    ) {
        let (core, shared) = (clock.core(), self.shared);
        if shared.settings.op_records {
            let mut delays = shared.answer_delays.lock();
            let delays = delays.as_mut().unwrap_or_else(|e| e.get_mut());
            delays.extend_from_slice(clock.answer_delays());
            if core.timeouts() > 0 {
                let mut by_op = shared.op_timeouts.lock();
                let by_op = by_op.as_mut().unwrap_or_else(|e| e.get_mut());
                by_op.push((op, u64::from(core.timeouts())));
            }
        }
        if core.timeouts() == 0 {
            return;
        }
        let members = driver.members();
        let alive = |&(rank, at): &(Rank, Tick)| {
            let rank = members.to_transport(rank);
            let failed_by = shared.liveness.failed_at(rank);
            let fired_at = |r: Rank| {
                let fired = shared.counters[r as usize]
                    .fault_fired
                    .load(crate::sync::Ordering::Acquire);
                fired.checked_sub(1)
            };
            !shared.faults().silent_from_start(rank, op, fired_at)
                && failed_by.map_or(true, |t| t > clock.engine_time(at))
        };
        let false_suspicions = core.suspected().iter().filter(|s| alive(s)).count() as u64;
        let me = driver.transport().rank();
        let counters = &shared.counters[me as usize];
        let relaxed = crate::sync::Ordering::Relaxed;
        counters
            .timeouts
            .fetch_add(u64::from(core.timeouts()), relaxed);
        counters
            .false_suspicions
            .fetch_add(false_suspicions, relaxed);
    }
}
