//! What every rank of a running thread team shares: the mailboxes, the
//! failure registry, per-rank counters, loans, the segment pool, and the
//! communicators shrunk during the run.

use std::time::Instant;

use crossbeam_utils::CachePadded;

use crate::call::faults::FaultSchedule;
use crate::call::plans::{Generation, Plans};
use crate::helping::Loan;
use crate::mailbox::Mailboxes;
use crate::protocol::Msg;
use crate::runtime::builder::TeamBuilder;
use crate::runtime::liveness::Liveness;
use crate::runtime::one_line::OneLine;
use crate::runtime::pin::Pinning;
use crate::sync::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use crate::types::{Rank, Tick};
use crate::value::segment::SegmentPool;
use crate::value::Packet;

/// What every rank of a running team shares.
pub(crate) struct Shared<'t> {
    pub(crate) config: &'t TeamBuilder,
    /// The collectives' settings (`config`'s).
    pub(crate) settings: &'t crate::call::config::Config,
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
    /// shared ([`crate::value::segment`]).
    pub(crate) segments: std::sync::Arc<SegmentPool>,
    /// FTCO's answer delays, with operation records on
    /// ([`TeamReport::answer_delays_ns`]).
    pub(crate) answer_delays: std::sync::Mutex<Vec<Tick>>,
    /// FTCO's timeouts by operation, with operation records on
    /// ([`crate::runtime::OpStats::timeouts`]).
    pub(crate) op_timeouts: std::sync::Mutex<Vec<(crate::types::OpId, u64)>>,
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
    /// The call the rank drives now ([`crate::driver::pack_call`]): a rank
    /// waiting on it finds a mismatch no message shows.
    pub(crate) call: AtomicU64,
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
    /// One more than the operation at which the rank's planned fault
    /// placed at a call fired (0: none yet): where a silent rank's silence
    /// starts, for telling a false suspicion from a true one.
    pub(crate) fault_fired: AtomicU32,
}

/// [`Shared::core_mates`]: for each rank, the others pinned to the same
/// core, starting after it and wrapping (so that mates start their passes
/// apart); every other rank if threads are not pinned.
pub(crate) fn core_mates(
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
        &self.settings.faults
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

    /// One more rank's program has ended (or it hung); the last one wakes
    /// every rank, so that ranks waiting for the team to be quiet
    /// ([`crate::driver::Transport::others_running`]) look again at once.
    pub(crate) fn finish_one(&self) {
        if self.finished.fetch_add(1, Ordering::AcqRel) + 1 >= self.ranks() {
            for r in 0..self.ranks() {
                self.mailboxes.wake(r);
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
