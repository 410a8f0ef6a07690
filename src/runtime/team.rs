//! A team of ranks: pinned scoped threads running one SPMD closure.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crate::driver::OpRecord;
use crate::error::ConfigError;
use crate::helping::Loan;
use crate::mailbox::Mailboxes;
use crate::protocol::ack_tree::AckTreePlan;
use crate::protocol::allreduce::{AllreduceAlgorithm, AllreducePlan};
use crate::protocol::bcast::{BcastPlan, Correction};
use crate::protocol::ftco::FtcoPlan;
use crate::protocol::gossip::{BigPlan, GossipPlan, GossipSpec};
use crate::protocol::reduce::{FailureScheme, ReducePlan};
use crate::protocol::Msg;
use crate::runtime::comm::Comm;
use crate::runtime::faults::FaultSchedule;
use crate::runtime::liveness::Liveness;
use crate::runtime::one_line::OneLine;
use crate::runtime::packet::Packet;
use crate::runtime::pin::{self, Pinning};
use crate::runtime::segment::SegmentPool;
use crate::runtime::transport::MailboxTransport;
use crate::sync::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use crate::topology::{Shape, Tree, TreeSpec, MAX_PROCS};
use crate::types::{LogP, OpId, Rank, Tick};
use crossbeam_utils::CachePadded;

/// Spin rounds (about 25-30 ns each, so about 100 µs) a rank that has its
/// core to itself polls before it yields and parks. In this VM a parked
/// rank's vCPU halts, and waking it costs ~80 µs: at 2 pinned ranks a
/// checked broadcast took 80-90 µs median with the default 64 spins and
/// 1.1 µs unpinned (both threads on one vCPU). See docs/benchmarks.md.
const ALONE_SPINS: u32 = 4096;

/// Spin rounds of a rank when ranks outnumber cores: none. The rank it waits
/// for may share its core and cannot run while it spins; a waiter that
/// yields at once hands the core over. With the mailbox default (64 rounds,
/// ~1.5 µs) every rank that got the core burnt its spins before yielding,
/// and a round of four ranks on a core cost ~6 µs: 8 ranks on 2 cores took
/// 20-22 µs to broadcast with checked correction lined up, 13-14 µs with no
/// spins (docs/benchmarks.md).
const SHARED_SPINS: u32 = 0;

/// Default least time between two correction messages of one rank.
pub const DEFAULT_PACE: Duration = Duration::ZERO;

/// The tree of a team given none, for every algorithm but the corrected
/// broadcast where ranks outnumber cores (see [`TeamBuilder::tree`]).
pub const DEFAULT_TREE: TreeSpec = TreeSpec::interleaved(Shape::Binomial);

/// The largest team [`Team`] runs (lanes are made lazily, so memory stays
/// bounded by the pairs that talk).
pub const MAX_RANKS: u32 = 4096;

/// Builds a [`Team`]. Every setting has a sane default: all cores' worth of
/// ranks, packed pinning, binomial tree (flat for the broadcast where ranks
/// outnumber cores, see [`TeamBuilder::tree`]) with checked correction, fault
/// budget f = 1 for reduce and allreduce (0 for a team of one), single-bit
/// failure information, no faults, a 1 s failure timeout, a 10 s
/// operation timeout and no operation records.
#[derive(Clone, Debug)]
pub struct TeamBuilder {
    ranks: u32,
    pinning: Pinning,
    /// `None`: the team picks (see [`TeamBuilder::tree`]).
    tree: Option<TreeSpec>,
    correction: Correction,
    fault_budget: Option<u32>,
    scheme: FailureScheme,
    faults: FaultSchedule,
    failure_timeout: Duration,
    /// How long a rank waits for a failed root's value to come by
    /// correction (`None`: the failure timeout).
    root_wait: Option<Duration>,
    op_timeout: Duration,
    correction_pace: Duration,
    lane_capacity: usize,
    helping: Option<bool>,
    allreduce: AllreduceAlgorithm,
    broadcast: BroadcastAlgorithm,
    reduce: ReduceAlgorithm,
    seed: u64,
    pub(crate) op_records: bool,
    /// Bytes of each slot of a process's shared-memory region (MPI engine;
    /// 0: none).
    #[cfg(feature = "mpi")]
    mpi_shared_memory: usize,
}

