//! What differs between engines, as the call layer sees it: the transport
//! under the driver, where large values are written, how an emulated fault
//! is looked up and how a hung rank waits, where a shrunk communicator's
//! plans live, what it does beside progress and after a shrink, and what the engine counts of a broadcast
//! ([`BcastObserver`]). Everything else of a call is the call layer's
//! ([`super::Caller`]), written once.

use crate::call::broadcast::BcastObserver;
use crate::call::faults::Fault;
use crate::call::plans::Generation;
use crate::driver::{Driver, Transport};
use crate::types::{OpId, Rank};
use std::sync::Arc;

use crate::value::segment::SegmentPool;
use crate::value::Packet;

/// One rank's engine below the call layer. Adding an engine is a
/// [`Transport`] whose wire type is [`Packet`], an implementation of this
/// trait, and a thin communicator holding a [`super::Caller`].
pub(crate) trait Engine<'t>: BcastObserver<'t, Self::Transport> {
    /// The driver's transport.
    type Transport: Transport<Payload = Packet> + Send;

    /// Where values too large to travel inline are written.
    fn pool(&self) -> &SegmentPool;

    /// The same pool, shared with what outlives a call (the reduction of
    /// a pending core, an immediate call's loans; `super::immediate`).
    fn lasting_pool(&self) -> Arc<SegmentPool>;

    /// Whether values may refer to this process's memory (a lazy sum of
    /// inputs, [`crate::value::lazy`]): the ranks share an address space
    /// and the transport moves references, not bytes. Default: no.
    fn values_by_reference(&self) -> bool {
        false
    }

    /// The emulated fault planned for this rank (`rank`, the transport's
    /// numbering) at operation `op` (from 0): the first operation of the
    /// `call`-th call of its program (from 0), or with `call` `None` a later
    /// operation of the same call (an agreement's rounds).
    fn fault(&self, rank: Rank, op: OpId, call: Option<u32>) -> Option<Fault>;

    /// This rank hangs (emulated): silent until the engine's team is done;
    /// nobody is told. The driver is already in its hung state.
    fn hang(&mut self, driver: &mut Driver<'t, Self::Transport>) {
        let _ = driver;
    }

    /// Called after a progress call served the kept cores: the engine's
    /// own due work (the MPI engine's heartbeat).
    fn served(&mut self, driver: &mut Driver<'t, Self::Transport>) {
        let _ = driver;
    }

    /// Called after a shrink renumbered the communicator: state of the
    /// engine's in the old numbering is dropped.
    fn shrunk(&mut self) {}

    /// Keeps a shrunk communicator's survivors and plans for as long as
    /// cores may borrow them (the engine's lifetime `'t`).
    fn keep_generation(&self, generation: Generation) -> &'t Generation;

    /// Whether a team of `ranks` of this engine outnumbers the cores it
    /// runs on (the plans pick the flat tree and the star allreduce there
    /// unless configured otherwise).
    fn crowded(&self, ranks: u32) -> bool;
}
