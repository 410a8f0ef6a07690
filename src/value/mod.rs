//! How a collective's value is represented between the call layer and the
//! engines: [`data::Data`], the bytes of a buffer of any length, inline in
//! a message when they fit, else in a shared [`segment::Segment`] that
//! messages refer to (or, on threads, a buffer lent for the call,
//! [`lent`], and a sum reduced by chunks, [`lazy`]); [`Packet`], the one
//! wire type every core's payload travels in. Both engines own values so:
//! the thread runtime moves packets through its mailboxes, the MPI engine
//! frames them into bytes (`crate::mpi::wire`).

pub mod data;
pub mod lazy;
pub mod lent;
pub mod lent_owned;
mod packet;
pub(crate) mod recycle;
pub mod segment;

pub use packet::Packet;

use crate::op::Operation;
use data::Data;
use segment::SegmentPool;

/// The reduction of elements of `T` as a function on values of any length
/// (new segments come from `pool`).
pub(crate) fn data_op<'a, T: bytemuck::Pod>(
    op: &'a impl Operation<T>,
    pool: &'a SegmentPool,
) -> impl Fn(&mut Data, &Data) + Sync + 'a {
    move |acc: &mut Data, other: &Data| Data::combine(acc, other, op, pool)
}
