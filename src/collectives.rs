//! The collectives as one trait, so that a program written against it runs
//! on any engine: threads ([`crate::runtime::Comm`]), MPI processes one
//! rank each (`MpiComm`) or with threads below (`NodeComm`), with the
//! `mpi` feature. Names and argument order follow rsmpi's
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

use crate::buffer::{Buffer, BufferMut, Element};
use crate::call::{all_reduce_contributors, contributors_lost, Communicator, Reduction};
use crate::contributors::Contributors;
use crate::error::Error;
use crate::op::Operation;
use crate::request::{self, Request};
use crate::types::Rank;

/// Fault-tolerant collectives of one rank of a team. Every rank calls the
/// same collectives in the same order; each call returns a value or a typed
/// error, never hangs (a call that cannot complete times out).
///
/// Implemented for every engine's communicator, and sealed: the guarantees
/// below are the engines' alike; what an engine adds (how it moves large
/// values, how it learns of a failure) is on its communicator's type.
pub trait Collectives {
    /// This rank (after a [shrink](Collectives::shrink), its number among
    /// the survivors).
    fn rank(&self) -> Rank;

    /// The number of ranks (after a shrink, of survivors).
    fn size(&self) -> u32;

    /// Broadcasts `buf` from `root` (corrected broadcast with the team's
    /// algorithm, tree and correction; Corrected Trees Section 3): on
    /// return, every live rank's `buf` holds the root's. `buf` is one
    /// plain-data value or a slice of any length ([`crate::buffer`]).
    /// Survives any number of ranks dead before the call (with checked or
    /// delayed correction), as long as the root lives.
    ///
    /// Errors: `root` out of range ([`Error::RankOutOfRange`]), this rank
    /// failed or hung, the ranks disagree on the operation
    /// ([`Error::Mismatch`], on every rank that has not finished it: the
    /// rank that meets the mismatch aborts the operation for the team),
    /// the root failed ([`Error::RootFailed`]: at once if it failed before
    /// the operation, within the failure timeout if during it and the
    /// value does not come), no value within the team's timeout
    /// ([`Error::Timeout`]), or `buf`'s length is not the root's
    /// ([`Error::LengthMismatch`], on that rank only, after it has passed
    /// the value on; `buf` is untouched).
    fn broadcast_into<B: BufferMut + ?Sized>(
        &mut self,
        root: Rank,
        buf: &mut B,
    ) -> Result<(), Error>;

    /// Reduces every rank's `send` with `op` to `root`, element by element
    /// (up-correction reduce with the team's fault budget f, reduce paper
    /// Section 4): on return at the root, `recv` holds the reduction of
    /// the inputs of every live rank, and of each rank that failed during
    /// the call either its input or nothing (never part of it; for a
    /// slice, the same ranks in every element). `recv` is untouched
    /// elsewhere. `op` must be associative and commutative; if it panics,
    /// this rank fails.
    ///
    /// Errors: `root` out of range, an operation that does not apply to
    /// the element type ([`Error::OperationType`]), this rank failed or hung,
    /// ranks disagree on the operation ([`Error::Mismatch`]), more than f
    /// ranks failed ([`Error::TooManyFailures`], at the root), no result
    /// within the team's timeout ([`Error::Timeout`];
    /// [`Error::RootFailed`] if the root failed: then nobody gets a
    /// result, as the paper says), or lengths that differ
    /// ([`Error::LengthMismatch`] at the root: between two ranks' `send`,
    /// or between its `send` and `recv`).
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

