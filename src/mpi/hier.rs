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
//! Failures: a thread other than the proxy that dies is survived as on
//! threads, within the thread team's budget; a process that dies is
//! survived as by [`MpiComm`], within the process team's budget. The proxy
//! is fixed: if its local step fails (more local failures than the thread
//! budget, or the proxy itself failed), its process leaves the upper level
//! for good (it is announced failed to the others, who go on without it),
//! and its threads get [`Error::UpperLevel`] from then on; a proxy that
//! dies outright is a process the others find failed, as a SIGKILLed one. Global ranks number the
//! processes' threads in order: `process × threads + thread`; every process
//! has the same number of threads.

use mpi::collective::CommunicatorCollectives;
use mpi::environment::Threading;
use mpi::topology::{Communicator, SimpleCommunicator};

use crate::buffer::{Buffer, BufferMut};
use crate::collectives::Collectives;
use crate::error::{ConfigError, Error};
use crate::mpi::comm::no_perfect_detector;
use crate::mpi::native::NativeLevel;
use crate::mpi::MpiComm;
use crate::op::{Operation, SystemOperation};
use crate::runtime::{Comm, Team, TeamBuilder, TeamReport};
use crate::types::Rank;

/// What runs between the processes' proxies.
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
    /// Errors: MPI not initialized or without that threading level, thread
    /// counts that differ between processes, or a configuration either
    /// team refuses.
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
        // A thread waits on its proxy for a whole step of the process
        // level (which can last an operation timeout and a failure timeout
        // there when a process died): only longer is the proxy late.
        let (local_op, local_failure) = threads.timeouts();
        let upper_wait = match &processes {
            ProcessLevel::Corrected(p) => {
                let (op, failure) = p.timeouts();
                op + failure
            }
            ProcessLevel::Native => std::time::Duration::ZERO,
        };
        // The same for the failure timeout: while the proxy is in a step of
        // the process level its heartbeat in the thread team stands still,
        // and a thread still waiting on a core the proxy kept (a correction
        // of the last local broadcast) would take it for hung.
        let threads = threads
            .op_timeout(local_op + upper_wait)
            .failure_timeout(local_failure + upper_wait)
            .build()?;
        let world = SimpleCommunicator::world();
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
        self.threads.run(|local| {
            let upper = match (&self.processes, local.rank()) {
                (_, 1..) => Proxy::Member,
                (ProcessLevel::Native, 0) => Proxy::Native(NativeLevel::new()),
                (ProcessLevel::Corrected(config), 0) => {
                    match MpiComm::new(&SimpleCommunicator::world(), config) {
                        Ok(comm) => Proxy::Ours(Box::new(comm)),
                        Err(e) => Proxy::Down(e.to_string()),
                    }
                }
            };
            let locals = local.size();
            let mut comm = NodeComm {
                local,
                upper,
                locals,
                proc_rank: self.proc_rank,
                procs: self.procs,
            };
            f(&mut comm)
        })
    }
}

/// What a thread is at the process level.
enum Proxy {
    /// Not the proxy: local rank 0 talks MPI for this process.
    Member,
    /// The proxy, in the team of processes (our protocols).
    Ours(Box<MpiComm>),
    /// The proxy, with MPI's own collectives between processes.
    Native(NativeLevel),
    /// The proxy, out of the team of processes (why).
    Down(String),
}

/// One thread's handle on the whole hierarchy (see the module doc):
/// [`Collectives`] over every thread of every process.
pub struct NodeComm<'c, 't> {
    local: &'c mut Comm<'t>,
    upper: Proxy,
    locals: u32,
    proc_rank: u32,
    procs: u32,
}

