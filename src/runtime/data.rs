//! The value a collective carries on threads: the bytes of a buffer of any
//! length, inline in the message when they fit, else in a shared
//! [`Segment`] the message refers to.
//!
//! Whether a value travels inline depends only on its length and element
//! alignment, so ranks that agree on the length agree on the form. Values
//! of different lengths never combine: the reduction of two of them is a
//! [`Data::Mismatch`], which absorbs everything after it, so every rank
//! that gets such a result reports [`Error::LengthMismatch`] instead of a
//! wrong value.

use bytemuck::Pod;

use crate::error::Error;
use crate::op::Operation;
use crate::runtime::segment::{Segment, SegmentPool};
use crate::types::OpId;

/// 64-bit words of a value carried inline: 56 bytes (seven `f64`), which
/// keeps a message, its header and a reduce's failure information in two
/// cache lines.
pub const INLINE_WORDS: usize = 7;

/// Bytes a value may have and still travel inline.
pub const INLINE_BYTES: usize = INLINE_WORDS * 8;

/// A collective's value on threads.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// At most [`INLINE_BYTES`] bytes, in the message itself.
    Inline {
        /// Bytes used.
        len: u8,
        /// The bytes, in the first `len` of these words' bytes.
        words: [u64; INLINE_WORDS],
    },
    /// Larger values: a reference to a shared segment.
    Shared(Segment),
    /// The reduction of values of different lengths (bytes).
    Mismatch {
        /// The two lengths that met first.
        lens: [u64; 2],
    },
}

impl Data {
    /// No bytes (a barrier's value).
    pub const EMPTY: Data = Data::Inline {
        len: 0,
        words: [0; INLINE_WORDS],
    };

