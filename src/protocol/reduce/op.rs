//! The reduction function a core applies. The papers assume it associative
//! and commutative (as MPI does); a core combines values in a fixed order
//! (own value, group peers by rank, children by position), so the order of
//! arrival never changes a result.

/// Combines `other` into `acc`. Must be associative and commutative.
pub trait Combine<P> {
    /// `acc = acc ∘ other`.
    fn combine(&self, acc: &mut P, other: &P);
}

impl<P, F: Fn(&mut P, &P)> Combine<P> for F {
    #[inline]
    fn combine(&self, acc: &mut P, other: &P) {
        self(acc, other)
    }
}