/// The proxy's level, for one step.
enum Level<'a> {
    Ours(&'a mut MpiComm),
    Native(&'a mut NativeLevel),
}

/// The trailing byte of the last local step: the proxy's outcome.
const UPPER_OK: u8 = 0;
const UPPER_FAILED: u8 = 1;

impl<'t> NodeComm<'_, 't> {
    /// This thread's team in its process.
    pub fn local(&mut self) -> &mut Comm<'t> {
        &mut *self.local
    }

    /// This process's rank among the processes, and their number.
    pub fn process(&self) -> (u32, u32) {
        (self.proc_rank, self.procs)
    }

    /// Runs the upper level's step on the proxy (`None` elsewhere). A proxy
    /// whose local step failed does not take part in the step, so it is
    /// out of step with the other processes from then on: its process
    /// leaves the upper level for good (announced failed to the others).
    /// An error of the upper step itself is reported as it is; the proxy
    /// stays (the process level numbers its operations on as the others
    /// do).
    fn upper_step(
        &mut self,
        local: Result<(), Error>,
        step: impl FnOnce(Level<'_>) -> Result<(), Error>,
    ) -> Option<Result<(), Error>> {
        let level = match &mut self.upper {
            Proxy::Member => return None,
            Proxy::Down(why) => return Some(Err(Error::UpperLevel(why.clone()))),
            Proxy::Ours(up) => Level::Ours(up),
            Proxy::Native(native) => Level::Native(native),
        };
        if let Err(e) = local {
            match level {
                Level::Ours(up) => up.leave_upper(),
                // MPI's collectives have no way to go on without a process:
                // the others wait in the next one, as MPI programs do.
                Level::Native(_) => {}
            }
            self.upper = Proxy::Down(format!("this process left the process level: {e}"));
            return Some(Err(e));
        }
        Some(step(level))
    }

    /// The last local step: the proxy broadcasts its outcome and, if it
    /// succeeded, `buf` to the threads of its process.
    fn spread_from_proxy<B: BufferMut + ?Sized>(
        &mut self,
        upper: Option<Result<(), Error>>,
        buf: &mut B,
    ) -> Result<(), Error> {
        let items = buf.items_mut();
        let n = std::mem::size_of_val(items);
        let mut bytes = vec![UPPER_OK; n + 1];
        let mut failure = None;
        if let Some(result) = upper {
            match result {
                Ok(()) => bytes[..n].copy_from_slice(bytemuck::cast_slice(items)),
                Err(e) => {
                    bytes[n] = UPPER_FAILED;
                    failure = Some(e);
                }
            }
        }
        if let Err(e) = self.local.broadcast_into(0, &mut bytes[..]) {
            return Err(failure.unwrap_or(e));
        }
        if let Some(e) = failure {
            return Err(e);
        }
        if bytes[n] != UPPER_OK {
            return Err(Error::UpperLevel(
                "the process level failed at this process's proxy".into(),
            ));
        }
        bytemuck::cast_slice_mut(items).copy_from_slice(&bytes[..n]);
        Ok(())
    }

    fn split(&self, root: Rank) -> Result<(u32, Rank), Error> {
        let procs = self.size();
        if root >= procs {
            return Err(Error::RankOutOfRange { rank: root, procs });
        }
        Ok((root / self.locals, root % self.locals))
    }
}

impl Collectives for NodeComm<'_, '_> {
    /// `process × threads + thread`.
    fn rank(&self) -> Rank {
        self.proc_rank * self.locals + self.local.rank()
    }

    fn size(&self) -> u32 {
        self.procs * self.locals
    }

