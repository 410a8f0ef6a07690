//! One FTCO reduce, allreduce or barrier call (*Tree-based Fault-Tolerant
//! Collective Operations*, Sections 3-4, Algorithms 1-4, Appendix D;
//! [`crate::protocol::ftco`]) for every engine whose wire carries FTCO's
//! messages: the core wrapped in the real-time clock its timeouts need
//! ([`OpClock`]), driven by the [`Driver`], its timeouts reported to the
//! engine's [`BcastObserver`], and kept after the call to answer
//! KEEPALIVEs (Section 4: a node "requires the root to remain active
//! throughout"; every node answers for its partial or the result).
//!
//! The root never fails (Section 2, as in the simulator): a rank that waits
//! on a failed root gets [`Error::RootFailed`] after the operation
//! timeout. An allreduce and a barrier are rooted at rank 0 (on a
//! multi-root tree, at its roots).

use crate::call::broadcast::{root_failed, BcastObserver};
use crate::call::{never_combines, Absorb};
use crate::driver::{Carries, Driver, Transport};
use crate::error::Error;
use crate::protocol::ftco::{FtcoCollective, FtcoData, FtcoOutput, FtcoPlan, FtcoReduce};
use crate::protocol::op_clock::OpClock;
use crate::types::{Collective, OpId, Rank, Tick};
use crate::value::data::Data;

/// The root of an FTCO allreduce or barrier (Section 2's immune root).
pub const FTCO_ALLREDUCE_ROOT: Rank = 0;

/// Drives FTCO `kind` operation `op` (entered already, started at
/// `started`) to `root` (an allreduce's and a barrier's:
/// [`FTCO_ALLREDUCE_ROOT`]) with this rank's `input`, and returns what it
/// delivers: the result (the root of a reduce; every rank of an allreduce
/// or barrier) or [`FtcoOutput::Contributed`] (a reduce's other ranks,
/// once their DATA was acknowledged).
///
/// Definition 3.2 holds with the root alive: every live rank delivers
/// once, an allreduce's result is the same on every rank, no input is
/// counted twice, every rank that never failed is in unless a timeout
/// suspected it while it lived (a timeout unit below the scheduling noise;
/// then it is left out as if it had failed). Errors: a core that cannot be
/// built (the call is published as returned), a timeout
/// ([`Error::RootFailed`] if the root is known failed), this rank failed.
#[allow(clippy::too_many_arguments)]
pub(crate) fn drive_ftco_reduction<'t, T>(
    driver: &mut Driver<'t, T>,
    plan: &'t FtcoPlan,
    root: Rank,
    op: OpId,
    started: Option<Tick>,
    kind: FtcoCollective,
    input: Data,
    combine: &(dyn Fn(&mut Data, &Data) + Sync),
    observer: &mut impl BcastObserver<'t, T>,
) -> Result<FtcoOutput<Data>, Error>
where
    T: Transport + Send,
    T::Payload: Carries<FtcoData<Data>>,
{
    let me = driver.rank();
    let core = match FtcoReduce::new(plan, root, me, op, kind, input, combine) {
        Ok(core) => core,
        Err(e) => {
            // Peers must not take this rank for hung inside a call it left.
            driver.returned(op);
            return Err(e);
        }
    };
    let mut clock = OpClock::new(core);
    let got = driver.drive(op, started, &mut clock);
    observer.ftco_ended(driver, op, &clock);
    if got.is_ok() {
        // It answers KEEPALIVEs for its partial or the result after its
        // call; the function lent for the call ends here.
        driver.keep(clock.map(|core| core.with_op(never_combines as Absorb)));
    }
    got.map_err(|e| root_failed(driver, e, op, root))
}

/// The FTCO collective an engine's allreduce-like call runs: a barrier's
/// messages say barrier, an allreduce's allreduce.
pub(crate) fn allreduce_kind(kind: Collective) -> FtcoCollective {
    match kind {
        Collective::Barrier => FtcoCollective::Barrier,
        _ => FtcoCollective::Allreduce,
    }
}

/// A reduce's output: the result at the root with the ranks whose inputs
/// it lacks, nothing elsewhere.
pub(crate) fn reduce_value(output: FtcoOutput<Data>) -> Option<(Data, Vec<Rank>)> {
    match output {
        FtcoOutput::Value { value, missing } => Some((value, missing)),
        FtcoOutput::Contributed => None,
    }
}

/// An FTCO allreduce's or barrier's output: the result, which its core
/// delivers on every rank (only a reduce's non-root delivers
/// [`FtcoOutput::Contributed`]), with the ranks whose inputs it lacks.
pub(crate) fn allreduce_result(output: FtcoOutput<Data>) -> (Data, Vec<Rank>) {
    match output {
        FtcoOutput::Value { value, missing } => (value, missing),
        FtcoOutput::Contributed => {
            unreachable!("an FTCO allreduce core delivers the result on every rank")
        }
    }
}
