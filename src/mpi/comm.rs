//! [`MpiComm`]: the collectives between MPI processes, through the same
//! driver and the same protocol cores as the thread runtime's
//! [`Comm`](crate::runtime::Comm).

use std::marker::PhantomData;
use std::sync::Arc;

use mpi::topology::SimpleCommunicator;

use crate::buffer::{Buffer, BufferMut};
use crate::collectives::Collectives;
use crate::driver::{Driver, DriverConfig, Transport};
use crate::error::{ConfigError, Error};
use crate::mpi::transport::MpiTransport;
use crate::op::Operation;
use crate::protocol::allreduce::{Allreduce, AllreduceOutput};
use crate::protocol::bcast::Bcast;
use crate::protocol::pair::PairAllreduce;
use crate::protocol::reduce::{Contribution, Reduce, ReduceOutput};
use crate::runtime::data::Data;
use crate::runtime::segment::SegmentPool;
use crate::runtime::{data_op, BroadcastAlgorithm, Fault, FaultSchedule, Plans, TeamBuilder};
use crate::types::{Collective, OpId, Rank};

/// One process's handle on a team of MPI processes, one rank each: the
/// collectives of the [`Collectives`] trait, with the fault tolerance of
/// the thread runtime's (Corrected Trees Section 3 for the broadcast,
/// reduce paper Sections 4-5 for reduce and allreduce), run by the same
/// cores through the same driver over an MPI transport.
///
/// What differs from threads, because this Open MPI reports no failure
/// (docs/mpi.md): a corrected broadcast needs no failure notice and
/// survives processes that die before or during it (a SIGKILLed one
/// included); reduce, allreduce and barrier wait for a contribution that
/// never comes from a process that died unannounced, until the operation
/// timeout ([`Error::Timeout`]). Failures emulated through the builder's
/// [`FaultSchedule`] are announced, as a detector would, and reduce and
/// allreduce survive those within the fault budget.
///
/// Not `Send`: MPI is initialized for one thread; use it on that thread.
pub struct MpiComm {
    driver: Driver<'static, MpiTransport>,
    /// Leaked: kept cores borrow it for as long as the driver keeps them,
    /// and a process makes one communicator or a few (a few KiB each).
    plans: &'static Plans,
    faults: FaultSchedule,
    /// Segments of values too large to travel inline (the transport's too).
    segments: Arc<SegmentPool>,
    _one_thread: PhantomData<*const ()>,
}

impl MpiComm {
    /// The team of every process of `world`, one rank each (rank and size
    /// are `world`'s), with `config`'s tree, correction, fault budget,
    /// timeouts and emulated faults (its rank count, placement and
    /// broadcast algorithm do not apply: the broadcast is a corrected
    /// tree). Collective: every process of `world` calls it.
    ///
    /// Errors: a configuration that does not fit `world`'s size, or a
    /// broadcast algorithm other than the corrected tree (not carried
    /// between processes yet).
    pub fn new(world: &SimpleCommunicator, config: &TeamBuilder) -> Result<MpiComm, ConfigError> {
        if config.broadcast_algorithm() != BroadcastAlgorithm::Tree {
            return Err(ConfigError::Unsupported {
                what: "a broadcast algorithm other than the corrected tree over MPI",
                why: "only the corrected tree's messages are carried between processes yet",
            });
        }
        let (op_timeout, failure_timeout) = config.timeouts();
        let segments = Arc::new(SegmentPool::new());
        let transport = MpiTransport::new(world, Arc::clone(&segments), failure_timeout);
        let procs = transport.procs();
        for r in config.fault_schedule().ranks() {
            if r >= procs {
                return Err(ConfigError::FaultRank { rank: r, procs });
            }
        }
        let plans = Box::leak(Box::new(Plans::build(
            config,
            procs,
            config.budget_for(procs),
        )?));
        let driver = Driver::new(
            transport,
            DriverConfig {
                op_timeout: crate::driver::nanos(op_timeout),
                failure_timeout: crate::driver::nanos(failure_timeout),
                ..DriverConfig::default()
            },
        );
        Ok(MpiComm {
            driver,
            plans,
            faults: config.fault_schedule().clone(),
            segments,
            _one_thread: PhantomData,
        })
    }