    fn broadcast_into<B: BufferMut + ?Sized>(
        &mut self,
        root: Rank,
        buf: &mut B,
    ) -> Result<(), Error> {
        let (rp, rl) = self.split(root)?;
        let mut local = Ok(());
        if self.proc_rank == rp && rl != 0 {
            local = self.local.broadcast_into(rl, buf);
        }
        let upper = self.upper_step(local, |level| match level {
            Level::Ours(up) => up.broadcast_into(rp, buf),
            Level::Native(native) => {
                native.broadcast(rp, buf.items_mut());
                Ok(())
            }
        });
        self.spread_from_proxy(upper, buf)
    }

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
        let (rp, rl) = self.split(root)?;
        op.check()?;
        let op = &op;
        let apply = |a: &S::Item, b: &S::Item| op.apply(a, b);
        let mut partial = send.items().to_vec();
        let local = self.local.reduce_into(0, send, &mut partial[..], apply);
        // The process level's result lands in a scratch buffer, so that
        // `recv` stays untouched everywhere but at the root thread.
        let mut scratch = partial.clone();
        let upper = self.upper_step(local, |level| match level {
            Level::Ours(up) => up.reduce_into(rp, &partial[..], &mut scratch[..], apply),
            Level::Native(native) => native.reduce(Some(rp), &partial, &mut scratch, &OpRef(op)),
        });
        if self.proc_rank != rp {
            // Threads of other processes have nothing to receive, but hear
            // the proxy's outcome.
            let mut nothing: [S::Item; 0] = [];
            return self.spread_from_proxy(upper, &mut nothing[..]);
        }
        // Every thread of the root's process hears the result; the root
        // thread keeps it.
        self.spread_from_proxy(upper, &mut scratch[..])?;
        if self.local.rank() != rl {
            return Ok(());
        }
        let out = recv.items_mut();
        if out.len() != scratch.len() {
            return Err(Error::LengthMismatch {
                op: self.local.last_op(),
                mine: out.len(),
                theirs: scratch.len(),
            });
        }
        out.copy_from_slice(&scratch);
        Ok(())
    }

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
        let op = &op;
        let apply = |a: &S::Item, b: &S::Item| op.apply(a, b);
        let mut partial = send.items().to_vec();
        let local = self.local.reduce_into(0, send, &mut partial[..], apply);
        let result = recv.items_mut();
        let upper = self.upper_step(local, |level| match level {
            Level::Ours(up) => up.all_reduce_into(&partial[..], &mut *result, apply),
            Level::Native(native) => native.reduce(None, &partial, result, &OpRef(op)),
        });
        self.spread_from_proxy(upper, result)
    }

    fn barrier(&mut self) -> Result<(), Error> {
        let local = self.local.barrier();
        let upper = self.upper_step(local, |level| match level {
            Level::Ours(up) => up.barrier(),
            Level::Native(native) => {
                native.barrier();
                Ok(())
            }
        });
        let mut nothing: [u8; 0] = [];
        self.spread_from_proxy(upper, &mut nothing[..])
    }

    /// The process level's budget (failures of whole processes); each
    /// process's threads have their own ([`Comm::fault_budget`]).
    fn fault_budget(&self) -> u32 {
        match &self.upper {
            Proxy::Ours(up) => up.fault_budget(),
            _ => 0,
        }
    }

    /// Threads of this process known failed (local ranks made global).
    fn failed_ranks(&self) -> Vec<Rank> {
        let base = self.proc_rank * self.locals;
        self.local
            .failed_ranks()
            .into_iter()
            .map(|r| base + r)
            .collect()
    }

    /// Not across processes, for the reason of
    /// [`MpiComm`]'s `agree_failed`.
    fn agree_failed(&mut self) -> Result<Vec<Rank>, Error> {
        Err(no_perfect_detector(
            "agreement on failed ranks across processes",
        ))
    }

    /// Not across processes, as `agree_failed`.
    fn shrink(&mut self) -> Result<Vec<Rank>, Error> {
        Err(no_perfect_detector("shrinking across processes"))
    }
}

/// A borrowed operation, passed on whole (with its [`Operation::system`],
/// which the native level needs), where the blanket impl for closures
/// rules out an impl for references.
struct OpRef<'a, O: ?Sized>(&'a O);

impl<T, O: Operation<T> + ?Sized> Operation<T> for OpRef<'_, O> {
    fn apply(&self, a: &T, b: &T) -> T {
        self.0.apply(a, b)
    }

    fn apply_slices(&self, a: &[T], b: &[T], out: &mut [T]) {
        self.0.apply_slices(a, b, out);
    }

    fn accumulate(&self, acc: &mut [T], b: &[T]) {
        self.0.accumulate(acc, b);
    }

    fn check(&self) -> Result<(), Error> {
        self.0.check()
    }

    fn system(&self) -> Option<SystemOperation> {
        self.0.system()
    }
}
