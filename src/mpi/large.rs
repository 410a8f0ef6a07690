//! The MPI engine's large allreduces: through the node's shared memory
//! ([`NodeRegions`]), or by blocks ([`crate::protocol::scatter`]) between
//! processes that share none. Both run their protocol steps through the
//! call layer.

use std::sync::Arc;

use crate::call::{Control, Delivered};
use crate::contributors::Contributors;
use crate::error::Error;
use crate::mpi::comm::MpiComm;
use crate::mpi::shared_broadcast::Claim;
use crate::mpi::shm::RefList;
use crate::op::Operation;
use crate::protocol::scatter::{Decision, ScatterAllreduce, ScatterOutput, Verdict};
use crate::types::{Collective, OpId, Rank};
use crate::value::data::{Data, Wire};
use crate::value::data_op;
use crate::value::segment::SegmentPool;

impl MpiComm {
    /// An allreduce of `send` by blocks ([`crate::protocol::scatter`]):
    /// the blocks are exchanged and reduced (one operation), the ranks
    /// agree on whether every live rank has every block (a second one, an
    /// allreduce of a [`Verdict`]), and either deliver the blocks or all
    /// fall back to the eager allreduce of their inputs (a third). Every
    /// element of the result is the reduction over one and the same set
    /// of inputs, on every live rank.
    pub(crate) fn all_reduce_by_blocks<T: bytemuck::Pod>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        op: &impl Operation<T>,
    ) -> Result<Option<Contributors>, Error> {
        let first = self.caller.driver.next_op();
        let result = self.by_blocks(send, recv, op);
        // The call takes its three operation numbers whichever way it
        // ended, so that a rank that left it early (an error) numbers its
        // next call as the others do; except when its first operation met
        // another call (a mismatch): every rank of this operation then
        // ends it with that error, the others' calls take one number each
        // (an allreduce of a value on the other side of
        // `BLOCKS_MIN_BYTES`, or another collective), and so does this one.
        let mismatched = matches!(result, Err(Error::Mismatch { op, .. }) if op == first);
        while !mismatched && self.caller.driver.next_op() < first + 3 {
            let Ok(op) = self.caller.driver.enter() else {
                break;
            };
            self.caller.driver.returned(op);
        }
        result
    }

    /// An allreduce through the node's shared memory ([`NodeRegions`]):
    /// this process copies its input into its region, the allreduce of
    /// Section 5 runs on lists of region references (combining joins
    /// them), and the processes fold the inputs the list names, in rank
    /// order, from the regions into `recv`, by blocks each folds once and
    /// the others copy from its region. What Section 5.1 proves of the
    /// value holds of the list (every live process delivers the same one,
    /// every live process's input in it once, a failed one's everywhere or
    /// nowhere), so every element of every live process's result is the
    /// reduction over one and the same set of inputs, bit for bit. A
    /// process that died after it published its input leaves it readable.
    /// A block copied from a region that changed under the copy is folded
    /// here instead; an input slot that changed (only a process the others
    /// left out as failed can see that) ends this process: [`Error::Failed`].
    pub(crate) fn all_reduce_shared<T: bytemuck::Pod>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        op: &impl Operation<T>,
    ) -> Result<Option<Contributors>, Error> {
        let me = self.caller.rank();
        let input = self.publish_input(send);
        let pool = Arc::clone(&self.caller.engine.segments);
        let combine = |acc: &mut Data, other: &Data| join_refs(acc, other, &pool);
        let got = self
            .caller
            .allreduce(Collective::SharedAllreduce, input, &combine)
            .map_err(|e| lengths_may_differ(e, std::mem::size_of_val(send), ""))?;
        let contributors = self.caller.contributors(&got);
        let Delivered { op: id, value, .. } = got;
        let list = delivered_list(&value, id, send.len(), recv)?;
        let regions = self.regions.as_ref().expect("the caller checked");
        // Each process starts at its own share of the blocks.
        let share = (me as usize, self.caller.size().max(1) as usize);
        if regions.fold(&list, Some((u64::from(id) + 1, share)), op, recv) {
            return Ok(contributors);
        }
        Err(self.taken_for_failed())
    }

    /// A reduce to `root` through the node's shared memory: as
    /// [`MpiComm::all_reduce_shared`], the up-correction reduce of Section 4
    /// on lists of region references, and the root alone folds the inputs
    /// its list names, in rank order, from the regions into `recv` (the
    /// others' `recv` untouched). What Section 4 proves of the value holds
    /// of the list: the root's holds every live process's input once and a
    /// failed one's or not. A non-root's slot is written again only once
    /// the root has ended this call ([`MpiComm::claim_slot`]), so the root
    /// reads it whole unless it was itself left out as failed
    /// ([`Error::Failed`]).
    pub(crate) fn reduce_shared<T: bytemuck::Pod>(
        &mut self,
        root: Rank,
        send: &[T],
        recv: &mut [T],
        op: &impl Operation<T>,
    ) -> Result<Option<Contributors>, Error> {
        let input = self.publish_input(send);
        let pool = Arc::clone(&self.caller.engine.segments);
        let combine = |acc: &mut Data, other: &Data| join_refs(acc, other, &pool);
        let got = self
            .caller
            .reduce(root, Collective::SharedReduce, input, &combine)
            .map_err(|e| lengths_may_differ(e, std::mem::size_of_val(send), ""))?;
        let contributors = self.caller.contributors(&got);
        let Some(value) = got.value else {
            return Ok(None);
        };
        let list = delivered_list(&value, got.op, send.len(), recv)?;
        let regions = self.regions.as_ref().expect("the caller checked");
        if regions.fold(&list, None, op, recv) {
            return Ok(contributors);
        }
        Err(self.taken_for_failed())
    }

    /// Copies `send` into this process's next input slot, once no live
    /// process may still read what it held ([`Claim::Reduction`]), and
    /// returns the list of that one reference, as a reduction's value.
    fn publish_input<T: bytemuck::Pod>(&mut self, send: &[T]) -> Data {
        let bytes: &[u8] = bytemuck::cast_slice(send);
        self.claim_slot(Claim::Reduction);
        let next = self.caller.driver.next_op();
        let regions = self.regions.as_mut().expect("the caller checked");
        let list = RefList {
            len: bytes.len() as u64,
            refs: vec![regions.publish(bytes, next)],
        };
        Data::encode(&list.encode(), &self.caller.engine.segments)
    }

    /// An input slot this process read was written again: its owner went
    /// on without this process, which it took for failed. So it has.
    pub(crate) fn taken_for_failed(&mut self) -> Error {
        self.caller.driver.die();
        Error::Failed(self.caller.rank())
    }

    /// [`MpiComm::all_reduce_by_blocks`]'s operations: the blocks, the
    /// verdict, the fall-back if needed.
    fn by_blocks<T: bytemuck::Pod>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        op: &impl Operation<T>,
    ) -> Result<Option<Contributors>, Error> {
        let (me, procs) = (self.caller.rank(), self.caller.size());
        let members: Vec<Rank> = (0..procs)
            .filter(|r| !self.caller.engine.agreed_failed.contains(r))
            .collect();
        let pool = Arc::clone(&self.caller.engine.segments);
        let combine = data_op(op, &pool);
        let bounds = |j: usize| j * send.len() / members.len();
        let blocks = (0..members.len())
            .map(|j| Data::encode(&send[bounds(j)..bounds(j + 1)], &pool))
            .collect();
        let id = self.caller.begin()?;
        if !members.contains(&me) {
            // The others agreed this rank had failed: by decree it has.
            self.caller.driver.die();
            return Err(self.caller.abandon(id, Error::Failed(me)));
        }
        let started = self.caller.driver.call_started();
        let core = ScatterAllreduce::new(me, id, members.clone(), blocks, &combine);
        let mut core = core.map_err(|e| self.caller.abandon(id, e))?;
        let exchanged = self
            .caller
            .driver
            .drive(id, started, &mut core)
            .map_err(|e| lengths_may_differ(e, std::mem::size_of_val(send), ", by blocks"))?;
        // Not kept: its call returns once its sends are made, and then it
        // is finished.
        debug_assert!(crate::protocol::Protocol::is_finished(&core));
        let len = std::mem::size_of_val(send) as u64;
        let known = self.caller.driver.failed_members();
        let left_out = std::mem::take(&mut self.caller.engine.agreed_failed);
        let verdict = Verdict::new(exchanged.is_complete(), len, procs, &known, &left_out);
        let agree_id = self.caller.driver.enter()?;
        let unreadable = || Verdict::new(false, len, procs, &known, &left_out);
        let read = |d: &Data| verdict_of(d, procs).unwrap_or_else(unreadable);
        let agreed = self.caller.allreduce_entered(
            agree_id,
            Collective::Allreduce,
            Data::encode(&verdict.to_words(), &pool),
            &|acc: &mut Data, other: &Data| {
                let mut v = read(acc);
                v.combine(&read(other));
                *acc = Data::encode(&v.to_words(), &pool);
            },
        )?;
        let agreed = read(&agreed.value);
        self.caller.engine.agreed_failed = (0..procs).filter(|&r| agreed.has_failed(r)).collect();
        match agreed.decision() {
            Decision::Deliver => {
                let ScatterOutput::Complete(blocks) = exchanged else {
                    unreachable!("every live rank has every block, this one included")
                };
                for (j, block) in blocks.iter().enumerate() {
                    block.decode_into(&mut recv[bounds(j)..bounds(j + 1)], id, None)?;
                }
                // Every member's blocks are in every block of the result;
                // the ranks agreed failed before the call are not members.
                Ok(Some(Contributors::all_but(procs, &left_out)))
            }
            Decision::LengthsDiffer(shortest, longest) => {
                let size = std::mem::size_of::<T>().max(1) as u64;
                let theirs = if shortest == len { longest } else { shortest };
                Err(Error::LengthMismatch {
                    op: id,
                    mine: send.len(),
                    theirs: (theirs / size) as usize,
                })
            }
            Decision::FallBack => {
                self.fallbacks += 1;
                let input = Data::encode(send, &pool);
                let fallback_id = self.caller.driver.enter()?;
                let kind = Collective::Allreduce;
                let got = self
                    .caller
                    .allreduce_entered(fallback_id, kind, input, &combine)?;
                let contributors = self.caller.contributors(&got);
                got.value.decode_into(recv, got.op, Some(send.len()))?;
                Ok(contributors)
            }
        }
    }
}

