//! The hierarchy: a [`Team`] of threads in every process, and one proxy
//! thread per process (its local rank 0) in a team of processes over MPI,
//! so that an HPC code uses threads within a node and MPI between nodes
//! through one [`Collectives`] handle ([`NodeComm`]).
//!
//! Every collective is the composition the issue describes, each level with
//! its own protocol and fault budget:
//! * allreduce: up-correction reduce on threads to the proxy, fault-
//!   tolerant allreduce among the proxies over MPI ([`MpiComm`]), then a
//!   corrected broadcast on threads from the proxy;
//! * reduce: the same, with a reduce to the root's process, whose proxy
//!   hands the result to the root thread in the local broadcast (the other
//!   threads' `recv` stays untouched);
//! * broadcast: in the root's process a local broadcast to the proxy, a
//!   broadcast among the proxies, a local broadcast from the proxy;
//! * barrier: a local barrier, a barrier among the proxies, a local
//!   broadcast from the proxy.
//!
//! The last local step carries the proxy's outcome with the value, so an
//! error of the upper level reaches every thread of the process as
//! [`Error::UpperLevel`] instead of a timeout.
//!
//! Failures: a thread that dies is survived as on threads, within the
//! thread team's budget, the proxy included: the next local rank takes
//! over the process level ([`NodeComm`] says how); a process that dies is
//! survived as by [`MpiComm`], within the process team's budget. If a
//! proxy's local step fails otherwise (more local failures than the thread
//! budget), its process leaves the upper level for good (it is announced
//! failed to the others, who go on without it), and its threads get
//! [`Error::UpperLevel`] from then on. Global ranks number the
//! processes' threads in order: `process × threads + thread` (every
//! process starts with the same number of threads), then, after a
//! [shrink](crate::Collectives::shrink) has left some threads or
//! processes out, densely in the same order.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use mpi::collective::CommunicatorCollectives;
use mpi::environment::Threading;
use mpi::topology::{Communicator, SimpleCommunicator};

use crate::buffer::BufferMut;
use crate::collectives::Collectives;
use crate::error::{ConfigError, Error};
use crate::mpi::native::NativeLevel;
use crate::mpi::MpiComm;
use crate::runtime::{Comm, Pinning, ReduceAlgorithm, Team, TeamBuilder, TeamReport};
use crate::types::Rank;

mod collectives;
mod contributors;
mod history;

use history::History;

/// What runs between the processes' proxies.
// Made once per node team: the size of its configuration does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum ProcessLevel {
    /// Our fault-tolerant protocols over MPI point-to-point messages
    /// ([`MpiComm`]), with this configuration (fault budget, timeouts,
    /// tree, correction): a process that dies is survived.
    Corrected(TeamBuilder),
    /// Open MPI's own collectives (`MPI_Allreduce`, `MPI_Bcast`, ...;
    /// docs/mpi.md): faster where MPI is, and a process that dies
    /// ends the job (this MPI has no ULFM).
    Native,
}

/// A process's part of a hierarchical team: its threads, and what the
/// process level needs (see the module doc).
pub struct NodeTeam {
    threads: Team,
    processes: ProcessLevel,
    proc_rank: u32,
    procs: u32,
}

