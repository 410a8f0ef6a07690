//! A rank's handle inside [`crate::runtime::Team::run`]: the collectives on
//! threads. Each call goes through the engine-neutral call layer
//! ([`crate::call`]) over the mailboxes; what is this engine's own is the
//! lending of large buffers between threads for the call's duration
//! ([`crate::value::lent`], [`crate::value::lazy`]).

use std::sync::Arc;
use std::time::Duration;

use crate::buffer::{Buffer, BufferMut};
use crate::call::{reduces_ahead, Caller, Delivered};
use crate::collectives::Collectives;
use crate::driver::{OpRecord, RankState, Transport};
use crate::error::Error;
use crate::op::Operation;
use crate::runtime::engine::ThreadEngine;
use crate::runtime::shared::Shared;
use crate::runtime::transport::MailboxTransport;
use crate::trace::{self, Call as TraceCall};
use crate::types::{Collective, OpId, Rank};
use crate::value::data::Data;
use crate::value::data_op;
use crate::value::lazy::{chunk_bytes, Reducer, LAZY_MIN_BYTES};
use crate::value::lent::{Lending, LendingOutput, LentOutput};

/// A broadcast value of this many bytes or more is read from the root's
/// buffer, lent for its call ([`crate::value::lent`]); smaller ones are
/// copied into a segment (or travel inline).
pub const LENT_BCAST_MIN_BYTES: usize = 256 * 1024;

/// The longest a broadcast root waits (plus a nanosecond per byte) for
/// receivers that have begun copying its lent buffer before it copies the
/// value into a segment for them.
const LENT_BCAST_WAIT: Duration = Duration::from_millis(10);

/// How long a broadcast root waits for every receiver to begin copying its
/// lent buffer before it copies the value into a segment for those that
/// have not: a receiver that waits on a core of its own begins within a
/// microsecond or two of the root's message; where ranks outnumber cores
/// the receivers of a core begin in turn, each after its core mates'
/// copies (about 0.1 ms for three of them at 1 MiB), and a copy by the
/// root for the last of them took more than waiting for it (8 ranks on 2
/// cores, 1 MiB: 0.7-0.8x the time of a 20 µs grace, for a value that
/// stays put and for a new one at every call; docs/benchmarks.md, *The
/// root's grace, 1 ms*). A receiver whose program is elsewhere for longer
/// gets the copy, so that the root does not wait out its absence.
const LENT_BCAST_GRACE: Duration = Duration::from_millis(1);

/// A rank's handle: its number, the team size, and the collectives (also
/// through the engine-neutral [`Collectives`] trait).
pub struct Comm<'t> {
    caller: Caller<'t, ThreadEngine<'t>>,
}

impl<'t> Comm<'t> {
    pub(crate) fn new(shared: &'t Shared<'t>, transport: MailboxTransport<'t>) -> Self {
        let engine = ThreadEngine { shared };
        Comm {
            caller: Caller::new(transport, engine, shared.plans, shared.settings),
        }
    }

    /// The number of this rank's last operation (0 before any): what an
    /// engine built on this communicator names in its own errors (the MPI
    /// hierarchy's).
    #[cfg(feature = "mpi")]
    pub(crate) fn last_op(&self) -> OpId {
        self.caller.driver.next_op().saturating_sub(1)
    }

    /// True if `rank` (of this communicator) is in the team's failure
    /// registry: killed, panicked, ended or declared failed. Shared by the
    /// team's threads, so a rank that reads it true sees everything the
    /// failed rank did before it was marked (the MPI hierarchy's proxy
    /// failover relies on that).
    #[cfg(feature = "mpi")]
    pub(crate) fn is_failed(&self, rank: Rank) -> bool {
        use crate::driver::Transport;
        let driver = &self.caller.driver;
        let t = driver.members().to_transport(rank);
        driver.transport().is_failed(t)
    }

    /// True while this rank is alive (not killed, not hung, not declared
    /// failed by a timeout).
    pub fn is_alive(&self) -> bool {
        self.caller.driver.is_alive()
    }