    /// The bytes of `items`: inline if they fit (and need no alignment
    /// above 8), else a segment of `pool`.
    pub fn encode<T: Pod>(items: &[T], pool: &SegmentPool) -> Data {
        let bytes: &[u8] = bytemuck::cast_slice(items);
        if bytes.len() <= INLINE_BYTES && std::mem::align_of::<T>() <= 8 {
            let mut words = [0u64; INLINE_WORDS];
            bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes.len()].copy_from_slice(bytes);
            Data::Inline {
                len: bytes.len() as u8,
                words,
            }
        } else {
            Data::Shared(pool.fill(bytes.len(), |out| out.copy_from_slice(bytes)))
        }
    }

    /// The bytes, or the two lengths that met.
    fn bytes(&self) -> Result<&[u8], [u64; 2]> {
        match self {
            Data::Inline { len, words } => Ok(&bytemuck::cast_slice(words)[..*len as usize]),
            Data::Shared(s) => Ok(s.bytes()),
            Data::Mismatch { lens } => Err(*lens),
        }
    }

    /// Copies the value into `out` if it has exactly `out`'s length, else
    /// [`Error::LengthMismatch`] (`out` untouched). `mine` is this rank's
    /// own input length in elements where it has one (a reduction), to
    /// name the other length when inputs differed.
    pub fn decode_into<T: Pod>(
        &self,
        out: &mut [T],
        op: OpId,
        mine: Option<usize>,
    ) -> Result<(), Error> {
        let size = std::mem::size_of::<T>().max(1);
        let bytes = self.bytes().map_err(|lens| {
            let lens = lens.map(|l| l as usize / size);
            let mine = mine.unwrap_or(out.len());
            let theirs = if lens[0] != mine { lens[0] } else { lens[1] };
            Error::LengthMismatch { op, mine, theirs }
        })?;
        let out_bytes: &mut [u8] = bytemuck::cast_slice_mut(out);
        if bytes.len() != out_bytes.len() {
            return Err(Error::LengthMismatch {
                op,
                mine: out.len(),
                theirs: bytes.len() / size,
            });
        }
        out_bytes.copy_from_slice(bytes);
        Ok(())
    }

    /// `acc = acc ∘ other`, element by element, as elements of `T` (a new
    /// segment of `pool` for shared values); values of different lengths
    /// give a [`Data::Mismatch`].
    pub fn combine<T: Pod>(
        acc: &mut Data,
        other: &Data,
        op: &(impl Operation<T> + ?Sized),
        pool: &SegmentPool,
    ) {
        let (a, b) = match (acc.bytes(), other.bytes()) {
            (Err(_), _) => return,
            (Ok(_), Err(lens)) => {
                *acc = Data::Mismatch { lens };
                return;
            }
            (Ok(a), Ok(b)) if a.len() != b.len() => {
                *acc = Data::Mismatch {
                    lens: [a.len() as u64, b.len() as u64],
                };
                return;
            }
            (Ok(a), Ok(b)) => (a, b),
        };
        if std::mem::size_of::<T>() == 0 {
            return;
        }
        let apply = |out: &mut [u8]| {
            let (a, b): (&[T], &[T]) = (bytemuck::cast_slice(a), bytemuck::cast_slice(b));
            let out: &mut [T] = bytemuck::cast_slice_mut(out);
            for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
                *o = op.apply(x, y);
            }
        };
        let combined = if matches!(acc, Data::Inline { .. }) {
            let mut words = [0u64; INLINE_WORDS];
            apply(&mut bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..a.len()]);
            Data::Inline {
                len: a.len() as u8,
                words,
            }
        } else {
            Data::Shared(pool.fill(a.len(), apply))
        };
        *acc = combined;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::SystemOperation;

    fn round_trip<T: Pod + PartialEq + std::fmt::Debug>(items: &[T], pool: &SegmentPool) -> Data {
        let d = Data::encode(items, pool);
        let mut out = vec![T::zeroed(); items.len()];
        d.decode_into(&mut out, 0, None).unwrap();
        assert_eq!(out, items);
        d
    }

    #[test]
    fn small_values_travel_inline_and_large_ones_in_a_segment() {
        let pool = SegmentPool::new();
        assert!(matches!(
            round_trip(&[1.5f64; 7], &pool),
            Data::Inline { len: 56, .. }
        ));
        assert!(matches!(round_trip(&[1.5f64; 8], &pool), Data::Shared(_)));
        assert!(matches!(
            round_trip::<u8>(&[], &pool),
            Data::Inline { len: 0, .. }
        ));
        assert!(matches!(round_trip(&[3u8; 56], &pool), Data::Inline { .. }));
        // 16-byte alignment never travels inline (inline words are 8-aligned).
        assert!(matches!(round_trip(&[7u128], &pool), Data::Shared(_)));
        let big: Vec<u32> = (0..100_000).collect();
        round_trip(&big, &pool);
    }

    #[test]
    fn a_length_mismatch_is_an_error_and_leaves_the_output_alone() {
        let pool = SegmentPool::new();
        let d = Data::encode(&[1u16, 2, 3], &pool);
        let mut out = [9u16; 2];
        assert_eq!(
            d.decode_into(&mut out, 4, None),
            Err(Error::LengthMismatch {
                op: 4,
                mine: 2,
                theirs: 3
            })
        );
        assert_eq!(out, [9, 9]);
    }

    #[test]
    fn values_combine_element_wise_and_mismatches_absorb() {
        let pool = SegmentPool::new();
        let sum = SystemOperation::sum();
        for n in [0usize, 1, 7, 8, 9, 1000] {
            let a: Vec<f64> = (0..n).map(|i| i as f64).collect();
            let b: Vec<f64> = (0..n).map(|i| 2.0 * i as f64).collect();
            let mut acc = Data::encode(&a, &pool);
            Data::combine::<f64>(&mut acc, &Data::encode(&b, &pool), &sum, &pool);
            let mut out = vec![0.0; n];
            acc.decode_into(&mut out, 0, None).unwrap();
            assert!(
                out.iter().enumerate().all(|(i, &x)| x == 3.0 * i as f64),
                "n = {n}"
            );
        }
        let mut acc = Data::encode(&[1u32; 3], &pool);
        Data::combine::<u32>(&mut acc, &Data::encode(&[1u32; 4], &pool), &sum, &pool);
        assert_eq!(acc, Data::Mismatch { lens: [12, 16] });
        Data::combine::<u32>(&mut acc, &Data::encode(&[1u32; 3], &pool), &sum, &pool);
        assert_eq!(acc, Data::Mismatch { lens: [12, 16] });
        let mut ok = Data::encode(&[1u32; 3], &pool);
        Data::combine::<u32>(&mut ok, &acc, &sum, &pool);
        assert_eq!(ok, Data::Mismatch { lens: [12, 16] });
        let mut out = [0u32; 3];
        assert_eq!(
            ok.decode_into(&mut out, 1, Some(3)),
            Err(Error::LengthMismatch {
                op: 1,
                mine: 3,
                theirs: 4
            })
        );
    }
}
