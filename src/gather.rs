//! Allgather, reduce-scatter and split, written once over the fault-tolerant
//! allreduce ([`all_reduce_into_contributors`]), so every
//! engine has them with its guarantee word for word (docs/algorithms.md,
//! *Allgather, reduce-scatter and split through the allreduce*).
//!
//! * **Allgather**: each rank places its block at its offset in a vector of
//!   `size` blocks, zero elsewhere, and the vectors are reduced by
//!   [`Disjoint`], a bitwise or: no two ranks' blocks overlap, so the
//!   result holds each contributor's block as it sent it (any element type,
//!   floats included) and zeros where a rank was left out. The allreduce's
//!   guarantee (reduce paper Section 5.1: every live rank's input exactly
//!   once, each failed rank's everywhere or nowhere, the same contributors
//!   on every rank) is then the allgather's: every survivor gets every live
//!   rank's block, and a rank that failed during the call has its block in
//!   every survivor's result or in none.
//! * **Reduce-scatter** (equal blocks): the allreduce of the whole vector,
//!   of which each rank keeps its block: every block over one and the same
//!   set of contributions.
//! * **Split**: every rank's color and key gathered, so every live rank
//!   sees the same table, then each regroups to its color's ranks.
//!
//! The first two move `size` times the data their MPI counterparts move (the whole
//! vector crosses every edge of the allreduce): the guarantee first, at a
//! cost measured in docs/benchmarks.md.

use std::cell::Cell;

use crate::buffer::Element;
use crate::call::{all_reduce_contributors, Communicator};
use crate::contributors::Contributors;
use crate::error::Error;
use crate::op::Operation;
use crate::types::Rank;

/// Combines vectors whose nonzero parts never overlap: the bitwise or of
/// their bytes, so that a block comes through bit for bit whatever its
/// element type. Associative and commutative, as every reduction must be.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Disjoint;

impl<T: Element> Operation<T> for Disjoint {
    fn apply(&self, a: &T, b: &T) -> T {
        let mut out = *a;
        or_into(bytemuck::bytes_of_mut(&mut out), bytemuck::bytes_of(b));
        out
    }

    fn apply_slices(&self, a: &[T], b: &[T], out: &mut [T]) {
        out.copy_from_slice(a);
        self.accumulate(out, b);
    }

    fn accumulate(&self, acc: &mut [T], b: &[T]) {
        or_into(bytemuck::cast_slice_mut(acc), bytemuck::cast_slice(b));
    }
}

/// `acc[i] |= b[i]`, a word at a time where the lengths allow.
fn or_into(acc: &mut [u8], b: &[u8]) {
    let mut words = acc.chunks_exact_mut(8);
    let mut theirs = b.chunks_exact(8);
    for (x, y) in (&mut words).zip(&mut theirs) {
        let v = u64::from_ne_bytes((&*x).try_into().expect("8 bytes"))
            | u64::from_ne_bytes(y.try_into().expect("8 bytes"));
        x.copy_from_slice(&v.to_ne_bytes());
    }
    for (x, y) in words.into_remainder().iter_mut().zip(theirs.remainder()) {
        *x |= y;
    }
}

/// Vectors up to this many bytes come from a per-thread buffer reused call
/// after call; larger ones are allocated for their call (a buffer kept
/// would hold their memory for the thread's life).
const SCRATCH_MAX_BYTES: usize = 1 << 20;

thread_local! {
    /// A buffer of 16-byte words (aligned for every element type) that
    /// [`with_zeroed`] lends.
    static SCRATCH: Cell<Vec<u128>> = const { Cell::new(Vec::new()) };
}

/// Runs `f` on `len` zeroed elements: this thread's reused buffer where
/// they fit in [`SCRATCH_MAX_BYTES`] (taken out while `f` runs, so a call
/// within `f` gets a buffer of its own), else a fresh vector. A loop of
/// small gathers allocates nothing per call.
fn with_zeroed<T: Element, R>(len: usize, f: impl FnOnce(&mut [T]) -> R) -> R {
    let size = std::mem::size_of::<T>();
    let bytes = len.saturating_mul(size);
    if size == 0 || bytes > SCRATCH_MAX_BYTES {
        return f(&mut vec![T::zeroed(); len]);
    }
    let mut words = SCRATCH.take();
    words.clear();
    words.resize(bytes.div_ceil(16), 0);
    let all: &mut [u8] = bytemuck::cast_slice_mut(&mut words[..]);
    let got = f(bytemuck::cast_slice_mut(&mut all[..bytes]));
    SCRATCH.set(words);
    got
}

