//! A rank's handle inside [`crate::runtime::Team::run`]: the public API of
//! the collectives on threads. Each call builds its protocol core, applies
//! the rank's emulated fault, and hands the core to the
//! [driver](crate::driver), which runs it over the mailboxes.

use std::time::Duration;

use crate::collectives::Collectives;
use crate::driver::{Driver, DriverConfig, OpRecord, RankState, Transport};
use crate::error::Error;
use crate::op::Operation;
use crate::protocol::allreduce::{AllreduceCore, AllreduceOutput};
use crate::protocol::bcast::Bcast;
use crate::protocol::reduce::{Contribution, Reduce, ReduceOutput};
use crate::runtime::faults::Fault;
use crate::runtime::team::Shared;
use crate::runtime::transport::MailboxTransport;
use crate::types::{Collective, OpId, Rank};
use crate::wire::{self, Wire, Words};

/// The reduction function of a core kept after its call: a decided
/// allreduce never combines again, so it is never called.
type Absorb = fn(&mut Words, &Words);

fn never_combines(_: &mut Words, _: &Words) {}

/// A rank's handle: its number, the team size, and the collectives (also
/// through the engine-neutral [`Collectives`] trait).
pub struct Comm<'t> {
    shared: &'t Shared<'t>,
    rank: Rank,
    driver: Driver<'t, MailboxTransport<'t>>,
}

impl<'t> Comm<'t> {
    pub(crate) fn new(shared: &'t Shared<'t>, transport: MailboxTransport<'t>) -> Self {
        let driver = Driver::new(
            transport,
            DriverConfig {
                op_timeout: crate::driver::nanos(shared.op_timeout()),
                failure_timeout: crate::driver::nanos(shared.failure_timeout()),
                op_records: shared.config.op_records,
                ..DriverConfig::default()
            },
        );
        Comm {
            shared,
            rank: driver.transport().rank(),
            driver,
        }
    }

    /// This rank.
    pub fn rank(&self) -> Rank {
        self.rank
    }

    /// The team size.
    pub fn size(&self) -> u32 {
        self.shared.ranks()
    }

    /// True while this rank is alive (not killed, not hung, not declared
    /// failed by a timeout).
    pub fn is_alive(&self) -> bool {
        self.driver.is_alive()
    }

    /// Ranks known to have failed so far.
    pub fn failed_ranks(&self) -> Vec<Rank> {
        self.shared.liveness.failed()
    }

    /// Broadcasts `value` from `root` (corrected-tree broadcast with the
    /// team's tree and correction): on return, every rank's `value` holds the
    /// root's. Survives any number of ranks dead before the call (with
    /// checked or delayed correction), as long as the root lives.
    ///
    /// Errors: `root` out of range, a value too large for a message, this
    /// rank failed or hung, the ranks disagree on the operation
    /// ([`Error::Mismatch`]), or no value within the team's timeout
    /// ([`Error::RootFailed`] if the root is known failed, [`Error::Timeout`]
    /// otherwise).
    pub fn broadcast_into<T: Wire>(&mut self, root: Rank, value: &mut T) -> Result<(), Error> {
        self.check_root(root)?;
        let words = if root == self.rank {
            Some(wire::encode(value)?)
        } else {
            None
        };
        let op = self.begin_op()?;
        let started = self.driver.call_started();
        let shared = self.shared;
        let mut core = Bcast::new(&shared.plans.bcast, root, self.rank, op, words)
            .map_err(|e| self.abandon(op, e))?;
        let got = match self.driver.drive(op, started, &mut core) {
            Ok(got) => got,
            Err(e) => return Err(self.root_failed(e, op, root)),
        };
        self.driver.keep(core);
        *value = T::decode(&got);
        self.driver.record_latency(started);
        Ok(())
    }

    /// Reduces every rank's `send` with `op` to `root` (up-correction
    /// reduce with the team's fault budget f): on return at the root,
    /// `recv` holds the reduction of the inputs of every live rank, and of
    /// each rank that failed during the call either its input or nothing
    /// (never part of it). `recv` is untouched elsewhere. `op` must be
    /// associative and commutative; if it panics, this rank fails.
    ///
    /// Errors: `root` out of range, a value too large for a message, an
    /// operation that does not apply to `T`, this rank failed or hung,
    /// ranks disagree on the operation ([`Error::Mismatch`]), more than f
    /// ranks failed ([`Error::TooManyFailures`], at the root), or no result
    /// within the team's timeout ([`Error::Timeout`]; [`Error::RootFailed`]
    /// if the root failed: then nobody gets a result, as the paper says).
    pub fn reduce_into<T: Wire>(
        &mut self,
        root: Rank,
        send: &T,
        recv: &mut T,
        op: impl Operation<T>,
    ) -> Result<(), Error> {
        self.check_root(root)?;
        op.check()?;
        let input = Contribution::input(wire::encode(send)?);
        let combine = words_op(&op);
        let id = self.begin_op()?;
        let started = self.driver.call_started();
        let shared = self.shared;
        let mut core = Reduce::new(
            &shared.plans.reduce,
            root,
            self.rank,
            id,
            Collective::Reduce,
            input,
            &combine,
        )
        .map_err(|e| self.abandon(id, e))?;
        match self.driver.drive(id, started, &mut core) {
            Ok(ReduceOutput::Sent) => {}
            Ok(ReduceOutput::Root { value, .. }) => *recv = T::decode(&value),
            Ok(ReduceOutput::TooManyFailures { .. }) => return Err(self.too_many_failures(id)),
            Err(e) => return Err(self.root_failed(e, id, root)),
        }
        // A reduce core is finished once its call returns: nothing to keep.
        self.driver.record_latency(started);
        Ok(())
    }

