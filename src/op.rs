//! Reduction operations for [`Collectives::reduce_into`](crate::Collectives::reduce_into)
//! and [`Collectives::all_reduce_into`](crate::Collectives::all_reduce_into), named
//! as in rsmpi: [`SystemOperation::sum`], `product`, `min`, `max`,
//! `bitwise_and`, `bitwise_or`, `bitwise_xor`, and any closure
//! `Fn(&T, &T) -> T`.
//!
//! Every operation must be associative and commutative (the up-correction
//! reduce combines values in an order that depends on the tree and on which
//! ranks failed, as MPI's reduce does). Values combine in a fixed order for a
//! given tree and failure pattern, so a run is repeatable; which complete
//! subtree the root picks can depend on timing, so floating-point sums may
//! differ in their last bits between runs, never between the ranks of one
//! allreduce.

use crate::error::Error;
use bytemuck::Pod;

/// A reduction operation on `T`. `Sync`, as rsmpi's user operations: when
/// ranks share cores, the thread of another waiting rank may advance this
/// rank's call, and so apply the operation (`helping`).
pub trait Operation<T>: Sync {
    /// `a ∘ b`.
    fn apply(&self, a: &T, b: &T) -> T;

    /// `out[i] = a[i] ∘ b[i]` for every `i` (the three of one length): how
    /// a vector reduces. The default applies [`Operation::apply`] element
    /// by element; the [`SystemOperation`]s pick their operator once, so
    /// that the loop vectorizes.
    fn apply_slices(&self, a: &[T], b: &[T], out: &mut [T]) {
        for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
            *o = self.apply(x, y);
        }
    }

    /// `acc[i] = acc[i] ∘ b[i]` for every `i`: [`Operation::apply_slices`]
    /// in place.
    fn accumulate(&self, acc: &mut [T], b: &[T]) {
        for (x, y) in acc.iter_mut().zip(b) {
            *x = self.apply(x, y);
        }
    }

    /// Checks before the collective starts that the operation applies to
    /// `T` (e.g. no bitwise operation on floats). Every rank checks the
    /// same, so all fail alike.
    fn check(&self) -> Result<(), Error> {
        Ok(())
    }

    /// The built-in operation this is, if it is one: an engine with
    /// reductions of its own (MPI's, in the hierarchy's native mode) can
    /// then run it there. `None` for closures.
    fn system(&self) -> Option<SystemOperation> {
        None
    }
}

impl<T, F: Fn(&T, &T) -> T + Sync> Operation<T> for F {
    fn apply(&self, a: &T, b: &T) -> T {
        self(a, b)
    }
}

/// The built-in operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SystemOperation {
    /// a + b (wrapping for integers).
    Sum,
    /// a · b (wrapping for integers).
    Product,
    /// The smaller (for floats, `f64::min`: a NaN loses).
    Min,
    /// The larger (for floats, `f64::max`: a NaN loses).
    Max,
    /// a & b (integers and bool).
    BitwiseAnd,
    /// a | b (integers and bool).
    BitwiseOr,
    /// a ^ b (integers and bool).
    BitwiseXor,
}

impl SystemOperation {
    /// The operation's name, as its constructor's (`sum`, `bitwise_and`, ...).
    pub fn name(self) -> &'static str {
        match self {
            SystemOperation::Sum => "sum",
            SystemOperation::Product => "product",
            SystemOperation::Min => "min",
            SystemOperation::Max => "max",
            SystemOperation::BitwiseAnd => "bitwise_and",
            SystemOperation::BitwiseOr => "bitwise_or",
            SystemOperation::BitwiseXor => "bitwise_xor",
        }
    }

    /// Sum.
    pub fn sum() -> Self {
        SystemOperation::Sum
    }
    /// Product.
    pub fn product() -> Self {
        SystemOperation::Product
    }
    /// Minimum.
    pub fn min() -> Self {
        SystemOperation::Min
    }
    /// Maximum.
    pub fn max() -> Self {
        SystemOperation::Max
    }
    /// Bitwise and.
    pub fn bitwise_and() -> Self {
        SystemOperation::BitwiseAnd
    }
    /// Bitwise or.
    pub fn bitwise_or() -> Self {
        SystemOperation::BitwiseOr
    }
    /// Bitwise exclusive or.
    pub fn bitwise_xor() -> Self {
        SystemOperation::BitwiseXor
    }
}