impl NodeTeam {
    /// This process's team of threads (`threads`, one `Team` per process,
    /// the same size in every process) and what runs between processes
    /// (`processes`). Collective over the world communicator: every process
    /// calls it, after initializing MPI with
    /// `mpi::initialize_with_threading(Threading::Serialized)` (or
    /// `Multiple`): the proxy that talks MPI is not the main thread.
    ///
    /// A thread's operation and failure timeouts become the ones `threads`
    /// sets plus the process level's operation and failure timeouts: a
    /// thread waits on its proxy through a whole step of the process level,
    /// which lasts that long when a process died during it, and meanwhile
    /// the proxy's heartbeat in the thread team stands still. (So a hung
    /// thread is found that much later; a thread that dies or panics is
    /// known at once, as on threads.)
    ///
    /// Processes of one node that may all run on the same cores (nobody
    /// bound them) each take their own share of those cores for their
    /// threads, unless `threads` sets a pinning other than the default
    /// packed one (docs/mpi.md, *Each process its own cores*).
    ///
    /// Errors: MPI not initialized or without that threading level, thread
    /// counts that differ between processes, FTCO's reduce
    /// ([`ReduceAlgorithm::Ftco`]) at either level, or a configuration
    /// either team refuses. Every broadcast algorithm runs between the
    /// proxies, with the guarantees it has between processes
    /// (docs/mpi.md).
    pub fn new(threads: TeamBuilder, processes: ProcessLevel) -> Result<NodeTeam, ConfigError> {
        if !mpi::is_initialized() {
            return Err(ConfigError::Unsupported {
                what: "a node team",
                why: "MPI is not initialized",
            });
        }
        if !matches!(
            mpi::environment::threading_support(),
            Threading::Serialized | Threading::Multiple
        ) {
            return Err(ConfigError::Unsupported {
                what: "a node team",
                why: "its proxy thread calls MPI: initialize MPI with \
                      mpi::initialize_with_threading(Threading::Serialized)",
            });
        }
        let ftco_level = match &processes {
            ProcessLevel::Corrected(p) => p.as_ref().reduce != ReduceAlgorithm::UpCorrection,
            _ => false,
        };
        if ftco_level || threads.as_ref().reduce != ReduceAlgorithm::UpCorrection {
            return Err(ConfigError::Unsupported {
                what: "FTCO reduce and allreduce in a node team",
                why: "the hierarchy composes up-correction's guarantees level by level;                       FTCO runs on a Team of threads or an MpiComm alone",
            });
        }
        // A thread waits on its proxy for a whole step of the process
        // level (which can last an operation timeout and a failure timeout
        // there when a process died): only longer is the proxy late.
        let local = threads.as_ref();
        let (local_op, local_failure) = (local.op_timeout, local.failure_timeout);
        let upper_wait = match &processes {
            ProcessLevel::Corrected(p) => {
                let upper = p.as_ref();
                upper.op_timeout + upper.failure_timeout
            }
            ProcessLevel::Native => std::time::Duration::ZERO,
        };
        // The same for the failure timeout: while the proxy is in a step of
        // the process level its heartbeat in the thread team stands still,
        // and a thread still waiting on a core the proxy kept (a correction
        // of the last local broadcast) would take it for hung.
        // Not how long a thread waits for the value of a proxy known to
        // have failed: that comes from the threads it reached, if at all,
        // as fast as ever (with the raised timeout, a proxy that died with
        // its last broadcasts unsent cost a raised failure timeout per
        // broadcast: 12 s each, seen as a hang under load).
        let world = SimpleCommunicator::world();
        let mut threads = threads
            .op_timeout(local_op + upper_wait)
            .failure_timeout(local_failure + upper_wait)
            .root_wait(local_failure);
        if let (Pinning::Packed, Some(share)) = (&threads.pinning, own_cores(&world)) {
            let ranks = threads.ranks;
            let cpus = (0..ranks)
                .filter_map(|t| Pinning::Packed.core_for(t, ranks, &share))
                .map(|c| c.id)
                .collect();
            threads = threads.pinning(Pinning::Placed(cpus));
        }
        let threads = threads.build()?;
        let mine = threads.ranks();
        let (mut least, mut most) = (0u32, 0u32);
        world.all_reduce_into(&mine, &mut least, mpi::collective::SystemOperation::min());
        world.all_reduce_into(&mine, &mut most, mpi::collective::SystemOperation::max());
        if least != most {
            return Err(ConfigError::UnevenNodes { least, most });
        }
        Ok(NodeTeam {
            threads,
            processes,
            proc_rank: world.rank() as u32,
            procs: world.size() as u32,
        })
    }

