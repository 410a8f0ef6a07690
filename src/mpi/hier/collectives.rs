//! The collectives of a [`NodeComm`]: each a composition of a step on the
//! process's threads, a step among the processes' proxies, and a step back
//! on the threads (the module doc of [`super`] says which).

use bytemuck::Zeroable;

use crate::buffer::Element;

use super::contributors::{decode, process_step, tail_len};
use crate::call::immediate::Immediate;
use crate::call::{Communicator, Control, Reduction};
use crate::collectives::Collectives;
use crate::contributors::Contributors;
use crate::error::{ConfigError, Error};

use crate::op::{Operation, SystemOperation};
use crate::types::Rank;

use std::sync::atomic::Ordering;

use super::*;

/// A node team's typed buffers go through its two levels (the module doc
/// of [`super`]).
impl<'c, 't> Communicator for NodeComm<'c, 't> {
    fn control(&self) -> &dyn Control {
        self
    }

    fn control_mut(&mut self) -> &mut dyn Control {
        self
    }

    fn broadcast_items<T: Element>(&mut self, root: Rank, buf: &mut [T]) -> Result<(), Error> {
        let (rp, rl) = self.locate(root)?;
        self.node_op(|node| {
            let mut local = Ok(());
            if node.proc_rank == rp && rl != node.proxy {
                local = node.local.broadcast_into(rl, buf);
            }
            let upper = node.upper_step(local, (&mut *buf, &mut []), |level, buf, _| match level {
                Level::Ours(up) => up.broadcast_into(rp, buf),
                Level::Native(native) => {
                    native.broadcast(rp, buf);
                    Ok(())
                }
            });
            node.spread_from_proxy(upper, (&mut *buf, &mut []))
        })
    }

    fn reduce_items<T, O>(
        &mut self,
        root: Rank,
        call: Reduction<'_, T, O>,
    ) -> Result<Option<Contributors>, Error>
    where
        T: Element,
        O: Operation<T>,
    {
        let Reduction {
            send,
            recv,
            op,
            contributors: asked,
        } = call;
        let (rp, rl) = self.locate(root)?;
        let op = &op;
        // The operation whole, not a closure over `apply`: its slice loops
        // (vectorized for the system operations) serve both levels.
        let apply = || OpRef(op);
        // The proxy's local result, and the process level's: a scratch
        // buffer, so that `recv` stays untouched everywhere but at the root
        // thread. Only the threads that use them have them.
        let (mut partial, mut scratch) = (Vec::new(), Vec::new());
        let n = send.len();
        let size = Control::size(self);
        let at_root = self.proc_rank == rp;
        let mut tail = vec![0u8; if asked && at_root { tail_len(size) } else { 0 }];
        let offsets = if asked {
            self.offsets.clone()
        } else {
            Vec::new()
        };
        self.node_op(|node| {
            let is_proxy = node.is_proxy();
            if is_proxy {
                partial.resize(n, Zeroable::zeroed());
            }
            if is_proxy || at_root {
                scratch.resize(n, Zeroable::zeroed());
            }
            let (local, mine) = node.reduce_locally(asked, send, &mut partial[..], apply());
            let me = node.proc_rank;
            let upper = node.upper_step(
                local,
                (&mut scratch[..], &mut tail[..]),
                |level, scratch, tail| match (level, mine) {
                    (level, Some(mine)) => {
                        let ours = (&offsets[..], me);
                        process_step(
                            level,
                            Some(rp),
                            (&mine, &partial),
                            (scratch, tail),
                            apply(),
                            ours,
                        )
                    }
                    (Level::Ours(up), None) => up.reduce_into(rp, &partial[..], scratch, apply()),
                    (Level::Native(native), None) => {
                        native.reduce(Some(rp), &partial, scratch, &apply())
                    }
                },
            );
            if !at_root {
                // Threads of other processes have nothing to receive, but
                // hear the proxy's outcome.
                let mut nothing: [T; 0] = [];
                return node.spread_from_proxy(upper, (&mut nothing[..], &mut []));
            }
            // Every thread of the root's process hears the result; the
            // root thread keeps it.
            node.spread_from_proxy(upper, (&mut scratch[..], &mut tail[..]))
        })?;
        if !at_root || self.local.rank() != rl {
            return Ok(None);
        }
        if recv.len() != scratch.len() {
            return Err(Error::LengthMismatch {
                op: self.local.last_op(),
                mine: recv.len(),
                theirs: scratch.len(),
            });
        }
        recv.copy_from_slice(&scratch);
        Ok(asked.then(|| decode(&tail, size)))
    }