/// A value the [`SystemOperation`]s apply to: integers and floats, and
/// arrays of them (element by element).
pub trait Reducible: Pod {
    /// Whether the bitwise operations apply.
    const BITWISE: bool;
    /// `op(self, other)`; bitwise operations on types without them return `self`
    /// (never reached: [`Operation::check`] refuses them first).
    fn reduce(&self, other: &Self, op: SystemOperation) -> Self;

    /// `out[i] = op(a[i], b[i])`, with `op` matched once, not per element.
    fn reduce_slices(a: &[Self], b: &[Self], out: &mut [Self], op: SystemOperation) {
        for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
            *o = x.reduce(y, op);
        }
    }

    /// `acc[i] = op(acc[i], b[i])`, with `op` matched once.
    fn accumulate(acc: &mut [Self], b: &[Self], op: SystemOperation) {
        for (x, y) in acc.iter_mut().zip(b) {
            *x = x.reduce(y, op);
        }
    }
}

/// `acc[i] = f(acc[i], b[i])`, one loop per operator.
#[inline(always)]
fn each_into<T: Copy>(acc: &mut [T], b: &[T], f: impl Fn(T, T) -> T) {
    for (x, y) in acc.iter_mut().zip(b) {
        *x = f(*x, *y);
    }
}

/// `out[i] = f(a[i], b[i])`: one loop per operator, which the compiler can
/// vectorize.
#[inline(always)]
fn each<T: Copy>(a: &[T], b: &[T], out: &mut [T], f: impl Fn(T, T) -> T) {
    for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
        *o = f(*x, *y);
    }
}

impl<T: Reducible> Operation<T> for SystemOperation {
    fn apply(&self, a: &T, b: &T) -> T {
        a.reduce(b, *self)
    }

    fn apply_slices(&self, a: &[T], b: &[T], out: &mut [T]) {
        T::reduce_slices(a, b, out, *self);
    }

    fn accumulate(&self, acc: &mut [T], b: &[T]) {
        T::accumulate(acc, b, *self);
    }

    fn system(&self) -> Option<SystemOperation> {
        Some(*self)
    }

    fn check(&self) -> Result<(), Error> {
        let bitwise = matches!(
            self,
            SystemOperation::BitwiseAnd | SystemOperation::BitwiseOr | SystemOperation::BitwiseXor
        );
        if bitwise && !T::BITWISE {
            return Err(Error::OperationType {
                op: self.name(),
                ty: std::any::type_name::<T>(),
            });
        }
        Ok(())
    }
}

macro_rules! int_reducible {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            const BITWISE: bool = true;
            fn reduce(&self, o: &Self, op: SystemOperation) -> Self {
                match op {
                    SystemOperation::Sum => self.wrapping_add(*o),
                    SystemOperation::Product => self.wrapping_mul(*o),
                    SystemOperation::Min => (*self).min(*o),
                    SystemOperation::Max => (*self).max(*o),
                    SystemOperation::BitwiseAnd => self & o,
                    SystemOperation::BitwiseOr => self | o,
                    SystemOperation::BitwiseXor => self ^ o,
                }
            }
            fn reduce_slices(a: &[Self], b: &[Self], out: &mut [Self], op: SystemOperation) {
                match op {
                    SystemOperation::Sum => each(a, b, out, <$t>::wrapping_add),
                    SystemOperation::Product => each(a, b, out, <$t>::wrapping_mul),
                    SystemOperation::Min => each(a, b, out, <$t>::min),
                    SystemOperation::Max => each(a, b, out, <$t>::max),
                    SystemOperation::BitwiseAnd => each(a, b, out, |x, y| x & y),
                    SystemOperation::BitwiseOr => each(a, b, out, |x, y| x | y),
                    SystemOperation::BitwiseXor => each(a, b, out, |x, y| x ^ y),
                }
            }
            fn accumulate(acc: &mut [Self], b: &[Self], op: SystemOperation) {
                match op {
                    SystemOperation::Sum => each_into(acc, b, <$t>::wrapping_add),
                    SystemOperation::Product => each_into(acc, b, <$t>::wrapping_mul),
                    SystemOperation::Min => each_into(acc, b, <$t>::min),
                    SystemOperation::Max => each_into(acc, b, <$t>::max),
                    SystemOperation::BitwiseAnd => each_into(acc, b, |x, y| x & y),
                    SystemOperation::BitwiseOr => each_into(acc, b, |x, y| x | y),
                    SystemOperation::BitwiseXor => each_into(acc, b, |x, y| x ^ y),
                }
            }
        }
    )*};
}
int_reducible!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