    /// Runs `f` on every thread of this process, with a [`NodeComm`] over
    /// the whole hierarchy; collective over the processes (each runs its
    /// node team once per call). As [`Team::run`], a report by thread.
    pub fn run<R, F>(&self, f: F) -> TeamReport<R>
    where
        R: Send,
        F: Fn(&mut NodeComm<'_, '_>) -> R + Sync,
    {
        let level = match &self.processes {
            ProcessLevel::Native => State::Native(NativeLevel::new()),
            ProcessLevel::Corrected(config) => {
                match MpiComm::new(&SimpleCommunicator::world(), config) {
                    Ok(comm) => State::Ours(Box::new(comm)),
                    Err(e) => State::Down(e.to_string()),
                }
            }
        };
        let knows_contributors = match &level {
            State::Ours(up) => crate::call::Communicator::knows_contributors(&**up),
            State::Native(_) | State::Down(_) => Ok(()),
        };
        let upper = Upper {
            knows_contributors,
            level: Mutex::new(Process(level)),
            kept: Mutex::new(History::default()),
            progress: (0..self.threads.ranks())
                .map(|_| AtomicU64::new(0))
                .collect(),
            shrinks: AtomicU64::new(0),
        };
        // While a thread of this process waits at the thread level, the
        // process still beats at the process level (its proxy may be busy
        // at the thread level for longer than the process level's failure
        // timeout: a live process must not look failed).
        let beat = || upper.beat();
        let report = self.threads.run_with_idle(Some(&beat), |local| {
            let locals = local.size();
            let mut comm = NodeComm {
                local,
                upper: &upper,
                spread: Vec::new(),
                proxy: 0,
                seq: 0,
                offsets: (0..=self.procs).map(|p| p * locals).collect(),
                proc_rank: self.proc_rank,
                procs: self.procs,
                shrinks: 0,
            };
            f(&mut comm)
        });
        // The process level ends here, on this thread, once every thread of
        // the process has: an `MpiComm` serves late messages as it goes.
        drop(upper);
        report
    }
}

/// The process's place in the process level.
enum State {
    /// In the team of processes (our protocols).
    Ours(Box<MpiComm>),
    /// With MPI's own collectives between processes.
    Native(NativeLevel),
    /// Out of the team of processes (why).
    Down(String),
}

