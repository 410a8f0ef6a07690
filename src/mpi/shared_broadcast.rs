//! Large broadcasts through the node's shared memory, and the rule that
//! lets a process write one of its region's input slots again
//! ([`MpiComm::claim_slot`]).
//!
//! A root whose value is [`SHARED_MIN_BYTES`] or more (up to a slot) and
//! whose processes all run on one node copies it once into its region's
//! next input slot and broadcasts a name for it ([`Data::elsewhere`]: its
//! region, the slot's call number, the length) with the team's broadcast
//! algorithm. Tree, correction and gossip messages then carry three words,
//! not the value; every receiver copies the value once, straight from the
//! root's region into its buffer, and checks after the copy that the slot
//! still holds that call. Not in the papers: what Corrected Trees Section 3
//! proves of the value holds of its name, and the name stays readable
//! whoever dies (a SIGKILLed root's region stays mapped in the others), so
//! every live process that delivers has the root's bytes.
//!
//! **When a slot may be written again.** A broadcast's root returns once
//! its sends are made, so nothing in the protocol tells it that every
//! receiver has copied; an allreduce's publisher, two large calls later,
//! may meet a reader still in a broadcast between. So each process writes
//! in its region, as each call that may read others' slots ends, the
//! operation it has finished every such call before
//! ([`NodeRegions::finish`]), and a process about to write a slot waits
//! (serving) until every other process has finished the operation that
//! last published into it, or is known failed, has exited (certain on
//! this node), or has left. A broadcast's root waits at most a failure
//! timeout, and then sends this value's bytes instead (a receiver busy
//! outside the library is not a failure); it does not wait again for the
//! same holder until that one moves on. An allreduce's or a reduce's
//! publisher, which cannot change its path alone, waits at most the operation timeout and
//! then declares the holders failed (the rule the driver applies to a
//! process absent for a whole operation), which tells them: a holder that
//! reads the slot afterwards finds it changed and ends with
//! [`Error::Failed`].

use crate::call::{Control, Delivered};
use crate::driver::{Driver, Transport};
use crate::error::Error;
use crate::mpi::comm::{MpiComm, SHARED_MIN_BYTES};
use crate::mpi::shm::RegionRef;
use crate::mpi::transport::MpiTransport;
use crate::types::{Rank, Tick};
use crate::value::data::Data;

/// How long a process about to write a slot looks at its holders' words
/// before it waits serving (nanoseconds): a copy of a slot takes
/// microseconds to a millisecond.
const CLAIM_SPIN_NS: Tick = 200_000;

/// How long a process waits for the holders of a slot it is about to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// A broadcast's root: at most a failure timeout, then it goes without.
    Broadcast,
    /// An allreduce's or a reduce's publisher: at most the operation
    /// timeout, then the holders are declared failed.
    Reduction,
}

impl MpiComm {
    /// Whether a broadcast of `bytes` from this process goes through its
    /// region: every process on this node, the value within a slot, more
    /// than one process.
    pub(crate) fn shares_broadcast(&self, bytes: usize) -> bool {
        self.regions
            .as_ref()
            .is_some_and(|r| bytes >= SHARED_MIN_BYTES && bytes <= r.slot_bytes())
            && self.caller.size() > 1
    }

    /// The root's value as a name for its copy in this process's region, if
    /// the slot could be claimed ([`Claim::Broadcast`]); `None`: the value
    /// goes as bytes.
    pub(crate) fn publish_broadcast(&mut self, bytes: &[u8]) -> Option<Data> {
        if !self.claim_slot(Claim::Broadcast) {
            self.caller.engine.counts.held_slot += 1;
            return None;
        }
        self.caller.engine.counts.shared += 1;
        let op = self.caller.driver.next_op();
        let regions = self.regions.as_mut()?;
        let r = regions.publish(bytes, op);
        Some(Data::elsewhere([
            u64::from(r.rank),
            r.seq,
            bytes.len() as u64,
        ]))
    }

