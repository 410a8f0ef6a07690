//! The engine-neutral configuration: what every engine's collectives read
//! (trees, correction, algorithms, fault budget, timeouts, emulated
//! faults), set once and handed to any engine. A thread team's
//! [`TeamBuilder`](crate::runtime::TeamBuilder) holds one beside its
//! thread settings (ranks, pinning, helping, lanes) and forwards these
//! setters; the MPI engine takes one as it is
//! (`MpiComm::new`). `plans` turns it into the
//! plans of a team of a given size.

use std::time::Duration;

use crate::call::faults::FaultSchedule;
use crate::protocol::allreduce::AllreduceAlgorithm;
use crate::protocol::bcast::Correction;
use crate::protocol::gossip::GossipSpec;
use crate::protocol::reduce::FailureScheme;
use crate::topology::{Shape, TreeSpec};
use crate::types::LogP;

/// Default least time between two correction messages of one rank.
pub const DEFAULT_PACE: Duration = Duration::ZERO;

/// The tree of a team given none, for every algorithm but the corrected
/// broadcast where ranks outnumber cores (see [`Config::tree`]).
pub const DEFAULT_TREE: TreeSpec = TreeSpec::interleaved(Shape::Binomial);

/// How [`crate::Collectives::broadcast_into`] spreads the value.
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
    /// team's [seed](Config::seed). A rank that no message reaches (GOS,
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
    /// plus T (one unit of patience: f_ETA is a model here) asks its
    /// parent, then its grand-parent. With the root alive,
    /// every live rank delivers the root's value exactly once, whatever
    /// fails before or during the operation. On threads T is real time, o
    /// and L are [`FTCO_LOGP`]'s, and a deadline fires only once its rank
    /// has taken the messages that reached it
    /// ([`crate::protocol::op_clock`]); [`crate::runtime::TeamReport::timeouts`] and
    /// [`crate::runtime::TeamReport::false_suspicions`] count what the timeouts did.
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

/// How [`crate::Collectives::reduce_into`], [`crate::Collectives::all_reduce_into`] and
/// [`crate::Collectives::barrier`] reduce.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum ReduceAlgorithm {
    /// Up-correction (Küttler and Härtig, Sections 4-5): groups of f + 1
    /// before the I(f)-tree reduce; an allreduce is that reduce and a
    /// corrected broadcast, retried on the next root if the root fails;
    /// [`Config::allreduce`] chooses its shape. Survives up to the
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
/// costs here (docs/benchmarks.md, *Broadcast on threads*). It gives FTCO's expected arrival times
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

/// The settings every engine's collectives read. Every setting has a sane
/// default: the binomial tree (flat for the corrected broadcast where
/// ranks outnumber cores, see [`Config::tree`]) with checked correction,
/// fault budget f = 1 for reduce and allreduce (0 for a team of one),
/// single-bit failure information, no emulated faults, a 1 s failure
/// timeout, a 10 s operation timeout and no operation records.
#[derive(Clone, Debug)]
pub struct Config {
    /// `None`: the team picks (see [`Config::tree`]).
    pub(crate) tree: Option<TreeSpec>,
    pub(crate) correction: Correction,
    pub(crate) fault_budget: Option<u32>,
    pub(crate) scheme: FailureScheme,
    pub(crate) faults: FaultSchedule,
    pub(crate) failure_timeout: Duration,
    /// How long a rank waits for a failed root's value to come by
    /// correction (`None`: the failure timeout).
    pub(crate) root_wait: Option<Duration>,
    pub(crate) op_timeout: Duration,
    pub(crate) correction_pace: Duration,
    pub(crate) allreduce: AllreduceAlgorithm,
    pub(crate) broadcast: BroadcastAlgorithm,
    pub(crate) reduce: ReduceAlgorithm,
    pub(crate) seed: u64,
    pub(crate) op_records: bool,
    /// Whether the team's own picks follow the machine (see
    /// [`Config::adapt_to_machine`]).
    pub(crate) adapt_to_machine: bool,
    /// Bytes of each slot of a process's shared-memory region (MPI engine;
    /// 0: none).
    #[cfg(feature = "mpi")]
    pub(crate) mpi_shared_memory: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            tree: None,
            correction: Correction::Checked,
            fault_budget: None,
            scheme: FailureScheme::List,
            faults: FaultSchedule::none(),
            failure_timeout: Duration::from_secs(1),
            root_wait: None,
            op_timeout: Duration::from_secs(10),
            correction_pace: DEFAULT_PACE,
            allreduce: AllreduceAlgorithm::Auto,
            broadcast: BroadcastAlgorithm::Tree,
            reduce: ReduceAlgorithm::UpCorrection,
            seed: 0,
            op_records: false,
            adapt_to_machine: true,
            #[cfg(feature = "mpi")]
            mpi_shared_memory: crate::mpi::shm::DEFAULT_SLOT_BYTES,
        }
    }
}

