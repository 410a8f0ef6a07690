//! A rank's handle inside [`crate::runtime::Team::run`]: the public API of
//! the collectives on threads. Each call builds its protocol core, applies
//! the rank's emulated fault, and hands the core to the
//! [driver](crate::driver), which runs it over the mailboxes.

use std::sync::Arc;
use std::time::Duration;

use crate::buffer::{Buffer, BufferMut};
use crate::collectives::Collectives;
use crate::driver::{Driver, DriverConfig, Members, OpRecord, RankState, Transport};
use crate::error::Error;
use crate::op::Operation;
use crate::protocol::allreduce::{Allreduce, AllreduceOutput};
use crate::protocol::bcast::Bcast;
use crate::protocol::ftco::{FtcoCollective, FtcoOutput, FtcoPlan, Timeouts};
use crate::protocol::op_clock::OpClock;
use crate::protocol::pair::PairAllreduce;
use crate::protocol::reduce::{Contribution, Reduce, ReduceLists, ReduceOutput};
use crate::protocol::Protocol;
use crate::runtime::broadcast::{drive_broadcast, root_failed, BcastObserver};
use crate::runtime::data::Data;
use crate::runtime::faults::Fault;
use crate::runtime::ftco_reduction::{
    allreduce_kind, allreduce_result, drive_ftco_reduction, reduce_result_into, FTCO_ALLREDUCE_ROOT,
};
use crate::runtime::lazy::{chunk_bytes, Reducer, LAZY_MIN_BYTES};
use crate::runtime::lent::{Lending, LendingOutput, LentOutput};
use crate::runtime::team::{Generation, Plans, Shared};
use crate::runtime::transport::MailboxTransport;
use crate::trace::{self, Call as TraceCall};
use crate::types::{Collective, OpId, Rank, Tick};

/// A broadcast value of this many bytes or more is read from the root's
/// buffer, lent for its call ([`crate::runtime::lent`]); smaller ones are
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

/// How far a rank that is not a reduce's root may run ahead of it: before a
/// reduce, it waits (serving) while the root has not returned from the
/// operation [`reduces_ahead`] before this one. Such a rank returns once it
/// sent, and the root takes what arrives into its fence while it works, so
/// no lane fills up to hold the sender back: a loop of reduces would
/// otherwise run ahead of a slower root without bound. Values that do not
/// travel inline were held in segments (for 320 KB values and 8 ranks on 2
/// cores: 360 segments in 200 calls, against 19), and the segment pool grew
/// and slowed with them; 8-byte values piled up as early messages at the
/// root (127 MB after 200 000 reduces of 8 ranks, against 3 MB paced).
/// The values held ahead come to about this many bytes per rank, at least
/// two calls' and at most [`REDUCES_AHEAD_MAX`] calls' worth.
pub const REDUCES_AHEAD_BYTES: usize = 1 << 20;

/// The most reduces a rank may run ahead of their root (see
/// [`REDUCES_AHEAD_BYTES`]).
pub const REDUCES_AHEAD_MAX: OpId = 16;

/// How many operations ahead of the root a reduce of `bytes` may start
/// (see [`REDUCES_AHEAD_BYTES`]): 2 from 512 KiB, up to
/// [`REDUCES_AHEAD_MAX`] for small values. Where ranks share cores a wait
/// costs a scheduling round, so small values go further ahead
/// (docs/benchmarks.md).
pub fn reduces_ahead(bytes: usize) -> OpId {
    let calls = REDUCES_AHEAD_BYTES / bytes.max(1);
    (calls.min(REDUCES_AHEAD_MAX as usize) as OpId).max(2)
}

/// The reduction function of a core kept after its call: a decided
/// allreduce never combines again, so it is never called.
type Absorb = fn(&mut Data, &Data);

fn never_combines(_: &mut Data, _: &Data) {}