macro_rules! float_reducible {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            const BITWISE: bool = false;
            fn reduce(&self, o: &Self, op: SystemOperation) -> Self {
                match op {
                    SystemOperation::Sum => self + o,
                    SystemOperation::Product => self * o,
                    SystemOperation::Min => self.min(*o),
                    SystemOperation::Max => self.max(*o),
                    _ => *self,
                }
            }
            fn reduce_slices(a: &[Self], b: &[Self], out: &mut [Self], op: SystemOperation) {
                match op {
                    SystemOperation::Sum => each(a, b, out, |x, y| x + y),
                    SystemOperation::Product => each(a, b, out, |x, y| x * y),
                    SystemOperation::Min => each(a, b, out, <$t>::min),
                    SystemOperation::Max => each(a, b, out, <$t>::max),
                    _ => out.copy_from_slice(a),
                }
            }
            fn accumulate(acc: &mut [Self], b: &[Self], op: SystemOperation) {
                match op {
                    SystemOperation::Sum => each_into(acc, b, |x, y| x + y),
                    SystemOperation::Product => each_into(acc, b, |x, y| x * y),
                    SystemOperation::Min => each_into(acc, b, <$t>::min),
                    SystemOperation::Max => each_into(acc, b, <$t>::max),
                    _ => {}
                }
            }
        }
    )*};
}
float_reducible!(f32, f64);

impl<T: Reducible, const N: usize> Reducible for [T; N] {
    const BITWISE: bool = T::BITWISE;
    fn reduce(&self, o: &Self, op: SystemOperation) -> Self {
        std::array::from_fn(|i| self[i].reduce(&o[i], op))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_operations_apply_element_wise() {
        let s = SystemOperation::sum();
        assert_eq!(s.apply(&[1.0f64, 2.0], &[0.5, 0.25]), [1.5, 2.25]);
        assert_eq!(SystemOperation::max().apply(&-3i32, &2), 2);
        assert_eq!(SystemOperation::min().apply(&[3u8, 1], &[2, 9]), [2, 1]);
        assert_eq!(
            SystemOperation::product().apply(&u64::MAX, &2),
            u64::MAX - 1
        );
        assert_eq!(
            SystemOperation::bitwise_xor().apply(&0b1100u16, &0b1010),
            0b0110
        );
        assert!(Operation::<f64>::check(&SystemOperation::bitwise_or()).is_err());
        assert!(Operation::<[i64; 4]>::check(&SystemOperation::bitwise_or()).is_ok());
        let closure = |a: &u32, b: &u32| a.max(b) * 2;
        assert_eq!(closure.apply(&3, &5), 10);
    }

    fn slices_agree_with_elements<T: Reducible + PartialEq + std::fmt::Debug>(a: &[T], b: &[T]) {
        let ops = [
            SystemOperation::sum(),
            SystemOperation::product(),
            SystemOperation::min(),
            SystemOperation::max(),
            SystemOperation::bitwise_and(),
            SystemOperation::bitwise_or(),
            SystemOperation::bitwise_xor(),
        ];
        for op in ops
            .into_iter()
            .filter(|op| Operation::<T>::check(op).is_ok())
        {
            let mut out = vec![T::zeroed(); a.len()];
            op.apply_slices(a, b, &mut out);
            let want: Vec<T> = a.iter().zip(b).map(|(x, y)| op.apply(x, y)).collect();
            assert_eq!(out, want, "{}", op.name());
            let mut acc = a.to_vec();
            op.accumulate(&mut acc, b);
            assert_eq!(acc, want, "{} in place", op.name());
        }
    }

    #[test]
    fn slices_reduce_as_their_elements_do() {
        let a: Vec<i32> = (0..100).map(|i| i * 7 - 300).collect();
        let b: Vec<i32> = (0..100).map(|i| i32::MAX - i * 3).collect();
        slices_agree_with_elements(&a, &b);
        let a: Vec<u8> = (0..=255).collect();
        let b: Vec<u8> = (0..=255).rev().collect();
        slices_agree_with_elements(&a, &b);
        let a: Vec<f64> = (0..100).map(|i| i as f64 * 0.5 - 7.0).collect();
        let b: Vec<f64> = (0..100).map(|i| 3.0 - i as f64).collect();
        slices_agree_with_elements(&a, &b);
        slices_agree_with_elements(&[[1u16, 2], [3, 4]], &[[5, 1], [0, 9]]);
    }
}