/// The list of region references a shared reduction of operation `op`
/// delivered, for inputs of `elements` and an output `recv`: its inputs'
/// length must be `recv`'s ([`Error::LengthMismatch`] otherwise, and for a
/// mismatch of lengths the reduction met).
fn delivered_list<T: bytemuck::Pod>(
    value: &Data,
    op: OpId,
    elements: usize,
    recv: &mut [T],
) -> Result<RefList, Error> {
    let list = match value.to_wire() {
        Some(Wire::Bytes(b)) => RefList::decode(b),
        Some(Wire::Mismatch(lens)) => {
            let size = std::mem::size_of::<T>().max(1) as u64;
            let theirs = lens.map(|l| (l / size) as usize);
            let theirs = theirs
                .into_iter()
                .find(|&l| l != elements)
                .unwrap_or(elements);
            return Err(Error::LengthMismatch {
                op,
                mine: elements,
                theirs,
            });
        }
        _ => None,
    };
    let Some(list) = list else {
        return Err(Error::Mismatch {
            op,
            mine: "a list of references to inputs in shared memory".into(),
            theirs: "another value".into(),
        });
    };
    if list.len != std::mem::size_of_val(recv) as u64 {
        let size = std::mem::size_of::<T>().max(1) as u64;
        return Err(Error::LengthMismatch {
            op,
            mine: recv.len(),
            theirs: (list.len / size) as usize,
        });
    }
    Ok(list)
}

