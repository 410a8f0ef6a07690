//! Shared segments: how a value too large for a message slot travels between
//! ranks. Ranks are threads of one process, so a large payload is written
//! once into a segment and the messages carry a reference to it, not the
//! bytes hop by hop.
//!
//! **Lifetimes.** A [`Segment`] is an `Arc`: it lives as long as any holder
//! (a message in a lane, a core's value, a lingering core), whoever else
//! fails, hangs or panics, and its bytes never change once it is shared:
//! a writer fills it while it is the only holder. A rank's own buffers are
//! never shared: its input is copied into a segment, and the result copied
//! out of one, so a rank leaving its call (returning, dying, unwinding)
//! leaves nothing others read.
//!
//! **Reuse.** The [`SegmentPool`] keeps every segment it made. One whose
//! only holder is the pool is free, and the next [`SegmentPool::fill`] of at
//! most its size takes it, so a loop of same-sized operations allocates
//! nothing once warm ([`SegmentPool::allocations`] counts the allocations).
//! Segments held by messages to dead ranks stay held until the team ends.

use std::sync::{Arc, Mutex};

use crate::sync::{AtomicU64, Ordering};

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

/// A team's pool of segments.
#[derive(Default)]
pub struct SegmentPool {
    blocks: Mutex<Vec<Arc<Vec<Line>>>>,
    allocations: AtomicU64,
}

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
        let mut block = self.take(lines);
        let storage = Arc::get_mut(&mut block).expect("a taken block has one holder");
        if storage.len() < lines {
            storage.resize(lines, Line([0; 64]));
        }
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut storage[..]);
        write(&mut bytes[..len]);
        self.lock().push(block.clone());
        Segment { block, len }
    }

    /// A block with one holder, the caller, of at least `lines` lines if a
    /// free one is that large (else a free one to grow, else a new one).
    /// The pool forgets it until `fill` puts a clone back.
    fn take(&self, lines: usize) -> Arc<Vec<Line>> {
        let mut blocks = self.lock();
        // Free: the pool's clone is the only one. A count of one is stable
        // under the lock (only the pool could clone it), and `fill`'s
        // `Arc::get_mut` on the block taken orders the last holder's reads
        // before our writes. The count is read only for blocks that would
        // fit better: a large allreduce pools hundreds of chunk results,
        // and `Arc::get_mut` on each (two read-modify-writes) was 8 % of it.
        // Best fit: the smallest free block that fits (a chunk must not
        // take a whole vector's block), else the largest free one, to grow.
        let mut free: Option<(usize, usize)> = None;
        for (i, b) in blocks.iter().enumerate() {
            let cap = b.capacity();
            let better = match free {
                None => true,
                Some((_, best)) if best >= lines => cap >= lines && cap < best,
                Some((_, best)) => cap > best,
            };
            if !better || Arc::strong_count(b) != 1 {
                continue;
            }
            free = Some((i, cap));
            if cap == lines {
                break;
            }
        }
        let free = free.map(|(i, _)| i);
        match free {
            Some(i) => {
                // In order: the oldest blocks, the likeliest free, stay in
                // front (a swap would bring a held one there).
                let block = blocks.remove(i);
                if block.capacity() < lines {
                    self.allocations.fetch_add(1, Ordering::Relaxed);
                }
                block
            }
            None => {
                drop(blocks);
                self.allocations.fetch_add(1, Ordering::Relaxed);
                Arc::new(Vec::with_capacity(lines))
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Vec<Line>>>> {
        // A panic while the lock was held (in a writer's `fill`? no: writes
        // happen outside it) leaves the list whole.
        self.blocks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Blocks allocated or grown so far (in a steady state: constant).
    pub fn allocations(&self) -> u64 {
        self.allocations.load(Ordering::Relaxed)
    }

    /// Segments in the pool, free or held.
    pub fn segments(&self) -> usize {
        self.lock().len()
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
