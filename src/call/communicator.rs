//! What a communicator is to [`Collectives`](crate::Collectives): the trait
//! is implemented once, for every [`Communicator`]
//! (`crate::collectives`), so that its signatures, its argument checks and
//! its forwarding stand in one place and every engine offers the same
//! calls. A communicator supplies the collectives that move no value of
//! the program's type ([`Control`]: the thread runtime's and the MPI
//! engine's through their [`Caller`], a node team its own composition) and
//! how its engine moves a typed buffer (the lending of large buffers
//! between threads; the node's shared memory between processes).
//!
//! Both traits are sealed: they are public only so that the blanket
//! implementation of the public trait may name them.

use crate::buffer::Element;

use crate::call::immediate::Immediate;
use crate::call::{Caller, Engine};
use crate::contributors::Contributors;
use crate::error::Error;
use crate::op::Operation;
use crate::trace;
use crate::types::Rank;

/// The collectives that move no value of the program's type: who the
/// communicator's ranks are, agreement on the failed ones, shrink,
/// progress and the barrier. Their guarantees are those stated on
/// [`Collectives`](crate::Collectives).
pub trait Control {
    /// This rank.
    fn rank(&self) -> Rank;
    /// The number of ranks.
    fn size(&self) -> u32;
    /// The fault budget f of reduce, allreduce and barrier.
    fn fault_budget(&self) -> u32;
    /// Ranks known failed, as this rank knows them now.
    fn failed_ranks(&self) -> Vec<Rank>;
    /// The same list of failed ranks on every live rank.
    fn agree_failed(&mut self) -> Result<Vec<Rank>, Error>;
    /// Goes on with the survivors; returns the ranks left out.
    fn shrink(&mut self) -> Result<Vec<Rank>, Error>;
    /// Makes this communicator the team of `members` (ranks of the current
    /// numbering, this one among them, each once), renumbered in their
    /// order, with the communicator's f clamped to the new size and new
    /// plans; every member calls it with the same list, agreed before
    /// (`Collectives::split`).
    fn regroup(&mut self, members: &[Rank]) -> Result<(), Error>;
    /// Serves what operations this rank returned from still owe.
    fn progress(&mut self) -> Result<(), Error>;
    /// Returns once every live rank has entered the barrier.
    fn barrier(&mut self) -> Result<(), Error>;
    /// The immediate (non-blocking) calls of this communicator's call
    /// layer, or why it has none.
    fn immediate(&mut self) -> Result<&mut dyn Immediate, Error>;
}

/// A reduce's or an allreduce's buffers and operation, handed to the
/// communicator's engine (the arguments' lengths are not checked yet: the
/// engine reports a mismatch with the operation's number).
pub struct Reduction<'b, T, O> {
    /// This rank's input.
    pub send: &'b [T],
    /// Where the result goes (at a reduce's root, or everywhere).
    pub recv: &'b mut [T],
    /// The reduction, already checked against the element type.
    pub op: O,
    /// The caller asks whose inputs the result holds: an engine computes
    /// the [`Contributors`] only then (a plain call pays nothing for them).
    pub contributors: bool,
}

/// One communicator of an engine: its [`Control`] and how its engine moves
/// typed buffers. The arguments are checked before these are called (a
/// root in range, an operation that applies to the element type).
pub trait Communicator {
    /// What answers the [`Control`] collectives (a trait object: the
    /// call layer's types stay private; these calls are not per element).
    fn control(&self) -> &dyn Control;

    /// This communicator's control, to call a collective on.
    fn control_mut(&mut self) -> &mut dyn Control;

    /// A broadcast of `buf` from `root` (Corrected Trees Section 3).
    fn broadcast_items<T: Element>(&mut self, root: Rank, buf: &mut [T]) -> Result<(), Error>;

    /// A reduce to `root` (up-correction, reduce paper Section 4): at the
    /// root, its contributors if [`Communicator::knows_contributors`].
    fn reduce_items<T, O>(
        &mut self,
        root: Rank,
        call: Reduction<'_, T, O>,
    ) -> Result<Option<Contributors>, Error>
    where
        T: Element,
        O: Operation<T>;