    /// Reduces every rank's `send` with `op`, element by element, and
    /// gives the result to every rank in `recv` (up-correction reduce to a
    /// root, corrected broadcast from it, retried on the next root if that
    /// root fails; reduce paper Section 5). Every live rank gets the same
    /// value, holding every live rank's input and each failed rank's
    /// either everywhere or nowhere (for a slice: in every element or in
    /// none), as long as at most f ranks fail. `op` must be associative
    /// and commutative; if it panics, this rank fails.
    ///
    /// Errors: an operation that does not apply to the element type, this
    /// rank failed or hung, ranks disagree on the operation
    /// ([`Error::Mismatch`]), more than f ranks failed
    /// ([`Error::TooManyFailures`]), no result within the team's timeout,
    /// or lengths that differ ([`Error::LengthMismatch`]: every rank if two
    /// ranks' `send` differ; only this rank, after taking part in full, if
    /// its `recv` differs from the result).
    fn all_reduce_into<S, R>(
        &mut self,
        send: &S,
        recv: &mut R,
        op: impl Operation<S::Item>,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized;

    /// [`Collectives::all_reduce_into`], and which ranks' inputs the
    /// result holds ([`Contributors`]: every live rank's, and each failed
    /// rank's in or out, the same set on every rank and for every element).
    /// What averaging needs: divide by [`Contributors::len`].
    ///
    /// Errors: those of [`Collectives::all_reduce_into`], and, before the
    /// call, [`crate::error::ConfigError::Unsupported`] where the
    /// contributors are not known: a team whose failure scheme is the bit
    /// (at either level of a node team).
    fn all_reduce_into_contributors<S, R>(
        &mut self,
        send: &S,
        recv: &mut R,
        op: impl Operation<S::Item>,
    ) -> Result<Contributors, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized;

    /// Gathers every rank's `send` block into every rank's `recv`: rank
    /// r's block at `r * send.len()`, as `MPI_Allgather` places them, and
    /// says whose blocks it holds. Every live rank gets the same `recv` and
    /// the same [`Contributors`]: every live rank's block, and each failed
    /// rank's in every survivor's result or in none (a block left out is
    /// zeros), as long as at most f ranks fail. Through the allreduce
    /// (reduce paper Section 5): each rank's block placed at its offset of
    /// a zeroed vector of `size` blocks, the vectors combined by a bitwise
    /// or, which no two blocks overlap; the whole vector crosses each of
    /// the allreduce's edges, so it moves `size` times the data an
    /// allgather needs (docs/algorithms.md, *Allgather, reduce-scatter
    /// and split through the allreduce*).
    ///
    /// Errors: those of [`Collectives::all_reduce_into_contributors`];
    /// [`Error::LengthMismatch`] names the lengths of the gathered vectors
    /// (`size` blocks): every rank's if two ranks' blocks differ, this
    /// rank's alone, after taking part in full, if `recv` is not `size`
    /// blocks long.
    fn all_gather_into<S, R>(&mut self, send: &S, recv: &mut R) -> Result<Contributors, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized;

    /// Reduces every rank's `send` of `size` equal blocks with `op`,
    /// element by element, and gives rank r block r of the result in
    /// `recv` (`MPI_Reduce_scatter_block`), and says whose inputs it holds.
    /// Every block is over one and the same set of contributions, on every
    /// rank: every live rank's input exactly once, each failed rank's in
    /// every block or in none, as long as at most f ranks fail. Through
    /// the allreduce of the whole vector (reduce paper Section 5), of which
    /// each rank keeps its block: it moves `size` times the data a
    /// reduce-scatter needs (docs/algorithms.md).
    ///
    /// Errors: those of [`Collectives::all_reduce_into_contributors`];
    /// [`Error::BlockLength`] before anything is sent if `send` does not
    /// split into `size` equal blocks; [`Error::LengthMismatch`] on this
    /// rank alone, after taking part in full, if `recv` is not one block
    /// long (the lengths it names are `recv`'s and the block's).
    fn reduce_scatter_block_into<S, R>(
        &mut self,
        send: &S,
        recv: &mut R,
        op: impl Operation<S::Item>,
    ) -> Result<Contributors, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized;

    /// [`Collectives::reduce_into`], and at the root which ranks' inputs
    /// the result holds (`Some`; `None` elsewhere), as
    /// [`Collectives::all_reduce_into_contributors`] says.
    fn reduce_into_contributors<S, R>(
        &mut self,
        root: Rank,
        send: &S,
        recv: &mut R,
        op: impl Operation<S::Item>,
    ) -> Result<Option<Contributors>, Error>
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

    /// Returns once every live rank has entered the barrier (an allreduce
    /// of nothing, with its fault tolerance: up to f ranks may fail in it).
    ///
    /// Errors: this rank failed or hung, ranks disagree on the operation,
    /// more than f failures, or the team's timeout.
    fn barrier(&mut self) -> Result<(), Error>;

    /// The fault budget f of reduce, allreduce and barrier: how many ranks
    /// may fail before or during one of them with every guarantee kept
    /// (the team's, or after a shrink the team's clamped to leave one rank
    /// alive).
    fn fault_budget(&self) -> u32;

    /// Ranks known to have failed, as this rank knows them now (another
    /// rank may know more or fewer at the same moment).
    fn failed_ranks(&self) -> Vec<Rank>;

    /// Gives every live rank the same list of failed ranks: a collective
    /// (every live rank calls it), after which the lists agree, whatever
    /// the number of failures before or during it. Each listed rank has
    /// failed (killed, panicked, or declared failed by the timeout
    /// detector); a rank that fails late in the call may be left out, and
    /// is then found failed by later operations.
    ///
    /// The algorithm is the rotating coordinator of consensus with a
    /// perfect failure detector (Chandra and Toueg, 1996): for each rank c
    /// in turn, c broadcasts its current list and every rank that receives
    /// it adopts it. A broadcast from a live root reaches every live rank
    /// (checked correction, any number of failures), so after the first
    /// round whose coordinator does not fail all lists are equal and stay
    /// so. Cost: one broadcast per rank (of a bitmap of one bit per rank
    /// each). Between processes the list agrees if the timeout detector
    /// makes no mistake (docs/mpi.md).
    ///
    /// Errors: this rank failed or hung, ranks disagree on the operation
    /// ([`Error::Mismatch`]), or a broadcast timed out.
    fn agree_failed(&mut self) -> Result<Vec<Rank>, Error>;

    /// Makes progress outside any collective: hands what has arrived to
    /// the operations this rank already returned from, and sends what they
    /// still owe (a correction, an FTCO acknowledgement or answer). The
    /// library has no progress thread: a rank that waits outside it, at an
    /// application's own barrier say, should call this while it waits,
    /// as an MPI program calls `MPI_Test`. Never blocks; errors only if
    /// this rank failed or hung.
    fn progress(&mut self) -> Result<(), Error>;

    /// Starts [`Collectives::broadcast_into`] of `buf` from `root` without
    /// waiting (`MPI_Ibcast`): the request owns `buf`, and its
    /// [wait](Collectives::wait) hands it back holding the root's value.
    /// The algorithm, the messages and the guarantees are the blocking
    /// call's, word for word, and its errors come from the wait (those of
    /// the arguments and of this rank's failure, at once). Every rank calls
    /// an operation in the same form, blocking or immediate, as MPI asks.
    /// See [`crate::request`] for progress: the operation moves while this
    /// rank is inside the library.
    fn immediate_broadcast<T: Element>(
        &mut self,
        root: Rank,
        buf: Vec<T>,
    ) -> Result<Request<Vec<T>>, Error>;

    /// Starts [`Collectives::reduce_into`] of `send` to `root` with `op`
    /// without waiting (`MPI_Ireduce`): the wait gives the root `send`'s
    /// buffer holding the reduction (`Some`), the others `None`. Its
    /// guarantees and errors are the blocking call's (see
    /// [`Collectives::immediate_broadcast`]).
    fn immediate_reduce<T, O>(
        &mut self,
        root: Rank,
        send: Vec<T>,
        op: O,
    ) -> Result<Request<Option<Vec<T>>>, Error>
    where
        T: Element,
        O: Operation<T> + Send + 'static;

    /// Starts [`Collectives::all_reduce_into`] of `send` with `op` without
    /// waiting (`MPI_Iallreduce`): the wait gives back `send`'s buffer
    /// holding the reduction, the same on every live rank. Its guarantees
    /// and errors are the blocking call's (see
    /// [`Collectives::immediate_broadcast`]);
    /// [`Collectives::wait_contributors`] says whose inputs it holds.
    fn immediate_all_reduce<T, O>(&mut self, send: Vec<T>, op: O) -> Result<Request<Vec<T>>, Error>
    where
        T: Element,
        O: Operation<T> + Send + 'static;

    /// Starts [`Collectives::barrier`] without waiting (`MPI_Ibarrier`):
    /// its wait returns once every live rank has entered it.
    fn immediate_barrier(&mut self) -> Result<Request<()>, Error>;

    /// Makes progress on every operation of this communicator, then says
    /// whether `req` has completed, without waiting (`MPI_Test`); once it
    /// has, its [wait](Collectives::wait) returns at once. Errors only if
    /// this rank failed or hung, or the communicator has no immediate
    /// calls.
    fn test<R>(&mut self, req: &mut Request<R>) -> Result<bool, Error>;

    /// Completes `req` (`MPI_Wait`): its result, or the error the blocking
    /// call would have returned. Requests of one communicator may be
    /// waited in any order; each is waited once, on the communicator that
    /// started it ([`Error::UnknownRequest`] otherwise). A rank that failed
    /// with requests in flight gets [`Error::Failed`] from each.
    fn wait<R>(&mut self, req: Request<R>) -> Result<R, Error> {
        self.wait_contributors(req).map(|(r, _)| r)
    }

    /// [`Collectives::wait`], and whose inputs a reduction's result holds
    /// (`Some` where the blocking call's `_contributors` form would say:
    /// an allreduce, a reduce's root, with a failure scheme that counts).
    fn wait_contributors<R>(&mut self, req: Request<R>)
        -> Result<(R, Option<Contributors>), Error>;

    /// Completes every request, in order (`MPI_Waitall`): each one's
    /// result or error.
    fn wait_all<R>(&mut self, reqs: Vec<Request<R>>) -> Vec<Result<R, Error>> {
        reqs.into_iter().map(|req| self.wait(req)).collect()
    }

    /// Splits the team into sub-teams, as `MPI_Comm_split`: the ranks that
    /// pass the same `color` form one, numbered by `key`, ties by their
    /// rank before the split. A collective (every live rank calls it).
    /// Returns the members of this rank's sub-team, in their new order, in
    /// the numbering before the split.
    ///
    /// The colors and keys travel by [`Collectives::all_gather_into`], so
    /// every live rank sees the same table: every live rank is in its
    /// color's sub-team, and a rank that fails during the split is in its
    /// sub-team on every member or on none (found failed later, as after a
    /// shrink, if it is). Each sub-team keeps the fault tolerance on its
    /// own: the communicator's f, at most its size minus one, its own
    /// plans, and only its members' failures concern it. As with
    /// [`Collectives::shrink`], the communicator itself becomes the
    /// sub-team (a rank owns one endpoint), and it may split again or
    /// shrink.
    ///
    /// Errors: those of [`Collectives::all_gather_into`] (a team whose
    /// failure scheme is the bit cannot split:
    /// [`crate::error::ConfigError::Unsupported`]); a node team:
    /// `Unsupported`, on every rank alike after the allgather.
    fn split(&mut self, color: u32, key: u32) -> Result<Vec<Rank>, Error>;

    /// Goes on with the survivors, as ULFM's `MPIX_Comm_shrink`: agrees on
    /// the failed ranks ([`Collectives::agree_failed`]), renumbers the
    /// others densely, in their order, with a fresh fault budget (the
    /// team's f, at most the new size minus one) and new plans for the new
    /// size, and returns the ranks left out (in the numbering before the
    /// shrink). After failures beyond the budget
    /// ([`Error::TooManyFailures`]) a long-running program can go on.
    ///
    /// Unlike `MPIX_Comm_shrink`, the communicator itself becomes the
    /// survivors' ([`Collectives::rank`] and [`Collectives::size`] change),
    /// rather than a new one next to it: a rank owns one endpoint, so it
    /// holds one communicator at a time. Operations go on being numbered
    /// after the old ones, so late messages of the old team are told apart
    /// and dropped.
    ///
    /// Errors: those of [`Collectives::agree_failed`]; [`Error::Failed`]
    /// if this rank is among the failed.
    fn shrink(&mut self) -> Result<Vec<Rank>, Error>;
}

/// Every engine's communicator ([`crate::runtime::Comm`], the MPI engine's
/// `MpiComm` and `NodeComm`) offers the collectives through this one
/// implementation: the arguments are checked here, the control collectives
/// go to the communicator's call layer, and the typed buffers to its
/// engine (`crate::call::communicator`).
impl<C: Communicator> Collectives for C {
    fn rank(&self) -> Rank {
        self.control().rank()
    }

