//! The hierarchy's native process level ([`super::hier`],
//! [`ProcessLevel::Native`](super::hier::ProcessLevel::Native)): Open MPI's
//! own collectives between the proxies, for programs that want its speed
//! and accept its failure model (a process that dies ends the job).
//!
//! * broadcast: `MPI_Bcast` of the value's bytes;
//! * allreduce and reduce with a [`SystemOperation`] on a built-in numeric
//!   type (`f32`, `f64`, `i8`-`i64`, `u8`-`u64`): `MPI_Allreduce` and
//!   `MPI_Reduce` with MPI's matching operation (sums of integers wrap in
//!   both; MPI's `MPI_MIN`/`MPI_MAX` on floats treat NaN as the hardware
//!   does, ours as `f64::min`/`max`);
//! * any other operation (a closure, a user's struct): `MPI_Allgather` of
//!   every process's partial result, then each process folds them in
//!   process order with the operation, so all get the same bits;
//! * barrier: `MPI_Barrier`.
//!
//! Lengths are not checked across processes: MPI requires them equal (a
//! mismatch is MPI's error, which aborts the job).

use std::any::TypeId;

use bytemuck::Pod;
use mpi::collective::{CommunicatorCollectives, Root};
use mpi::topology::{Communicator, SimpleCommunicator};

use crate::error::Error;
use crate::op::{Operation, SystemOperation};
use crate::types::Rank;

/// The proxies' communicator for MPI's own collectives.
pub(crate) struct NativeLevel {
    comm: SimpleCommunicator,
}

/// MPI's operation for ours.
fn mpi_op(op: SystemOperation) -> mpi::collective::SystemOperation {
    use mpi::collective::SystemOperation as M;
    match op {
        SystemOperation::Sum => M::sum(),
        SystemOperation::Product => M::product(),
        SystemOperation::Min => M::min(),
        SystemOperation::Max => M::max(),
        SystemOperation::BitwiseAnd => M::bitwise_and(),
        SystemOperation::BitwiseOr => M::bitwise_or(),
        SystemOperation::BitwiseXor => M::bitwise_xor(),
    }
}

/// Runs `$body` with `$t` bound to the built-in MPI type `T` is, and
/// `$send`/`$recv` as slices of it; evaluates to whether `T` is one.
macro_rules! as_mpi_type {
    ($T:ty, $send:ident, $recv:ident, $body:expr) => {{
        as_mpi_type!(@each $T, $send, $recv, $body, f64, f32, i8, i16, i32, i64, u8, u16, u32, u64)
    }};
    (@each $T:ty, $send:ident, $recv:ident, $body:expr, $($t:ty),*) => {{
        let mut done = false;
        $(
            if !done && TypeId::of::<$T>() == TypeId::of::<$t>() {
                let $send: &[$t] = bytemuck::cast_slice($send);
                let $recv: &mut [$t] = bytemuck::cast_slice_mut($recv);
                $body;
                done = true;
            }
        )*
        done
    }};
}

impl NativeLevel {
    /// A duplicate of the world communicator (collective over the world).
    pub(crate) fn new() -> NativeLevel {
        NativeLevel {
            comm: SimpleCommunicator::world().duplicate(),
        }
    }

    /// `MPI_Bcast` of `buf` from `root`.
    pub(crate) fn broadcast<T: Pod>(&mut self, root: Rank, buf: &mut [T]) {
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(buf);
        self.comm.process_at_rank(root as i32).broadcast_into(bytes);
    }

    /// The reduction of every process's `send` into `recv` on every process
    /// (`root: None`) or on `root` only.
    pub(crate) fn reduce<T: Pod>(
        &mut self,
        root: Option<Rank>,
        send: &[T],
        recv: &mut [T],
        op: &impl Operation<T>,
    ) -> Result<(), Error> {
        op.check()?;
        if send.len() != recv.len() {
            return Err(Error::LengthMismatch {
                op: 0,
                mine: recv.len(),
                theirs: send.len(),
            });
        }
        let me = self.comm.rank() as Rank;
        if let Some(system) = op.system() {
            let comm = &self.comm;
            let native = as_mpi_type!(
                T,
                send,
                recv,
                match root {
                    None => comm.all_reduce_into(send, recv, mpi_op(system)),
                    Some(r) if r == me =>
                        comm.process_at_rank(r as i32)
                            .reduce_into_root(send, recv, mpi_op(system)),
                    Some(r) => comm
                        .process_at_rank(r as i32)
                        .reduce_into(send, mpi_op(system)),
                }
            );
            if native {
                return Ok(());
            }
        }
        // Any other operation: every partial result to every process, folded
        // in process order (the same bits everywhere).
        let mine: &[u8] = bytemuck::cast_slice(send);
        let mut all = vec![0u8; mine.len() * self.comm.size() as usize];
        self.comm.all_gather_into(mine, &mut all[..]);
        if root.is_some_and(|r| r != me) {
            return Ok(());
        }
        let parts: Vec<Vec<T>> = all
            .chunks(mine.len().max(1))
            .map(|chunk| {
                let mut part = vec![T::zeroed(); send.len()];
                bytemuck::cast_slice_mut::<T, u8>(&mut part).copy_from_slice(chunk);
                part
            })
            .collect();
        if let Some((first, rest)) = parts.split_first() {
            recv.copy_from_slice(first);
            for part in rest {
                op.accumulate(recv, part);
            }
        }
        Ok(())
    }

    /// `MPI_Barrier`.
    pub(crate) fn barrier(&mut self) {
        self.comm.barrier();
    }
}
