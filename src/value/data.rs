//! The value a collective carries on threads: the bytes of a buffer of any
//! length, inline in the message when they fit, else in a shared
//! [`Segment`] the message refers to.
//!
//! Whether a value travels inline depends only on its length and element
//! alignment, so ranks that agree on the length agree on the form. Values
//! of different lengths never combine: the reduction of two of them is a
//! mismatch ([`Data::mismatch`]), which absorbs everything after it, so
//! every rank that gets such a result reports [`Error::LengthMismatch`]
//! instead of a wrong value.

use std::num::NonZeroU64;

use bytemuck::Pod;

use crate::error::Error;
use crate::op::Operation;
use crate::types::{OpId, Rank};
use crate::value::lazy::LazySum;
use crate::value::lent::{Lent, LentOutput};
use crate::value::segment::{Segment, SegmentPool};
use std::sync::Arc;

/// Bytes a value may have and still travel inline: six `f64` and then some.
pub const INLINE_BYTES: usize = 55;

/// A value of at most [`INLINE_BYTES`] bytes, or a length mismatch, held in
/// seven words. The last byte (the 56th) is a marker: the length plus one,
/// or 255 for a length mismatch. Never zero, so `Data` needs no tag of its own, and it
/// is written and copied as whole words only: a tag or length of its own,
/// written byte-wise and read back in wider loads, stalled store
/// forwarding on every move of a value (measured: 15 % on the two-rank
/// 8-byte allreduce).
#[derive(Clone, Copy, PartialEq, Eq, bytemuck::NoUninit)]
#[repr(C)]
pub struct Inline {
    words: [u64; 6],
    last: NonZeroU64,
}

/// The marker of a length mismatch (the two lengths in the first words).
const MISMATCH: u8 = u8::MAX;

/// The marker of a value held elsewhere: three words that name it for the
/// engine that resolves it ([`Data::elsewhere`]).
const ELSEWHERE: u8 = u8::MAX - 1;

/// What an inline value holds, by marker.
enum Held<'a> {
    Bytes(&'a [u8]),
    Mismatch([u64; 2]),
    Elsewhere([u64; 3]),
}

impl Inline {
    /// Seven words whose last byte is replaced by `marker` (never 0).
    #[inline]
    fn from_words(mut words: [u64; 7], marker: u8) -> Inline {
        let mut last = words[6].to_ne_bytes();
        last[7] = marker;
        words[6] = u64::from_ne_bytes(last);
        let [w0, w1, w2, w3, w4, w5, w6] = words;
        Inline {
            words: [w0, w1, w2, w3, w4, w5],
            last: NonZeroU64::new(w6).expect("the marker is not zero"),
        }
    }

    /// `f` writes the value's bytes (at most [`INLINE_BYTES`]) into zeroed
    /// words.
    #[inline]
    fn build(len: usize, f: impl FnOnce(&mut [u8])) -> Inline {
        debug_assert!(len <= INLINE_BYTES);
        let mut words = [0u64; 7];
        f(&mut bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..len]);
        Inline::from_words(words, len as u8 + 1)
    }

    #[inline]
    fn marker(&self) -> u8 {
        self.last.get().to_ne_bytes()[7]
    }

    /// The bytes, the two lengths that met, or the name of a value held
    /// elsewhere.
    #[inline]
    fn held(&self) -> Held<'_> {
        match self.marker() {
            MISMATCH => Held::Mismatch([self.words[0], self.words[1]]),
            ELSEWHERE => Held::Elsewhere([self.words[0], self.words[1], self.words[2]]),
            m => Held::Bytes(&bytemuck::bytes_of(self)[..m as usize - 1]),
        }
    }
}

/// Bytes a value may have and still travel in a message's one-line form
/// (five words; `runtime/one_line.rs`).
pub const SHORT_BYTES: usize = 40;

impl Inline {
    /// The words that hold a value of at most [`SHORT_BYTES`] bytes, and
    /// its marker; `None` for a longer value or a mismatch. The words
    /// beyond them are zero (checked), so [`Inline::from_short`] gives an
    /// equal value back.
    #[inline]
    fn short(&self) -> Option<([u64; 5], u8)> {
        let marker = self.marker();
        let unmarked = u64::from_ne_bytes([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0]);
        let rest_zero = self.words[5] == 0 && self.last.get() & unmarked == 0;
        let [w0, w1, w2, w3, w4, _] = self.words;
        (marker as usize - 1 <= SHORT_BYTES && rest_zero).then_some(([w0, w1, w2, w3, w4], marker))
    }
}

