//! A team of ranks: pinned scoped threads running one SPMD closure.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use crossbeam_utils::CachePadded;

use crate::call::plans::Plans;
use crate::driver::OpRecord;
use crate::error::ConfigError;
use crate::helping::Loan;
use crate::mailbox::{DoorbellFence, Mailboxes};
use crate::protocol::allreduce::AllreduceAlgorithm;
use crate::runtime::builder::{TeamBuilder, MAX_RANKS};
use crate::runtime::comm::Comm;
use crate::runtime::liveness::Liveness;
use crate::runtime::pin::{self, Pinning};
use crate::runtime::report::{OpStats, RankOutcome, TeamReport};
use crate::runtime::shared::{core_mates, Counters, Shared};
use crate::runtime::transport::MailboxTransport;
use crate::sync::{AtomicU32, AtomicU64, Ordering};
use crate::topology::{TreeSpec, MAX_PROCS};
use crate::types::Rank;
use crate::value::segment::SegmentPool;

/// Spin rounds (about 25-30 ns each, so about 100 µs) a rank that has its
/// core to itself polls before it yields and parks. In this VM a parked
/// rank's vCPU halts, and waking it costs ~80 µs: at 2 pinned ranks a
/// checked broadcast took 80-90 µs median with the default 64 spins and
/// 1.1 µs unpinned (both threads on one vCPU). See docs/benchmarks.md.
const ALONE_SPINS: u32 = 4096;

/// The default lane capacity ([`TeamBuilder::lane_capacity`]).
const LANE_CAPACITY: usize = 64;
/// The default where at most 64 ranks outnumber the cores: more calls per
/// switch to a receiver's thread (docs/benchmarks.md, *Broadcast loops*).
const CROWDED_LANE_CAPACITY: usize = 256;

/// Spin rounds of a rank when ranks outnumber cores: none. The rank it waits
/// for may share its core and cannot run while it spins; a waiter that
/// yields at once hands the core over. With the mailbox default (64 rounds,
/// ~1.5 µs) every rank that got the core burnt its spins before yielding,
/// and a round of four ranks on a core cost four rounds of spins (measured
/// in docs/mailbox.md, *Waiting policy and the costs behind it*).
const SHARED_SPINS: u32 = 0;

impl TeamBuilder {
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
        if self.config.faults.kills_processes() {
            return Err(ConfigError::Unsupported {
                what: "a SIGKILL fault (Fault::SigkillAfterSends)",
                why: "a thread team's ranks share one process; it is for MPI processes, one rank each",
            });
        }
        for r in self.config.faults.ranks() {
            if r >= self.ranks {
                return Err(ConfigError::FaultRank {
                    rank: r,
                    procs: self.ranks,
                });
            }
        }
        let f = self.config.budget_for(self.ranks);
        let crowded = pin::crowded(self.ranks);
        let plans = Plans::build(&self.config, self.ranks, f, crowded)?;
        let wanted = self.doorbell_fence.unwrap_or(if crowded {
            DoorbellFence::SeqCst
        } else {
            DoorbellFence::Membarrier
        });
        let doorbell_fence = wanted.usable();
        let lane_capacity = self
            .lane_capacity
            .unwrap_or(if crowded && self.ranks <= 64 {
                CROWDED_LANE_CAPACITY
            } else {
                LANE_CAPACITY
            });
        Ok(Team {
            config: self,
            plans,
            doorbell_fence,
            lane_capacity,
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
    doorbell_fence: DoorbellFence,
    lane_capacity: usize,
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

    /// The capacity of the team's lanes ([`TeamBuilder::lane_capacity`],
    /// with its default resolved; the mailbox rounds it up to a power of
    /// two).
    pub fn lane_capacity(&self) -> usize {
        self.lane_capacity
    }

    /// The mailbox's doorbell fence this team uses
    /// ([`TeamBuilder::doorbell_fence`], with its default and fallback
    /// resolved).
    pub fn doorbell_fence(&self) -> DoorbellFence {
        self.doorbell_fence
    }

    /// The fault budget f of reduce, allreduce and barrier.
    pub fn fault_budget(&self) -> u32 {
        self.plans.f
    }

    /// The tree of the team's corrected broadcast (and of its tree
    /// allreduce's broadcast), with the team's pick resolved if none was
    /// set ([`TeamBuilder::tree`]).
    pub fn broadcast_tree(&self) -> TreeSpec {
        self.plans.broadcast_tree
    }

    /// The allreduce (and barrier) algorithm the team runs:
    /// [`Tree`](AllreduceAlgorithm::Tree) or [`Star`](AllreduceAlgorithm::Star),
    /// with [`Auto`](AllreduceAlgorithm::Auto) resolved.
    pub fn allreduce_algorithm(&self) -> AllreduceAlgorithm {
        self.plans.allreduce_shape
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
            settings: &self.config.config,
            plans: &self.plans,
            mailboxes: Mailboxes::with_codec(self.config.ranks, self.lane_capacity)
                .with_doorbell_fence(self.doorbell_fence),
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
            segments: std::sync::Arc::new(SegmentPool::new()),
            answer_delays: std::sync::Mutex::default(),
            op_timeouts: std::sync::Mutex::default(),
            idle,
        };
        // One pinned rank per core: nobody else needs the core, so a waiting
        // rank spins instead of letting its (virtual) cpu halt.
        let alone_on_core =
            self.config.pinning != Pinning::None && (self.config.ranks as usize) <= cores.len();
        let sharing_cores = (self.config.ranks as usize) > cores.len();
        type Ended<R> = (RankOutcome<R>, Vec<OpRecord>, bool, crate::types::OpId);
        let results: Vec<Ended<R>> = std::thread::scope(|s| {
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
                            let entered = comm.entered();
                            comm.finish();
                            let hung = comm.hung();
                            (outcome, comm.into_records(), hung, entered)
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
        let last = results.iter().map(|r| r.3).max().unwrap_or(0);
        let failed = shared.liveness.failed();
        let mut returned_early = Vec::new();
        for (rank, (outcome, records, was_hung, entered)) in results.into_iter().enumerate() {
            let rank_id = rank as Rank;
            if entered < last && !was_hung && !failed.contains(&rank_id) {
                returned_early.push((rank_id, entered));
            }
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
        let op_timeouts = shared.op_timeouts.lock();
        for &(op, n) in op_timeouts.as_deref().unwrap_or_else(|e| e.get_ref()) {
            let i = op as usize;
            if ops.len() <= i {
                ops.resize_with(i + 1, OpStats::default);
            }
            ops[i].op = op;
            ops[i].timeouts += n;
        }
        drop(op_timeouts);
        TeamReport {
            outcomes,
            failed,
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
            returned_early,
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