/// The process level, for one step of a process in it.
enum Level<'a> {
    Ours(&'a mut MpiComm),
    Native(&'a mut NativeLevel),
}

/// What the threads of one process share of the process level: the level
/// itself, which whichever thread is the proxy takes for a step, and the
/// steps' outcomes, kept until every live thread of the process is past
/// them, so that threads whose proxy died while spreading one still get it
/// (see [`NodeComm`]). Two locks: the level's is held through a step (which
/// waits on other processes), the outcomes' only to read or add one.
struct Upper {
    level: Mutex<Process>,
    kept: Mutex<History>,
    /// Per thread (the thread team's numbering, which a shrink keeps): the
    /// last node operation it finished.
    progress: Box<[AtomicU64]>,
    /// Shrinks the process level has been through: the first thread of the
    /// process to shrink renumbers it, under its lock.
    shrinks: AtomicU64,
    /// Whether the process level's reductions report their contributors
    /// (its failure scheme; MPI's own have every process in).
    knows_contributors: Result<(), Error>,
}

impl Upper {
    /// Progress at the process level, if no thread is in a step of it (then
    /// that one makes it): takes what other processes sent (so that their
    /// sends complete), serves what this process kept from past steps, and
    /// sends its heartbeat if due. Never waits.
    fn beat(&self) {
        if let Ok(mut level) = self.level.try_lock() {
            if let State::Ours(up) = &mut level.0 {
                // The process level's own failure is its steps' business.
                let _ = up.progress();
            }
        }
    }
}

/// This process in the process level.
struct Process(State);

// SAFETY: a `Process` holds MPI handles (a communicator, requests), which
// rsmpi leaves `!Send` because at MPI's default threading level only the
// thread that initialized MPI may call it. `NodeTeam::new` refuses to build
// unless MPI runs at `Threading::Serialized` or `Multiple`, where any
// thread may call MPI as long as no two calls overlap; every `Process`
// lives in a `Mutex` (`Upper::level`), whose holder alone makes those
// calls.
unsafe impl Send for Process {}

/// One thread's handle on the whole hierarchy (see the module doc):
/// [`Collectives`] over every thread of every process.
///
/// **The proxy fails over.** Every node operation is a local step (to the
/// proxy), the proxy's step in the process level, and a local broadcast of
/// its outcome from the proxy. The proxy keeps that outcome in memory its
/// process's threads share before it broadcasts, until every live thread
/// has finished the operation (a thread may lag many operations behind the
/// others: a broadcast does not wait for every rank). A thread whose
/// broadcast fails because the proxy failed (the thread team's failure
/// registry, shared by the process's threads, says so) takes the kept
/// outcome if the proxy's step got that far. If it did not, the proxy
/// failed before its step (a thread dies at a send of a local step, never
/// inside the process level), so no thread got a value, every live thread
/// sees the same, and all repeat the operation with the next local rank as
/// proxy, which takes over the process level as it was. A proxy that the
/// thread team's detector took for failed while it was only late cannot
/// run a step the others have given up on: it checks under the process
/// level's lock, which a thread takes before it decides. So a proxy that
/// dies costs its process nothing at the process level, and its threads the
/// repeat of one operation (docs/mpi.md).
pub struct NodeComm<'c, 't> {
    local: &'c mut Comm<'t>,
    upper: &'c Upper,
    /// The small spread's buffer (value and outcome byte), reused.
    spread: Vec<u8>,
    /// The local rank that talks MPI for this process now: 0, then the
    /// next one each time it fails (the same at every thread).
    proxy: Rank,
    /// Node operations started, this one included.
    seq: u64,
    /// The global rank of each process's first thread, and the size last:
    /// `process × threads` until a shrink leaves some threads out.
    offsets: Vec<Rank>,
    proc_rank: u32,
    procs: u32,
    /// Shrinks this thread has made ([`Upper::shrinks`]).
    shrinks: u64,
}

/// The trailing byte of the last local step: the proxy's outcome.
const UPPER_OK: u8 = 0;
const UPPER_FAILED: u8 = 1;

/// Values this large are spread in place, their outcome read from the
/// kept ones ([`NodeComm::spread_from_proxy`]).
const SPREAD_IN_PLACE_MIN_BYTES: usize = 4096;

/// What a thread gets when its proxy's step failed (the proxy gets the
/// step's own error).
fn proxy_failed_its_step() -> Error {
    Error::UpperLevel("the process level failed at this process's proxy".into())
}

/// True if `e` says this thread itself is out (failed or hung).
fn is_own_failure(e: &Error) -> bool {
    matches!(e, Error::Failed(_) | Error::Hung(_))
}

impl<'t> NodeComm<'_, 't> {
    /// This thread's team in its process.
    pub fn local(&mut self) -> &mut Comm<'t> {
        &mut *self.local
    }

    /// This process's rank among the processes, and their number.
    pub fn process(&self) -> (u32, u32) {
        (self.proc_rank, self.procs)
    }

    /// The local rank that is this process's proxy now (0 until it fails).
    pub fn proxy(&self) -> Rank {
        self.proxy
    }

    /// Whether this thread is its process's proxy now.
    fn is_proxy(&self) -> bool {
        self.local.rank() == self.proxy
    }

    /// The process level; a thread that panicked holding it left it in the
    /// middle of a step, so the process leaves the process level.
    fn level(&self) -> MutexGuard<'_, Process> {
        self.upper.level.lock().unwrap_or_else(|poisoned| {
            self.upper.level.clear_poison();
            let mut process = poisoned.into_inner();
            leave(
                &mut process.0,
                "a thread panicked in a step of the process level".into(),
            );
            process
        })
    }

    /// The kept outcomes (no user code runs under their lock).
    fn kept(&self) -> MutexGuard<'_, History> {
        self.upper
            .kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs the process level's step on the proxy (`None` elsewhere). A
    /// proxy whose local step failed (other than by its own death) does
    /// not take part in the step, so it is out of step with the other
    /// processes from then on: its process leaves the process level for
    /// good. An error of the step itself is reported as it is; the process
    /// stays (the process level numbers its operations on as the others
    /// do).
    fn upper_step<T: bytemuck::Pod>(
        &mut self,
        local: Result<(), Error>,
        (buf, tail): (&mut [T], &mut [u8]),
        step: impl FnOnce(Level<'_>, &mut [T], &mut [u8]) -> Result<(), Error>,
    ) -> Option<Result<(), Error>> {
        if !self.is_proxy() {
            return None;
        }
        if let Err(e) = &local {
            if is_own_failure(e) {
                return Some(local);
            }
        }
        let seq = self.seq;
        let proxy = self.proxy;
        let mut level = self.level();
        // Taken for failed (late, not dead): the others may have moved on
        // to the next proxy already. Checked under the level's lock, which
        // a thread that saw the mark takes before it looks for this step's
        // outcome: it finds the step run before the mark, or not at all.
        if self.local.is_failed(proxy) {
            return Some(Err(Error::Failed(proxy)));
        }
        // A step already run for `seq` (by a proxy taken for failed that
        // was only late) is not run again.
        if let Some(kept) = self.kept().find(seq) {
            return Some(kept.read(buf, tail));
        }
        let outcome = match (local, &mut level.0) {
            (_, State::Down(why)) => Err(Error::UpperLevel(why.clone())),
            (Err(e), state) => {
                leave(state, format!("this process left the process level: {e}"));
                Err(e)
            }
            (Ok(()), State::Ours(up)) => step(Level::Ours(up), buf, tail),
            (Ok(()), State::Native(native)) => step(Level::Native(native), buf, tail),
        };
        let past = self.live_progress();
        let kept = (bytemuck::cast_slice(buf), &*tail);
        self.kept().keep(seq, proxy, past, outcome.clone(), kept);
        drop(level);
        Some(outcome)
    }

    /// The last local step: the proxy broadcasts its outcome and, if it
    /// succeeded, `buf` and `tail` (what the step adds to the value: a
    /// reduction's contributors; usually empty) to the threads of its
    /// process. `None`: the proxy failed before its step; the caller
    /// repeats the operation with the next proxy.
    ///
    /// A small value travels with its tail and outcome in one broadcast
    /// (a byte after them). A value of [`SPREAD_IN_PLACE_MIN_BYTES`] or
    /// more is broadcast in place, into `buf` itself, and each thread reads
    /// the outcome and the tail the proxy kept: two copies of the value and
    /// a buffer fewer per thread, for one lock.
    fn spread_from_proxy<B: BufferMut + ?Sized>(
        &mut self,
        upper: Option<Result<(), Error>>,
        (buf, tail): (&mut B, &mut [u8]),
    ) -> Option<Result<(), Error>> {
        let items = buf.items_mut();
        let n = std::mem::size_of_val(items);
        let is_proxy = upper.is_some();
        let failure = upper.and_then(Result::err);
        let proxy = self.proxy;
        let spread = if n >= SPREAD_IN_PLACE_MIN_BYTES {
            self.local.broadcast_into(proxy, &mut *items).map(|()| None)
        } else {
            let mut bytes = std::mem::take(&mut self.spread);
            let (t, all) = (tail.len(), n + tail.len());
            bytes.clear();
            bytes.resize(all + 1, UPPER_OK);
            if is_proxy {
                match failure {
                    None => {
                        bytes[..n].copy_from_slice(bytemuck::cast_slice(items));
                        bytes[n..all].copy_from_slice(tail);
                    }
                    Some(_) => bytes[all] = UPPER_FAILED,
                }
            }
            let spread = self.local.broadcast_into(proxy, &mut bytes[..]).map(|()| {
                let ok = bytes[all] == UPPER_OK;
                if ok {
                    bytemuck::cast_slice_mut(items).copy_from_slice(&bytes[..n]);
                    tail.copy_from_slice(&bytes[n..n + t]);
                }
                Some(ok)
            });
            self.spread = bytes;
            spread
        };
        let seq = self.seq;
        match (spread, failure) {
            (Ok(_), Some(e)) => Some(Err(e)),
            (Ok(Some(true)), None) => Some(Ok(())),
            (Ok(Some(false)), None) => Some(Err(proxy_failed_its_step())),
            (Ok(None), None) if is_proxy => Some(Ok(())),
            // In place: the outcome is kept until this thread is past it.
            (Ok(None), None) => Some(match self.kept().find(seq).filter(|k| k.by == proxy) {
                Some(kept) => kept.read::<u8>(&mut [], tail),
                None => Err(Error::UpperLevel("the proxy's outcome was not kept".into())),
            }),
            (Err(_), Some(e)) => Some(Err(e)),
            (Err(e), None) => {
                if is_own_failure(&e) || !self.local.is_failed(proxy) {
                    return Some(Err(e));
                }
                // The proxy failed. Marked after all it did before: if it
                // kept its step's outcome, this thread sees it. If it did
                // not, every thread goes on to the next proxy, this one too
                // (even if that one has run the step already: the others
                // meet it in its broadcast).
                // A step of a proxy taken for failed while late may still be
                // running: wait for it (the level's lock) before looking.
                drop(self.level());
                if let Some(kept) = self.kept().find(seq).filter(|k| k.by == proxy) {
                    return Some(kept.read(items, tail));
                }
                self.proxy = (proxy + 1) % self.local.size();
                None
            }
        }
    }

    /// Runs node operation `op` (one attempt per call of `attempt`, with
    /// the proxy of the moment) until an attempt's proxy got through its
    /// step or every local rank has been tried.
    fn node_op(
        &mut self,
        mut attempt: impl FnMut(&mut Self) -> Option<Result<(), Error>>,
    ) -> Result<(), Error> {
        self.seq += 1;
        let mut outcome = Err(Error::UpperLevel(
            "every thread of this process failed as its proxy".into(),
        ));
        for _ in 0..self.local.size() {
            if let Some(o) = attempt(self) {
                outcome = o;
                break;
            }
        }
        let me = self.local.team_rank(self.local.rank());
        self.upper.progress[me as usize].store(self.seq, Ordering::Release);
        outcome
    }

    /// The last node operation every live thread of the process has
    /// finished.
    fn live_progress(&self) -> u64 {
        (0..self.local.size())
            .filter(|&r| !self.local.is_failed(r))
            .map(|r| self.local.team_rank(r))
            .map(|t| self.upper.progress[t as usize].load(Ordering::Acquire))
            .min()
            .unwrap_or(0)
    }

    /// Global rank `root` as its process and its local rank there.
    fn locate(&self, root: Rank) -> Result<(u32, Rank), Error> {
        let ranks = self.offsets[self.procs as usize];
        if root >= ranks {
            return Err(Error::RankOutOfRange {
                rank: root,
                procs: ranks,
            });
        }
        let process = self.offsets.partition_point(|&first| first <= root) - 1;
        Ok((process as u32, root - self.offsets[process]))
    }

    /// The global ranks of process `p`'s threads.
    fn threads_of(&self, p: u32) -> std::ops::Range<Rank> {
        self.offsets[p as usize]..self.offsets[p as usize + 1]
    }
}

