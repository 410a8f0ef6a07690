//! The collectives as one trait, so that a program written against it runs
//! on any engine: threads ([`crate::runtime::Comm`]) now, MPI processes
//! later. Names and argument order follow rsmpi's
//! `CommunicatorCollectives` (`broadcast_into`, `reduce_into`,
//! `all_reduce_into`, `barrier`), which Rust users of MPI already know.
//!
//! ```no_run
//! use corrected::prelude::*;
//!
//! /// Written once, for any engine.
//! fn global_sum(comm: &mut impl Collectives, mine: f64) -> Result<f64, Error> {
//!     let mut sum = 0.0;
//!     comm.all_reduce_into(&mine, &mut sum, SystemOperation::sum())?;
//!     Ok(sum)
//! }
//!
//! let team = Team::builder().ranks(4).build()?;
//! let report = team.run(|comm| global_sum(comm, comm.rank() as f64));
//! for (_, got) in report.returned() {
//!     assert_eq!(got, &Ok(6.0));
//! }
//! # Ok::<(), Error>(())
//! ```

use crate::buffer::{Buffer, BufferMut};
use crate::error::Error;
use crate::op::Operation;
use crate::types::Rank;

/// Fault-tolerant collectives of one rank of a team. Every rank calls the
/// same collectives in the same order; each call returns a value or a typed
/// error, never hangs (a call that cannot complete times out).
pub trait Collectives {
    /// This rank.
    fn rank(&self) -> Rank;

    /// The team size.
    fn size(&self) -> u32;

    /// On return, every live rank's `buf` holds the root's (corrected
    /// broadcast, Corrected Trees Section 3). `buf` is one plain-data value
    /// or a slice of any length ([`crate::buffer`]); a rank whose length is
    /// not the root's gets [`Error::LengthMismatch`].
    fn broadcast_into<B: BufferMut + ?Sized>(
        &mut self,
        root: Rank,
        buf: &mut B,
    ) -> Result<(), Error>;

    /// On return at `root`, `recv` holds the reduction with `op`, element
    /// by element, of every live rank's `send` and of each failed rank's
    /// either entirely or not at all, in every element alike (up-correction
    /// reduce, reduce paper Section 4). `recv` is untouched at the other
    /// ranks.
    fn reduce_into<S, R>(
        &mut self,
        root: Rank,
        send: &S,
        recv: &mut R,
        op: impl Operation<S::Item>,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized;

    /// On return, every live rank's `recv` holds the same reduction with
    /// `op`, element by element, of every live rank's `send` and of each
    /// failed rank's either everywhere or nowhere, in every element alike
    /// (reduce paper Section 5).
    fn all_reduce_into<S, R>(
        &mut self,
        send: &S,
        recv: &mut R,
        op: impl Operation<S::Item>,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized;

    /// Returns once every live rank has entered the barrier.
    fn barrier(&mut self) -> Result<(), Error>;

    /// The fault budget f of reduce, allreduce and barrier: how many ranks
    /// may fail before or during one of them with every guarantee kept.
    fn fault_budget(&self) -> u32;

    /// Ranks known to have failed, as this rank knows them now (another
    /// rank may know more or fewer at the same moment).
    fn failed_ranks(&self) -> Vec<Rank>;

    /// A collective after which every live rank holds the same list of
    /// failed ranks (consensus with a perfect failure detector, rotating
    /// coordinator over corrected broadcasts).
    fn agree_failed(&mut self) -> Result<Vec<Rank>, Error>;

    /// Goes on with the survivors, as ULFM's `MPIX_Comm_shrink`: agrees on
    /// the failed ranks, renumbers the others densely with a fresh fault
    /// budget, and returns the ranks left out (in the old numbering). The
    /// communicator itself becomes the survivors'.
    fn shrink(&mut self) -> Result<Vec<Rank>, Error>;
}