    /// This process's rank.
    pub fn rank(&self) -> Rank {
        self.driver.rank()
    }

    /// The number of processes.
    pub fn size(&self) -> u32 {
        self.driver.size()
    }

    /// Frames received that could not be read, and messages that could not
    /// be framed: both 0 unless something is wrong.
    pub fn bad_frames(&self) -> (u64, u64) {
        self.driver.transport().bad_frames()
    }

    fn allreduce(
        &mut self,
        kind: Collective,
        input: Data,
        combine: &(dyn Fn(&mut Data, &Data) + Sync),
    ) -> Result<(OpId, Data), Error> {
        let id = self.begin_op()?;
        let started = self.driver.call_started();
        let me = self.rank();
        let output = if self.plans.allreduce.is_pair() {
            let mut core = PairAllreduce::new(me, id, kind, input, combine);
            self.driver.drive(id, started, &mut core)?
        } else {
            let plans = self.plans;
            let core = Allreduce::new(&plans.allreduce, me, id, kind, input, combine);
            let mut core = core.map_err(|e| self.abandon(id, e))?;
            let output = self.driver.drive(id, started, &mut core)?;
            if let AllreduceOutput::Value { .. } = output {
                // A kept core never combines again (it is decided).
                let never: fn(&mut Data, &Data) = |_, _| {};
                self.driver.keep(core.with_op(never));
            }
            output
        };
        match output {
            AllreduceOutput::Value { value, .. } => Ok((id, value)),
            AllreduceOutput::TooManyFailures { .. } => Err(self.too_many_failures(id)),
        }
    }