    fn all_reduce_items<T, O>(
        &mut self,
        call: Reduction<'_, T, O>,
    ) -> Result<Option<Contributors>, Error>
    where
        T: Element,
        O: Operation<T>,
    {
        let Reduction {
            send,
            recv,
            op,
            contributors: asked,
        } = call;
        let op = &op;
        let apply = || OpRef(op);
        // The proxy's local result (only the proxy has one).
        let mut partial = Vec::new();
        let n = send.len();
        let result = recv;
        let size = Control::size(self);
        let mut tail = vec![0u8; if asked { tail_len(size) } else { 0 }];
        let offsets = if asked {
            self.offsets.clone()
        } else {
            Vec::new()
        };
        self.node_op(|node| {
            if node.is_proxy() {
                partial.resize(n, Zeroable::zeroed());
            }
            let (local, mine) = node.reduce_locally(asked, send, &mut partial[..], apply());
            let me = node.proc_rank;
            let upper = node.upper_step(
                local,
                (&mut *result, &mut tail[..]),
                |level, result, tail| match (level, mine) {
                    (level, Some(mine)) => {
                        let ours = (&offsets[..], me);
                        process_step(
                            level,
                            None,
                            (&mine, &partial),
                            (result, tail),
                            apply(),
                            ours,
                        )
                    }
                    (Level::Ours(up), None) => up.all_reduce_into(&partial[..], result, apply()),
                    (Level::Native(native), None) => {
                        native.reduce(None, &partial, result, &apply())
                    }
                },
            );
            node.spread_from_proxy(upper, (&mut *result, &mut tail[..]))
        })?;
        Ok(asked.then(|| decode(&tail, size)))
    }

    /// A node team knows its contributors where both its levels do (their
    /// failure schemes): each proxy joins its process's missing threads
    /// to the process level's missing processes (`contributors.rs`).
    fn knows_contributors(&self) -> Result<(), Error> {
        self.local.knows_contributors()?;
        self.upper.knows_contributors.clone()
    }
}

impl NodeComm<'_, '_> {
    /// The local step of a reduction: to the proxy, which gets its
    /// process's contributors too if `asked`.
    fn reduce_locally<T: Element>(
        &mut self,
        asked: bool,
        send: &[T],
        partial: &mut [T],
        op: impl Operation<T>,
    ) -> (Result<(), Error>, Option<Contributors>) {
        let proxy = self.proxy;
        if !asked {
            return (self.local.reduce_into(proxy, send, partial, op), None);
        }
        match self
            .local
            .reduce_into_contributors(proxy, send, partial, op)
        {
            Ok(None) if self.is_proxy() => (Err(contributors_lost()), None),
            Ok(mine) => (Ok(()), mine),
            Err(e) => (Err(e), None),
        }
    }
}

/// The proxy's local reduce delivered without its contributors (never: the
/// thread level reports them at its root).
fn contributors_lost() -> Error {
    Error::UpperLevel("the thread level's reduce did not report its contributors".into())
}

/// A node team's control collectives compose its levels' (the module doc
/// of [`super`]).
impl Control for NodeComm<'_, '_> {
    /// The processes' threads numbered in order: `process × threads +
    /// thread` until a shrink leaves some out, then densely.
    fn rank(&self) -> Rank {
        self.offsets[self.proc_rank as usize] + self.local.rank()
    }

    fn size(&self) -> u32 {
        self.offsets[self.procs as usize]
    }

