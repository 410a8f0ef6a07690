//! What a collective reads and writes: one value, or a `Vec`, slice or boxed
//! slice of them, of any length (0 included), as rsmpi's `Buffer` and
//! `BufferMut`.
//!
//! An element is an [`Element`]: the integers and floats, arrays of
//! elements, and a user's `#[repr(C)]` struct with `#[derive(Pod,
//! Zeroable, Clone, Copy)]` (add `bytemuck` with its `derive` feature to
//! your own `Cargo.toml`) and `impl Element for MyStruct {}`. Plain old
//! data is what can travel as bytes and be read back exactly, with no
//! pointer or invariant to break; `bytemuck` checks that at compile time
//! (its derive refuses padding and non-plain fields), which a hand-written
//! encoder could only promise. `bool` and `char` are not plain data (not
//! every bit pattern is one): send `u8` or `u32`.
//!
//! ```
//! use corrected::prelude::*;
//!
//! let team = Team::builder().ranks(3).build()?;
//! let report = team.run(|comm| {
//!     // A vector (or a slice, or an array) of any length, reduced element
//!     // by element.
//!     let local = vec![comm.rank() as f64; 1000];
//!     let mut global = vec![0.0; 1000];
//!     comm.all_reduce_into(&local, &mut global, SystemOperation::sum())?;
//!     // A single value is a buffer of one element.
//!     let mut n = 0u64;
//!     comm.all_reduce_into(&1u64, &mut n, SystemOperation::sum())?;
//!     Ok::<_, Error>((global[999], n))
//! });
//! for (_, got) in report.returned() {
//!     assert_eq!(got, &Ok((3.0, 3)));
//! }
//! # Ok::<(), Error>(())
//! ```
//!
//! Why a trait of this crate's beside `Pod`: a `Vec` is a buffer as it
//! comes (no `&v[..]`) only if no element can be a `Vec`, which the
//! compiler knows of a trait of this crate (nobody else may implement it
//! for `Vec`) and cannot know of `bytemuck`'s.

pub use bytemuck::{Pod, Zeroable};

/// A type whose values a collective carries as elements of a buffer:
/// plain data ([`Pod`]). Implemented for the integers, the floats and
/// arrays of elements; a user's `#[derive(Pod, Zeroable)]` struct is one
/// with `impl Element for MyStruct {}`.
///
/// What is not plain data is refused at compile time, with this trait's
/// message:
///
/// ```compile_fail
/// # use corrected::prelude::*;
/// # fn f(comm: &mut impl Collectives) {
/// let mut flags = vec![true, false]; // `bool`: not every byte is one
/// comm.broadcast_into(0, &mut flags);
/// # }
/// ```
///
/// ```compile_fail
/// # use corrected::prelude::*;
/// # fn f(comm: &mut impl Collectives) {
/// let mut name = String::from("x"); // owned: use `broadcast_value`
/// comm.broadcast_into(0, &mut name);
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an element a collective carries",
    label = "not plain data a collective can carry",
    note = "elements are the integers, the floats, arrays of them, and `#[derive(Pod, Zeroable)]` `#[repr(C)]` structs with `impl Element for MyStruct {{}}`; a value that is not plain data (a String, a struct with pointers) goes through `broadcast_value`"
)]
pub trait Element: Pod {}

macro_rules! elements {
    ($($t:ty),*) => { $(impl Element for $t {})* };
}
elements!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);

/// An array of elements is one element (`[f64; 3]` a point): a buffer of
/// them is a slice or a `Vec` of arrays.
impl<T: Element, const N: usize> Element for [T; N] where [T; N]: Pod {}

/// Something a collective reads: its elements, contiguous.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a buffer a collective can read",
    label = "not one element, nor a Vec, slice or boxed slice of elements",
    note = "an element is plain data: the integers, the floats, arrays of them, and `#[derive(Pod, Zeroable)]` `#[repr(C)]` structs with `impl Element for MyStruct {{}}` (`bool` and `char` are not: send `u8` or `u32`); a value that is not plain data (a String, a struct with pointers) goes through `broadcast_value`"
)]
pub trait Buffer {
    /// The element type.
    type Item: Element;
    /// The elements.
    fn items(&self) -> &[Self::Item];
}

/// Something a collective writes into: its elements, contiguous. Its length
/// is fixed by the caller; a collective whose data has another length
/// returns [`crate::Error::LengthMismatch`] and leaves it untouched.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a buffer a collective can write",
    label = "not one element, nor a Vec, slice or boxed slice of elements",
    note = "an element is plain data: the integers, the floats, arrays of them, and `#[derive(Pod, Zeroable)]` `#[repr(C)]` structs with `impl Element for MyStruct {{}}` (`bool` and `char` are not: send `u8` or `u32`); a value that is not plain data (a String, a struct with pointers) goes through `broadcast_value`"
)]
pub trait BufferMut: Buffer {
    /// The elements, to overwrite.
    fn items_mut(&mut self) -> &mut [Self::Item];
}

/// A single value is a buffer of one element.
impl<T: Element> Buffer for T {
    type Item = T;
    fn items(&self) -> &[T] {
        std::slice::from_ref(self)
    }
}

impl<T: Element> BufferMut for T {
    fn items_mut(&mut self) -> &mut [T] {
        std::slice::from_mut(self)
    }
}

/// A slice.
impl<T: Element> Buffer for [T] {
    type Item = T;
    fn items(&self) -> &[T] {
        self
    }
}

impl<T: Element> BufferMut for [T] {
    fn items_mut(&mut self) -> &mut [T] {
        self
    }
}

/// A boxed slice.
impl<T: Element> Buffer for Box<[T]> {
    type Item = T;
    fn items(&self) -> &[T] {
        self
    }
}

impl<T: Element> BufferMut for Box<[T]> {
    fn items_mut(&mut self) -> &mut [T] {
        self
    }
}

/// A vector, as it comes: its elements (a collective never resizes it).
impl<T: Element> Buffer for Vec<T> {
    type Item = T;
    fn items(&self) -> &[T] {
        self
    }
}

impl<T: Element> BufferMut for Vec<T> {
    fn items_mut(&mut self) -> &mut [T] {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_one_element_and_a_slice_its_elements() {
        assert_eq!(5u32.items(), &[5]);
        assert_eq!([1.0f64, 2.0].items(), &[[1.0, 2.0]]);
        let v = [1u8, 2, 3];
        assert_eq!(v[..].items(), &[1, 2, 3]);
        let mut x = 0i64;
        x.items_mut()[0] = -4;
        assert_eq!(x, -4);
        let empty: &[u16] = &[];
        assert!(empty.items().is_empty());
    }

    #[test]
    fn a_vec_is_its_elements_and_keeps_its_length() {
        let mut v = vec![[1.0f32, 2.0], [3.0, 4.0]];
        assert_eq!(v.items(), &[[1.0, 2.0], [3.0, 4.0]]);
        v.items_mut()[1] = [5.0, 6.0];
        assert_eq!(v, [[1.0, 2.0], [5.0, 6.0]]);
        assert!(Vec::<u8>::new().items().is_empty());
        let boxed: Box<[i16]> = vec![-1, 2].into_boxed_slice();
        assert_eq!(boxed.items(), &[-1, 2]);
    }
}