/// How [`Comm::broadcast_into`] spreads the value.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum BroadcastAlgorithm {
    /// A corrected tree: the team's tree, then its ring correction
    /// (Corrected Trees, Section 3). The default.
    #[default]
    Tree,
    /// Corrected gossip (Hoefler et al., IPDPS 2017): random gossip until T,
    /// then the correction. T counts each rank's own send slots in the
    /// paper's model (L = 2, o = 1), carried in its messages
    /// ([`crate::protocol::gossip::SlotClock`]); peers are drawn from the
    /// team's [seed](TeamBuilder::seed). A rank that no message reaches (GOS,
    /// or OCG beyond its δ) gets [`crate::Error::Timeout`] after the team's
    /// operation timeout; with CCG every live rank is reached if no rank
    /// fails during the correction (Claim 3).
    Gossip(GossipSpec),
    /// The binomial graph broadcast BIG, the Corrected Gossip paper's
    /// redundant baseline (Section IV-B.3): every rank sends the value to
    /// its ⌈log2 P⌉ neighbours p + 2^x; every live rank gets it while
    /// fewer than ⌈log2 P⌉ ranks fail, with no timer and no correction.
    Big,
    /// The FTCO broadcast over the team's tree, the timeout-based baseline
    /// (*Tree-based Fault-Tolerant Collective Operations*, Sections 3-4,
    /// Appendices A and D; [`crate::protocol::ftco`]): DATA down the tree,
    /// each acknowledged; a DATA unanswered for d·T + o·(children) is
    /// circumvented, and a rank without the value at its expected arrival
    /// plus T asks its parent, then its grand-parent. With the root alive,
    /// every live rank delivers the root's value exactly once, whatever
    /// fails before or during the operation. On threads T is real time, o
    /// and L are [`FTCO_LOGP`]'s, and a deadline fires only once its rank
    /// has taken the messages that reached it
    /// ([`crate::protocol::op_clock`]); [`TeamReport::timeouts`] and
    /// [`TeamReport::false_suspicions`] count what the timeouts did.
    Ftco {
        /// The timeout unit T (`None`: [`DEFAULT_FTCO_TIMEOUT`]), from 1
        /// ns to [`MAX_FTCO_TIMEOUT`].
        timeout: Option<Duration>,
    },
    /// The ack tree over the team's tree (Corrected Trees, Section 5, the
    /// acknowledged baseline; [`crate::protocol::ack_tree`]): the value
    /// down the tree, one ACK per rank up it once its children acked, so
    /// 2(P - 1) messages per operation. No fault tolerance: a failed
    /// rank's ancestors wait for its ACK until the operation timeout.
    AckTree,
}

/// How [`Comm::reduce_into`], [`Comm::all_reduce_into`] and
/// [`Comm::barrier`] reduce.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum ReduceAlgorithm {
    /// Up-correction (Küttler and Härtig, Sections 4-5): groups of f + 1
    /// before the I(f)-tree reduce; an allreduce is that reduce and a
    /// corrected broadcast, retried on the next root if the root fails;
    /// [`TeamBuilder::allreduce`] chooses its shape. Survives up to the
    /// fault budget f, the root's failure included. The default.
    #[default]
    UpCorrection,
    /// FTCO reduce and allreduce over the team's tree, the timeout-based
    /// baseline (*Tree-based Fault-Tolerant Collective Operations*,
    /// Sections 3-4, Algorithms 1-4, Appendix D;
    /// [`crate::protocol::ftco`]): partials up the tree as DATA, each
    /// acknowledged, a silent child asked by KEEPALIVE and circumvented, a
    /// silent parent passed by for the grand-parent; an allreduce sends the
    /// result down as the FTCO broadcast does. Survives any number of
    /// failures as long as the root lives (Section 2: the root, rank
    /// [`FTCO_ALLREDUCE_ROOT`](crate::runtime::FTCO_ALLREDUCE_ROOT) for an
    /// allreduce and a barrier, is immune; if it fails, the others get
    /// [`crate::Error::RootFailed`] after the operation timeout). The
    /// team's fault budget does not apply. Timeouts are real time, as for
    /// [`BroadcastAlgorithm::Ftco`]; values of any size travel whole (no
    /// chunked reduction), boxed in each message.
    Ftco {
        /// The timeout unit T (`None`: [`DEFAULT_FTCO_TIMEOUT`]), from 1
        /// ns to [`MAX_FTCO_TIMEOUT`].
        timeout: Option<Duration>,
    },
}

/// FTCO's model on threads (FTCO, Appendix A: the o·(children) term of a
/// timeout; Section 4: f_ETA): the Corrected Trees paper's L = 2, o = 1 with a tick of 1 µs
/// (ticks are nanoseconds), about what a hop between two running ranks
/// costs here (docs/benchmarks.md: 8 ranks broadcast through a binomial
/// tree of depth 3 in 13-14 µs). It gives FTCO's expected arrival times
/// (f_ETA: tens of µs) and the o·(children) term of its timeouts, both
/// small next to T: on threads a timeout is d·T, and T is what has to
/// cover scheduling noise (docs/algorithms.md, *FTCO on threads*).
pub const FTCO_LOGP: LogP = LogP {
    latency: 2_000,
    overhead: 1_000,
};

/// FTCO's default timeout unit T on threads (FTCO, Appendix A): 50 ms,
/// twice the longest answer delay of a DATA measured with 8 and 32 ranks
/// on this machine's 2 cores (24 ms in 620 000; 8 ms at 8 ranks), and above
/// the 99.9th percentile with a compiler running on both cores alongside
/// (36 ms; its maximum, 110 ms, is not covered: there a live rank is
/// sometimes suspected, which costs duplicate DATA only).
/// docs/algorithms.md, *FTCO and the ack tree on threads*, has the
/// measurement.
pub const DEFAULT_FTCO_TIMEOUT: Duration = Duration::from_millis(50);

/// The longest FTCO timeout unit a team takes: one hour (FTCO, Appendix A:
/// a timeout is d·T nanoseconds, d up to the tree's depth, and must not
/// overflow).
pub const MAX_FTCO_TIMEOUT: Duration = Duration::from_secs(3600);

impl Default for TeamBuilder {
    fn default() -> Self {
        TeamBuilder {
            ranks: pin::available_cores().len().max(1) as u32,
            pinning: Pinning::Packed,
            tree: None,
            correction: Correction::Checked,
            fault_budget: None,
            scheme: FailureScheme::Bit,
            faults: FaultSchedule::none(),
            failure_timeout: Duration::from_secs(1),
            root_wait: None,
            op_timeout: Duration::from_secs(10),
            correction_pace: DEFAULT_PACE,
            lane_capacity: 64,
            helping: None,
            allreduce: AllreduceAlgorithm::Auto,
            broadcast: BroadcastAlgorithm::Tree,
            reduce: ReduceAlgorithm::UpCorrection,
            seed: 0,
            op_records: false,
            #[cfg(feature = "mpi")]
            mpi_shared_memory: crate::mpi::shm::DEFAULT_SLOT_BYTES,
        }
    }
}

