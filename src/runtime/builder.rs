//! [`TeamBuilder`]: a thread team's settings, the engine-neutral
//! [`Config`] and the thread runtime's own (ranks, pinning, helping,
//! lanes).

use std::time::Duration;

use crate::call::config::Config;
use crate::call::config::{BroadcastAlgorithm, ReduceAlgorithm};
use crate::call::faults::FaultSchedule;
use crate::mailbox::DoorbellFence;
use crate::protocol::allreduce::AllreduceAlgorithm;
use crate::protocol::bcast::Correction;
use crate::protocol::reduce::FailureScheme;
use crate::runtime::pin::{self, Pinning};
use crate::topology::TreeSpec;

/// The largest team [`Team`](crate::runtime::Team) runs (lanes are made lazily, so memory stays
/// bounded by the pairs that talk).
pub const MAX_RANKS: u32 = 4096;

/// Builds a [`Team`](crate::runtime::Team). Every setting has a sane default: all cores' worth of
/// ranks, packed pinning, and [`Config`]'s defaults for the collectives
/// (binomial tree, flat for the broadcast where ranks outnumber cores, with
/// checked correction, fault budget f = 1, a 1 s failure timeout and a 10 s
/// operation timeout). The collectives' settings are [`Config`]'s, each
/// forwarded here under its name; [`TeamBuilder::config`] sets them all at
/// once.
#[derive(Clone, Debug)]
pub struct TeamBuilder {
    pub(crate) config: Config,
    pub(crate) ranks: u32,
    pub(crate) pinning: Pinning,
    pub(crate) lane_capacity: Option<usize>,
    pub(crate) helping: Option<bool>,
    pub(crate) doorbell_fence: Option<DoorbellFence>,
}

impl Default for TeamBuilder {
    fn default() -> Self {
        TeamBuilder {
            config: Config::default(),
            ranks: pin::available_cores().len().max(1) as u32,
            pinning: Pinning::Packed,
            lane_capacity: None,
            helping: None,
            doorbell_fence: None,
        }
    }
}

impl AsRef<Config> for TeamBuilder {
    fn as_ref(&self) -> &Config {
        &self.config
    }
}

/// Setters of [`TeamBuilder`] that set the [`Config`] setting of the same
/// name (documented there).
macro_rules! config_setters {
    ($($name:ident($arg:ident: $ty:ty);)*) => {$(
        #[doc = concat!("Sets [`Config::", stringify!($name), "`] (see there).")]
        pub fn $name(mut self, $arg: $ty) -> Self {
            self.config = self.config.$name($arg);
            self
        }
    )*};
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

    /// Whether a waiting rank lends its call to, and advances the calls of,
    /// other waiting ranks (`helping`). Default: on when threads
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

    /// How the mailbox orders a send against the receiver's doorbell
    /// ([`DoorbellFence`]). Default: [`DoorbellFence::Membarrier`] where the
    /// kernel offers it and every rank has a core of its own (the sender's
    /// fence is then on every message's path, and ranks rarely park), else
    /// [`DoorbellFence::SeqCst`] (where ranks outnumber cores they park
    /// often, and each park would pay a `membarrier` system call).
    /// `Membarrier` where the kernel refuses it falls back to `SeqCst`;
    /// [`Team::doorbell_fence`](crate::runtime::Team::doorbell_fence) tells
    /// which one a team uses.
    pub fn doorbell_fence(mut self, fence: DoorbellFence) -> Self {
        self.doorbell_fence = Some(fence);
        self
    }

    /// Messages a lane holds before a sender keeps the rest in its outbox
    /// (rounded up to a power of two, at least 2). Default: 256 where ranks
    /// outnumber cores and there are at most 64 of them, else 64. A
    /// broadcast root runs up to that many calls ahead of a receiver, and
    /// where ranks share cores each switch to a receiver's thread then
    /// drains more of them: at 4-16 ranks on 2 cores a broadcast loop
    /// switches threads 2-4x less often and takes 15-20 % less time per call
    /// (docs/benchmarks.md, *Broadcast loops*). A lane of the runtime's
    /// messages takes about 33 KiB at 256, 8.4 KiB at 64
    /// (docs/mailbox.md, *Memory for 1024 ranks*), and values in segments
    /// stay held until read, up to a lane's worth.
    pub fn lane_capacity(mut self, capacity: usize) -> Self {
        self.lane_capacity = Some(capacity.max(2));
        self
    }

    /// Every collective's setting at once (replacing those set before).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    config_setters! {
        tree(tree: TreeSpec);
        correction(correction: Correction);
        fault_budget(f: u32);
        failure_scheme(scheme: FailureScheme);
        failure_timeout(timeout: Duration);
        faults(faults: FaultSchedule);
        op_timeout(timeout: Duration);
        correction_pace(pace: Duration);
        op_records(on: bool);
        allreduce(algorithm: AllreduceAlgorithm);
        broadcast(algorithm: BroadcastAlgorithm);
        reduce(algorithm: ReduceAlgorithm);
        seed(seed: u64);
        adapt_to_machine(on: bool);
    }

    /// Sets `Config::root_wait` (a node team's threads).
    #[cfg(feature = "mpi")]
    pub(crate) fn root_wait(mut self, wait: Duration) -> Self {
        self.config = self.config.root_wait(wait);
        self
    }

    /// Sets [`Config::mpi_shared_memory`] (see there).
    #[cfg(feature = "mpi")]
    pub fn mpi_shared_memory(mut self, bytes: usize) -> Self {
        self.config = self.config.mpi_shared_memory(bytes);
        self
    }
}
