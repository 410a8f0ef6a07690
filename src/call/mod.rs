//! The call layer: the per-call sequence of every collective, written once
//! for every engine. A call checks its arguments, numbers its operation and
//! applies the rank's emulated fault (`Caller::begin`), builds the core
//! the team's plans (`plans::Plans`) name, hands it to the
//! driver, maps the core's output to a value or a typed
//! error, and keeps the core if it must serve after the call. Agreement on
//! the failed ranks and the shrink that follows it live here too
//! (`Caller::agree_failed`, `Caller::shrink`).
//!
//! Engines are thin: the thread runtime's [`Comm`](crate::runtime::Comm)
//! and the MPI engine's communicators hold a `Caller` over their own
//! `Engine` (transport, value store, fault lookup, counters) and add
//! only what is theirs (lending large buffers between threads; the node's
//! shared memory between processes).
//!
//! * [`config`]: the engine-neutral configuration, [`Config`];
//! * `plans`: what a team of a given size runs, built from it;
//! * [`faults`]: emulated fail-stop faults, [`FaultSchedule`];
//! * `broadcast`, `ftco`: a broadcast's and an FTCO reduction's
//!   protocol part;
//! * `agree`: agreement on the failed ranks, and shrink;
//! * `pace`: flow control of reduces to a slower root.

mod agree;
pub(crate) mod broadcast;
pub(crate) mod communicator;
pub mod config;
pub(crate) mod engine;
pub mod faults;
pub(crate) mod ftco;
pub(crate) mod immediate;
mod pace;
pub(crate) mod plans;

pub(crate) use communicator::{
    all_reduce_contributors, contributors_lost, Communicator, Control, Reduction,
};
pub use config::{
    BroadcastAlgorithm, Config, ReduceAlgorithm, DEFAULT_FTCO_TIMEOUT, DEFAULT_PACE, DEFAULT_TREE,
    FTCO_LOGP, MAX_FTCO_TIMEOUT,
};
pub(crate) use engine::Engine;
pub use faults::{Fault, FaultSchedule};
pub use ftco::FTCO_ALLREDUCE_ROOT;
pub use pace::{reduces_ahead, REDUCES_AHEAD_BYTES, REDUCES_AHEAD_MAX};

use crate::contributors::Contributors;
use crate::driver::{Driver, DriverConfig, Transport};
use crate::error::Error;
use crate::protocol::allreduce::{Allreduce, AllreduceOutput};
use crate::protocol::ftco::{FtcoCollective, FtcoOutput, FtcoPlan};
use crate::protocol::pair::PairAllreduce;
use crate::protocol::reduce::{
    Contribution, FailureInfo, FailureScheme, Reduce, ReduceLists, ReduceOutput,
};
use crate::types::{Collective, OpId, Rank, Tick};
use crate::value::data::Data;
use plans::{Plans, ReductionPlan};

/// The reduction function of a core kept after its call: a decided
/// allreduce never combines again, so it is never called.
pub(crate) type Absorb = fn(&mut Data, &Data);

/// The inputs a reduction's value lacks, as its core reported them.
pub(crate) enum Missing {
    /// Not a reduction's value (a broadcast), or a reduce's non-root.
    Nothing,
    /// The up-correction's failure information.
    Info(FailureInfo),
    /// FTCO's list of circumvented ranks.
    Ranks(Vec<Rank>),
}

/// A reduction function that is never called (a barrier's, a kept core's).
pub(crate) fn never_combines(_: &mut Data, _: &Data) {}

/// A combining function lent for one call.
pub(crate) type Combine<'a> = &'a (dyn Fn(&mut Data, &Data) + Sync);

/// The result of a call's protocol part: its operation, what it delivered
/// here, and when the call started (with operation records on), for the
/// engine to record the latency of the whole call once it is done.
pub(crate) struct Delivered<T> {
    pub(crate) op: OpId,
    pub(crate) value: T,
    pub(crate) started: Option<Tick>,
    /// What a reduction's value lacks, as its core reported it, turned
    /// into [`Contributors`] only when a caller asks
    /// ([`Caller::contributors`]).
    pub(crate) missing: Missing,
}

impl<T> Delivered<T> {
    /// The same call, what it delivered mapped by `f`.
    fn map<U>(self, f: impl FnOnce(T) -> U) -> Delivered<U> {
        let Delivered {
            op,
            value,
            started,
            missing,
        } = self;
        Delivered {
            op,
            value: f(value),
            started,
            missing,
        }
    }
}