impl TeamBuilder {
    /// Number of ranks (threads).
    pub fn ranks(mut self, ranks: u32) -> Self {
        self.ranks = ranks;
        self
    }

    /// Where threads run.
    pub fn pinning(mut self, pinning: Pinning) -> Self {
        self.pinning = pinning;
        self
    }

    /// The dissemination tree, named as in the CLI (`binomial`, `lame:2`,
    /// ...), for every algorithm that uses one. Unset, the team picks: the
    /// binomial tree, except for the corrected broadcast where ranks
    /// outnumber the cores they run on, which gets the flat tree (the root
    /// sends to every rank itself, `kary:P-1`). Where ranks share cores a
    /// rank's message waits for that rank to be scheduled, so each level
    /// of a tree costs a scheduling round: a flat tree has one. Any tree
    /// keeps the corrections' guarantees (Corrected Trees, Section 3.3: the
    /// correction makes up for whatever the tree missed); the flat tree
    /// misses no live rank while the root lives, so it sends no correction
    /// at all ([`BcastPlan::corrects`](crate::protocol::bcast::BcastPlan::corrects)).
    /// Measured after a fence, 8-64 ranks on 2 cores: 0.55-0.8x the
    /// binomial tree's time with the correction, back to back about the
    /// same (docs/benchmarks.md). See [`Team::broadcast_tree`].
    pub fn tree(mut self, tree: TreeSpec) -> Self {
        self.tree = Some(tree);
        self
    }

    /// The correction, named as in the CLI. On threads there is no common
    /// clock: synchronized variants start right after the rank's tree sends,
    /// and `delayed:DELAY` counts DELAY in nanoseconds.
    pub fn correction(mut self, correction: Correction) -> Self {
        self.correction = correction;
        self
    }

    /// f: how many rank failures reduce, allreduce and barrier survive
    /// (up-correction groups of f + 1). Each costs f(f+1) messages per group
    /// of f + 1 ranks; `build` refuses f >= ranks.
    pub fn fault_budget(mut self, f: u32) -> Self {
        self.fault_budget = Some(f);
        self
    }

    /// The failure information reduce sends up the tree (list, count or bit).
    pub fn failure_scheme(mut self, scheme: FailureScheme) -> Self {
        self.scheme = scheme;
        self
    }

    /// How long a rank waits on a peer that is inside the same operation
    /// before it declares that peer failed, for everyone (the detector for
    /// ranks that hang; killed and panicking ranks are known at once). Keep
    /// it well above scheduling stalls: with 32 ranks on 2 cores a rank can
    /// be descheduled for tens of milliseconds, and a rank declared failed
    /// stays failed. Default 1 s.
    pub fn failure_timeout(mut self, timeout: Duration) -> Self {
        self.failure_timeout = timeout;
        self
    }

    /// What fails, where and when.
    pub fn faults(mut self, faults: FaultSchedule) -> Self {
        self.faults = faults;
        self
    }

    /// How long a rank waits inside one collective before it gives up with
    /// [`Error::Timeout`] (or [`Error::RootFailed`]). Only a silent root or
    /// a mismatch makes a broadcast wait this long.
    ///
    /// [`Error::Timeout`]: crate::Error::Timeout
    /// [`Error::RootFailed`]: crate::Error::RootFailed
    pub fn op_timeout(mut self, timeout: Duration) -> Self {
        self.op_timeout = timeout;
        self
    }

    /// The least time between two correction messages of one rank (the
    /// thread runtime's stand-in for LogP's o, which paces a sweep in the
    /// simulator). Shorter: faster correction across gaps of dead ranks;
    /// longer: fewer messages when a neighbour's answer is slow because it
    /// was descheduled. Default 0: no pacing (docs/benchmarks.md).
    pub fn correction_pace(mut self, pace: Duration) -> Self {
        self.correction_pace = pace;
        self
    }

    /// Whether every rank keeps a record of each operation (its sends and
    /// its time inside the call) for [`TeamReport::ops`]. Default off: a
    /// record costs 24 bytes per rank per operation, kept until the run
    /// ends (memory without bound in a long run), and two clock reads per
    /// call (about 45 ns here, a third of an allreduce of two ranks). Turn
    /// it on to measure (the CLI and the benches do). Off, `TeamReport::ops`
    /// is empty and a call reads the clock only when it has to wait (its
    /// timeout counts from then).
    pub fn op_records(mut self, on: bool) -> Self {
        self.op_records = on;
        self
    }

    /// Whether a waiting rank lends its call to, and advances the calls of,
    /// other waiting ranks ([`crate::helping`]). Default: on when threads
    /// are pinned and ranks outnumber the available cores (there a rank's
    /// message may wait a whole scheduling round for its thread; ranks help
    /// those pinned to their core), off otherwise (a rank alone on its core
    /// spins; unpinned, every rank would help every other across cores,
    /// which cost more in cache misses than it saved: 24-36 µs against 16 µs
    /// per 8-rank allreduce on 2 cores, `docs/benchmarks.md`).
    pub fn helping(mut self, on: bool) -> Self {
        self.helping = Some(on);
        self
    }