    /// Reduces every rank's `send` with `op` and gives the result to every
    /// rank in `recv` (up-correction reduce to a root, corrected broadcast
    /// from it, retried on the next root if that root fails). Every live rank
    /// gets the same value, holding every live rank's input and each failed
    /// rank's either everywhere or nowhere, as long as at most f ranks fail.
    /// `op` must be associative and commutative; if it panics, this rank fails.
    ///
    /// Errors: a value too large for a message, an operation that does not
    /// apply to `T`, this rank failed or hung, ranks disagree on the
    /// operation ([`Error::Mismatch`]), more than f ranks failed
    /// ([`Error::TooManyFailures`]), or no result within the team's timeout.
    pub fn all_reduce_into<T: Wire>(
        &mut self,
        send: &T,
        recv: &mut T,
        op: impl Operation<T>,
    ) -> Result<(), Error> {
        op.check()?;
        let input = wire::encode(send)?;
        let combine = words_op(&op);
        let value = self.allreduce(Collective::Allreduce, input, &combine)?;
        *recv = T::decode(&value);
        Ok(())
    }

    /// Returns once every live rank has entered the barrier (an allreduce of
    /// nothing, with its fault tolerance: up to f ranks may fail in it).
    ///
    /// Errors: this rank failed or hung, ranks disagree on the operation,
    /// more than f failures, or the team's timeout.
    pub fn barrier(&mut self) -> Result<(), Error> {
        self.allreduce(Collective::Barrier, [0; wire::WORDS], &never_combines)
            .map(|_| ())
    }

    fn allreduce(
        &mut self,
        kind: Collective,
        input: Words,
        combine: &dyn Fn(&mut Words, &Words),
    ) -> Result<Words, Error> {
        let id = self.begin_op()?;
        let started = self.driver.call_started();
        let shared = self.shared;
        let mut core =
            AllreduceCore::new(&shared.plans.allreduce, self.rank, id, kind, input, combine)
                .map_err(|e| self.abandon(id, e))?;
        let value = match self.driver.drive(id, started, &mut core)? {
            AllreduceOutput::Value { value, .. } => value,
            AllreduceOutput::TooManyFailures { .. } => return Err(self.too_many_failures(id)),
        };
        // A pair exchange is over once delivered; a rooted core may have to
        // join a later round. Kept, it gets a function of its own: the one
        // lent by this call ends with it (and a decided core never combines).
        if let AllreduceCore::Rooted(core) = core {
            self.driver.keep(core.with_op(never_combines as Absorb));
        }
        self.driver.record_latency(started);
        Ok(value)
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
        match e {
            Error::Timeout { .. } if self.shared.liveness.is_failed(root) => {
                Error::RootFailed { op, root }
            }
            e => e,
        }
    }

    fn check_root(&self, root: Rank) -> Result<(), Error> {
        let procs = self.size();
        if root >= procs {
            return Err(Error::RankOutOfRange { rank: root, procs });
        }
        Ok(())
    }

    /// Numbers the next operation and applies this rank's planned fault. A
    /// rank dead at an operation fails before it enters it (its peers can
    /// tell it never took part); a hung one hangs inside it.
    fn begin_op(&mut self) -> Result<OpId, Error> {
        self.driver.check_alive()?;
        let fault = self
            .shared
            .faults()
            .lookup(self.rank, self.driver.next_op());
        if let Some(Fault::Dead | Fault::DieAfterSends(0)) = fault {
            self.driver.die();
            return Err(Error::Failed(self.rank));
        }
        let op = self.driver.enter()?;
        match fault {
            Some(Fault::Hang) => {
                self.hang();
                Err(Error::Hung(self.rank))
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

    fn broadcast_into<T: Wire>(&mut self, root: Rank, value: &mut T) -> Result<(), Error> {
        Comm::broadcast_into(self, root, value)
    }

    fn reduce_into<T: Wire>(
        &mut self,
        root: Rank,
        send: &T,
        recv: &mut T,
        op: impl Operation<T>,
    ) -> Result<(), Error> {
        Comm::reduce_into(self, root, send, recv, op)
    }

    fn all_reduce_into<T: Wire>(
        &mut self,
        send: &T,
        recv: &mut T,
        op: impl Operation<T>,
    ) -> Result<(), Error> {
        Comm::all_reduce_into(self, send, recv, op)
    }

    fn barrier(&mut self) -> Result<(), Error> {
        Comm::barrier(self)
    }
}

/// The reduction of `T` as a function on message words.
fn words_op<T: Wire>(op: &impl Operation<T>) -> impl Fn(&mut Words, &Words) + '_ {
    move |acc: &mut Words, other: &Words| {
        let r = op.apply(&T::decode(acc), &T::decode(other));
        r.encode(acc);
    }
}