/// This process's share of the cores, if the processes of its node may all
/// run on the same cores (nobody bound them) and there are at least as many
/// cores as processes: the i-th of k processes takes the i-th k-th of them.
/// Otherwise `None`: the launcher placed them (or too few cores to share
/// out), and the team uses the cores this process may run on. Two teams
/// pinned to the same cores compete where helping can only pass a core
/// between threads of one process (docs/mpi.md, *Give each process its own
/// cores*). Collective over `world`.
fn own_cores(world: &SimpleCommunicator) -> Option<Vec<core_affinity::CoreId>> {
    let node = world.split_shared(0);
    let k = node.size() as usize;
    if k < 2 {
        return None;
    }
    let mine = crate::runtime::pin::available_cores();
    let masks = super::node::core_masks(&node, &mine);
    if !super::node::all_same(&masks, &mine) || mine.len() < k {
        return None;
    }
    Some(super::node::share(&mine, node.rank() as usize, k))
}

/// The process leaves the process level for good: announced failed to the
/// others, who go on without it (MPI's own collectives have no way to go on
/// without a process: there the others wait in the next one, as MPI
/// programs do).
fn leave(state: &mut State, why: String) {
    if let State::Ours(up) = state {
        up.leave_upper();
    }
    *state = State::Down(why);
}