    fn barrier(&mut self) -> Result<(), Error> {
        self.node_op(|node| {
            let local = node.local.barrier();
            let mut nothing: [u8; 0] = [];
            let upper =
                node.upper_step(
                    local,
                    (&mut nothing[..], &mut []),
                    |level, _, _| match level {
                        Level::Ours(up) => up.barrier(),
                        Level::Native(native) => {
                            native.barrier();
                            Ok(())
                        }
                    },
                );
            node.spread_from_proxy(upper, (&mut nothing[..], &mut []))
        })
    }

    /// The process level's budget (failures of whole processes); each
    /// process's threads have their own ([`Comm::fault_budget`]).
    fn fault_budget(&self) -> u32 {
        match &self.level().0 {
            State::Ours(up) => up.fault_budget(),
            _ => 0,
        }
    }

    /// Threads of this process known failed (local ranks made global).
    fn failed_ranks(&self) -> Vec<Rank> {
        let base = self.offsets[self.proc_rank as usize];
        self.local
            .failed_ranks()
            .into_iter()
            .map(|r| base + r)
            .collect()
    }

    /// Not built for node teams: an operation of a node team is a step of
    /// each level in turn, driven by the calling threads.
    fn immediate(&mut self) -> Result<&mut dyn Immediate, Error> {
        Err(Error::Config(ConfigError::Unsupported {
            what: "immediate collectives on a node team",
            why: "its operations are steps of two levels that its threads drive in turn; \
                  use an MpiComm or a thread team",
        }))
    }

    /// Not built for node teams: a sub-team would split a process's
    /// threads across two process levels.
    fn regroup(&mut self, _members: &[Rank]) -> Result<(), Error> {
        Err(Error::Config(ConfigError::Unsupported {
            what: "splitting a node team",
            why: "its threads share one process level; split a thread team or an MpiComm",
        }))
    }

    /// Progress on the thread level, and on the process level if no thread
    /// of this process is in a step of it (then that thread makes it).
    fn progress(&mut self) -> Result<(), Error> {
        self.local.progress()?;
        let level = self.upper.level.try_lock();
        if let Ok(mut level) = level {
            if let State::Ours(up) = &mut level.0 {
                // The process level's own failure is its steps' business.
                let _ = up.progress();
            }
        }
        Ok(())
    }

    /// Gives every live thread of every process the same list of failed
    /// global ranks. The threads of each process agree among themselves
    /// (the thread level's agreement); the proxies agree on the failed
    /// processes (the process level's, `MpiComm`'s) and join every
    /// process's list in an allreduce of bitmaps (bitwise or: every live
    /// proxy gets the same union within the process level's budget); each
    /// proxy spreads the union to its threads with the outcome of its step.
    /// Listed: the failed threads each process's threads agreed on, and
    /// every thread of a process the proxies agreed had failed. A thread or
    /// process that fails late in the call may be left out, and is found
    /// by the next agreement. With MPI's own collectives between the
    /// proxies ([`ProcessLevel::Native`]) a process death ends the job, so
    /// only threads are listed.
    ///
    /// Errors: the thread level's agreement's, the process level's
    /// ([`Error::UpperLevel`] on the threads of a process whose proxy's
    /// step failed), or more failed processes than the process level's
    /// budget ([`Error::TooManyFailures`]).
    fn agree_failed(&mut self) -> Result<Vec<Rank>, Error> {
        let (size, base) = (Control::size(self), self.offsets[self.proc_rank as usize]);
        let words = (size as usize).div_ceil(64);
        let threads: Vec<_> = (0..self.procs).map(|p| self.threads_of(p)).collect();
        let set = |bits: &mut [u64], r: Rank| bits[r as usize / 64] |= 1 << (r % 64);
        let mut union = vec![0u64; words];
        self.node_op(|node| {
            let mut mine = vec![0u64; words];
            let local = node.local.agree_failed().map(|failed| {
                for r in failed {
                    set(&mut mine, base + r);
                }
            });
            let upper =
                node.upper_step(
                    local,
                    (&mut union[..], &mut []),
                    |level, union, _| match level {
                        Level::Ours(up) => {
                            for p in up.agree_failed()? {
                                for t in threads[p as usize].clone() {
                                    set(&mut mine, t);
                                }
                            }
                            up.all_reduce_into(&mine[..], union, SystemOperation::bitwise_or())
                        }
                        Level::Native(native) => {
                            native.reduce(None, &mine, union, &SystemOperation::bitwise_or())
                        }
                    },
                );
            node.spread_from_proxy(upper, (&mut union[..], &mut []))
        })?;
        let listed = |r: &Rank| union[*r as usize / 64] & (1 << (r % 64)) != 0;
        Ok((0..size).filter(listed).collect())
    }