    /// A broadcast root's loan ends once every other rank has copied the
    /// value, or every one still missing is known failed, or, from
    /// [`LENT_BCAST_GRACE`] on, as soon as one has not begun its copy (its
    /// core is busy with others, or its program is not in the call yet),
    /// or after [`LENT_BCAST_WAIT`] plus a nanosecond per byte: in all but
    /// the first case the loan's drop copies the value into a segment, and
    /// the receivers still to copy read that.
    fn end_loan(&mut self, lending: &mut Lending<'_>, len: usize) {
        let receivers = self.size() as usize - 1;
        let now = std::time::Instant::now();
        let deadline = now + LENT_BCAST_WAIT + Duration::from_nanos(len as u64);
        let driver = &self.caller.driver;
        lending.wait_copies(
            receivers,
            |copies| copies + driver.failed_members().len() >= receivers,
            now + LENT_BCAST_GRACE,
            deadline,
        );
    }

    /// True if the team reduces with FTCO (values travel whole).
    fn ftco_reduces(&self) -> bool {
        matches!(
            self.caller.plans().reduction,
            crate::call::plans::ReductionPlan::Ftco(_)
        )
    }

    /// A reduction's input as a value: from [`LAZY_MIN_BYTES`] (if `lazy`
    /// may apply) this rank's buffer, lent for the call ([`Lending`]; the
    /// loan's drop, on every way out of the call, copies it out first
    /// unless this rank completed the reduction), in a lazy sum of one
    /// ([`crate::value::lazy`]); otherwise a copy (inline, or a segment).
    /// `output` is this rank's output lent for the call, if it is (an
    /// allreduce's), for the lazy sum to push chunks into.
    fn reduction_input<'b, T: bytemuck::Pod>(
        &self,
        items: &'b [T],
        lazy: bool,
        output: Option<&Arc<LentOutput>>,
    ) -> (Option<Lending<'b>>, Data)
    where
        't: 'b,
    {
        let pool = &self.caller.engine.shared.segments;
        let bytes: &[u8] = bytemuck::cast_slice(items);
        if lazy && bytes.len() >= LAZY_MIN_BYTES {
            let lending = Lending::new(bytes, pool);
            let procs = self.size() as usize;
            let input = Data::lazy(self.rank(), procs, lending.lent(), output, pool);
            (Some(lending), input)
        } else {
            (None, Data::encode(items, pool))
        }
    }

    /// The reduced `value` into `recv` (a lazy sum reduced by chunks here),
    /// and the loan of [`Comm::reduction_input`] settled if that completed
    /// the reduction: every chunk is computed, nobody reads the inputs
    /// again.
    fn reduction_output<S, R>(
        &self,
        value: &Data,
        lending: &mut Option<Lending<'_>>,
        send: &S,
        recv: &mut R,
        id: OpId,
        op: &impl Operation<S::Item>,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
    {
        let (me, mine, pool) = (
            self.rank(),
            send.items().len(),
            &self.caller.engine.shared.segments,
        );
        // The root reduces alone: it computes every chunk, in any order.
        let result = value.reduce_into(Reducer::alone(me), recv.items_mut(), id, mine, op, pool);
        Self::settle_input(value, lending, &result);
        result
    }

    /// Settles the loan of [`Comm::reduction_input`] if `result` completed
    /// the reduction of the lazy sum `value`: every chunk is computed,
    /// nobody reads the inputs again.
    fn settle_input(value: &Data, lending: &mut Option<Lending<'_>>, result: &Result<(), Error>) {
        if let (Some(lending), Ok(()), true) = (lending, result, value.is_lazy()) {
            lending.settle();
        }
    }

    /// After the closure: serve late messages until the team is quiet.
    pub(crate) fn finish(&mut self) {
        self.caller.driver.finish();
    }

    pub(crate) fn hung(&self) -> bool {
        self.caller.driver.state() == RankState::Hung
    }

    pub(crate) fn into_records(self) -> Vec<OpRecord> {
        self.caller.driver.into_records()
    }
}

impl<'t> Collectives for Comm<'t> {
    /// This rank (after a [shrink](Comm::shrink), its number among the
    /// survivors).
    fn rank(&self) -> Rank {
        self.caller.rank()
    }

    /// The number of ranks (after a [shrink](Comm::shrink), of survivors).
    fn size(&self) -> u32 {
        self.caller.size()
    }

    /// The fault budget f of reduce, allreduce and barrier: the team's, or
    /// after a shrink the team's clamped to leave one rank alive.
    fn fault_budget(&self) -> u32 {
        self.caller.fault_budget()
    }

    /// Ranks of this communicator known to have failed so far, as this
    /// rank knows them now. Another rank may know more or fewer at the same
    /// moment; [`Comm::agree_failed`] gives every live rank the same list.
    fn failed_ranks(&self) -> Vec<Rank> {
        self.caller.failed_ranks()
    }

    /// Gives every live rank the same list of failed ranks: a collective
    /// (every live rank calls it), after which the lists agree, whatever
    /// the number of failures before or during it. Each listed rank has
    /// failed (it is in the failure registry: killed, panicked, or declared
    /// failed by the timeout detector); a rank that fails late in the call
    /// may be left out, and is then found failed by later operations.
    ///
    /// The algorithm is the rotating coordinator of consensus with a
    /// perfect failure detector (Chandra and Toueg, 1996): for each rank c
    /// in turn, c broadcasts its current list and every rank that receives
    /// it adopts it. A broadcast from a live root reaches every live rank
    /// (checked correction, any number of failures), so after the first
    /// round whose coordinator does not fail all lists are equal and stay
    /// so; a round whose coordinator is dead ends in
    /// [`Error::RootFailed`] at once, one whose coordinator dies during it
    /// within the failure timeout. Cost: one broadcast per rank (of
    /// a bitmap of one bit per rank each).
    ///
    /// Errors: this rank failed or hung, ranks disagree on the operation
    /// ([`Error::Mismatch`]), or a broadcast timed out.
    fn agree_failed(&mut self) -> Result<Vec<Rank>, Error> {
        self.caller.agree_failed()
    }

    /// Goes on with the survivors: agrees on the failed ranks
    /// ([`Comm::agree_failed`]), then renumbers the others densely, in
    /// their order, with a fresh fault budget (the team's f, at most the
    /// new size minus one) and new plans for the new size. Returns the
    /// ranks left out, in the numbering before the shrink. As ULFM's
    /// `MPIX_Comm_shrink`, after failures beyond the budget
    /// ([`Error::TooManyFailures`]) a long-running program can go on.
    ///
    /// Unlike `MPIX_Comm_shrink`, this communicator itself becomes the
    /// survivors' ([`Comm::rank`] and [`Comm::size`] change), rather than a
    /// new one next to it: a rank's thread owns one mailbox endpoint, so it
    /// holds one communicator at a time. Operations go on being numbered
    /// after the old ones, so late messages of the old team are told apart
    /// and dropped.
    ///
    /// Errors: those of [`Comm::agree_failed`]; [`Error::Failed`] if this
    /// rank is among the failed.
    fn shrink(&mut self) -> Result<Vec<Rank>, Error> {
        self.caller.shrink()
    }

    /// Broadcasts `buf` from `root` (corrected-tree broadcast with the
    /// team's tree and correction): on return, every rank's `buf` holds the
    /// root's. `buf` is one plain-data value or a slice of any length
    /// ([`crate::buffer`]): up to 55 bytes travel in the messages, more in a
    /// shared segment the messages refer to. Survives any number of ranks
    /// dead before the call (with checked or delayed correction), as long
    /// as the root lives.
    ///
    /// Errors: `root` out of range, this rank failed or hung, the ranks
    /// disagree on the operation ([`Error::Mismatch`], on every rank that
    /// has not finished it: the rank that meets the mismatch aborts the
    /// operation for the team), the root failed ([`Error::RootFailed`]: at
    /// once if it failed before the operation, within the failure timeout
    /// if during it and the value does not come), no value within the
    /// team's timeout ([`Error::Timeout`]), or `buf`'s length is not the
    /// root's ([`Error::LengthMismatch`], on that rank only, after it has
    /// passed the value on; `buf` is untouched).
    fn broadcast_into<B: BufferMut + ?Sized>(
        &mut self,
        root: Rank,
        buf: &mut B,
    ) -> Result<(), Error> {
        let me = self.rank();
        let _span = trace::Span::enter(me, TraceCall::Broadcast, self.caller.driver.next_op());
        self.caller.check_root(root)?;
        let pool = &self.caller.engine.shared.segments;
        // From `LENT_BCAST_MIN_BYTES` the root lends its buffer for the
        // call and each receiver copies the value from there, instead of
        // the root copying it into a segment first ([`crate::value::lent`]).
        let bytes: &[u8] = bytemuck::cast_slice(buf.items());
        let mut lending =
            (root == me && bytes.len() >= LENT_BCAST_MIN_BYTES).then(|| Lending::new(bytes, pool));
        let value = (root == me).then(|| match &lending {
            Some(lending) => Data::lent(lending.lent()),
            None => Data::encode(buf.items(), pool),
        });
        let Delivered { op, value, started } = self.caller.broadcast(root, value)?;
        if let Some(lending) = &mut lending {
            self.end_loan(lending, bytes.len());
        }
        // The loan ends here, on the way out (or, unsettled, copies first).
        drop(lending);
        // The root's buffer holds the value already.
        let result = if root == me {
            Ok(())
        } else {
            value.decode_into(buf.items_mut(), op, None)
        };
        // The whole call, the receiver's copy included.
        self.caller.record_latency(started);
        result
    }

    /// Reduces every rank's `send` with `op` to `root`, element by element
    /// (up-correction reduce with the team's fault budget f): on return at
    /// the root, `recv` holds the reduction of the inputs of every live
    /// rank, and of each rank that failed during the call either its input
    /// or nothing (never part of it; for a slice, the same ranks in every
    /// element). `recv` is untouched elsewhere. `op` must be associative
    /// and commutative; if it panics, this rank fails.
    ///
    /// Ranks other than the root return once they sent, and wait (serving)
    /// before they start a reduce while the root has not returned from the
    /// operation [`reduces_ahead`] before this one. From 256 KiB the root reduces the
    /// inputs by chunks once the protocol agreed on them
    /// (`docs/algorithms.md`).
    ///
    /// Errors: `root` out of range, an operation that does not apply to
    /// the element type, this rank failed or hung, ranks disagree on the
    /// operation ([`Error::Mismatch`]), more than f ranks failed
    /// ([`Error::TooManyFailures`], at the root), no result within the
    /// team's timeout ([`Error::Timeout`]; [`Error::RootFailed`] if the
    /// root failed: then nobody gets a result, as the paper says), or
    /// lengths that differ ([`Error::LengthMismatch`] at the root: between
    /// two ranks' `send`, or between its `send` and `recv`).
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
        self.caller.check_root(root)?;
        op.check()?;
        let shared = self.caller.engine.shared;
        let pool = &shared.segments;
        let combine = data_op(&op, pool);
        // From `LAZY_MIN_BYTES`, as an allreduce's: the protocol agrees on
        // the inputs, lent in place, and the root reduces them chunk by
        // chunk once it has the sum (`crate::value::lazy`), where
        // reducing as the values travel would write a new segment at every
        // step of the tree. The other ranks' calls end after their sends:
        // the loan's drop copies their input out for the root to read.
        // FTCO reduces values as they travel, whatever their size.
        let lazy = !self.ftco_reduces();
        if lazy {
            let bytes = std::mem::size_of_val(send.items());
            self.caller.pace_reduce(root, reduces_ahead(bytes));
        }
        let (mut lending, input) = self.reduction_input(send.items(), lazy, None);
        let Delivered {
            op: id,
            value,
            started,
        } = self.caller.reduce(root, input, &combine)?;
        let result = match value {
            Some(value) => self.reduction_output(&value, &mut lending, send, recv, id, &op),
            None => Ok(()),
        };
        // The whole call, the root's reduction by chunks included.
        self.caller.record_latency(started);
        result
    }

    /// Reduces every rank's `send` with `op`, element by element, and
    /// gives the result to every rank in `recv` (up-correction reduce to a
    /// root, corrected broadcast from it, retried on the next root if that
    /// root fails). Every live rank gets the same value, holding every live
    /// rank's input and each failed rank's either everywhere or nowhere
    /// (for a slice: in every element or in none), as long as at most f
    /// ranks fail. `op` must be associative and commutative; if it panics,
    /// this rank fails.
    ///
    /// Errors: an operation that does not apply to the element type, this
    /// rank failed or hung, ranks disagree on the operation
    /// ([`Error::Mismatch`]), more than f ranks failed
    /// ([`Error::TooManyFailures`]), no result within the team's timeout,
    /// or lengths that differ ([`Error::LengthMismatch`]: every rank if two
    /// ranks' `send` differ; only this rank, after taking part in full, if
    /// its `recv` differs from the result). After another error, `recv` of
    /// a large value may hold some chunks of the team's result (it is lent
    /// from the call's entry, docs/architecture.md).
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
        let next = self.caller.driver.next_op();
        let _span = trace::Span::enter(self.rank(), TraceCall::Allreduce, next);
        op.check()?;
        let shared = self.caller.engine.shared;
        let pool = &shared.segments;
        // From `LAZY_MIN_BYTES` the protocol agrees on the inputs, and then
        // every rank reduces its share of the chunks
        // ([`crate::value::lazy`]), reading the input where it is, lent
        // for this call ([`crate::value::lent`]): the loan's drop, on
        // every way out of the call, revokes it (copying the input first,
        // unless this rank completed the reduction).
        // FTCO reduces values as they travel, whatever their size.
        // The output is lent for the whole call too, if it has the
        // input's length: whoever computes a chunk writes it there, also
        // before this rank's thread gets its turn to reduce (where ranks
        // share cores, most get theirs after every chunk is computed, and
        // copied each chunk out of shared memory themselves).
        let lazy = !self.ftco_reduces();
        let (mine, out) = (send.items(), recv.items_mut());
        let size = std::mem::size_of::<S::Item>();
        let at_entry =
            lazy && std::mem::size_of_val(mine) >= LAZY_MIN_BYTES && out.len() == mine.len();
        let entry_output = at_entry
            .then(|| LendingOutput::new(bytemuck::cast_slice_mut(out), chunk_bytes(size), pool));
        let output = entry_output.as_ref().map(LendingOutput::lent);
        let (mut lending, input) = self.reduction_input(mine, lazy, output);
        let combine = data_op(&op, pool);
        let kind = Collective::Allreduce;
        let Delivered {
            op: id,
            value,
            started,
        } = self.caller.allreduce(kind, input, &combine)?;
        let by = Reducer {
            rank: self.rank(),
            mates: &shared.core_mates[self.caller.driver.transport().rank() as usize],
        };
        let reduced = entry_output
            .as_ref()
            .and_then(|entry| value.reduce_lent(by, entry, mine.len(), id, &op));
        let result = match reduced {
            Some(result) => result,
            None => {
                drop(entry_output);
                value.reduce_into(by, out, id, mine.len(), &op, pool)
            }
        };
        Self::settle_input(&value, &mut lending, &result);
        // The whole call, the reduction by chunks included.
        self.caller.record_latency(started);
        result
    }

    /// Returns once every live rank has entered the barrier (an allreduce of
    /// nothing, with its fault tolerance: up to f ranks may fail in it).
    ///
    /// Errors: this rank failed or hung, ranks disagree on the operation,
    /// more than f failures, or the team's timeout.
    fn barrier(&mut self) -> Result<(), Error> {
        let next = self.caller.driver.next_op();
        let _span = trace::Span::enter(self.rank(), TraceCall::Barrier, next);
        let Delivered { started, .. } = self.caller.barrier()?;
        self.caller.record_latency(started);
        Ok(())
    }

    /// Makes progress outside any collective ([`Collectives::progress`]):
    /// serves the cores this rank kept from operations it returned from,
    /// never waits. Call it while waiting outside the library, e.g. at an
    /// application's own barrier between FTCO calls (docs/algorithms.md,
    /// *A rank must keep calling*). Errors: this rank failed or hung.
    fn progress(&mut self) -> Result<(), Error> {
        self.caller.progress()
    }
}
