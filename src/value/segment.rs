//! Shared segments: how a value too large for a message slot travels between
//! ranks. Ranks are threads of one process, so a large payload is written
//! once into a segment and the messages carry a reference to it, not the
//! bytes hop by hop.
//!
//! **Lifetimes.** A [`Segment`] is an `Arc`: it lives as long as any holder
//! (a message in a lane, a core's value, a lingering core), whoever else
//! fails, hangs or panics, and its bytes never change once it is shared:
//! a writer fills it while it is the only holder. A rank's own buffers are
//! shared only under a loan that its call ends before it returns
//! ([`crate::value::lent`]; a copy into a segment stands in for what
//! others may still read), so a rank leaving its call (returning, dying,
//! unwinding) leaves nothing others read.
//!
//! **Reuse.** The [`SegmentPool`] keeps every segment it made. One whose
//! only holder is the pool is free, and the next [`SegmentPool::fill`] of at
//! most its size takes it, so a loop of same-sized operations allocates
//! nothing once warm ([`SegmentPool::allocations`] counts the allocations).
//! Segments held by messages to dead ranks stay held until the team ends.
//! The pool reuses the small shared objects of large operations the same
//! way (`runtime/recycle.rs`).

use std::sync::Arc;

use crate::value::lazy::{Board, LazySum};
use crate::value::lent::{Lent, LentOutput};
use crate::value::recycle::{Recycle, Recycler};

/// One cache line: the unit of a segment's storage, so that every segment
/// starts on a line (and suits any element alignment up to 64).
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// A shared, immutable byte buffer of a team's pool (64-byte aligned).
#[derive(Clone)]
pub struct Segment {
    block: Arc<Vec<Line>>,
    len: usize,
}

impl Segment {
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.block[..])[..self.len]
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Segment({} bytes)", self.len)
    }
}

/// Two segments are equal when their bytes are.
impl PartialEq for Segment {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

/// A team's pool of shared memory: its segments, and the small shared
/// objects of large operations (lent buffers' shared halves, lazy sums and
/// their chunk boards, lent outputs), each reused once free
/// (`runtime/recycle.rs`).
#[derive(Default)]
pub struct SegmentPool {
    blocks: Recycler<Vec<Line>>,
    /// The shared halves of lent buffers ([`crate::value::lent::Lent`]).
    pub(crate) lents: Recycler<Lent>,
    /// Lent outputs ([`crate::value::lent::LentOutput`]).
    pub(crate) outputs: Recycler<LentOutput>,
    /// Lazy sums ([`crate::value::lazy::LazySum`]).
    pub(crate) sums: Recycler<LazySum>,
    /// The chunk boards of lazy sums.
    pub(crate) boards: Recycler<Board>,
}

impl Recycle for Vec<Line> {}

impl SegmentPool {
    /// An empty pool.
    pub fn new() -> Self {
        SegmentPool::default()
    }

    /// A segment of `len` bytes written by `write`, which gets exactly `len`
    /// bytes (zeroed, or left from an earlier use: it must write them all).
    /// Takes a free segment of the pool if there is one, growing it if it
    /// is too small.
    pub fn fill(&self, len: usize, write: impl FnOnce(&mut [u8])) -> Segment {
        let lines = len.div_ceil(64);
        // Best fit: the smallest free block that fits (a chunk must not
        // take a whole vector's block), else the largest free one, to grow.
        let fit = |b: &Vec<Line>| {
            let cap = b.capacity();
            Some(if cap >= lines {
                cap - lines
            } else {
                usize::MAX / 2 + (lines - cap)
            })
        };
        let mut block = match self.blocks.take_best(fit) {
            Some(block) => {
                if block.capacity() < lines {
                    self.blocks.count_allocation();
                }
                block
            }
            None => self.blocks.take(|| Vec::with_capacity(lines)),
        };
        if block.len() < lines {
            block.resize(lines, Line([0; 64]));
        }
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut block[..]);
        write(&mut bytes[..len]);
        Segment {
            block: block.share(),
            len,
        }
    }

    /// Blocks allocated or grown so far (in a steady state: constant).
    pub fn allocations(&self) -> u64 {
        self.blocks.allocations()
    }

    /// Segments in the pool, free or held.
    pub fn segments(&self) -> usize {
        self.blocks.objects()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_holds_what_was_written_and_is_reused_once_free() {
        let pool = SegmentPool::new();
        let a = pool.fill(100, |b| {
            b.iter_mut().enumerate().for_each(|(i, x)| *x = i as u8)
        });
        assert_eq!(a.len(), 100);
        assert_eq!(a.bytes()[99], 99);
        assert_eq!(a.bytes().as_ptr() as usize % 64, 0);
        let held = a.clone();
        // Held: a second fill cannot take it.
        let b = pool.fill(100, |b| b.fill(7));
        assert_eq!(pool.allocations(), 2);
        assert_eq!(held.bytes()[5], 5, "a held segment never changes");
        drop((a, held, b));
        // Both free now: fills of at most their size allocate nothing.
        for _ in 0..10 {
            let c = pool.fill(64, |b| b.fill(1));
            let d = pool.fill(128, |b| b.fill(2));
            assert!(c.bytes().iter().all(|&x| x == 1));
            assert!(d.bytes().iter().all(|&x| x == 2));
        }
        assert_eq!(pool.allocations(), 2);
        assert_eq!(pool.segments(), 2);
        let empty = pool.fill(0, |_| {});
        assert!(empty.is_empty());
    }

    #[test]
    fn a_segment_outlives_the_pool_and_every_other_holder() {
        let pool = SegmentPool::new();
        let s = pool.fill(3, |b| b.copy_from_slice(&[1, 2, 3]));
        drop(pool);
        let t = std::thread::spawn(move || s.bytes().to_vec())
            .join()
            .unwrap();
        assert_eq!(t, [1, 2, 3]);
    }
}