impl std::fmt::Debug for Inline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.held() {
            Held::Bytes(b) => write!(f, "Inline({b:?})"),
            Held::Mismatch(lens) => write!(f, "Mismatch({lens:?})"),
            Held::Elsewhere(name) => write!(f, "Elsewhere({name:?})"),
        }
    }
}

/// A collective's value on threads: 56 bytes, the size of its inline form.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// At most [`INLINE_BYTES`] bytes in the message itself, the
    /// reduction of values of different lengths, or the name of a value
    /// held elsewhere ([`Data::elsewhere`]).
    Inline(Inline),
    /// Larger values, by reference.
    Shared(Shared),
}

/// A larger value, by reference.
#[derive(Clone, Debug, PartialEq)]
pub enum Shared {
    /// Its bytes, in a shared segment.
    Bytes(Segment),
    /// A large allreduce's inputs, reduced by every rank together once
    /// they agree on them ([`crate::value::lazy`]).
    Lazy(Arc<LazySum>),
    /// A large broadcast's value: the root's own buffer, lent for its call
    /// ([`crate::value::lent`]); each receiver copies it from there once.
    Lent(Arc<Lent>),
}

/// A value as a transport between processes carries it
/// ([`Data::to_wire`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire<'a> {
    /// Its bytes.
    Bytes(&'a [u8]),
    /// The two lengths of a mismatch.
    Mismatch([u64; 2]),
    /// The name of a value held elsewhere ([`Data::elsewhere`]).
    Elsewhere([u64; 3]),
}

