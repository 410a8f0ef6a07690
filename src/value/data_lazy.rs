//! What a reduction's delivered value gives its rank when it is a lazy
//! sum of inputs ([`crate::value::lazy`]): the reduction by chunks, an
//! allgather's blocks, a reduce-scatter's own block; values of the other
//! forms decode as they are. A child of `data.rs`, whose value forms it
//! reads.

use bytemuck::Pod;

use super::{Data, Form};
use crate::error::Error;
use crate::op::Operation;
use crate::types::{OpId, Rank};
use crate::value::lazy::{LazySum, Reducer};
use crate::value::lent::LendingOutput;
use crate::value::segment::SegmentPool;

impl Data {
    /// [`Data::decode_into`] for a reduction's result: a lazy sum is
    /// reduced first, with `reduce`, together with every rank that got it
    /// (`by` is this rank, whose `out` the others may write chunks into).
    pub fn reduce_into<T: Pod>(
        &self,
        by: Reducer<'_>,
        out: &mut [T],
        op: OpId,
        mine: usize,
        reduce: &(impl Operation<T> + ?Sized),
        pool: &SegmentPool,
    ) -> Result<(), Error> {
        match self.form() {
            Form::Bytes(_) | Form::Lent(_) | Form::Mismatch(_) | Form::Elsewhere(_) => {
                self.decode_into(out, op, Some(mine))
            }
            Form::Lazy(sum) => {
                Self::check_lazy_len::<T>(sum, out.len(), op)?;
                sum.reduce_into(by, out, reduce, pool)
                    .map_err(|theirs| Self::type_mismatch::<T>(op, theirs))
            }
        }
    }

    /// [`Data::reduce_into`] for a lazy sum, into an output of `elements`
    /// `T` lent at the call's entry ([`Data::lazy`]). `None` if this is not
    /// a lazy sum: the caller ends the loan and decodes the value.
    pub fn reduce_lent<T: Pod>(
        &self,
        by: Reducer<'_>,
        out: &LendingOutput<'_>,
        elements: usize,
        op: OpId,
        reduce: &(impl Operation<T> + ?Sized),
    ) -> Option<Result<(), Error>> {
        let Form::Lazy(sum) = self.form() else {
            return None;
        };
        Some(Self::check_lazy_len::<T>(sum, elements, op).and_then(|()| {
            sum.reduce_lent(by, out, reduce)
                .map_err(|theirs| Self::type_mismatch::<T>(op, theirs))
        }))
    }

    /// An allgather's result from this value, the inputs agreed (a lazy
    /// sum of blocks, [`LazySum::gather_into`]), into `out` of `procs`
    /// blocks of `block` elements; rank `me` gathers. A value that is not
    /// a lazy sum (inputs of different lengths, or of ranks that did not
    /// lend theirs) is [`Error::LengthMismatch`] or [`Error::Mismatch`].
    pub fn gather_into<T: Pod>(
        &self,
        me: Rank,
        out: &mut [T],
        op: OpId,
        block: usize,
    ) -> Result<(), Error> {
        let size = std::mem::size_of::<T>().max(1);
        match self.form() {
            Form::Lazy(sum) => {
                Self::check_lazy_len::<T>(sum, block, op)?;
                let whole = block * sum.procs();
                if out.len() != whole {
                    return Err(Error::LengthMismatch {
                        op,
                        mine: out.len(),
                        theirs: whole,
                    });
                }
                sum.gather_into(me, bytemuck::cast_slice_mut(out));
                Ok(())
            }
            Form::Mismatch(lens) => Err(Data::mismatch_error(op, lens, block, size)),
            _ => Err(Error::Mismatch {
                op,
                mine: "an allgather of blocks lent in place".into(),
                theirs: "an allgather of a vector of blocks".into(),
            }),
        }
    }

    /// A reduce-scatter's block of this value, the inputs agreed (a lazy
    /// sum, [`LazySum::reduce_range_into`]): elements `range` of the
    /// reduction with `reduce`, into `out`; rank `me` reduces. Errors as
    /// [`Data::gather_into`]'s.
    pub fn reduce_range_into<T: Pod>(
        &self,
        me: Rank,
        range: std::ops::Range<usize>,
        out: &mut [T],
        op: OpId,
        whole: usize,
        reduce: &(impl Operation<T> + ?Sized),
    ) -> Result<(), Error> {
        let size = std::mem::size_of::<T>().max(1);
        match self.form() {
            Form::Lazy(sum) => {
                Self::check_lazy_len::<T>(sum, whole, op)?;
                let bytes = range.start * size..range.end * size;
                sum.reduce_range_into(me, bytes, reduce, out);
                Ok(())
            }
            Form::Mismatch(lens) => Err(Data::mismatch_error(op, lens, whole, size)),
            _ => Err(Error::Mismatch {
                op,
                mine: "a reduce-scatter of inputs lent in place".into(),
                theirs: "a reduce-scatter of inputs copied".into(),
            }),
        }
    }

    /// Rank `me` will not read the inputs of this value, if it is a lazy
    /// sum ([`Lent::refuse`] on each other's): their owners need not wait
    /// for it.
    pub fn refuse_inputs(&self, me: Rank) {
        if let Form::Lazy(sum) = self.form() {
            sum.refuse_inputs(me);
        }
    }

    fn check_lazy_len<T>(sum: &LazySum, elements: usize, op: OpId) -> Result<(), Error> {
        let size = std::mem::size_of::<T>().max(1);
        if sum.len() != elements * std::mem::size_of::<T>() {
            return Err(Error::LengthMismatch {
                op,
                mine: elements,
                theirs: sum.len() / size,
            });
        }
        Ok(())
    }

    fn type_mismatch<T>(op: OpId, (size, align): (usize, usize)) -> Error {
        Error::Mismatch {
            op,
            mine: format!(
                "elements of {} bytes, aligned to {}",
                std::mem::size_of::<T>(),
                std::mem::align_of::<T>()
            ),
            theirs: format!("elements of {size} bytes, aligned to {align}"),
        }
    }
}