    /// The allreduce (and barrier) algorithm. Default
    /// [`Auto`](AllreduceAlgorithm::Auto): the star where ranks outnumber
    /// the available cores, the up-correction tree otherwise. Both give the
    /// guarantees of Section 5.1 with at most f failures; the star also
    /// survives more (any number of failed ranks, as long as some root it
    /// tries lives), where the tree reports
    /// [`TooManyFailures`](crate::Error::TooManyFailures).
    pub fn allreduce(mut self, algorithm: AllreduceAlgorithm) -> Self {
        self.allreduce = algorithm;
        self
    }

    /// The broadcast algorithm. Default [`BroadcastAlgorithm::Tree`]. The
    /// allreduce's own broadcast is not affected.
    pub fn broadcast(mut self, algorithm: BroadcastAlgorithm) -> Self {
        self.broadcast = algorithm;
        self
    }

    /// The reduce, allreduce and barrier algorithm. Default
    /// [`ReduceAlgorithm::UpCorrection`].
    pub fn reduce(mut self, algorithm: ReduceAlgorithm) -> Self {
        self.reduce = algorithm;
        self
    }

    /// The seed of the random streams of algorithms that draw (gossip's
    /// peers): each rank and operation gets its own stream of it
    /// ([`crate::protocol::random::RandomStream::for_rank`]), so a seed
    /// gives the simulator's peers. Default 0.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Messages a lane holds before a sender keeps the rest in its outbox.
    pub fn lane_capacity(mut self, capacity: usize) -> Self {
        self.lane_capacity = capacity.max(2);
        self
    }

    /// The fault budget of a team of `ranks` (the one set, or 1 if the
    /// team has two ranks or more).
    pub(crate) fn budget_for(&self, ranks: u32) -> u32 {
        self.fault_budget.unwrap_or(1.min(ranks.saturating_sub(1)))
    }

    /// The operation and failure timeouts set.
    #[cfg(feature = "mpi")]
    pub(crate) fn timeouts(&self) -> (Duration, Duration) {
        (self.op_timeout, self.failure_timeout)
    }

    /// The emulated faults set.
    #[cfg(feature = "mpi")]
    pub(crate) fn fault_schedule(&self) -> &FaultSchedule {
        &self.faults
    }

    /// How long a rank waits for the value of a root that failed inside a
    /// broadcast to come by correction from the ranks it reached, before
    /// `Error::RootFailed` (default: the failure timeout). A node team
    /// raises its threads' failure timeout by the process level's and keeps
    /// this one at the threads' own.
    #[cfg(feature = "mpi")]
    pub(crate) fn root_wait(mut self, wait: Duration) -> Self {
        self.root_wait = Some(wait);
        self
    }

    /// Between MPI processes of one node (the MPI engine,
    /// [`crate::mpi::MpiComm`]; thread teams ignore it): each process
    /// reserves four slots of `bytes` in `/dev/shm` (two for inputs, two
    /// for results; default
    /// [`DEFAULT_SLOT_BYTES`](crate::mpi::shm::DEFAULT_SLOT_BYTES), 8 MiB),
    /// and an allreduce of 64 KiB up to `bytes` goes through them: one
    /// copy in, a share of the fold and one copy out instead of a message
    /// per input ([`crate::mpi::shm`], docs/mpi.md). The same regions hold
    /// a frame ring from every process, through which every frame of up to
    /// 4 KiB between the processes goes instead of MPI
    /// ([`crate::mailbox::frames`]). 0 turns both off; so does a job whose
    /// processes are not all on one node.
    #[cfg(feature = "mpi")]
    pub fn mpi_shared_memory(mut self, bytes: usize) -> Self {
        self.mpi_shared_memory = bytes;
        self
    }

    /// The slot size set for the MPI engine's shared memory.
    #[cfg(feature = "mpi")]
    pub(crate) fn mpi_shared_memory_bytes(&self) -> usize {
        self.mpi_shared_memory
    }

    /// The allreduce algorithm set (`Auto` unresolved).
    #[cfg(feature = "mpi")]
    pub(crate) fn allreduce_choice(&self) -> AllreduceAlgorithm {
        self.allreduce
    }

    /// The reduce algorithm set.
    #[cfg(feature = "mpi")]
    pub(crate) fn reduce_algorithm(&self) -> ReduceAlgorithm {
        self.reduce
    }

    /// The pinning set.
    #[cfg(feature = "mpi")]
    pub(crate) fn pinning_policy(&self) -> &Pinning {
        &self.pinning
    }

    /// The number of ranks set.
    #[cfg(feature = "mpi")]
    pub(crate) fn ranks_set(&self) -> u32 {
        self.ranks
    }

    /// Checks the settings and builds the team. Errors (never panics) on no
    /// ranks or too many, a placement of another size, faults naming a rank
    /// outside the team, a bad tree, or a fault budget that leaves no rank
    /// to survive.
    pub fn build(self) -> Result<Team, ConfigError> {
        if self.ranks == 0 {
            return Err(ConfigError::ZeroRanks);
        }
        if self.ranks > MAX_RANKS.min(MAX_PROCS) {
            return Err(ConfigError::TooManyRanks {
                procs: self.ranks as u64,
                max: MAX_RANKS as u64,
            });
        }
        self.pinning.check(self.ranks)?;
        for r in self.faults.ranks() {
            if r >= self.ranks {
                return Err(ConfigError::FaultRank {
                    rank: r,
                    procs: self.ranks,
                });
            }
        }
        let f = self.budget_for(self.ranks);
        Ok(Team {
            plans: Plans::build(&self, self.ranks, f)?,
            config: self,
        })
    }
}

