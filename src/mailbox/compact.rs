//! A message's one-line form. A lane slot is a stamp and the message from
//! the start of a cache line; a runtime message takes two lines, and every
//! line a message touches crosses between the cores once per hop (about 90
//! ns each with the cores in separate cache clusters, `cargo bench --bench
//! mailbox -- message_sizes`). Most messages of small collectives carry a
//! few bytes: a codec says which values fit a 56-byte form that travels in
//! the stamp's line alone, and the lane writes and reads only that line for
//! them. Not in the papers: a property of this engine's mailboxes.

use std::convert::Infallible;

/// How a mailbox carries values of `T`: whole, or, for the values
/// [`Compact::compact`] takes, as a small form of at most 56 bytes that
/// the lane writes and reads in the stamp's cache line alone (the form and
/// `T` aligned to at most 8; checked when a lane is built).
/// `expand(compact(v))` must give `v` back, equal in every respect the
/// receiver can observe; the sender drops `v` itself, so compact only
/// values whose drop does nothing the receiver would miss (plain data).
pub trait Compact<T> {
    /// The one-line form.
    type Small: Copy;
    /// `value`'s small form, if it has one.
    fn compact(value: &T) -> Option<Self::Small>;
    /// The value a small form stands for.
    fn expand(small: Self::Small) -> T;
}

/// The codec that moves every value whole (the default).
#[derive(Debug, Clone, Copy, Default)]
pub struct Whole;

impl<T> Compact<T> for Whole {
    type Small = Infallible;
    #[inline(always)]
    fn compact(_: &T) -> Option<Infallible> {
        None
    }
    #[inline(always)]
    fn expand(small: Infallible) -> T {
        match small {}
    }
}
