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

    /// Broadcasts an owned value that is not plain data (a `String`, a
    /// `Vec<String>`, a serde struct) from `root`: the root encodes it with
    /// `postcard` (compact, no schema), broadcasts the length, then the
    /// bytes; the others decode into `value`. Two corrected broadcasts, with
    /// their guarantees. Provided for every engine.
    ///
    /// Errors: those of [`Collectives::broadcast_into`], and
    /// [`Error::Encoding`] on every rank if the root cannot encode the
    /// value (it still takes part, so nobody waits), or on a rank that
    /// cannot decode it into `T` (a type other than the root's is found
    /// when its bytes do not decode or are not all used: the encoding
    /// carries no schema, so not always).
    fn broadcast_value<T>(&mut self, root: Rank, value: &mut T) -> Result<(), Error>
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
        Self: Sized,
    {
        /// The length a root sends when it could not encode its value.
        const UNENCODABLE: u64 = u64::MAX;
        let me = self.rank();
        let mut failure = None;
        let mut bytes = Vec::new();
        if me == root {
            match postcard::to_allocvec(value) {
                Ok(b) => bytes = b,
                Err(e) => failure = Some(format!("rank {root} could not encode its value: {e}")),
            }
        }
        let mut len = if failure.is_some() {
            UNENCODABLE
        } else {
            bytes.len() as u64
        };
        self.broadcast_into(root, &mut len)?;
        if len == UNENCODABLE {
            return Err(Error::Encoding {
                message: failure
                    .unwrap_or_else(|| format!("rank {root} could not encode its value")),
            });
        }
        let len = usize::try_from(len).map_err(|_| Error::Encoding {
            message: format!("{len} bytes do not fit in memory"),
        })?;
        bytes.resize(len, 0);
        self.broadcast_into(root, &mut bytes[..])?;
        if me != root {
            let bad = |why: String| Error::Encoding {
                message: format!(
                    "the value from rank {root} does not decode as {}: {why}",
                    std::any::type_name::<T>()
                ),
            };
            let (got, rest) = postcard::take_from_bytes(&bytes).map_err(|e| bad(e.to_string()))?;
            if !rest.is_empty() {
                return Err(bad(format!("{} bytes left over", rest.len())));
            }
            *value = got;
        }
        Ok(())
    }

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

    /// Makes progress outside any collective: hands what has arrived to
    /// the operations this rank already returned from, and sends what they
    /// still owe (a correction, an FTCO acknowledgement or answer). The
    /// library has no progress thread: a rank that waits outside it, at an
    /// application's own barrier say, should call this while it waits,
    /// as an MPI program calls `MPI_Test`. Never blocks; errors only if
    /// this rank failed or hung.
    fn progress(&mut self) -> Result<(), Error>;

    /// Goes on with the survivors, as ULFM's `MPIX_Comm_shrink`: agrees on
    /// the failed ranks, renumbers the others densely with a fresh fault
    /// budget, and returns the ranks left out (in the old numbering). The
    /// communicator itself becomes the survivors'.
    fn shrink(&mut self) -> Result<Vec<Rank>, Error>;
}