/// A team of ranks, each an OS thread, running collectives that survive
/// fail-stop failures of ranks. Reusable: every [`Team::run`] starts fresh
/// threads and operation numbers.
#[derive(Debug)]
pub struct Team {
    config: TeamBuilder,
    plans: Plans,
}

/// The plans every rank's cores share.
#[derive(Debug)]
pub(crate) struct Plans {
    pub(crate) bcast: BcastPlan,
    pub(crate) reduce: ReducePlan,
    /// Its broadcast uses the team's correction if that guarantees
    /// delivery, checked correction otherwise.
    pub(crate) allreduce: AllreducePlan,
    /// With [`BroadcastAlgorithm::Gossip`]: the broadcast's plan, and the
    /// seed of its peers.
    pub(crate) gossip: Option<(GossipPlan, u64)>,
    /// With [`BroadcastAlgorithm::Big`]: the binomial graph.
    pub(crate) big: Option<BigPlan>,
    /// With [`BroadcastAlgorithm::Ftco`]: the plan, in nanoseconds.
    pub(crate) ftco: Option<FtcoPlan>,
    /// With [`BroadcastAlgorithm::AckTree`]: the tree.
    pub(crate) ack_tree: Option<AckTreePlan>,
    /// With [`ReduceAlgorithm::Ftco`]: the plan, in nanoseconds.
    pub(crate) ftco_reduce: Option<FtcoPlan>,
}

impl Plans {
    /// The plans of `config`'s tree, correction and failure scheme for a
    /// team of `ranks` with fault budget `f < ranks`.
    pub(crate) fn build(config: &TeamBuilder, ranks: u32, f: u32) -> Result<Self, ConfigError> {
        let crowded = ranks as usize > pin::available_cores().len();
        // The tree set, or the binomial tree; for the corrected broadcast
        // where ranks outnumber cores, the flat tree (TeamBuilder::tree).
        let given = config.tree.unwrap_or(DEFAULT_TREE);
        let bcast_tree = match config.tree {
            None if crowded => TreeSpec::interleaved(Shape::KAry(ranks.saturating_sub(1).max(2))),
            _ => given,
        };
        // Threads have no LogP model: trees are built for the paper's.
        let tree = Tree::build(bcast_tree, ranks, LogP::PAPER)?;
        let reduce = ReducePlan::new(given, ranks, f, config.scheme, LogP::PAPER)?;
        // Allreduce needs a broadcast that reaches every live rank.
        let correction = if config.correction.guarantees_delivery() {
            config.correction
        } else {
            Correction::Checked
        };
        let pace = config.correction_pace.as_nanos() as Tick;
        let star = match config.allreduce {
            AllreduceAlgorithm::Star => true,
            AllreduceAlgorithm::Tree => false,
            AllreduceAlgorithm::Auto => crowded,
        };
        let allreduce = if star {
            AllreducePlan::star(ranks, f, config.scheme)?
        } else {
            AllreducePlan::new(
                reduce.clone(),
                BcastPlan::new(tree.clone(), correction, 0).with_pace(pace),
            )?
        };
        // Gossip and BIG need two ranks; a team of one broadcasts to
        // itself through the tree.
        let gossip = match config.broadcast {
            BroadcastAlgorithm::Gossip(spec) if ranks >= 2 => {
                Some((spec.choose(ranks, LogP::PAPER)?.plan, config.seed))
            }
            _ => None,
        };
        let big = match config.broadcast {
            BroadcastAlgorithm::Big if ranks >= 2 => Some(BigPlan::new(ranks)?),
            _ => None,
        };
        let ftco = match config.broadcast {
            BroadcastAlgorithm::Ftco { timeout } => {
                let timeout = ftco_timeout(timeout)?;
                Some(FtcoPlan::new(given, ranks, FTCO_LOGP, Some(timeout))?)
            }
            _ => None,
        };
        let ack_tree = match config.broadcast {
            BroadcastAlgorithm::AckTree => Some(AckTreePlan::new(given, ranks, LogP::PAPER)?),
            _ => None,
        };
        let ftco_reduce = match config.reduce {
            ReduceAlgorithm::Ftco { timeout } => {
                let timeout = ftco_timeout(timeout)?;
                Some(FtcoPlan::new(given, ranks, FTCO_LOGP, Some(timeout))?)
            }
            ReduceAlgorithm::UpCorrection => None,
        };
        Ok(Plans {
            bcast: BcastPlan::new(tree, config.correction, 0).with_pace(pace),
            reduce,
            allreduce,
            gossip,
            big,
            ftco,
            ack_tree,
            ftco_reduce,
        })
    }
}

/// FTCO's timeout unit in nanoseconds: the default, or `timeout` if it is
/// at most [`MAX_FTCO_TIMEOUT`] (a zero one the plan refuses).
fn ftco_timeout(timeout: Option<Duration>) -> Result<Tick, ConfigError> {
    let timeout = timeout.unwrap_or(DEFAULT_FTCO_TIMEOUT);
    if timeout > MAX_FTCO_TIMEOUT {
        return Err(ConfigError::BadTimeout {
            why: format!("{timeout:?} is above the longest, {MAX_FTCO_TIMEOUT:?}"),
        });
    }
    Ok(crate::driver::nanos(timeout))
}