/// What a value is, by form.
enum Form<'a> {
    Bytes(&'a [u8]),
    Lazy(&'a Arc<LazySum>),
    Lent(&'a Arc<Lent>),
    Mismatch([u64; 2]),
    Elsewhere([u64; 3]),
}

impl Form<'_> {
    fn len(&self) -> u64 {
        match self {
            Form::Bytes(b) => b.len() as u64,
            Form::Lazy(l) => l.len() as u64,
            Form::Lent(l) => l.len() as u64,
            Form::Mismatch(_) | Form::Elsewhere(_) => 0,
        }
    }
}

// The shared form sits beside the inline marker: no tag.
const _: () = assert!(std::mem::size_of::<Data>() == 56);

impl Data {
    /// No bytes (a barrier's value).
    pub const EMPTY: Data = Data::Inline(Inline {
        words: [0; 6],
        last: match NonZeroU64::new(u64::from_ne_bytes([0, 0, 0, 0, 0, 0, 0, 1])) {
            Some(m) => m,
            None => panic!("marker 1 is not zero"),
        },
    });

    /// This value's short form (five words and the inline marker), if it
    /// is inline and at most [`SHORT_BYTES`] long.
    #[inline]
    pub(crate) fn short(&self) -> Option<([u64; 5], u8)> {
        match self {
            Data::Inline(inline) => inline.short(),
            Data::Shared(_) => None,
        }
    }

    /// The value of a short form [`Data::short`] gave.
    #[inline]
    pub(crate) fn from_short(words: [u64; 5], marker: u8) -> Data {
        let [w0, w1, w2, w3, w4] = words;
        Data::Inline(Inline::from_words([w0, w1, w2, w3, w4, 0, 0], marker))
    }

    /// The reduction of two values of `lens` bytes.
    pub fn mismatch(lens: [u64; 2]) -> Data {
        Data::Inline(Inline::from_words(
            [lens[0], lens[1], 0, 0, 0, 0, 0],
            MISMATCH,
        ))
    }

    /// A value held outside this process's memory, named by three words
    /// that the engine which made it resolves (the MPI engine: a large
    /// broadcast's value in the root's region of the node's shared memory,
    /// `mpi::shm`). The protocol cores carry it as they carry any value; it
    /// never combines with another (the result is a mismatch), and
    /// [`Data::decode_into`] refuses it: the engine resolves it first.
    pub fn elsewhere(name: [u64; 3]) -> Data {
        let [a, b, c] = name;
        Data::Inline(Inline::from_words([a, b, c, 0, 0, 0, 0], ELSEWHERE))
    }

    /// The name [`Data::elsewhere`] was given, if this is such a value.
    pub fn elsewhere_name(&self) -> Option<[u64; 3]> {
        match self.form() {
            Form::Elsewhere(name) => Some(name),
            _ => None,
        }
    }

    /// The bytes of `items`: inline if they fit (and need no alignment
    /// above 8), else a segment of `pool`.
    #[inline]
    pub fn encode<T: Pod>(items: &[T], pool: &SegmentPool) -> Data {
        let bytes: &[u8] = bytemuck::cast_slice(items);
        if bytes.len() <= INLINE_BYTES && std::mem::align_of::<T>() <= 8 {
            Data::Inline(Inline::build(bytes.len(), |out| {
                if let [one] = items {
                    // A single value (the common case): a copy of known
                    // size, not a call to memcpy.
                    out.copy_from_slice(bytemuck::bytes_of(one));
                } else {
                    out.copy_from_slice(bytes);
                }
            }))
        } else {
            Data::Shared(Shared::Bytes(
                pool.fill(bytes.len(), |out| out.copy_from_slice(bytes)),
            ))
        }
    }

    /// A value of `len` bytes more than [`INLINE_BYTES`], written in place
    /// into a segment of `pool` by `write` (which must write every byte):
    /// a value received straight into shared memory, with no copy.
    pub fn filled(len: usize, pool: &SegmentPool, write: impl FnOnce(&mut [u8])) -> Data {
        debug_assert!(len > INLINE_BYTES, "a value this small travels inline");
        Data::Shared(Shared::Bytes(pool.fill(len, write)))
    }

    /// The lent input of `rank` (of `procs`) to a large allreduce: a lazy
    /// sum of one input, reduced by every rank together once the inputs are
    /// agreed.
    /// `output`, if any, is the rank's output lent for the whole call: the
    /// chunks others compute are pushed there (see [`LazySum::single`]).
    pub fn lazy(
        rank: Rank,
        procs: usize,
        input: &Arc<Lent>,
        output: Option<&Arc<LentOutput>>,
        pool: &SegmentPool,
    ) -> Data {
        let sum = LazySum::single(rank, Arc::clone(input), output, procs, pool);
        Data::Shared(Shared::Lazy(sum))
    }

    /// An input to a large allreduce or reduce that cannot be lent (an
    /// immediate call's, which outlives any borrow): a copy of `items` in a
    /// segment of `pool`, for [`Data::lazy`].
    pub fn copied_input<T: Pod>(items: &[T], pool: &SegmentPool) -> Arc<Lent> {
        let bytes: &[u8] = bytemuck::cast_slice(items);
        Lent::from_segment(pool.fill(bytes.len(), |out| out.copy_from_slice(bytes)))
    }

    /// A large broadcast's value: the root's buffer, lent for its call.
    pub fn lent(input: &Arc<Lent>) -> Data {
        Data::Shared(Shared::Lent(Arc::clone(input)))
    }

    /// Whether this is a large allreduce's value, not yet reduced.
    pub fn is_lazy(&self) -> bool {
        matches!(self, Data::Shared(Shared::Lazy(_)))
    }

    /// The value as a transport that copies values between processes
    /// carries it (the MPI engine, feature `mpi`). `None` for the forms
    /// that refer to this process's memory (a lazy sum, a lent buffer),
    /// which such a transport never carries.
    pub fn to_wire(&self) -> Option<Wire<'_>> {
        match self.form() {
            Form::Bytes(b) => Some(Wire::Bytes(b)),
            Form::Mismatch(lens) => Some(Wire::Mismatch(lens)),
            Form::Elsewhere(name) => Some(Wire::Elsewhere(name)),
            Form::Lazy(_) | Form::Lent(_) => None,
        }
    }

    /// The value [`Data::to_wire`] gave, in this process (a segment of
    /// `pool` if it does not fit inline).
    pub fn from_wire(wire: Wire<'_>, pool: &SegmentPool) -> Data {
        match wire {
            Wire::Bytes(bytes) => Data::encode(bytes, pool),
            Wire::Mismatch(lens) => Data::mismatch(lens),
            Wire::Elsewhere(name) => Data::elsewhere(name),
        }
    }

    #[inline]
    fn form(&self) -> Form<'_> {
        match self {
            Data::Inline(i) => match i.held() {
                Held::Bytes(b) => Form::Bytes(b),
                Held::Mismatch(lens) => Form::Mismatch(lens),
                Held::Elsewhere(name) => Form::Elsewhere(name),
            },
            Data::Shared(Shared::Bytes(s)) => Form::Bytes(s.bytes()),
            Data::Shared(Shared::Lazy(l)) => Form::Lazy(l),
            Data::Shared(Shared::Lent(l)) => Form::Lent(l),
        }
    }

    /// The error for a result that is a mismatch of `lens` (bytes), seen by
    /// a rank whose buffer (or input) has `mine` elements of `size` bytes.
    fn mismatch_error(op: OpId, lens: [u64; 2], mine: usize, size: usize) -> Error {
        let lens = lens.map(|l| l as usize / size);
        let theirs = if lens[0] != mine { lens[0] } else { lens[1] };
        Error::LengthMismatch { op, mine, theirs }
    }

    /// Copies the value into `out` if it has exactly `out`'s length, else
    /// [`Error::LengthMismatch`] (`out` untouched). `mine` is this rank's
    /// own input length in elements where it has one (a reduction), to
    /// name the other length when inputs differed.
    #[inline]
    pub fn decode_into<T: Pod>(
        &self,
        out: &mut [T],
        op: OpId,
        mine: Option<usize>,
    ) -> Result<(), Error> {
        let size = std::mem::size_of::<T>().max(1);
        let bytes = match self.form() {
            Form::Bytes(b) => b,
            Form::Lent(lent) => {
                let n = out.len();
                let out_bytes: &mut [u8] = bytemuck::cast_slice_mut(out);
                if out_bytes.len() != lent.len() {
                    lent.refuse();
                    return Err(Error::LengthMismatch {
                        op,
                        mine: n,
                        theirs: lent.len() / size,
                    });
                }
                lent.copy_to(out_bytes);
                return Ok(());
            }
            Form::Mismatch(lens) => {
                return Err(Data::mismatch_error(
                    op,
                    lens,
                    mine.unwrap_or(out.len()),
                    size,
                ))
            }
            Form::Lazy(_) => {
                return Err(Error::Mismatch {
                    op,
                    mine: "a value to copy".into(),
                    theirs: "an allreduce's inputs, not reduced".into(),
                })
            }
            Form::Elsewhere(_) => {
                return Err(Error::Mismatch {
                    op,
                    mine: "a value to copy".into(),
                    theirs: "a value held in another process's shared memory".into(),
                })
            }
        };
        Data::copy_bytes(bytes, out, op)
    }

    /// `bytes` into `out` if the lengths agree, else
    /// [`Error::LengthMismatch`] (`out` untouched).
    #[inline]
    fn copy_bytes<T: Pod>(bytes: &[u8], out: &mut [T], op: OpId) -> Result<(), Error> {
        if let [one] = out {
            if bytes.len() == std::mem::size_of::<T>() {
                *one = bytemuck::pod_read_unaligned(bytes);
                return Ok(());
            }
        }
        let size = std::mem::size_of::<T>().max(1);
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
    /// give a mismatch.
    #[inline]
    pub fn combine<T: Pod>(
        acc: &mut Data,
        other: &Data,
        op: &(impl Operation<T> + ?Sized),
        pool: &SegmentPool,
    ) {
        let size = std::mem::size_of::<T>();
        if let (Data::Inline(x), Data::Inline(y)) = (&*acc, other) {
            // One value each (the common case, and the hot path of a small
            // allreduce): no forms, no slices, no loop.
            if size > 0 && x.marker() as usize == size + 1 && y.marker() == x.marker() {
                let r = op.apply(
                    &bytemuck::pod_read_unaligned(&bytemuck::bytes_of(x)[..size]),
                    &bytemuck::pod_read_unaligned(&bytemuck::bytes_of(y)[..size]),
                );
                *acc = Data::Inline(Inline::build(size, |out| {
                    out.copy_from_slice(bytemuck::bytes_of(&r))
                }));
                return;
            }
        }
        let (a, b) = match (acc.form(), other.form()) {
            (Form::Mismatch(_), _) => return,
            (_, Form::Mismatch(lens)) => {
                *acc = Data::mismatch(lens);
                return;
            }
            (a, b) if a.len() != b.len() => {
                *acc = Data::mismatch([a.len(), b.len()]);
                return;
            }
            (Form::Lazy(a), Form::Lazy(b)) => {
                *acc = Data::Shared(Shared::Lazy(LazySum::join(a, b, pool)));
                return;
            }
            (Form::Bytes(a), Form::Bytes(b)) => (a, b),
            // Forms one collective never mixes: say so, as for lengths.
            (a, b) => {
                *acc = Data::mismatch([a.len(), b.len()]);
                return;
            }
        };
        if size == 0 {
            return;
        }
        let combined = {
            let apply = |out: &mut [u8]| {
                let (a, b): (&[T], &[T]) = (bytemuck::cast_slice(a), bytemuck::cast_slice(b));
                op.apply_slices(a, b, bytemuck::cast_slice_mut(out));
            };
            match acc {
                Data::Inline(_) => Data::Inline(Inline::build(a.len(), apply)),
                Data::Shared(_) => Data::Shared(Shared::Bytes(pool.fill(a.len(), apply))),
            }
        };
        *acc = combined;
    }
}