    /// Goes on with the survivors: agrees on the failed global ranks
    /// ([`NodeComm::agree_failed`]), then every live thread applies that
    /// one list to both levels, without a further agreement: each process
    /// leaves out its listed threads (its thread team renumbered), the
    /// proxies leave out the processes with no thread left (the process
    /// level renumbered, once per process), and the survivors are numbered
    /// densely in the old order, each process's threads together. Each
    /// level's budget is clamped to leave one rank alive, as
    /// [`Collectives::shrink`] says; processes may now have different
    /// numbers of threads. With MPI's own collectives between the
    /// proxies ([`ProcessLevel::Native`]) a process cannot be left out
    /// (its death ends the job), so only threads are.
    ///
    /// Errors: the agreement's; [`Error::Failed`] if this thread is
    /// listed; [`ConfigError::Unsupported`] if a whole process is listed
    /// under MPI's own collectives.
    fn shrink(&mut self) -> Result<Vec<Rank>, Error> {
        let failed = Control::agree_failed(self)?;
        let me = Control::rank(self);
        if failed.contains(&me) {
            return Err(Error::Failed(me));
        }
        // Each process's listed threads, in its local numbering.
        let listed: Vec<Vec<Rank>> = (0..self.procs)
            .map(|p| {
                let threads = self.threads_of(p);
                let first = threads.start;
                (failed.iter().filter(|r| threads.contains(r)))
                    .map(|&r| r - first)
                    .collect()
            })
            .collect();
        // Each process's threads left, and the processes left with none.
        let left: Vec<u32> = (0..self.procs)
            .map(|p| self.threads_of(p).len() as u32 - listed[p as usize].len() as u32)
            .collect();
        let gone: Vec<Rank> = (0..self.procs).filter(|&p| left[p as usize] == 0).collect();
        self.local.renumber(&listed[self.proc_rank as usize])?;
        self.shrink_process_level(&gone)?;
        let mut offsets = vec![0];
        for &threads in left.iter().filter(|&&t| t > 0) {
            offsets.push(offsets.last().copied().unwrap_or(0) + threads);
        }
        self.proc_rank -= gone.iter().filter(|&&p| p < self.proc_rank).count() as u32;
        self.procs = offsets.len() as u32 - 1;
        self.offsets = offsets;
        // Every thread picks the same new proxy.
        self.proxy = 0;
        Ok(failed)
    }
}

impl NodeComm<'_, '_> {
    /// Leaves the processes `gone` out of the process level, once per
    /// process: the first of its threads to get here does it.
    fn shrink_process_level(&mut self, gone: &[Rank]) -> Result<(), Error> {
        let mut level = self.level();
        let done = self.upper.shrinks.load(Ordering::Relaxed);
        if done == self.shrinks {
            match &mut level.0 {
                State::Ours(up) => up.renumber(gone)?,
                State::Native(_) if !gone.is_empty() => {
                    return Err(Error::Config(ConfigError::Unsupported {
                        what: "leaving a process out of MPI's own collectives",
                        why: "MPI's collectives end the job when a process dies; a node team \
                              with ProcessLevel::Corrected survives it",
                    }))
                }
                State::Native(_) | State::Down(_) => {}
            }
            self.upper.shrinks.store(done + 1, Ordering::Relaxed);
        }
        drop(level);
        self.shrinks += 1;
        Ok(())
    }
}

/// A borrowed operation, passed on whole (its slice loops, and its
/// [`Operation::system`], which the native level needs), where the blanket
/// impl for closures rules out an impl for references.
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