/// A communicator shrunk from the team (see [`Comm::shrink`]): its
/// survivors as team ranks and its plans. Kept for the whole run, so that
/// cores borrow them for its lifetime.
#[derive(Debug)]
pub(crate) struct Generation {
    pub(crate) members: Box<[Rank]>,
    pub(crate) plans: Plans,
}

/// What a rank's closure ended with.
#[derive(Debug)]
pub enum RankOutcome<R> {
    /// It returned this.
    Returned(R),
    /// It panicked with this message; the rank was marked failed.
    Panicked(String),
}

impl<R> RankOutcome<R> {
    /// The returned value, if any.
    pub fn returned(&self) -> Option<&R> {
        match self {
            RankOutcome::Returned(r) => Some(r),
            RankOutcome::Panicked(_) => None,
        }
    }
}

/// Counters of one operation over the whole team.
#[derive(Clone, Debug, Default)]
pub struct OpStats {
    /// Operation number.
    pub op: OpId,
    /// Messages sent for it by all ranks (including late ones).
    pub messages: u64,
    /// Ranks that completed it successfully.
    pub completed: u32,
    /// Each completing rank's time inside the call, in nanoseconds.
    pub latency_ns: Vec<u64>,
}

/// What happened in one [`Team::run`].
#[derive(Debug)]
pub struct TeamReport<R> {
    /// Each rank's outcome, by rank.
    pub outcomes: Vec<RankOutcome<R>>,
    /// Ranks that failed (killed, died, panicked), in order.
    pub failed: Vec<Rank>,
    /// Ranks that hung (alive but silent) at some point.
    pub hung: Vec<Rank>,
    /// Per-operation counters, by operation number; empty unless the team
    /// was built with [`TeamBuilder::op_records`] on.
    pub ops: Vec<OpStats>,
    /// Pumps of a lent call by another rank's thread that moved something
    /// ([`crate::helping`]; 0 with helping off).
    pub helped: u64,
    /// Shared segments the run's pool allocated or grew
    /// ([`crate::runtime::segment`]): values above 55 bytes live in them.
    /// Segments are reused once free, so a loop of same-sized operations
    /// adds none after its first rounds.
    pub segment_allocations: u64,
    /// Over all gossip broadcasts ([`BroadcastAlgorithm::Gossip`]) and
    /// ranks: the times a rank was a g-node (colored by the gossip phase,
    /// or the root). Divided by the operations, the paper's mean g-node
    /// count.
    pub gossip_colored: u64,
    /// Over all FTCO broadcasts ([`BroadcastAlgorithm::Ftco`]) and ranks:
    /// the timeouts that fired (a DATA or KEEPALIVE unanswered past its
    /// timeout; FTCO, Appendix A), each suspecting one rank.
    pub timeouts: u64,
    /// Of those suspicions, the ones of a rank that was alive (FTCO,
    /// Section 4: a suspected node that had not failed): neither silent
    /// from the operation's start by the fault schedule (dead, hung, or
    /// dead in an earlier operation) nor marked failed in the liveness
    /// registry by the time of the suspicion.
    pub false_suspicions: u64,
    /// With [`TeamBuilder::op_records`] on, over all FTCO broadcasts (FTCO,
    /// Appendix A: what a timeout must cover): for every DATA acknowledged, the time from its send to the moment its
    /// sender took the ACK, in nanoseconds (what FTCO's timeout must
    /// cover; [`crate::protocol::op_clock::OpClock::answer_delays`]), in no
    /// particular order. Empty otherwise.
    pub answer_delays_ns: Vec<u64>,
}

impl<R> TeamReport<R> {
    /// The values returned by ranks that did not panic.
    pub fn returned(&self) -> impl Iterator<Item = (Rank, &R)> {
        self.outcomes
            .iter()
            .enumerate()
            .filter_map(|(r, o)| o.returned().map(|v| (r as Rank, v)))
    }
}

/// What every rank of a running team shares.
pub(crate) struct Shared<'t> {
    pub(crate) config: &'t TeamBuilder,
    pub(crate) plans: &'t Plans,
    pub(crate) mailboxes: Mailboxes<Msg<Packet>, OneLine>,
    pub(crate) liveness: Liveness,
    pub(crate) started: Instant,
    /// Ranks whose closure has ended (returned, panicked, or hung for good).
    pub(crate) finished: AtomicU32,
    /// Per rank, written only by that rank: messages it put into lanes, and
    /// messages it took out and fully handled. Equal sums, twice in a row,
    /// once every closure has ended, mean the team is quiet.
    pub(crate) counters: Box<[CachePadded<Counters>]>,
    /// Every communicator shrunk during the run, one entry per rank that
    /// shrank (append only: entries live as long as the run).
    pub(crate) generations: elsa::sync::FrozenVec<Box<Generation>>,
    /// Per rank, the call it lends while it waits (used only if `helping`).
    pub(crate) loans: Box<[CachePadded<Loan>]>,
    /// Waiting ranks lend their calls and advance each other's.
    pub(crate) helping: bool,
    /// Per rank, the other ranks whose lent calls it pumps: those pinned to
    /// its core (their state stays in that core's caches; pumping a call
    /// last run on another core cost more in cache misses than the context
    /// switch it saved), or every other rank if threads are not pinned.
    pub(crate) core_mates: Box<[Box<[Rank]>]>,
    /// Where values too large for a message slot are written once and
    /// shared ([`crate::runtime::segment`]).
    pub(crate) segments: SegmentPool,
    /// FTCO's answer delays, with operation records on
    /// ([`TeamReport::answer_delays_ns`]).
    pub(crate) answer_delays: std::sync::Mutex<Vec<Tick>>,
    /// Called by a rank about to wait (a node team's process-level
    /// heartbeat, `crate::mpi::hier`): never blocks.
    pub(crate) idle: Option<&'t (dyn Fn() + Sync)>,
}

