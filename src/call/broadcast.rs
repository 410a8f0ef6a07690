//! One broadcast call's protocol part, for every engine: which core the
//! team's [`BroadcastAlgorithm`](crate::call::BroadcastAlgorithm) names
//! (a corrected tree, corrected gossip with or without a correction, FCG,
//! BIG, FTCO, the ack tree), built from the shared [`Plans`], wrapped in
//! the clock it needs ([`SlotClock`] for gossip, [`OpClock`] for FTCO) and
//! driven by the [`Driver`] over any transport whose wire type carries
//! every broadcast payload. The call layer's [`super::Caller::broadcast`]
//! and its agreement call it for every engine; what an engine counts of a
//! broadcast reaches it through [`BcastObserver`].

use crate::call::plans::{BroadcastPlan, Plans};
use crate::driver::{Carries, Driver, Transport};
use crate::error::Error;
use crate::protocol::ack_tree::AckTree;
use crate::protocol::bcast::Bcast;
use crate::protocol::ftco::{Ftco, Timeouts};
use crate::protocol::gossip::{Big, Fcg, FcgPayload, Gossip, GossipCorrection, SlotClock, Stamped};
use crate::protocol::op_clock::OpClock;
use crate::protocol::random::RandomStream;
use crate::protocol::Protocol;
use crate::types::{OpId, Rank, Tick};
use crate::value::data::Data;

/// What an engine learns from a broadcast besides its value (counters for
/// its report). Every method defaults to nothing.
pub(crate) trait BcastObserver<'t, T: Transport> {
    /// A gossip broadcast (any correction) ended on this rank; `g_node`:
    /// it was colored by the gossip phase, or is the root.
    fn gossip_ended(&mut self, driver: &Driver<'t, T>, g_node: bool) {
        let _ = (driver, g_node);
    }

    /// An FTCO call (a broadcast, reduce, allreduce or barrier) ended on
    /// this rank (successfully or not), its core in `clock`: its timeouts
    /// and suspicions are final.
    fn ftco_ended<C: Protocol + Timeouts>(
        &mut self,
        driver: &Driver<'t, T>,
        op: OpId,
        clock: &OpClock<C>,
    ) {
        let _ = (driver, op, clock);
    }
}

/// Drives broadcast `op` (entered already, started at `started`) from
/// `root` with the algorithm `plans` hold, this rank holding `value` if it
/// is the root, and returns the value delivered. A core that must serve
/// after its call (the corrected tree's, FTCO's) is kept by the driver.
///
/// A failure-proof gossip's (FCG) c-node SOS timeout is real time: a
/// quarter of the driver's failure timeout (docs/algorithms.md, FCG *On
/// threads*). A timeout while the root is known failed becomes
/// [`Error::RootFailed`]; a core that cannot be built ends the call
/// (published as returned) with the core's error.
pub(crate) fn drive_broadcast<'t, T>(
    driver: &mut Driver<'t, T>,
    plans: &'t Plans,
    root: Rank,
    op: OpId,
    started: Option<Tick>,
    value: Option<Data>,
    observer: &mut impl BcastObserver<'t, T>,
) -> Result<Data, Error>
where
    T: Transport + Send,
    T::Payload: Carries<Data>
        + Carries<Stamped<Data>>
        + Carries<Stamped<FcgPayload<Data>>>
        + Carries<Option<Data>>,
{
    let me = driver.rank();
    let abandon = |driver: &mut Driver<'t, T>, e: Error| {
        // Peers must not take this rank for hung inside a call it left.
        driver.returned(op);
        e
    };
    let got = match &plans.broadcast {
        BroadcastPlan::Gossip(plan, seed) => {
            let rng = RandomStream::for_rank(*seed, me, op);
            if let GossipCorrection::FailureProof { .. } = plan.correction() {
                // A c-node's SOS timeout, in real time: a quarter of the
                // failure timeout. A rank that nothing reaches gives up a
                // whole failure timeout after it learns the root failed
                // (`Error::RootFailed`), so the SOS of a rank the root
                // colored before it died reaches it first unless that rank
                // is descheduled for three quarters of the failure timeout:
                // then all live ranks or none deliver, as the paper's (IV)
                // says (docs/algorithms.md).
                let core = Fcg::new(plan, root, me, op, value, rng);
                let core = core.map_err(|e| abandon(driver, e))?;
                let timeout = driver.config().failure_timeout / 4;
                let mut core = SlotClock::new(core, plan.logp()).with_real_timeouts(timeout);
                let got = driver.drive(op, started, &mut core);
                observer.gossip_ended(driver, core.core().is_g_node());
                got
            } else {
                let core = Gossip::new(plan, root, me, op, value, rng);
                let core = core.map_err(|e| abandon(driver, e))?;
                let mut core = SlotClock::new(core, plan.logp());
                let got = driver.drive(op, started, &mut core);
                observer.gossip_ended(driver, core.core().is_g_node());
                got
            }
        }
        BroadcastPlan::Big(plan) => {
            let core = Big::new(plan, root, me, op, value);
            let mut core = core.map_err(|e| abandon(driver, e))?;
            driver.drive(op, started, &mut core)
        }
        BroadcastPlan::Ftco(plan) => {
            let core = Ftco::new(plan, root, me, op, value);
            let mut core = OpClock::new(core.map_err(|e| abandon(driver, e))?);
            let got = driver.drive(op, started, &mut core);
            observer.ftco_ended(driver, op, &core);
            if got.is_ok() {
                // A rank with the value answers KEEPALIVEs after its call.
                driver.keep(core);
            }
            got
        }
        BroadcastPlan::AckTree(plan) => {
            let core = AckTree::new(plan, root, me, op, value);
            let mut core = core.map_err(|e| abandon(driver, e))?;
            let got = driver.drive(op, started, &mut core);
            if got.is_ok() {
                // It acks a node that takes over from its failed parent.
                driver.keep(core);
            }
            got
        }
        BroadcastPlan::Tree(plan) => {
            let core = Bcast::new(plan, root, me, op, value);
            let mut core = core.map_err(|e| abandon(driver, e))?;
            let got = driver.drive(op, started, &mut core);
            if got.is_ok() {
                driver.keep(core);
            }
            got
        }
    };
    got.map_err(|e| root_failed(driver, e, op, root))
}

/// A timeout while the root is known failed is the root's failure.
pub(crate) fn root_failed<T: Transport>(
    driver: &Driver<'_, T>,
    e: Error,
    op: OpId,
    root: Rank,
) -> Error {
    match e {
        Error::Timeout { .. }
            if driver
                .transport()
                .is_failed(driver.members().to_transport(root)) =>
        {
            Error::RootFailed { op, root }
        }
        e => e,
    }
}