    /// A receiver's end of a broadcast whose value is `name`
    /// ([`MpiComm::publish_broadcast`]): the root's bytes copied into
    /// `buf`, or [`Error::LengthMismatch`] (`buf` untouched), or
    /// [`Error::Failed`] if the slot changed (the root gave up on this
    /// process, which was declared failed).
    pub(crate) fn receive_shared<T: bytemuck::Pod>(
        &mut self,
        got: &Delivered<Data>,
        name: [u64; 3],
        buf: &mut [T],
    ) -> Result<(), Error> {
        let [rank, seq, len] = name;
        let out: &mut [u8] = bytemuck::cast_slice_mut(buf);
        if len != out.len() as u64 {
            let size = std::mem::size_of::<T>().max(1) as u64;
            return Err(Error::LengthMismatch {
                op: got.op,
                mine: buf.len(),
                theirs: (len / size) as usize,
            });
        }
        let r = RegionRef {
            rank: Rank::try_from(rank).unwrap_or(Rank::MAX),
            seq,
        };
        let regions = self.regions.as_ref().ok_or(Error::Mismatch {
            op: got.op,
            mine: "no shared memory".into(),
            theirs: "a value in shared memory".into(),
        })?;
        // SAFETY: `view`'s contract: checked with `still` after the copy,
        // and the copy refused if the slot changed.
        let copied = match unsafe { regions.view(r, out.len()) } {
            Some(bytes) => {
                out.copy_from_slice(bytes);
                regions.still(r)
            }
            None => false,
        };
        if copied {
            Ok(())
        } else {
            Err(self.taken_for_failed())
        }
    }

    /// Waits, serving, until no live process may still read the input slot
    /// that this process's next publish writes (the module doc): true if it
    /// may be written. A broadcast gives up after a failure timeout (false),
    /// an allreduce after the operation timeout, declaring the holders
    /// failed (true).
    pub(crate) fn claim_slot(&mut self, claim: Claim) -> bool {
        let Some(regions) = self.regions.as_ref() else {
            return false;
        };
        let Some(last) = regions.next_slot_op() else {
            return true;
        };
        let me = self.caller.driver.transport().rank();
        let procs = self.caller.driver.transport().procs();
        // A slot published since the last shrink or split is read by the
        // communicator's members alone: a process of another sub-team,
        // whose operations are numbered on their own, holds nothing of it.
        let members = self.caller.driver.members();
        let ours = last >= self.caller.regrouped_at();
        let holds = |d: &Driver<'static, MpiTransport>, p: Rank| {
            let t = d.transport();
            p != me
                && (!ours || members.of_transport(p).is_some())
                && regions.finished(p) <= last
                && !t.is_failed(p)
                && !t.peer(p).is_some_and(|v| v.left || v.exited)
        };
        let first_holder = |d: &Driver<'static, MpiTransport>| (0..procs).find(|&p| holds(d, p));
        let Some(holder) = first_holder(&self.caller.driver) else {
            return true;
        };
        if claim == Claim::Broadcast && self.stalled == Some((holder, regions.finished(holder))) {
            return false;
        }
        // The holder is most likely copying or folding right now: look
        // again and again for a while (yielding the core where processes
        // share cores), as a message's arrival would wake a wait, before
        // waiting serving, whose naps are tens of microseconds long.
        let start = self.caller.driver.transport().now();
        while self.caller.driver.transport().now().saturating_sub(start) < CLAIM_SPIN_NS {
            if first_holder(&self.caller.driver).is_none() {
                self.stalled = None;
                return true;
            }
            if self.oversubscribed {
                std::thread::yield_now();
            } else {
                for _ in 0..64 {
                    std::hint::spin_loop();
                }
            }
        }
        let config = self.caller.driver.config();
        let limit: Tick = match claim {
            Claim::Broadcast => config.failure_timeout,
            Claim::Reduction => config.op_timeout,
        };
        self.caller.driver.hold_back(|d| {
            first_holder(d).is_some() && d.transport().now().saturating_sub(start) < limit
        });
        let Some(holder) = first_holder(&self.caller.driver) else {
            self.stalled = None;
            return true;
        };
        match claim {
            Claim::Broadcast => {
                self.stalled = Some((holder, regions.finished(holder)));
                false
            }
            Claim::Reduction => {
                let transport = self.caller.driver.transport();
                for p in (0..procs).filter(|&p| holds(&self.caller.driver, p)) {
                    transport.declare_failed(p);
                }
                true
            }
        }
    }

    /// Publishes that this process has ended every call before its next
    /// operation: it reads no slot of an earlier call again
    /// ([`crate::mpi::shm::NodeRegions::finish`]).
    pub(crate) fn finish_reads(&self) {
        if let Some(regions) = &self.regions {
            regions.finish(self.caller.driver.next_op());
        }
    }
}