impl Shared<'_> {
    /// A rank is about to wait: the team's idle hook, if it has one.
    #[inline]
    pub(crate) fn idle(&self) {
        if let Some(idle) = self.idle {
            idle();
        }
    }
}

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) pushed: AtomicU64,
    pub(crate) consumed: AtomicU64,
    /// One more than the last operation the rank entered (0: none yet).
    pub(crate) entered: AtomicU32,
    /// One more than the last operation the rank's call returned from: the
    /// rank is inside a call while `entered > returned`.
    pub(crate) returned: AtomicU32,
    /// The rank's heartbeat, raised whenever it runs inside the library:
    /// a rank waiting behind a hung peer keeps it moving, so it is never
    /// taken for hung.
    pub(crate) beat: AtomicU64,
    /// After its closure: the liveness epoch whose failures the rank has
    /// handled (`u64::MAX`: it serves nothing, failed or hung).
    pub(crate) epoch_seen: AtomicU64,
    /// The rank's closure has ended (returned or panicked).
    pub(crate) left: AtomicBool,
    /// Gossip broadcasts in which the rank was a g-node (colored by the
    /// gossip phase, or the root).
    pub(crate) g_node_ops: AtomicU64,
    /// FTCO timeouts that fired on this rank ([`TeamReport::timeouts`]).
    pub(crate) timeouts: AtomicU64,
    /// Of them, suspicions of a live rank ([`TeamReport::false_suspicions`]).
    pub(crate) false_suspicions: AtomicU64,
}

/// [`Shared::core_mates`]: for each rank, the others pinned to the same
/// core, starting after it and wrapping (so that mates start their passes
/// apart); every other rank if threads are not pinned.
fn core_mates(
    pinning: &Pinning,
    ranks: u32,
    cores: &[core_affinity::CoreId],
) -> Box<[Box<[Rank]>]> {
    let core = |r: Rank| pinning.core_for(r, ranks, cores).map(|c| c.id);
    (0..ranks)
        .map(|me| {
            (me + 1..ranks)
                .chain(0..me)
                .filter(|&r| core(me).is_none() || core(r) == core(me))
                .collect()
        })
        .collect()
}

impl Shared<'_> {
    pub(crate) fn now(&self) -> Tick {
        self.tick_at(Instant::now())
    }

    /// The cores' time at `instant`: nanoseconds since the team started.
    pub(crate) fn tick_at(&self, instant: Instant) -> Tick {
        instant.saturating_duration_since(self.started).as_nanos() as Tick
    }

    pub(crate) fn ranks(&self) -> u32 {
        self.config.ranks
    }

    pub(crate) fn faults(&self) -> &FaultSchedule {
        &self.config.faults
    }

    pub(crate) fn op_timeout(&self) -> Duration {
        self.config.op_timeout
    }

    pub(crate) fn failure_timeout(&self) -> Duration {
        self.config.failure_timeout
    }

    pub(crate) fn root_wait(&self) -> Duration {
        self.config.root_wait.unwrap_or(self.config.failure_timeout)
    }

    /// Marks `rank` failed and wakes everyone so they learn it.
    pub(crate) fn fail(&self, rank: Rank) {
        if self.liveness.mark_failed(rank, self.now()) {
            for r in 0..self.ranks() {
                self.mailboxes.wake(r);
                // A lent call learns the failure from whoever pumps it.
                self.loans[r as usize].poke();
            }
        }
    }

    pub(crate) fn all_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire) >= self.ranks()
    }

    fn message_sums(&self) -> (u64, u64) {
        // Consumed first: a message is pushed before it can be consumed.
        let consumed = self
            .counters
            .iter()
            .map(|c| c.consumed.load(Ordering::Acquire))
            .sum();
        let pushed = self
            .counters
            .iter()
            .map(|c| c.pushed.load(Ordering::Acquire))
            .sum();
        (pushed, consumed)
    }

    /// True when every closure has ended, every serving rank has handled
    /// every failure, and no message is in a lane or being handled, seen the
    /// same way twice.
    pub(crate) fn quiet(&self) -> bool {
        if !self.all_finished() {
            return false;
        }
        let epoch = self.liveness.epoch();
        if self
            .counters
            .iter()
            .any(|c| c.epoch_seen.load(Ordering::Acquire) < epoch)
        {
            return false;
        }
        let first = self.message_sums();
        first.0 == first.1 && self.message_sums() == first
    }
}

impl Team {
    /// A builder with defaults.
    pub fn builder() -> TeamBuilder {
        TeamBuilder::default()
    }

    /// Number of ranks.
    pub fn ranks(&self) -> u32 {
        self.config.ranks
    }

    /// The fault budget f of reduce, allreduce and barrier.
    pub fn fault_budget(&self) -> u32 {
        self.plans.reduce.f()
    }

    /// The tree of the team's corrected broadcast (and of its tree
    /// allreduce's broadcast), with the team's pick resolved if none was
    /// set ([`TeamBuilder::tree`]).
    pub fn broadcast_tree(&self) -> TreeSpec {
        self.plans.bcast.tree().spec()
    }