/// A rank's handle: its number, the team size, and the collectives (also
/// through the engine-neutral [`Collectives`] trait).
pub struct Comm<'t> {
    shared: &'t Shared<'t>,
    /// The plans of this communicator: the team's, or a shrunk one's.
    plans: &'t Plans,
    driver: Driver<'t, MailboxTransport<'t>>,
    /// A root (transport numbering) this rank stopped pacing its reduces
    /// to, and the `returned` count it stood still at (see
    /// [`Comm::pace_reduce`]).
    stalled_root: Option<(Rank, OpId)>,
    /// A root (transport numbering) and the `returned` count this rank last
    /// read of it (see [`Comm::pace_reduce`]).
    root_returned: Option<(Rank, OpId)>,
    /// The reduce lists of the last reduce or allreduce core done with, for
    /// the next ([`ReduceLists`]): a loop allocates them once.
    reduce_lists: ReduceLists<Data>,
}

impl<'t> Comm<'t> {
    pub(crate) fn new(shared: &'t Shared<'t>, transport: MailboxTransport<'t>) -> Self {
        let driver = Driver::new(
            transport,
            DriverConfig {
                op_timeout: crate::driver::nanos(shared.op_timeout()),
                failure_timeout: crate::driver::nanos(shared.failure_timeout()),
                root_wait: crate::driver::nanos(shared.root_wait()),
                op_records: shared.config.op_records,
                ..DriverConfig::default()
            },
        );
        Comm {
            shared,
            plans: shared.plans,
            driver,
            stalled_root: None,
            root_returned: None,
            reduce_lists: ReduceLists::default(),
        }
    }

    /// This rank (after a [shrink](Comm::shrink), its number among the
    /// survivors).
    pub fn rank(&self) -> Rank {
        self.driver.rank()
    }

    /// The number of ranks (after a [shrink](Comm::shrink), of survivors).
    pub fn size(&self) -> u32 {
        self.driver.size()
    }

    /// The fault budget f of reduce, allreduce and barrier: the team's, or
    /// after a shrink the team's clamped to leave one rank alive.
    pub fn fault_budget(&self) -> u32 {
        self.plans.reduce.f()
    }

    /// The number of this rank's last operation (0 before any): what an
    /// engine built on this communicator names in its own errors (the MPI
    /// hierarchy's).
    #[cfg(feature = "mpi")]
    pub(crate) fn last_op(&self) -> OpId {
        self.driver.next_op().saturating_sub(1)
    }

    /// True if `rank` (of this communicator) is in the team's failure
    /// registry: killed, panicked, ended or declared failed. Shared by the
    /// team's threads, so a rank that reads it true sees everything the
    /// failed rank did before it was marked (the MPI hierarchy's proxy
    /// failover relies on that).
    #[cfg(feature = "mpi")]
    pub(crate) fn is_failed(&self, rank: Rank) -> bool {
        let t = self.driver.members().to_transport(rank);
        self.driver.transport().is_failed(t)
    }

    /// True while this rank is alive (not killed, not hung, not declared
    /// failed by a timeout).
    pub fn is_alive(&self) -> bool {
        self.driver.is_alive()
    }