#[path = "data_lazy.rs"]
mod lazy_forms;

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
    fn a_value_held_elsewhere_keeps_its_name_never_combines_and_is_not_decoded() {
        let pool = SegmentPool::new();
        let named = Data::elsewhere([2, 7, 1 << 20]);
        assert_eq!(named.elsewhere_name(), Some([2, 7, 1 << 20]));
        assert_eq!(Data::encode(&[1u64, 2, 3], &pool).elsewhere_name(), None);
        assert_eq!(Data::mismatch([1, 2]).elsewhere_name(), None);
        // Not a short form: a message carries it whole.
        assert_eq!(named.short(), None);
        // Through a transport between processes, as it was.
        let wire = named.to_wire().expect("a wire form");
        assert_eq!(wire, Wire::Elsewhere([2, 7, 1 << 20]));
        assert_eq!(Data::from_wire(wire, &pool), named);
        // Never reduced with another value, nor with itself.
        for other in [named.clone(), Data::EMPTY, Data::encode(&[5u8; 100], &pool)] {
            let mut acc = named.clone();
            Data::combine::<u8>(&mut acc, &other, &SystemOperation::sum(), &pool);
            assert!(matches!(acc.to_wire(), Some(Wire::Mismatch(_))), "{acc:?}");
            let mut acc = other.clone();
            Data::combine::<u8>(&mut acc, &named, &SystemOperation::sum(), &pool);
            assert!(matches!(acc.to_wire(), Some(Wire::Mismatch(_))), "{acc:?}");
        }
        // The engine that made it resolves it: decoding it is refused.
        let mut out = [0u8; 4];
        assert!(matches!(
            named.decode_into(&mut out, 3, None),
            Err(Error::Mismatch { op: 3, .. })
        ));
        assert_eq!(out, [0; 4]);
    }

    #[test]
    fn small_values_travel_inline_and_large_ones_in_a_segment() {
        let pool = SegmentPool::new();
        assert!(matches!(round_trip(&[1.5f64; 6], &pool), Data::Inline(_)));
        assert!(matches!(round_trip(&[1.5f64; 7], &pool), Data::Shared(_)));
        assert!(matches!(round_trip(&[1.5f64; 8], &pool), Data::Shared(_)));
        assert_eq!(round_trip::<u8>(&[], &pool), Data::EMPTY);
        assert!(matches!(round_trip(&[3u8; 55], &pool), Data::Inline(_)));
        assert!(matches!(round_trip(&[3u8; 56], &pool), Data::Shared(_)));
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
        assert_eq!(acc, Data::mismatch([12, 16]));
        Data::combine::<u32>(&mut acc, &Data::encode(&[1u32; 3], &pool), &sum, &pool);
        assert_eq!(acc, Data::mismatch([12, 16]));
        let mut ok = Data::encode(&[1u32; 3], &pool);
        Data::combine::<u32>(&mut ok, &acc, &sum, &pool);
        assert_eq!(ok, Data::mismatch([12, 16]));
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