    /// The allreduce (and barrier) algorithm the team runs:
    /// [`Tree`](AllreduceAlgorithm::Tree) or [`Star`](AllreduceAlgorithm::Star),
    /// with [`Auto`](AllreduceAlgorithm::Auto) resolved.
    pub fn allreduce_algorithm(&self) -> AllreduceAlgorithm {
        if self.plans.allreduce.is_star() {
            AllreduceAlgorithm::Star
        } else {
            AllreduceAlgorithm::Tree
        }
    }

    /// Runs `f` on every rank, each on its own scoped thread, and waits for
    /// all. A panic in `f` marks that rank failed; the others go on and
    /// finish their collectives. After its closure ends, a rank keeps
    /// answering late messages until every rank is done.
    pub fn run<R, F>(&self, f: F) -> TeamReport<R>
    where
        R: Send,
        F: Fn(&mut Comm<'_>) -> R + Sync,
    {
        self.run_with_idle(None, f)
    }

    /// [`Team::run`], calling `idle` whenever a rank is about to wait
    /// inside a call (it must not block: a node team's process-level
    /// heartbeat).
    pub(crate) fn run_with_idle<R, F>(
        &self,
        idle: Option<&(dyn Fn() + Sync)>,
        f: F,
    ) -> TeamReport<R>
    where
        R: Send,
        F: Fn(&mut Comm<'_>) -> R + Sync,
    {
        let cores = pin::available_cores();
        let shared = Shared {
            config: &self.config,
            plans: &self.plans,
            mailboxes: Mailboxes::with_codec(self.config.ranks, self.config.lane_capacity),
            liveness: Liveness::new(self.config.ranks),
            started: Instant::now(),
            finished: AtomicU32::new(0),
            counters: (0..self.config.ranks)
                .map(|_| CachePadded::new(Counters::default()))
                .collect(),
            generations: elsa::sync::FrozenVec::new(),
            loans: (0..self.config.ranks)
                .map(|_| CachePadded::new(Loan::new()))
                .collect(),
            helping: self.config.helping.unwrap_or(
                self.config.pinning != Pinning::None && self.config.ranks as usize > cores.len(),
            ),
            core_mates: core_mates(&self.config.pinning, self.config.ranks, &cores),
            segments: SegmentPool::new(),
            answer_delays: std::sync::Mutex::default(),
            idle,
        };
        // One pinned rank per core: nobody else needs the core, so a waiting
        // rank spins instead of letting its (virtual) cpu halt.
        let alone_on_core =
            self.config.pinning != Pinning::None && (self.config.ranks as usize) <= cores.len();
        let sharing_cores = (self.config.ranks as usize) > cores.len();
        let results: Vec<(RankOutcome<R>, Vec<OpRecord>, bool)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..self.config.ranks)
                .map(|rank| {
                    let (shared, f, cores) = (&shared, &f, &cores);
                    std::thread::Builder::new()
                        .name(format!("rank-{rank}"))
                        .spawn_scoped(s, move || {
                            pin::pin(&shared.config.pinning, rank, shared.ranks(), cores);
                            let mut endpoint = shared
                                .mailboxes
                                .endpoint(rank)
                                .expect("one endpoint per rank");
                            endpoint.register_thread();
                            if alone_on_core {
                                endpoint.set_spins(ALONE_SPINS);
                            } else if sharing_cores {
                                endpoint.set_spins(SHARED_SPINS);
                            }
                            let mut comm =
                                Comm::new(shared, MailboxTransport::new(shared, endpoint));
                            let outcome = match catch_unwind(AssertUnwindSafe(|| f(&mut comm))) {
                                Ok(r) => RankOutcome::Returned(r),
                                Err(payload) => {
                                    shared.fail(rank);
                                    RankOutcome::Panicked(panic_message(payload))
                                }
                            };
                            comm.finish();
                            let hung = comm.hung();
                            (outcome, comm.into_records(), hung)
                        })
                        .expect("spawning a rank thread")
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("rank threads catch panics"))
                .collect()
        });
        let mut ops: Vec<OpStats> = Vec::new();
        let mut outcomes = Vec::with_capacity(results.len());
        let mut hung = Vec::new();
        for (rank, (outcome, records, was_hung)) in results.into_iter().enumerate() {
            outcomes.push(outcome);
            if was_hung {
                hung.push(rank as Rank);
            }
            for rec in records {
                let i = rec.op as usize;
                if ops.len() <= i {
                    ops.resize_with(i + 1, OpStats::default);
                }
                let st = &mut ops[i];
                st.op = rec.op;
                st.messages += rec.sends;
                if let Some(ns) = rec.latency {
                    st.completed += 1;
                    st.latency_ns.push(ns);
                }
            }
        }
        TeamReport {
            outcomes,
            failed: shared.liveness.failed(),
            hung,
            ops,
            helped: shared.loans.iter().map(|l| l.helped()).sum(),
            segment_allocations: shared.segments.allocations(),
            gossip_colored: sum(&shared, |c| &c.g_node_ops),
            timeouts: sum(&shared, |c| &c.timeouts),
            false_suspicions: sum(&shared, |c| &c.false_suspicions),
            answer_delays_ns: shared
                .answer_delays
                .into_inner()
                .unwrap_or_else(|e| e.into_inner()),
        }
    }
}

/// One per-rank counter summed over the team.
fn sum(shared: &Shared<'_>, counter: impl Fn(&Counters) -> &AtomicU64) -> u64 {
    shared
        .counters
        .iter()
        .map(|c| counter(c).load(Ordering::Relaxed))
        .sum()
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic".to_string())
}