    fn size(&self) -> u32 {
        self.control().size()
    }

    fn broadcast_into<B: BufferMut + ?Sized>(
        &mut self,
        root: Rank,
        buf: &mut B,
    ) -> Result<(), Error> {
        check_root(root, self.size())?;
        self.broadcast_items(root, buf.items_mut())
    }

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
        check_root(root, self.size())?;
        op.check()?;
        self.reduce_items(root, reduction(send, recv, op, false))
            .map(drop)
    }

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
        self.all_reduce_items(reduction(send, recv, op, false))
            .map(drop)
    }

    fn all_reduce_into_contributors<S, R>(
        &mut self,
        send: &S,
        recv: &mut R,
        op: impl Operation<S::Item>,
    ) -> Result<Contributors, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
    {
        all_reduce_contributors(self, send.items(), recv.items_mut(), op)
    }

    fn reduce_into_contributors<S, R>(
        &mut self,
        root: Rank,
        send: &S,
        recv: &mut R,
        op: impl Operation<S::Item>,
    ) -> Result<Option<Contributors>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
    {
        check_root(root, self.size())?;
        self.knows_contributors()?;
        op.check()?;
        let got = self.reduce_items(root, reduction(send, recv, op, true))?;
        if root == self.rank() {
            return got.map(Some).ok_or_else(contributors_lost);
        }
        Ok(None)
    }

    fn barrier(&mut self) -> Result<(), Error> {
        self.control_mut().barrier()
    }

    fn fault_budget(&self) -> u32 {
        self.control().fault_budget()
    }

    fn failed_ranks(&self) -> Vec<Rank> {
        self.control().failed_ranks()
    }

    fn agree_failed(&mut self) -> Result<Vec<Rank>, Error> {
        self.control_mut().agree_failed()
    }

    fn progress(&mut self) -> Result<(), Error> {
        self.control_mut().progress()
    }

    fn shrink(&mut self) -> Result<Vec<Rank>, Error> {
        self.control_mut().shrink()
    }

    fn split(&mut self, color: u32, key: u32) -> Result<Vec<Rank>, Error> {
        crate::gather::split(self, color, key)
    }

    fn all_gather_into<S, R>(&mut self, send: &S, recv: &mut R) -> Result<Contributors, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
    {
        self.all_gather_items(send.items(), recv.items_mut())
    }

    fn reduce_scatter_block_into<S, R>(
        &mut self,
        send: &S,
        recv: &mut R,
        op: impl Operation<S::Item>,
    ) -> Result<Contributors, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
    {
        op.check()?;
        self.reduce_scatter_items(send.items(), recv.items_mut(), op)
    }

    fn immediate_broadcast<T: Element>(
        &mut self,
        root: Rank,
        buf: Vec<T>,
    ) -> Result<Request<Vec<T>>, Error> {
        check_root(root, self.size())?;
        request::broadcast(self.control_mut(), root, buf)
    }

    fn immediate_reduce<T, O>(
        &mut self,
        root: Rank,
        send: Vec<T>,
        op: O,
    ) -> Result<Request<Option<Vec<T>>>, Error>
    where
        T: Element,
        O: Operation<T> + Send + 'static,
    {
        check_root(root, self.size())?;
        request::reduction(self.control_mut(), Some(root), send, op)
    }

    fn immediate_all_reduce<T, O>(&mut self, send: Vec<T>, op: O) -> Result<Request<Vec<T>>, Error>
    where
        T: Element,
        O: Operation<T> + Send + 'static,
    {
        request::all_reduce(self.control_mut(), send, op)
    }

    fn immediate_barrier(&mut self) -> Result<Request<()>, Error> {
        request::barrier(self.control_mut())
    }

    fn test<R>(&mut self, req: &mut Request<R>) -> Result<bool, Error> {
        request::test(self.control_mut(), req)
    }

    fn wait_contributors<R>(
        &mut self,
        req: Request<R>,
    ) -> Result<(R, Option<Contributors>), Error> {
        request::wait(self.control_mut(), req)
    }
}

/// A reduction's buffers, as slices, for the engine.
fn reduction<'b, S, R, O>(
    send: &'b S,
    recv: &'b mut R,
    op: O,
    contributors: bool,
) -> Reduction<'b, S::Item, O>
where
    S: Buffer + ?Sized,
    R: BufferMut<Item = S::Item> + ?Sized,
{
    let (send, recv) = (send.items(), recv.items_mut());
    Reduction {
        send,
        recv,
        op,
        contributors,
    }
}

/// `root` is one of the communicator's `procs` ranks.
fn check_root(root: Rank, procs: u32) -> Result<(), Error> {
    if root >= procs {
        return Err(Error::RankOutOfRange { rank: root, procs });
    }
    Ok(())
}