/// One rank's call layer over engine `E`: its driver, its engine, the plans
/// of its communicator (the team's, or a shrunk one's) and what a loop of
/// calls reuses.
pub(crate) struct Caller<'t, E: Engine<'t>> {
    pub(crate) driver: Driver<'t, E::Transport>,
    pub(crate) engine: E,
    plans: &'t Plans,
    config: &'t Config,
    /// Calls made so far: what emulated faults may be numbered by.
    calls: OpId,
    /// The reduce lists of the last reduce or allreduce core done with, for
    /// the next ([`ReduceLists`]): a loop allocates them once.
    reduce_lists: ReduceLists<Data>,
    /// Flow control of reduces ([`pace`]).
    pace: pace::Pace,
    /// The first operation of the communicator's current members (0 until
    /// a shrink or a split): an operation from it on involves them alone.
    regrouped_at: OpId,
    /// A buffer an immediate call is done with, for the next one's output
    /// (`immediate::Immediate::spare`).
    spare: Option<Box<dyn std::any::Any>>,
}

impl<'t, E: Engine<'t>> Caller<'t, E> {
    /// The call layer of one rank over `transport`, running `plans` as
    /// `config` says.
    pub(crate) fn new(
        transport: E::Transport,
        engine: E,
        plans: &'t Plans,
        config: &'t Config,
    ) -> Self {
        let driver = Driver::new(
            transport,
            DriverConfig {
                op_timeout: crate::driver::nanos(config.op_timeout),
                failure_timeout: crate::driver::nanos(config.failure_timeout),
                root_wait: crate::driver::nanos(config.root_wait_or_default()),
                op_records: config.op_records,
                ..DriverConfig::default()
            },
        );
        Caller {
            driver,
            engine,
            plans,
            config,
            calls: 0,
            reduce_lists: ReduceLists::default(),
            pace: pace::Pace::default(),
            regrouped_at: 0,
            spare: None,
        }
    }

    /// The first operation of the communicator's current members (0 until
    /// a shrink or a split); ranks that are not members take part in no
    /// operation from it on.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))] // the node's shared slots
    pub(crate) fn regrouped_at(&self) -> OpId {
        self.regrouped_at
    }

    /// The plans of this communicator.
    pub(crate) fn plans(&self) -> &'t Plans {
        self.plans
    }

    /// The configuration.
    pub(crate) fn config(&self) -> &'t Config {
        self.config
    }

    /// Numbers the next operation (the first of a call) and applies this
    /// rank's planned fault. A rank dead at a call fails before it enters
    /// it (its peers can tell it never took part); a hung one hangs inside
    /// it.
    pub(crate) fn begin(&mut self) -> Result<OpId, Error> {
        self.calls += 1;
        self.begin_op(Some(self.calls - 1))
    }

    /// Numbers a later operation of the call in progress (an agreement's
    /// next round) and applies the fault planned for it.
    pub(crate) fn begin_within(&mut self) -> Result<OpId, Error> {
        self.begin_op(None)
    }

    /// [`Caller::begin`] of the `call`-th call, or (`None`) a later
    /// operation of the call in progress.
    fn begin_op(&mut self, call: Option<OpId>) -> Result<OpId, Error> {
        self.driver.check_alive()?;
        let me = self.driver.transport().rank();
        let fault = self.engine.fault(me, self.driver.next_op(), call);
        if let Some(faults::Fault::Dead | faults::Fault::DieAfterSends(0)) = fault {
            self.driver.die();
            return Err(Error::Failed(self.rank()));
        }
        let op = self.driver.enter()?;
        match fault {
            Some(faults::Fault::Hang) => {
                self.driver.hang();
                self.engine.hang(&mut self.driver);
                Err(Error::Hung(self.rank()))
            }
            Some(faults::Fault::DieAfterSends(n)) => {
                self.driver.die_after_sends(n);
                Ok(op)
            }
            Some(faults::Fault::SigkillAfterSends(0)) => {
                self.driver.vanish();
                Err(Error::Hung(self.rank()))
            }
            Some(faults::Fault::SigkillAfterSends(n)) => {
                self.driver.vanish_after_sends(n);
                Ok(op)
            }
            Some(faults::Fault::Stall(pause)) => {
                std::thread::sleep(pause);
                Ok(op)
            }
            _ => Ok(op),
        }
    }

    /// A call that ends before its core is driven still returns: peers
    /// must not take this rank for hung inside it.
    pub(crate) fn abandon(&mut self, op: OpId, e: Error) -> Error {
        self.driver.returned(op);
        e
    }

    /// More than this communicator's f ranks failed in `op`.
    pub(crate) fn too_many_failures(&self, op: OpId) -> Error {
        Error::TooManyFailures {
            op,
            f: self.plans.f,
            failed: self.failed_ranks(),
        }
    }

    /// `root` is a rank of this communicator.
    pub(crate) fn check_root(&self, root: Rank) -> Result<(), Error> {
        let procs = self.size();
        if root >= procs {
            return Err(Error::RankOutOfRange { rank: root, procs });
        }
        Ok(())
    }

    /// A broadcast from `root` (checked) with the team's algorithm, this
    /// rank holding `value` if it is the root: what it delivered.
    pub(crate) fn broadcast(
        &mut self,
        root: Rank,
        value: Option<Data>,
    ) -> Result<Delivered<Data>, Error> {
        self.check_root(root)?;
        let op = self.begin()?;
        self.broadcast_entered(op, root, value)
    }

    /// Ends a broadcast call on `buf`: a receiver decodes what `got`
    /// delivered into it (the root's holds the value already), and the
    /// latency of the whole call, the copy included, is recorded.
    pub(crate) fn end_broadcast<T: bytemuck::Pod>(
        &mut self,
        root: Rank,
        got: Delivered<Data>,
        buf: &mut [T],
    ) -> Result<(), Error> {
        let result = if root == self.rank() {
            Ok(())
        } else {
            got.value.decode_into(buf, got.op, None)
        };
        self.record_latency(got.started);
        result
    }

    /// [`Caller::broadcast`] of operation `op`, entered already.
    pub(crate) fn broadcast_entered(
        &mut self,
        op: OpId,
        root: Rank,
        value: Option<Data>,
    ) -> Result<Delivered<Data>, Error> {
        let started = self.driver.call_started();
        let plans = self.plans;
        let value = broadcast::drive_broadcast(
            &mut self.driver,
            plans,
            root,
            op,
            started,
            value,
            &mut self.engine,
        )?;
        Ok(Delivered {
            op,
            value,
            started,
            missing: Missing::Nothing,
        })
    }

    /// Whether this communicator's reductions know their contributors
    /// ([`Caller::contributors`]): FTCO's do, and the up-correction's
    /// with the list or count failure scheme.
    pub(crate) fn knows_contributors(&self) -> Result<(), Error> {
        let why = match (&self.plans.reduction, self.config.scheme) {
            (ReductionPlan::Ftco(_), _) => return Ok(()),
            (_, FailureScheme::Bit) => {
                "the team's failure scheme is bit, which counts no failure: \
                 use Config::failure_scheme(FailureScheme::List) (the default) or Count"
            }
            _ => return Ok(()),
        };
        Err(Error::Config(crate::error::ConfigError::Unsupported {
            what: "knowing a reduction's contributors",
            why,
        }))
    }

    /// The contributors of a reduction that delivered `got` here, if this
    /// communicator knows them ([`Caller::knows_contributors`]).
    pub(crate) fn contributors<T>(&self, got: &Delivered<T>) -> Option<Contributors> {
        match &got.missing {
            Missing::Nothing => None,
            Missing::Info(info) => {
                self.knows_contributors().ok()?;
                Some(Contributors::from_info(self.size(), info))
            }
            Missing::Ranks(ranks) => Some(Contributors::all_but(self.size(), ranks)),
        }
    }

    /// A reduce of `input` to `root` (checked) with `combine`: the result
    /// at the root, `None` elsewhere (up-correction reduce, reduce paper
    /// Section 4; or FTCO's). `kind` is [`Collective::Reduce`], or an
    /// engine's own kind of reduce ([`Collective::SharedReduce`]), which
    /// meets any other as a mismatch. More than f failures:
    /// [`Error::TooManyFailures`] at the root; a timeout while the root is
    /// known failed: [`Error::RootFailed`].
    pub(crate) fn reduce(
        &mut self,
        root: Rank,
        kind: Collective,
        input: Data,
        combine: Combine<'_>,
    ) -> Result<Delivered<Option<Data>>, Error> {
        if let ReductionPlan::Ftco(plan) = &self.plans.reduction {
            let got = self.ftco(plan, root, FtcoCollective::Reduce, input, combine)?;
            let mut missing = Missing::Nothing;
            let mut got = got.map(|output| {
                ftco::reduce_value(output).map(|(value, lacks)| {
                    missing = Missing::Ranks(lacks);
                    value
                })
            });
            got.missing = missing;
            return Ok(got);
        }
        let ReductionPlan::UpCorrection { reduce, .. } = &self.plans.reduction else {
            unreachable!("FTCO returned above")
        };
        let input = Contribution::input(input);
        let op = self.begin()?;
        let started = self.driver.call_started();
        let lists = std::mem::take(&mut self.reduce_lists);
        let me = self.rank();
        let core = Reduce::new_in(reduce, root, me, op, kind, input, combine, lists);
        let mut core = core.map_err(|e| self.abandon(op, e))?;
        let driven = self.driver.drive(op, started, &mut core);
        // Done with once the call returns (nothing to keep): its lists serve
        // the next reduce or allreduce.
        self.reduce_lists = core.retire();
        let (value, missing) = match driven {
            Ok(ReduceOutput::Sent) => (None, Missing::Nothing),
            Ok(ReduceOutput::Root { value, info, .. }) => (Some(value), Missing::Info(info)),
            Ok(ReduceOutput::TooManyFailures { .. }) => return Err(self.too_many_failures(op)),
            Err(e) => return Err(broadcast::root_failed(&self.driver, e, op, root)),
        };
        Ok(Delivered {
            op,
            value,
            started,
            missing,
        })
    }

    /// An allreduce (or, `kind` [`Collective::Barrier`], a barrier) of
    /// `input` with `combine`: the value every live rank delivers
    /// (up-correction reduce and corrected broadcast with root retry, reduce
    /// paper Section 5; the pair exchange for two ranks; or FTCO's).
    #[inline]
    pub(crate) fn allreduce(
        &mut self,
        kind: Collective,
        input: Data,
        combine: Combine<'_>,
    ) -> Result<Delivered<Data>, Error> {
        if let ReductionPlan::Ftco(plan) = &self.plans.reduction {
            let kind = ftco::allreduce_kind(kind);
            let got = self.ftco(plan, FTCO_ALLREDUCE_ROOT, kind, input, combine)?;
            let mut missing = Missing::Nothing;
            let mut got = got.map(|output| {
                let (value, lacks) = ftco::allreduce_result(output);
                missing = Missing::Ranks(lacks);
                value
            });
            got.missing = missing;
            return Ok(got);
        }
        let op = self.begin()?;
        self.allreduce_entered(op, kind, input, combine)
    }

    /// An FTCO reduce to `root`, or allreduce or barrier (`kind`), as one
    /// call: what its core delivers here.
    fn ftco(
        &mut self,
        plan: &'t FtcoPlan,
        root: Rank,
        kind: FtcoCollective,
        input: Data,
        combine: Combine<'_>,
    ) -> Result<Delivered<FtcoOutput<Data>>, Error> {
        let op = self.begin()?;
        let started = self.driver.call_started();
        let (driver, observer) = (&mut self.driver, &mut self.engine);
        let value = ftco::drive_ftco_reduction(
            driver, plan, root, op, started, kind, input, combine, observer,
        )?;
        Ok(Delivered {
            op,
            value,
            started,
            missing: Missing::Nothing,
        })
    }

    /// The up-correction allreduce of operation `op`, entered already (an
    /// engine's allreduce that takes several operations: the MPI engine's
    /// by blocks).
    #[inline]
    pub(crate) fn allreduce_entered(
        &mut self,
        op: OpId,
        kind: Collective,
        input: Data,
        combine: Combine<'_>,
    ) -> Result<Delivered<Data>, Error> {
        let started = self.driver.call_started();
        let me = self.rank();
        let ReductionPlan::UpCorrection {
            allreduce: plan, ..
        } = &self.plans.reduction
        else {
            let e = Error::Config(crate::error::ConfigError::Unsupported {
                what: "an up-correction allreduce step",
                why: "the team reduces with FTCO",
            });
            return Err(self.abandon(op, e));
        };
        // Each core type driven as itself, not as an `AllreduceCore`: that
        // enum has the rooted core's size (832 bytes), and its moves were a
        // memcpy of that much in every call, also for a pair, whose whole
        // call is a few hundred nanoseconds (callgrind: 2196 -> 1882
        // instructions per rank and call, docs/benchmarks.md).
        let output = if plan.is_pair() {
            let mut core = PairAllreduce::new(me, op, kind, input, combine);
            // A pair exchange is over once delivered: nothing to keep.
            self.driver.drive(op, started, &mut core)?
        } else {
            let lists = std::mem::take(&mut self.reduce_lists);
            let core = Allreduce::new_in(plan, me, op, kind, input, combine, lists);
            let mut core = core.map_err(|e| self.abandon(op, e))?;
            let output = self.driver.drive(op, started, &mut core)?;
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
        match output {
            AllreduceOutput::Value { value, missing, .. } => Ok(Delivered {
                op,
                value,
                started,
                missing: Missing::Info(missing),
            }),
            AllreduceOutput::TooManyFailures { .. } => Err(self.too_many_failures(op)),
        }
    }

    /// Returns once every live rank has entered the barrier (an allreduce
    /// of nothing, with its fault tolerance).
    pub(crate) fn barrier(&mut self) -> Result<Delivered<()>, Error> {
        let got = self.allreduce(Collective::Barrier, Data::EMPTY, &never_combines)?;
        Ok(got.map(|_| ()))
    }

    /// Records the latency of a whole call that started at `started`.
    pub(crate) fn record_latency(&mut self, started: Option<Tick>) {
        self.driver.record_latency(started);
    }
}