    /// Ranks of this communicator known to have failed so far, as this
    /// rank knows them now. Another rank may know more or fewer at the same
    /// moment; [`Comm::agree_failed`] gives every live rank the same list.
    pub fn failed_ranks(&self) -> Vec<Rank> {
        self.driver.failed_members()
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
    pub fn agree_failed(&mut self) -> Result<Vec<Rank>, Error> {
        let size = self.size();
        let mut estimate = vec![0u64; (size as usize).div_ceil(64)];
        for r in self.failed_ranks() {
            estimate[r as usize / 64] |= 1 << (r % 64);
        }
        for coordinator in 0..size {
            let mut got = estimate.clone();
            match self.broadcast_agreement(coordinator, &mut got) {
                Ok(()) => estimate = got,
                Err(Error::RootFailed { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok((0..size)
            .filter(|&r| estimate[r as usize / 64] & (1 << (r % 64)) != 0)
            .collect())
    }

    /// One broadcast of the agreement: with the allreduce's plan, which
    /// reaches every live rank from a live root whatever the team's
    /// correction is (a correction that guarantees delivery, or the star
    /// allreduce's flat tree, in which the root sends to every rank
    /// itself).
    fn broadcast_agreement(&mut self, root: Rank, bitmap: &mut [u64]) -> Result<(), Error> {
        let op = self.begin_op()?;
        let (plans, me) = (self.plans, self.rank());
        let value = (root == me).then(|| Data::encode(bitmap, &self.shared.segments));
        let mut core = Bcast::new(plans.allreduce.bcast(), root, me, op, value)
            .map_err(|e| self.abandon(op, e))?;
        let got = self.driver.drive(op, None, &mut core)?;
        self.driver.keep(core);
        got.decode_into(bitmap, op, None)
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
    pub fn shrink(&mut self) -> Result<Vec<Rank>, Error> {
        let failed = self.agree_failed()?;
        if failed.contains(&self.rank()) {
            return Err(Error::Failed(self.rank()));
        }
        let old = self.driver.members();
        let members: Box<[Rank]> = (0..self.size())
            .filter(|r| !failed.contains(r))
            .map(|r| old.to_transport(r))
            .collect();
        let size = members.len() as u32;
        let f = self.fault_budget().min(size - 1);
        let plans = Plans::build(self.shared.config, size, f)?;
        let generation = self
            .shared
            .generations
            .push_get(Box::new(Generation { members, plans }));
        self.plans = &generation.plans;
        self.driver.set_members(Members::dense(&generation.members));
        Ok(failed)
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
    pub fn broadcast_into<B: BufferMut + ?Sized>(
        &mut self,
        root: Rank,
        buf: &mut B,
    ) -> Result<(), Error> {
        let me = self.rank();
        let _span = trace::Span::enter(me, TraceCall::Broadcast, self.driver.next_op());
        self.check_root(root)?;
        let pool = &self.shared.segments;
        // From `LENT_BCAST_MIN_BYTES` the root lends its buffer for the
        // call and each receiver copies the value from there, instead of
        // the root copying it into a segment first ([`crate::runtime::lent`]).
        let bytes: &[u8] = bytemuck::cast_slice(buf.items());
        let mut lending =
            (root == me && bytes.len() >= LENT_BCAST_MIN_BYTES).then(|| Lending::new(bytes, pool));
        let value = (root == me).then(|| match &lending {
            Some(lending) => Data::lent(lending.lent()),
            None => Data::encode(buf.items(), pool),
        });
        let op = self.begin_op()?;
        let started = self.driver.call_started();
        let (shared, plans) = (self.shared, self.plans);
        let got = drive_broadcast(
            &mut self.driver,
            plans,
            root,
            op,
            started,
            value,
            &mut TeamCounters(shared),
        )?;
        if let Some(lending) = &mut lending {
            self.end_loan(lending, bytes.len());
        }
        // The loan ends here, on the way out (or, unsettled, copies first).
        drop(lending);
        // The root's buffer holds the value already.
        let result = if root == me {
            Ok(())
        } else {
            got.decode_into(buf.items_mut(), op, None)
        };
        // The whole call, the receiver's copy included.
        self.driver.record_latency(started);
        result
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
        let driver = &self.driver;
        lending.wait_copies(
            receivers,
            |copies| copies + driver.failed_members().len() >= receivers,
            now + LENT_BCAST_GRACE,
            deadline,
        );
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
    pub fn reduce_into<S, R>(
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
        self.check_root(root)?;
        op.check()?;
        let pool = &self.shared.segments;
        let combine = data_op(&op, pool);
        if let Some(plan) = &self.plans.ftco_reduce {
            let input = Data::encode(send.items(), pool);
            let kind = FtcoCollective::Reduce;
            let (id, result, started) = self.ftco_reduction(plan, root, kind, input, &combine)?;
            let result = reduce_result_into(result, recv.items_mut(), id, send.items().len());
            self.driver.record_latency(started);
            return result;
        }
        // From `LAZY_MIN_BYTES`, as an allreduce's: the protocol agrees on
        // the inputs, lent in place, and the root reduces them chunk by
        // chunk once it has the sum (`crate::runtime::lazy`), where
        // reducing as the values travel would write a new segment at every
        // step of the tree. The other ranks' calls end after their sends:
        // the loan's drop copies their input out for the root to read.
        let bytes = std::mem::size_of_val(send.items());
        self.pace_reduce(root, reduces_ahead(bytes));
        let (mut lending, input) = self.reduction_input(send.items(), true, None);
        let input = Contribution::input(input);
        let id = self.begin_op()?;
        let started = self.driver.call_started();
        let (plans, me) = (self.plans, self.rank());
        let lists = std::mem::take(&mut self.reduce_lists);
        let mut core = Reduce::new_in(
            &plans.reduce,
            root,
            me,
            id,
            Collective::Reduce,
            input,
            &combine,
            lists,
        )
        .map_err(|e| self.abandon(id, e))?;
        let driven = self.driver.drive(id, started, &mut core);
        // Done with once the call returns (nothing to keep): its lists serve
        // the next reduce or allreduce.
        self.reduce_lists = core.retire();
        let result = match driven {
            Ok(ReduceOutput::Sent) => None,
            Ok(ReduceOutput::Root { value, .. }) => Some(value),
            Ok(ReduceOutput::TooManyFailures { .. }) => return Err(self.too_many_failures(id)),
            Err(e) => return Err(self.root_failed(e, id, root)),
        };
        let result = match result {
            Some(value) => self.reduction_output(&value, &mut lending, send, recv, id, &op),
            None => Ok(()),
        };
        // The whole call, the root's reduction by chunks included.
        self.driver.record_latency(started);
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
    pub fn all_reduce_into<S, R>(
        &mut self,
        send: &S,
        recv: &mut R,
        op: impl Operation<S::Item>,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
    {
        let _span = trace::Span::enter(self.rank(), TraceCall::Allreduce, self.driver.next_op());
        op.check()?;
        let pool = &self.shared.segments;
        // From `LAZY_MIN_BYTES` the protocol agrees on the inputs, and then
        // every rank reduces its share of the chunks
        // ([`crate::runtime::lazy`]), reading the input where it is, lent
        // for this call ([`crate::runtime::lent`]): the loan's drop, on
        // every way out of the call, revokes it (copying the input first,
        // unless this rank completed the reduction).
        // FTCO reduces values as they travel, whatever their size.
        // The output is lent for the whole call too, if it has the
        // input's length: whoever computes a chunk writes it there, also
        // before this rank's thread gets its turn to reduce (where ranks
        // share cores, most get theirs after every chunk is computed, and
        // copied each chunk out of shared memory themselves).
        let lazy = self.plans.ftco_reduce.is_none();
        let (mine, out) = (send.items(), recv.items_mut());
        let size = std::mem::size_of::<S::Item>();
        let at_entry =
            lazy && std::mem::size_of_val(mine) >= LAZY_MIN_BYTES && out.len() == mine.len();
        let entry_output = at_entry
            .then(|| LendingOutput::new(bytemuck::cast_slice_mut(out), chunk_bytes(size), pool));
        let output = entry_output.as_ref().map(LendingOutput::lent);
        let (mut lending, input) = self.reduction_input(mine, lazy, output);
        let combine = data_op(&op, pool);
        let (id, value, started) = self.allreduce(Collective::Allreduce, input, &combine)?;
        let by = Reducer {
            rank: self.rank(),
            mates: &self.shared.core_mates[self.rank() as usize],
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
        self.driver.record_latency(started);
        result
    }

    /// Returns once every live rank has entered the barrier (an allreduce of
    /// nothing, with its fault tolerance: up to f ranks may fail in it).
    ///
    /// Errors: this rank failed or hung, ranks disagree on the operation,
    /// more than f failures, or the team's timeout.
    pub fn barrier(&mut self) -> Result<(), Error> {
        let _span = trace::Span::enter(self.rank(), TraceCall::Barrier, self.driver.next_op());
        let (_, _, started) = self.allreduce(Collective::Barrier, Data::EMPTY, &never_combines)?;
        self.driver.record_latency(started);
        Ok(())
    }

    /// An FTCO reduce to `root` ([`crate::runtime::ReduceAlgorithm::Ftco`];
    /// [`drive_ftco_reduction`]), or an allreduce or barrier rooted at
    /// [`FTCO_ALLREDUCE_ROOT`]. Returns, besides the output, when the call
    /// started (with op records on), as [`Comm::allreduce`] does.
    fn ftco_reduction(
        &mut self,
        plan: &'t FtcoPlan,
        root: Rank,
        kind: FtcoCollective,
        input: Data,
        combine: &(dyn Fn(&mut Data, &Data) + Sync),
    ) -> Result<(OpId, FtcoOutput<Data>, Option<Tick>), Error> {
        let id = self.begin_op()?;
        let started = self.driver.call_started();
        let counters = &mut TeamCounters(self.shared);
        let driver = &mut self.driver;
        let output = drive_ftco_reduction(
            driver, plan, root, id, started, kind, input, combine, counters,
        )?;
        Ok((id, output, started))
    }

    /// The protocol part of an allreduce or barrier: its operation, the
    /// value delivered, and when the call started (with op records on), for
    /// the caller to record its latency once the whole call is done.
    #[inline]
    fn allreduce(
        &mut self,
        kind: Collective,
        input: Data,
        combine: &(dyn Fn(&mut Data, &Data) + Sync),
    ) -> Result<(OpId, Data, Option<Tick>), Error> {
        if let Some(plan) = &self.plans.ftco_reduce {
            let (root, kind) = (FTCO_ALLREDUCE_ROOT, allreduce_kind(kind));
            let (id, output, started) = self.ftco_reduction(plan, root, kind, input, combine)?;
            return Ok((id, allreduce_result(output), started));
        }
        let id = self.begin_op()?;
        let started = self.driver.call_started();
        let (plans, me) = (self.plans, self.rank());
        // Each core type driven as itself, not as an `AllreduceCore`: that
        // enum has the rooted core's size (832 bytes), and its moves were a
        // memcpy of that much in every call, also for a pair, whose whole
        // call is a few hundred nanoseconds (callgrind: 2196 -> 1882
        // instructions per rank and call, docs/benchmarks.md).
        let output = if plans.allreduce.is_pair() {
            let mut core = PairAllreduce::new(me, id, kind, input, combine);
            // A pair exchange is over once delivered: nothing to keep.
            self.driver.drive(id, started, &mut core)?
        } else {
            let lists = std::mem::take(&mut self.reduce_lists);
            let mut core = Allreduce::new_in(&plans.allreduce, me, id, kind, input, combine, lists)
                .map_err(|e| self.abandon(id, e))?;
            let output = self.driver.drive(id, started, &mut core)?;
            if let Some(lists) = core.take_reduce_lists() {
                self.reduce_lists = lists;
            }
            if let AllreduceOutput::Value { .. } = output {
                // A rooted core may have to join a later round. Kept, it
                // gets a function of its own: the one lent by this call
                // ends with it (and a decided core never combines).
                self.driver.keep(core.with_op(never_combines as Absorb));
            }
            output
        };
        let value = match output {
            AllreduceOutput::Value { value, .. } => value,
            AllreduceOutput::TooManyFailures { .. } => return Err(self.too_many_failures(id)),
        };
        Ok((id, value, started))
    }

    /// A call that ends before its core is driven still returns: peers
    /// must not take this rank for hung inside it.
    fn abandon(&mut self, op: OpId, e: Error) -> Error {
        self.driver.returned(op);
        e
    }

    fn too_many_failures(&self, op: OpId) -> Error {
        Error::TooManyFailures {
            op,
            f: self.shared.plans.reduce.f(),
            failed: self.failed_ranks(),
        }
    }

    /// A timeout while the root is known failed is the root's failure.
    fn root_failed(&self, e: Error, op: OpId, root: Rank) -> Error {
        root_failed(&self.driver, e, op, root)
    }

    fn check_root(&self, root: Rank) -> Result<(), Error> {
        let procs = self.size();
        if root >= procs {
            return Err(Error::RankOutOfRange { rank: root, procs });
        }
        Ok(())
    }

    /// Makes progress outside any collective ([`Collectives::progress`]):
    /// serves the cores this rank kept from operations it returned from,
    /// never waits. Call it while waiting outside the library, e.g. at an
    /// application's own barrier between FTCO calls (docs/algorithms.md,
    /// *A rank must keep calling*). Errors: this rank failed or hung.
    pub fn progress(&mut self) -> Result<(), Error> {
        self.driver.progress()
    }

    /// A reduction's input as a value: from [`LAZY_MIN_BYTES`] (if `lazy`
    /// may apply) this rank's buffer, lent for the call ([`Lending`]; the
    /// loan's drop, on every way out of the call, copies it out first
    /// unless this rank completed the reduction), in a lazy sum of one
    /// ([`crate::runtime::lazy`]); otherwise a copy (inline, or a segment).
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
        let pool = &self.shared.segments;
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
        let (me, mine, pool) = (self.rank(), send.items().len(), &self.shared.segments);
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

    /// Flow control of reduces ([`REDUCES_AHEAD_BYTES`]): waits, serving,
    /// while `root` is alive, has not returned from the operation `ahead`
    /// operations before the next one, and shows signs of life. A root
    /// whose heartbeat stands still for a failure timeout (hung, or busy
    /// outside the library) is not declared anything: this rank stops
    /// pacing to it until it returns from another operation, so a hung
    /// root costs one failure timeout, not one per call.
    fn pace_reduce(&mut self, root: Rank, ahead: OpId) {
        if root == self.rank() {
            return;
        }
        let next = self.driver.next_op();
        let t = self.driver.members().to_transport(root);
        // A root's `returned` only grows: a value read before is a bound
        // that spares reading its line (which it writes every call) again
        // until this rank is `ahead` operations past it.
        if let Some((r, returned)) = self.root_returned {
            if r == t && returned.saturating_add(ahead) > next {
                return;
            }
        }
        let behind = |d: &Driver<'t, MailboxTransport<'t>>| {
            let transport = d.transport();
            let view = transport.peer(t).filter(|_| !transport.is_failed(t))?;
            (view.returned.saturating_add(ahead) <= next).then_some(view)
        };
        let transport = self.driver.transport();
        let Some(view) = transport.peer(t) else {
            return;
        };
        self.root_returned = Some((t, view.returned));
        if transport.is_failed(t) || view.returned.saturating_add(ahead) > next {
            return;
        }
        if self.stalled_root == Some((t, view.returned)) {
            return;
        }
        let timeout = self.driver.config().failure_timeout;
        let mut heard = (view.beat, self.driver.transport().now());
        let mut stalled = None;
        self.driver.hold_back(|d| {
            let Some(view) = behind(d) else {
                return false;
            };
            let now = d.transport().now();
            if view.beat != heard.0 {
                heard = (view.beat, now);
            } else if now.saturating_sub(heard.1) >= timeout {
                stalled = Some((t, view.returned));
                return false;
            }
            true
        });
        self.stalled_root = stalled;
    }

    /// Numbers the next operation and applies this rank's planned fault. A
    /// rank dead at an operation fails before it enters it (its peers can
    /// tell it never took part); a hung one hangs inside it.
    fn begin_op(&mut self) -> Result<OpId, Error> {
        self.driver.check_alive()?;
        let fault = self
            .shared
            .faults()
            .lookup(self.driver.transport().rank(), self.driver.next_op());
        if let Some(Fault::Dead | Fault::DieAfterSends(0)) = fault {
            self.driver.die();
            return Err(Error::Failed(self.rank()));
        }
        let op = self.driver.enter()?;
        match fault {
            Some(Fault::Hang) => {
                self.hang();
                Err(Error::Hung(self.rank()))
            }
            Some(Fault::DieAfterSends(n)) => {
                self.driver.die_after_sends(n);
                Ok(op)
            }
            Some(Fault::Stall(pause)) => {
                std::thread::sleep(pause);
                Ok(op)
            }
            _ => Ok(op),
        }
    }

    /// Silent until the rest of the team is done: nobody is told. What
    /// arrives is taken and dropped.
    fn hang(&mut self) {
        self.driver.hang();
        self.driver.transport().publish_served_epoch(u64::MAX);
        let shared = self.shared;
        shared.finished.fetch_add(1, crate::sync::Ordering::AcqRel);
        while !shared.all_finished() {
            self.driver.transport_mut().nap(Duration::from_millis(2));
            self.driver.drain_and_drop();
        }
    }

    /// After the closure: serve late messages until the team is quiet.
    pub(crate) fn finish(&mut self) {
        self.driver.finish();
    }

    pub(crate) fn hung(&self) -> bool {
        self.driver.state() == RankState::Hung
    }

    pub(crate) fn into_records(self) -> Vec<OpRecord> {
        self.driver.into_records()
    }
}

impl Collectives for Comm<'_> {
    fn rank(&self) -> Rank {
        Comm::rank(self)
    }

    fn size(&self) -> u32 {
        Comm::size(self)
    }

    fn broadcast_into<B: BufferMut + ?Sized>(
        &mut self,
        root: Rank,
        buf: &mut B,
    ) -> Result<(), Error> {
        Comm::broadcast_into(self, root, buf)
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
        Comm::reduce_into(self, root, send, recv, op)
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
        Comm::all_reduce_into(self, send, recv, op)
    }

    fn barrier(&mut self) -> Result<(), Error> {
        Comm::barrier(self)
    }

    fn fault_budget(&self) -> u32 {
        Comm::fault_budget(self)
    }

    fn progress(&mut self) -> Result<(), Error> {
        Comm::progress(self)
    }

    fn failed_ranks(&self) -> Vec<Rank> {
        Comm::failed_ranks(self)
    }

    fn agree_failed(&mut self) -> Result<Vec<Rank>, Error> {
        Comm::agree_failed(self)
    }

    fn shrink(&mut self) -> Result<Vec<Rank>, Error> {
        Comm::shrink(self)
    }
}

/// The thread runtime's [`BcastObserver`]: a broadcast's g-node count,
/// FTCO's timeouts, false suspicions and answer delays, into the team's
/// counters for its report.
struct TeamCounters<'a, 't>(&'a Shared<'t>);

impl<'t> BcastObserver<'t, MailboxTransport<'t>> for TeamCounters<'_, 't> {
    /// Counts a gossip broadcast in which this rank was a g-node
    /// ([`crate::runtime::TeamReport::gossip_colored`]).
    fn gossip_ended(&mut self, driver: &Driver<'t, MailboxTransport<'t>>, g_node: bool) {
        if g_node {
            // The team's numbering, which a shrink does not change.
            let me = driver.transport().rank();
            self.0.counters[me as usize]
                .g_node_ops
                .fetch_add(1, crate::sync::Ordering::Relaxed);
        }
    }

    /// Counts an FTCO call's timeouts and, with operation records on,
    /// keeps its answer delays
    /// ([`crate::runtime::TeamReport::answer_delays_ns`]); and its false suspicions
    /// ([`crate::runtime::TeamReport::false_suspicions`]): a suspected rank
    /// that the fault schedule does not silence from the operation's start
    /// and that the liveness registry had not marked failed by the time of
    /// the suspicion (the engine's time of the core's tick).
    fn ftco_ended<C: Protocol + Timeouts>(
        &mut self,
        driver: &Driver<'t, MailboxTransport<'t>>,
        op: OpId,
        clock: &OpClock<C>,
    ) {
        let (core, shared) = (clock.core(), self.0);
        if shared.config.op_records {
            let mut delays = shared.answer_delays.lock();
            let delays = delays.as_mut().unwrap_or_else(|e| e.get_mut());
            delays.extend_from_slice(clock.answer_delays());
        }
        if core.timeouts() == 0 {
            return;
        }
        let members = driver.members();
        let alive = |&(rank, at): &(Rank, Tick)| {
            let rank = members.to_transport(rank);
            let failed_by = shared.liveness.failed_at(rank);
            !shared.faults().silent_from_start(rank, op)
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

/// The reduction of elements of `T` as a function on values of any length
/// (new segments come from `pool`).
pub(crate) fn data_op<'a, T: bytemuck::Pod>(
    op: &'a impl Operation<T>,
    pool: &'a crate::runtime::segment::SegmentPool,
) -> impl Fn(&mut Data, &Data) + Sync + 'a {
    move |acc: &mut Data, other: &Data| Data::combine(acc, other, op, pool)
}