    /// Numbers the next operation and applies this rank's emulated fault
    /// (as on threads: dead before it, dead after n sends, hung, stalled).
    fn begin_op(&mut self) -> Result<OpId, Error> {
        self.driver.check_alive()?;
        let me = self.driver.transport().rank();
        let fault = self.faults.lookup(me, self.driver.next_op());
        if let Some(Fault::Dead | Fault::DieAfterSends(0)) = fault {
            self.driver.die();
            return Err(Error::Failed(me));
        }
        let op = self.driver.enter()?;
        match fault {
            Some(Fault::Hang) => {
                // Silent from here on: nobody is told.
                self.driver.hang();
                Err(Error::Hung(me))
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

    /// This process leaves the team of processes for good: it is announced
    /// failed to the others, which go on without it (a hierarchy's proxy
    /// whose process can no longer follow, [`super::hier`]).
    pub(crate) fn leave_upper(&mut self) {
        self.driver.die();
    }

    fn abandon(&mut self, op: OpId, e: Error) -> Error {
        self.driver.returned(op);
        e
    }

    fn too_many_failures(&self, op: OpId) -> Error {
        Error::TooManyFailures {
            op,
            f: self.plans.reduce.f(),
            failed: self.failed_ranks(),
        }
    }

    fn root_failed(&self, e: Error, op: OpId, root: Rank) -> Error {
        match e {
            Error::Timeout { .. } if self.driver.transport().is_failed(root) => {
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
}

impl Drop for MpiComm {
    /// Serves late messages (corrections others still wait for) until every
    /// process has ended its program or the failure timeout has passed.
    fn drop(&mut self) {
        self.driver.finish();
    }
}

impl Collectives for MpiComm {
    fn rank(&self) -> Rank {
        MpiComm::rank(self)
    }

    fn size(&self) -> u32 {
        MpiComm::size(self)
    }

    /// Broadcasts `buf` from `root` (corrected tree with the configured
    /// tree and correction). Every live rank's `buf` gets the root's, also
    /// when processes died before or during the call, without any failure
    /// notice, as long as the root lives. Errors as
    /// [`crate::runtime::Comm::broadcast_into`]'s; a root that died
    /// unannounced is a [`Error::Timeout`].
    fn broadcast_into<B: BufferMut + ?Sized>(
        &mut self,
        root: Rank,
        buf: &mut B,
    ) -> Result<(), Error> {
        self.check_root(root)?;
        let me = self.rank();
        let value = (root == me).then(|| Data::encode(buf.items(), &self.segments));
        let op = self.begin_op()?;
        let started = self.driver.call_started();
        let plans = self.plans;
        let mut core =
            Bcast::new(&plans.bcast, root, me, op, value).map_err(|e| self.abandon(op, e))?;
        let got = match self.driver.drive(op, started, &mut core) {
            Ok(got) => got,
            Err(e) => return Err(self.root_failed(e, op, root)),
        };
        self.driver.keep(core);
        if root == me {
            return Ok(());
        }
        got.decode_into(buf.items_mut(), op, None)
    }

    /// Reduces every rank's `send` with `op` to `root` (up-correction
    /// reduce). Guarantees and errors as
    /// [`crate::runtime::Comm::reduce_into`]'s, for failures this process
    /// learns of (see the type's doc).
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
        self.check_root(root)?;
        op.check()?;
        let pool = Arc::clone(&self.segments);
        let input = Contribution::input(Data::encode(send.items(), &pool));
        let combine = data_op(&op, &pool);
        let id = self.begin_op()?;
        let started = self.driver.call_started();
        let me = self.rank();
        let plan = &self.plans.reduce;
        let core = Reduce::new(plan, root, me, id, Collective::Reduce, input, &combine);
        let mut core = core.map_err(|e| self.abandon(id, e))?;
        let result = match self.driver.drive(id, started, &mut core) {
            Ok(ReduceOutput::Sent) => None,
            Ok(ReduceOutput::Root { value, .. }) => Some(value),
            Ok(ReduceOutput::TooManyFailures { .. }) => return Err(self.too_many_failures(id)),
            Err(e) => return Err(self.root_failed(e, id, root)),
        };
        match result {
            Some(value) => value.decode_into(recv.items_mut(), id, Some(send.items().len())),
            None => Ok(()),
        }
    }

    /// Reduces every rank's `send` with `op` and gives every rank the
    /// result (up-correction reduce, then corrected broadcast, retried on
    /// the next root if the root fails). Guarantees and errors as
    /// [`crate::runtime::Comm::all_reduce_into`]'s, for failures this
    /// process learns of (see the type's doc).
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
        let pool = Arc::clone(&self.segments);
        let input = Data::encode(send.items(), &pool);
        let combine = data_op(&op, &pool);
        let (id, value) = self.allreduce(Collective::Allreduce, input, &combine)?;
        value.decode_into(recv.items_mut(), id, Some(send.items().len()))
    }

    /// Returns once every live rank has entered the barrier (an allreduce
    /// of nothing).
    fn barrier(&mut self) -> Result<(), Error> {
        self.allreduce(
            Collective::Barrier,
            Data::EMPTY,
            &|_: &mut Data, _: &Data| {},
        )
        .map(|_| ())
    }

    /// The fault budget f of reduce, allreduce and barrier.
    fn fault_budget(&self) -> u32 {
        self.plans.reduce.f()
    }

    /// Ranks known failed, as this process knows them now.
    fn failed_ranks(&self) -> Vec<Rank> {
        self.driver.failed_members()
    }

    /// Not over MPI: agreement needs a perfect failure detector, and this
    /// Open MPI cannot tell a dead process from a slow one (docs/mpi.md).
    fn agree_failed(&mut self) -> Result<Vec<Rank>, Error> {
        Err(no_perfect_detector("agreement on failed ranks over MPI"))
    }

    /// Not over MPI, for the reason of [`MpiComm::agree_failed`].
    fn shrink(&mut self) -> Result<Vec<Rank>, Error> {
        Err(no_perfect_detector("shrinking over MPI"))
    }
}

/// The error of `what` (agreement, shrinking), which needs a perfect failure
/// detector that no engine over this MPI has (docs/mpi.md).
pub(crate) fn no_perfect_detector(what: &'static str) -> Error {
    Error::Config(ConfigError::Unsupported {
        what,
        why: "this MPI reports no failures, so no detector is perfect",
    })
}