impl AsRef<Config> for Config {
    fn as_ref(&self) -> &Config {
        self
    }
}

impl Config {
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
    /// same (docs/benchmarks.md). See [`crate::runtime::Team::broadcast_tree`].
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

    /// The failure information reduce sends up the tree (reduce paper
    /// Section 4.4): list (the default), count or bit. The list names the
    /// inputs a result lacks ([`crate::Contributors`]), the count only
    /// their number, the bit nothing; fault-free all three send the same
    /// messages, and each failure adds a rank number (list) or nothing.
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
    /// its time inside the call) for [`crate::runtime::TeamReport::ops`]. Default off: a
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

    /// Whether the picks this configuration leaves to the team (an unset
    /// tree, [`AllreduceAlgorithm::Auto`]) follow the machine: the flat
    /// broadcast tree and the star allreduce where ranks outnumber the cores
    /// they run on, the binomial tree and the tree allreduce elsewhere.
    /// Default on (the faster pick on each machine). Off, a team picks the
    /// binomial tree and the tree allreduce on every machine, so a program
    /// tested on a laptop runs what it runs on a server, failure paths
    /// included (the star delivers beyond the fault budget where the tree
    /// reports [`TooManyFailures`](crate::Error::TooManyFailures): the table
    /// in docs/algorithms.md, *Beyond the fault budget*). What a team picked:
    /// [`Team::broadcast_tree`](crate::runtime::Team::broadcast_tree),
    /// [`Team::allreduce_algorithm`](crate::runtime::Team::allreduce_algorithm).
    pub fn adapt_to_machine(mut self, on: bool) -> Self {
        self.adapt_to_machine = on;
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
    /// [`DEFAULT_SLOT_BYTES`](crate::mpi::DEFAULT_SLOT_BYTES), 8 MiB),
    /// and an allreduce of 64 KiB up to `bytes` goes through them: one
    /// copy in, a share of the fold and one copy out instead of a message
    /// per input (docs/mpi.md, *Shared memory on one node*). The same regions hold
    /// a frame ring from every process, through which every frame of up to
    /// 4 KiB between the processes goes instead of MPI
    /// (docs/mpi.md, *Frames through the node's shared memory*). 0 turns both off; so does a job whose
    /// processes are not all on one node.
    #[cfg(feature = "mpi")]
    pub fn mpi_shared_memory(mut self, bytes: usize) -> Self {
        self.mpi_shared_memory = bytes;
        self
    }

    /// The fault budget of a team of `ranks` (the one set, or 1 if the
    /// team has two ranks or more).
    pub(crate) fn budget_for(&self, ranks: u32) -> u32 {
        self.fault_budget.unwrap_or(1.min(ranks.saturating_sub(1)))
    }

    /// How long a rank waits for a failed root's value (default: the
    /// failure timeout).
    pub(crate) fn root_wait_or_default(&self) -> Duration {
        self.root_wait.unwrap_or(self.failure_timeout)
    }
}