/// [`all_gather_into`](crate::Collectives::all_gather_into)'s body through
/// the allreduce: `send` placed at this rank's offset, the rest zero,
/// reduced by [`Disjoint`] into `recv`.
pub(crate) fn all_gather<C, T>(
    comm: &mut C,
    send: &[T],
    recv: &mut [T],
) -> Result<Contributors, Error>
where
    C: Communicator,
    T: Element,
{
    let control = comm.control();
    let (size, me) = (control.size() as usize, control.rank() as usize);
    let n = send.len();
    let whole = n.checked_mul(size).ok_or(Error::BlockLength {
        len: usize::MAX,
        size: size as u32,
    })?;
    with_zeroed(whole, |placed: &mut [T]| {
        placed[me * n..(me + 1) * n].copy_from_slice(send);
        all_reduce_contributors(comm, &placed[..], recv, Disjoint)
    })
}

/// [`reduce_scatter_block_into`](crate::Collectives::reduce_scatter_block_into)'s
/// body through the allreduce: the allreduce of the whole vector, this
/// rank's block kept.
pub(crate) fn reduce_scatter_block<C, T, O>(
    comm: &mut C,
    send: &[T],
    recv: &mut [T],
    op: O,
) -> Result<Contributors, Error>
where
    C: Communicator,
    T: Element,
    O: Operation<T>,
{
    let size = comm.control().size() as usize;
    let me = comm.control().rank() as usize;
    if send.len() % size != 0 {
        // The same answer on every rank that passes the same length; a
        // rank whose length differs meets the others' allreduce as a
        // length mismatch.
        return Err(Error::BlockLength {
            len: send.len(),
            size: size as u32,
        });
    }
    let n = send.len() / size;
    if recv.len() != n {
        // Takes part in full (its input reaches the others), then fails
        // alone, `recv` untouched: the allreduce refuses an output of
        // another length than its inputs (a part of `recv` stands in where
        // `recv` itself has the inputs' length); the lengths the error
        // names are the block's.
        let probe_len = if recv.len() == send.len() {
            n
        } else {
            recv.len()
        };
        let got = all_reduce_contributors(comm, send, &mut recv[..probe_len], op);
        return Err(match got {
            Err(Error::LengthMismatch { op, mine, .. }) if mine == probe_len => {
                Error::LengthMismatch {
                    op,
                    mine: recv.len(),
                    theirs: n,
                }
            }
            Err(e) => e,
            // Not reached (the lengths differ); an error all the same.
            Ok(_) => Error::BlockLength {
                len: send.len(),
                size: size as u32,
            },
        });
    }
    with_zeroed(send.len(), |whole: &mut [T]| {
        let who = all_reduce_contributors(comm, send, &mut whole[..], op)?;
        recv.copy_from_slice(&whole[me * n..(me + 1) * n]);
        Ok(who)
    })
}

/// [`split`](crate::Collectives::split)'s body: every rank's color (plus one, so that a
/// rank left out of the allgather, whose block is zeros, has none) and key
/// gathered, then the communicator regrouped to its color's ranks, by key,
/// ties by rank.
pub(crate) fn split<C: Communicator>(
    comm: &mut C,
    color: u32,
    key: u32,
) -> Result<Vec<Rank>, Error> {
    let size = comm.control().size();
    let mut table = vec![[0u64; 2]; size as usize];
    comm.all_gather_items(&[[u64::from(color) + 1, u64::from(key)]], &mut table[..])?;
    let mut members: Vec<Rank> = (0..size)
        .filter(|&r| table[r as usize][0] == u64::from(color) + 1)
        .collect();
    members.sort_by_key(|&r| (table[r as usize][1], r));
    comm.control_mut().regroup(&members)?;
    Ok(members)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reused buffer comes back zeroed after a call that wrote it, a
    /// call within a call gets its own, and the bytes of a block come
    /// through `Disjoint` unchanged.
    #[test]
    fn the_reused_buffer_is_zeroed_and_nested_calls_get_their_own() {
        with_zeroed(5, |a: &mut [f64]| a.fill(-0.0));
        with_zeroed(5, |a: &mut [f64]| {
            assert!(a.iter().all(|x| x.to_bits() == 0));
            a.fill(1.0);
            with_zeroed(3, |b: &mut [u128]| {
                assert_eq!(b, [0; 3]);
                b.fill(7);
            });
            assert_eq!(a, [1.0; 5], "untouched by the nested call");
        });
        let big = SCRATCH_MAX_BYTES / 8 + 1;
        with_zeroed(big, |a: &mut [u64]| {
            assert!(a.len() == big && a.iter().all(|&x| x == 0))
        });
        let nan = f64::from_bits(0x7ff8_dead_beef_0001);
        let mut acc = [0.0, -0.0];
        Disjoint.accumulate(&mut acc[..], &[nan, 0.0]);
        assert_eq!(acc.map(f64::to_bits), [nan.to_bits(), (-0.0f64).to_bits()]);
    }
}