/// A mismatch met by an allreduce whose path depends on its value's size
/// (`bytes`, gone `how`): says so, since two allreduces of different
/// lengths meet as different collectives there. Other errors pass.
fn lengths_may_differ(e: Error, bytes: usize, how: &str) -> Error {
    match e {
        Error::Mismatch { op, mine, theirs } => Error::Mismatch {
            op,
            mine: format!("{mine} of {bytes} bytes{how}"),
            theirs: format!("{theirs} (if both are allreduces, their lengths differ)"),
        },
        e => e,
    }
}

/// `acc` joined with `other`, two lists of region references
/// ([`RefList::join`]); lists of inputs of different lengths give a
/// mismatch of the lengths, and so does a value that is not a list (which
/// no process sends: every value of a [`Collective::SharedAllreduce`] is
/// one).
fn join_refs(acc: &mut Data, other: &Data, pool: &SegmentPool) {
    let list = |d: &Data| -> Result<RefList, Option<[u64; 2]>> {
        match d.to_wire() {
            Some(Wire::Bytes(bytes)) => RefList::decode(bytes).ok_or(Some([bytes.len() as u64; 2])),
            Some(Wire::Mismatch(lens)) => Err(Some(lens)),
            Some(Wire::Elsewhere(_)) | None => Err(None),
        }
    };
    *acc = match (list(acc), list(other)) {
        (Ok(a), Ok(b)) if a.len == b.len => Data::encode(&a.join(&b).encode(), pool),
        (Ok(a), Ok(b)) => Data::mismatch([a.len, b.len]),
        (Err(Some(lens)), _) => Data::mismatch(lens),
        (Ok(a), Err(Some(lens))) => Data::mismatch([a.len, lens[0]]),
        (_, Err(None)) | (Err(None), _) => Data::mismatch([0, 0]),
    };
}

/// The verdict `data` carries, in a team of `procs`; `None` if unreadable
/// (no rank sends such a one).
fn verdict_of(data: &Data, procs: u32) -> Option<Verdict> {
    let mut words = vec![0u64; Verdict::words(procs)];
    data.decode_into(&mut words, 0, None).ok()?;
    Verdict::from_words(&words, procs)
}