    /// An allreduce (reduce paper Section 5): its contributors if
    /// [`Communicator::knows_contributors`].
    fn all_reduce_items<T, O>(
        &mut self,
        call: Reduction<'_, T, O>,
    ) -> Result<Option<Contributors>, Error>
    where
        T: Element,
        O: Operation<T>;

    /// An allgather of `send` blocks into `recv`
    /// ([`Collectives::all_gather_into`](crate::Collectives::all_gather_into)'s
    /// guarantee). Default: through the allreduce of the vector of blocks
    /// (`crate::gather`); an engine may move large blocks its own way.
    fn all_gather_items<T: Element>(
        &mut self,
        send: &[T],
        recv: &mut [T],
    ) -> Result<Contributors, Error>
    where
        Self: Sized,
    {
        crate::gather::all_gather(self, send, recv)
    }

    /// A reduce-scatter of `send`'s equal blocks into `recv`
    /// ([`Collectives::reduce_scatter_block_into`](crate::Collectives::reduce_scatter_block_into)'s
    /// guarantee). Default: through the allreduce of the whole vector
    /// (`crate::gather`); an engine may reduce large blocks its own way.
    fn reduce_scatter_items<T, O>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        op: O,
    ) -> Result<Contributors, Error>
    where
        Self: Sized,
        T: Element,
        O: Operation<T>,
    {
        crate::gather::reduce_scatter_block(self, send, recv, op)
    }

    /// Whether this communicator's reductions report their contributors;
    /// an [`crate::error::ConfigError::Unsupported`] saying why not
    /// otherwise.
    fn knows_contributors(&self) -> Result<(), Error>;
}

/// A rank's call layer answers the control collectives: one engine's
/// communicator delegates them here.
impl<'t, E: Engine<'t>> Control for Caller<'t, E> {
    fn rank(&self) -> Rank {
        self.driver.rank()
    }

    fn size(&self) -> u32 {
        self.driver.size()
    }

    fn fault_budget(&self) -> u32 {
        self.plans().f
    }

    fn failed_ranks(&self) -> Vec<Rank> {
        self.driver.failed_members()
    }

    fn agree_failed(&mut self) -> Result<Vec<Rank>, Error> {
        Caller::agree_failed(self)
    }

    fn shrink(&mut self) -> Result<Vec<Rank>, Error> {
        Caller::shrink(self)
    }

    fn regroup(&mut self, members: &[Rank]) -> Result<(), Error> {
        Caller::regroup(self, members)
    }

    fn progress(&mut self) -> Result<(), Error> {
        self.driver.progress()?;
        self.engine.served(&mut self.driver);
        Ok(())
    }

    fn immediate(&mut self) -> Result<&mut dyn Immediate, Error> {
        Ok(self)
    }

    fn barrier(&mut self) -> Result<(), Error> {
        let (me, next) = (self.driver.rank(), self.driver.next_op());
        let _span = trace::Span::enter(me, trace::Call::Barrier, next);
        let started = Caller::barrier(self)?.started;
        self.record_latency(started);
        Ok(())
    }
}

/// A reduction that should have reported its contributors did not (an
/// engine's path that does not carry them): an error, not a panic.
pub(crate) fn contributors_lost() -> Error {
    Error::Config(crate::error::ConfigError::Unsupported {
        what: "knowing this reduction's contributors",
        why: "the engine's path for it does not report them",
    })
}

/// An allreduce that reports its contributors: the body of
/// [`all_reduce_into_contributors`], for every communicator.
///
/// [`all_reduce_into_contributors`]: crate::Collectives::all_reduce_into_contributors
pub(crate) fn all_reduce_contributors<C, T, O>(
    comm: &mut C,
    send: &[T],
    recv: &mut [T],
    op: O,
) -> Result<Contributors, Error>
where
    C: Communicator,
    T: Element,
    O: Operation<T>,
{
    comm.knows_contributors()?;
    op.check()?;
    let call = Reduction {
        send,
        recv,
        op,
        contributors: true,
    };
    comm.all_reduce_items(call)?.ok_or_else(contributors_lost)
}
