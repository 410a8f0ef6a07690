//! A rank's handle inside [`crate::runtime::Team::run`]: the collectives on
//! threads. Each call goes through the engine-neutral call layer
//! ([`crate::call`]) over the mailboxes; what is this engine's own is the
//! lending of large buffers between threads for the call's duration
//! ([`crate::value::lent`], [`crate::value::lazy`]).

use std::sync::Arc;
use std::time::Duration;

use crate::buffer::Element;

use crate::call::{reduces_ahead, Caller, Communicator, Control, Delivered, Reduction};
use crate::contributors::Contributors;
use crate::driver::{OpRecord, RankState, Transport};
use crate::error::Error;
use crate::op::Operation;
use crate::runtime::engine::ThreadEngine;
use crate::runtime::shared::Shared;
use crate::runtime::transport::MailboxTransport;
use crate::trace::{self, Call as TraceCall};
use crate::types::{Collective, Rank};
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

/// A rank's handle inside [`crate::runtime::Team::run`]: the collectives
/// of the [`Collectives`](crate::Collectives) trait (in the prelude), on
/// the team's threads. A value of up to 55 bytes travels in the messages,
/// a larger one in a segment of shared memory the messages refer to, and
/// from 256 KiB in the caller's own buffer, lent for the call. After an
/// error of a large allreduce other than those of its arguments, `recv`
/// may hold some chunks of the team's result (it is lent from the call's
/// entry, docs/architecture.md).
pub struct Comm<'t> {
    pub(super) caller: Caller<'t, ThreadEngine<'t>>,
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
    pub(crate) fn last_op(&self) -> crate::types::OpId {
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

    /// Leaves out `failed` (this communicator's ranks, a list every live
    /// rank holds alike) and renumbers the others, without an agreement of
    /// its own: the MPI hierarchy's shrink, whose agreement spans both
    /// levels.
    #[cfg(feature = "mpi")]
    pub(crate) fn renumber(&mut self, failed: &[Rank]) -> Result<(), Error> {
        self.caller.renumber(failed)
    }

    /// The team's number of `rank` of this communicator (a shrink
    /// renumbers the communicator, not the team).
    #[cfg(feature = "mpi")]
    pub(crate) fn team_rank(&self, rank: Rank) -> Rank {
        self.caller.driver.members().to_transport(rank)
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
    pub(super) fn end_loan(&mut self, lending: &mut Lending<'_>, len: usize) {
        let receivers = self.caller.size() as usize - 1;
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
    pub(super) fn ftco_reduces(&self) -> bool {
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
            let procs = self.caller.size() as usize;
            let input = Data::lazy(self.caller.rank(), procs, lending.lent(), output, pool);
            (Some(lending), input)
        } else {
            (None, Data::encode(items, pool))
        }
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

    /// The operations this rank entered (the number its next would get).
    pub(crate) fn entered(&self) -> crate::types::OpId {
        self.caller.driver.next_op()
    }

    pub(crate) fn hung(&self) -> bool {
        self.caller.driver.state() == RankState::Hung
    }

    pub(crate) fn into_records(self) -> Vec<OpRecord> {
        self.caller.driver.into_records()
    }
}

/// The thread engine's typed buffers: up to 55 bytes travel in the
/// messages, more in a shared segment the messages refer to, and from
/// [`LENT_BCAST_MIN_BYTES`] (broadcast) or [`LAZY_MIN_BYTES`] (reduce,
/// allreduce) in the caller's own buffer, lent for the call.
impl<'t> Communicator for Comm<'t> {
    fn control(&self) -> &dyn Control {
        &self.caller
    }

    fn control_mut(&mut self) -> &mut dyn Control {
        &mut self.caller
    }

    fn broadcast_items<T: Element>(&mut self, root: Rank, buf: &mut [T]) -> Result<(), Error> {
        let (me, next) = (self.caller.rank(), self.caller.driver.next_op());
        let _span = trace::Span::enter(me, TraceCall::Broadcast, next);
        let pool = &self.caller.engine.shared.segments;
        // From `LENT_BCAST_MIN_BYTES` the root lends its buffer for the
        // call and each receiver copies the value from there, instead of
        // the root copying it into a segment first ([`crate::value::lent`]).
        let bytes: &[u8] = bytemuck::cast_slice(buf);
        let mut lending =
            (root == me && bytes.len() >= LENT_BCAST_MIN_BYTES).then(|| Lending::new(bytes, pool));
        let value = (root == me).then(|| match &lending {
            Some(lending) => Data::lent(lending.lent()),
            None => Data::encode(buf, pool),
        });
        let got = self.caller.broadcast(root, value)?;
        if let Some(lending) = &mut lending {
            self.end_loan(lending, bytes.len());
        }
        // The loan ends here, on the way out (or, unsettled, copies first).
        drop(lending);
        self.caller.end_broadcast(root, got, buf)
    }

    /// Ranks other than the root return once they sent, and wait (serving)
    /// before they start a reduce while the root has not returned from the
    /// operation [`reduces_ahead`] before this one. From [`LAZY_MIN_BYTES`]
    /// the root reduces the inputs by chunks once the protocol agreed on
    /// them (`docs/algorithms.md`).
    fn reduce_items<T, O>(
        &mut self,
        root: Rank,
        call: Reduction<'_, T, O>,
    ) -> Result<Option<Contributors>, Error>
    where
        T: Element,
        O: Operation<T>,
    {
        let asked = call.contributors;
        let Reduction { send, recv, op, .. } = call;
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
            self.caller
                .pace_reduce(root, reduces_ahead(std::mem::size_of_val(send)));
        }
        let (mut lending, input) = self.reduction_input(send, lazy, None);
        let got = self
            .caller
            .reduce(root, Collective::Reduce, input, &combine)?;
        let contributors = asked.then(|| self.caller.contributors(&got)).flatten();
        let Delivered {
            op: id,
            value,
            started,
            ..
        } = got;
        let result = match value {
            Some(value) => {
                // The root reduces alone: it computes every chunk, in any order.
                let alone = Reducer::alone(self.caller.rank());
                let got = value.reduce_into(alone, recv, id, send.len(), &op, pool);
                Self::settle_input(&value, &mut lending, &got);
                got
            }
            None => Ok(()),
        };
        // The whole call, the root's reduction by chunks included.
        self.caller.record_latency(started);
        result.map(|()| contributors)
    }

    /// After an error other than those of the arguments, `recv` of a
    /// large value may hold some chunks of the team's result (it is lent
    /// from the call's entry, docs/architecture.md).
    fn all_reduce_items<T, O>(
        &mut self,
        call: Reduction<'_, T, O>,
    ) -> Result<Option<Contributors>, Error>
    where
        T: Element,
        O: Operation<T>,
    {
        let asked = call.contributors;
        let Reduction {
            send: mine,
            recv: out,
            op,
            ..
        } = call;
        let (me, next) = (self.caller.rank(), self.caller.driver.next_op());
        let _span = trace::Span::enter(me, TraceCall::Allreduce, next);
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
        let size = std::mem::size_of::<T>();
        let at_entry =
            lazy && std::mem::size_of_val(mine) >= LAZY_MIN_BYTES && out.len() == mine.len();
        let entry_output = at_entry
            .then(|| LendingOutput::new(bytemuck::cast_slice_mut(out), chunk_bytes(size), pool));
        let output = entry_output.as_ref().map(LendingOutput::lent);
        let (mut lending, input) = self.reduction_input(mine, lazy, output);
        let combine = data_op(&op, pool);
        let kind = Collective::Allreduce;
        let got = self.caller.allreduce(kind, input, &combine)?;
        let contributors = asked.then(|| self.caller.contributors(&got)).flatten();
        let Delivered {
            op: id,
            value,
            started,
            ..
        } = got;
        let by = Reducer {
            rank: me,
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
        result.map(|()| contributors)
    }

    /// From 256 KiB of blocks in all, each contributor's block copied
    /// once from where its rank lent it (`runtime/gather.rs`).
    fn all_gather_items<T: Element>(
        &mut self,
        send: &[T],
        recv: &mut [T],
    ) -> Result<Contributors, Error> {
        let whole = std::mem::size_of_val(send).saturating_mul(self.caller.size() as usize);
        if self.gathers_in_place(whole) {
            return self.gather_in_place(send, recv);
        }
        crate::gather::all_gather(self, send, recv)
    }

    /// From 256 KiB of input, this rank's block reduced from where every
    /// contributor lent its input (`runtime/gather.rs`).
    fn reduce_scatter_items<T, O>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        op: O,
    ) -> Result<Contributors, Error>
    where
        T: Element,
        O: Operation<T>,
    {
        let size = self.caller.size() as usize;
        if send.len() % size == 0 && self.gathers_in_place(std::mem::size_of_val(send)) {
            return self.reduce_scatter_in_place(send, recv, op);
        }
        crate::gather::reduce_scatter_block(self, send, recv, op)
    }

    fn knows_contributors(&self) -> Result<(), Error> {
        self.caller.knows_contributors()
    }
}

#[cfg(test)]
mod tests {
    /// [`super::Comm`]'s doc names one threshold for lending: it holds for
    /// the broadcast's and the reductions' alike.
    #[test]
    fn buffers_are_lent_from_the_documented_size() {
        assert_eq!(super::LENT_BCAST_MIN_BYTES, 256 * 1024);
        assert_eq!(super::LAZY_MIN_BYTES, 256 * 1024);
    }
}
