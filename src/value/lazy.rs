//! A large allreduce's value: the inputs it reduces, not yet reduced. The
//! up-correction allreduce runs unchanged on it; reducing two partial
//! results joins their lists of inputs. Every live rank delivers the same
//! value, one shared [`LazySum`], so every rank knows the same inputs; then
//! all of them reduce it together, chunk by chunk, each chunk once
//! ([`LazySum::reduce_into`]). A large reduce's value is one too: the
//! up-correction reduce delivers it to the root, which reduces it alone.
//!
//! This is how a vector's reduction uses every core while keeping the
//! guarantees of a single value: the set of contributions is decided once,
//! by the protocol (reduce paper Sections 4 and 5: every live rank's input
//! once, a failed rank's everywhere or nowhere), before any element is
//! computed, so every element is the reduction over that one set. Inputs
//! are read where their ranks lent them ([`crate::value::lent`]), and from
//! a copy once a rank left its call without completing the reduction, so
//! they outlive a rank that fails after contributing. No rank waits on
//! another's chunk for good: a chunk claimed but not being computed is
//! computed by whoever needs it (the result of a chunk does not depend on
//! who computes it: the inputs are folded in the list's order), and a chunk
//! being computed is waited for, not done twice.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytemuck::Pod;

use crate::op::Operation;
use crate::types::Rank;
use crate::value::lent::{LendingOutput, Lent, LentOutput};
use crate::value::recycle::{Recycle, Taken};
use crate::value::segment::SegmentPool;

/// Bytes per chunk of a lazy reduction, at least: large enough that a
/// chunk's work dwarfs claiming and publishing it, small enough that the
/// ranks of a team share the work evenly.
pub const CHUNK_BYTES: usize = 64 << 10;

/// Bytes from which an allreduce reduces lazily (four chunks): below, the
/// partial results combine as they travel, which `cargo bench --bench data`
/// measured faster up to 64 KiB (one chunk, whose ranks would mostly wait
/// for each other) and slower from 1 MiB.
pub const LAZY_MIN_BYTES: usize = 4 * CHUNK_BYTES;

/// How long, at most, a rank with a core of its own waits in one reduction
/// for the other ranks to compute their shares before it computes what
/// they have not claimed and waits in the chunks' onces for the rest
/// ([`LazySum::reduce_lent`]): where ranks have cores of their own the
/// others finish a few microseconds after it, at most a chunk or two; a
/// rank that failed in the middle of its share costs the others this once.
const SHARE_WAIT: Duration = Duration::from_micros(100);

/// Bytes per chunk of a lazy sum reduced as elements of `size` bytes: a
/// whole number of elements, [`CHUNK_BYTES`] at least.
pub fn chunk_bytes(size: usize) -> usize {
    CHUNK_BYTES.div_ceil(size.max(1)) * size.max(1)
}

/// The rank that reduces a [`LazySum`], and the ranks pinned to its core
/// ([`crate::runtime::Team`]'s core mates): it computes their shares of the
/// chunks after its own ([`LazySum::reduce_lent`]).
#[derive(Clone, Copy, Debug)]
pub struct Reducer<'a> {
    /// The rank.
    pub rank: Rank,
    /// The ranks on its core, none if it reduces alone or is not pinned.
    pub mates: &'a [Rank],
}

impl Reducer<'_> {
    /// `rank`, with no core mates.
    pub fn alone(rank: Rank) -> Reducer<'static> {
        Reducer { rank, mates: &[] }
    }
}

/// Inputs to reduce, in the order of their ranks, and the chunks of their
/// reduction as ranks compute them.
pub struct LazySum {
    /// Bytes of each input and of the result.
    len: usize,
    /// Ranks in the team: no sum has more inputs, so a recycled sum's list
    /// has room for any sum's (a list grown on reuse would be an
    /// allocation in a steady loop).
    procs: usize,
    /// The inputs by rank: the order they fold in, whatever the order in
    /// which the protocol joined them, so the result's bits do not depend
    /// on the tree, the root, or the failures on the way.
    terms: Vec<Term>,
}

/// One rank's input, and a board for the chunks of any sum whose first
/// input it is.
#[derive(Clone)]
struct Term {
    rank: Rank,
    input: Arc<Lent>,
    /// The chunks of the reduction of a sum that starts with this input.
    /// Every rank delivers a sum of the same inputs, so with the same first
    /// one, so all share this board, even when they joined the inputs
    /// apart (the two ranks of a pair exchange each join their own).
    board: Arc<Board>,
}

/// The chunks of one reduction, shared by the ranks that compute it.
pub struct Board {
    /// The element size and alignment of the rank that began the
    /// reduction, and bytes per chunk (a multiple of the element size; the
    /// last chunk is short).
    shape: OnceLock<Shape>,
    /// Whether a rank has claimed each chunk (to compute it, unless
    /// another needs it first: see [`LazySum::reduce_lent`]).
    claimed: Vec<AtomicBool>,
    /// Each chunk, once computed into the outputs lent by then (the result
    /// stays in them, not here): room for as many chunks as a value of its
    /// length can have (chunks are [`CHUNK_BYTES`] at least).
    done: Vec<OnceLock<()>>,
    /// The output of the rank whose input began this board, lent from its
    /// call's entry ([`LazySum::single`]) or else from when it reduces:
    /// whoever computes a chunk of a sum holding that input pushes it
    /// there, so a rank whose thread gets its turn on a core only after
    /// every chunk is computed finds its result in place.
    output: OnceLock<Arc<LentOutput>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct Shape {
    size: usize,
    align: usize,
    chunk: usize,
}

impl Board {
    /// A fresh board (a recycled one, cleared) for a value of `len` bytes.
    fn fresh(pool: &SegmentPool, len: usize) -> Arc<Board> {
        let mut board = pool.boards.take(|| Board {
            shape: OnceLock::new(),
            claimed: Vec::new(),
            done: Vec::new(),
            output: OnceLock::new(),
        });
        let b = &mut *board;
        b.shape = OnceLock::new();
        let chunks = len.div_ceil(CHUNK_BYTES);
        b.claimed.clear();
        b.claimed.resize_with(chunks, AtomicBool::default);
        b.done.clear();
        b.done.resize_with(chunks, OnceLock::new);
        b.output = OnceLock::new();
        board.share()
    }
}

/// A free board lets go of its chunk results and lent outputs at once.
impl Recycle for Board {
    const HOLDS_OTHERS: bool = true;

    fn holds_others(&self) -> bool {
        self.shape.get().is_some() || self.output.get().is_some()
    }

    fn release(&mut self) {
        self.shape = OnceLock::new();
        self.output = OnceLock::new();
        self.done.iter_mut().for_each(|d| *d = OnceLock::new());
    }
}

/// A free sum lets go of its inputs and boards at once.
impl Recycle for LazySum {
    const HOLDS_OTHERS: bool = true;

    fn holds_others(&self) -> bool {
        !self.terms.is_empty()
    }

    fn release(&mut self) {
        self.terms.clear();
    }
}

impl LazySum {
    /// The input of `rank` in a team of `procs` ranks (a recycled sum and
    /// board from `pool` if any are free).
    ///
    /// `output`, if any, is the rank's output lent for the whole call (see
    /// [`LendingOutput`]): whoever computes a chunk pushes it there, even
    /// before this rank reduces. It must fit this value's chunks for the
    /// element type the rank reduces with ([`chunk_bytes`]).
    pub fn single(
        rank: Rank,
        input: Arc<Lent>,
        output: Option<&Arc<LentOutput>>,
        procs: usize,
        pool: &SegmentPool,
    ) -> Arc<LazySum> {
        let len = input.len();
        // The sum first: free sums let go of their boards, which the
        // board's take then finds free and clears (their chunk results go
        // back to the pool now, not an operation later).
        let mut sum = LazySum::empty(pool, len, procs);
        let board = Board::fresh(pool, len);
        if let Some(output) = output {
            let _ = board.output.set(Arc::clone(output));
        }
        sum.terms.push(Term { rank, input, board });
        sum.share()
    }

    /// The inputs of both, in rank order. Lengths must be equal.
    pub fn join(a: &LazySum, b: &LazySum, pool: &SegmentPool) -> Arc<LazySum> {
        debug_assert_eq!(a.len, b.len);
        let mut sum = LazySum::empty(pool, a.len, a.procs.max(b.procs));
        crate::types::merge_by_rank_into(&mut sum.terms, &a.terms, &b.terms, |t| t.rank);
        sum.share()
    }

    /// A sum of no input yet, of `len` bytes in a team of `procs` ranks,
    /// free or new, to set up.
    fn empty(pool: &SegmentPool, len: usize, procs: usize) -> Taken<'_, LazySum> {
        let mut sum = pool.sums.take(|| LazySum {
            len,
            procs,
            terms: Vec::with_capacity(procs),
        });
        let s = &mut *sum;
        (s.len, s.procs) = (len, procs);
        s.terms.clear();
        s.terms.reserve(procs);
        sum
    }

    /// Bytes of each input.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the inputs are empty (no bytes).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The ranks of the team it was made in (an allgather's blocks).
    pub fn procs(&self) -> usize {
        self.procs
    }

    /// How many inputs it reduces.
    pub fn terms(&self) -> usize {
        self.terms.len()
    }

    /// Computes the reduction with `op` into `out` (exactly [`len`] bytes of
    /// `T`), sharing the work with every other rank that calls this on the
    /// same value (`by` is this rank): `out` is lent on the board while
    /// this runs, each rank claims chunks in turn (its own share first,
    /// then those of `by.mates`, the ranks on its core, then the rest),
    /// computes each straight into its own output and pushes it from there
    /// into every other lent output, then computes
    /// into `out` any chunk nobody pushed there (one computed before `out`
    /// was lent: only a rank that reduces alone, as a reduce's root, or
    /// whose output was not lent at its call's entry, [`LazySum::single`],
    /// computes anything twice). A chunk another rank is still
    /// computing is waited for (parked, not spun); one whose rank claimed it
    /// but has not started, or whose computation panicked, is computed here.
    /// So a rank that fails or stalls costs the others at most one chunk's
    /// work, never a wait for good (a user operation that never returns
    /// blocks its chunk, as it would block any reduction). When this
    /// returns `Ok`, every chunk is in every output lent before it was
    /// computed: their ranks read the inputs no more.
    ///
    /// Errors with the element size and alignment of the rank that began
    /// the reduction, if they are not `T`'s (ranks reduce the bytes as
    /// different types).
    ///
    /// [`len`]: LazySum::len
    pub fn reduce_into<T: Pod>(
        &self,
        by: Reducer<'_>,
        out: &mut [T],
        op: &(impl Operation<T> + ?Sized),
        pool: &SegmentPool,
    ) -> Result<(), (usize, usize)> {
        let size = std::mem::size_of::<T>();
        let out: &mut [u8] = bytemuck::cast_slice_mut(out);
        debug_assert_eq!(out.len(), self.len);
        let lending = LendingOutput::new(out, chunk_bytes(size), pool);
        self.reduce_lent::<T>(by, &lending, op)
    }

    /// [`LazySum::reduce_into`] into an output this rank lent already (at
    /// the call's entry, [`LazySum::single`]), of [`len`] bytes of `T` cut
    /// every [`chunk_bytes`] of `T`: the chunks others pushed there stay.
    ///
    /// [`len`]: LazySum::len
    pub fn reduce_lent<T: Pod>(
        &self,
        by: Reducer<'_>,
        lending: &LendingOutput<'_>,
        op: &(impl Operation<T> + ?Sized),
    ) -> Result<(), (usize, usize)> {
        let (size, align) = (std::mem::size_of::<T>(), std::mem::align_of::<T>());
        debug_assert!(lending.lent().fits(self.len, chunk_bytes(size)));
        if size == 0 || self.len == 0 {
            return Ok(());
        }
        let Some(first) = self.terms.first() else {
            for c in 0..self.len.div_ceil(chunk_bytes(size)) {
                lending.complete(c, |out| out.fill(0));
            }
            return Ok(());
        };
        let board = &*first.board;
        let shape = *board.shape.get_or_init(|| Shape {
            size,
            align,
            chunk: chunk_bytes(size),
        });
        if (shape.size, shape.align) != (size, align) {
            // Another rank reduces these bytes as another type: its chunks
            // are not ours, and the inputs it lent may not suit our type.
            return Err((shape.size, shape.align));
        }
        let chunks = self.len.div_ceil(shape.chunk);
        let range = |c: usize| c * shape.chunk..((c + 1) * shape.chunk).min(self.len);
        // Whoever computes a chunk from now on writes it into `lending`
        // too (its term's board has it already if it was lent at entry; a
        // rank not among the inputs gets no pushes and computes the chunks
        // itself).
        if let Ok(i) = self.terms.binary_search_by_key(&by.rank, |t| t.rank) {
            let _ = self.terms[i].board.output.set(Arc::clone(lending.lent()));
        }
        let own = lending.lent();
        // A chunk is computed once for all: straight into one lent output
        // (this rank's if it still needs it), and copied from there into
        // every other lent output while it is in this core's cache. An
        // output lent by a rank that reduces with another element type is
        // cut apart: it gets nothing (its rank errors). A chunk no lent
        // output needs is not computed.
        let chunk = |c: usize| {
            board.done[c].get_or_init(|| {
                let outputs = || {
                    self.terms
                        .iter()
                        .filter_map(|t| t.board.output.get())
                        .filter(|o| o.fits(self.len, shape.chunk))
                };
                let first = own.take(c).or_else(|| outputs().find_map(|o| o.take(c)));
                let Some(mut first) = first else {
                    return;
                };
                self.compute(range(c), op, first.bytes_mut());
                for output in outputs() {
                    // The first output's chunk is ours: its write fails.
                    output.write(c, first.bytes());
                }
                first.finish();
            })
        };
        // Claim and compute: first this rank's share, the same chunks at
        // every call of a loop (its share of its output then stays in its
        // core's cache, where chunks dealt out by arrival moved between
        // cores at every call: 104 -> 85-93 us at 1 MiB of two ranks,
        // docs/benchmarks.md); then the shares of the ranks on its core;
        // then the others' shares, from the last chunk down. Where ranks
        // share cores, the rank a core runs first computes all its core's
        // shares, so each chunk of every output is written by the same
        // core at every call, whichever of its ranks runs first (8 ranks on
        // 2 cores, 1 MiB: 0.6-0.75x the time of taking the next ranks'
        // shares, docs/benchmarks.md), and a core that steals work takes
        // the chunks the other would come to last. A rank with a core of
        // its own takes nothing from a share its rank has begun: that rank
        // is running, and a chunk taken from it would move between the
        // cores from one call to the next (two ranks, 1 MiB: calls with
        // 2.7 chunks taken per rank took 1.5x those with 0.2).
        let terms = self.terms.len();
        let share = |i: usize| i * chunks / terms..(i + 1) * chunks / terms;
        let share_of = |rank: Rank| {
            let i = self.terms.binary_search_by_key(&rank, |t| t.rank).ok()?;
            Some(share(i))
        };
        let claim = |c: usize| {
            let claimed = &board.claimed[c];
            !claimed.load(Ordering::Relaxed) && !claimed.swap(true, Ordering::Relaxed)
        };
        let alone = by.mates.is_empty();
        let ours = std::iter::once(by.rank).chain(by.mates.iter().copied());
        for c in ours.filter_map(share_of).flatten() {
            if claim(c) {
                chunk(c);
            }
        }
        for theirs in (0..terms).rev().map(share) {
            for c in theirs.clone().rev() {
                if alone && board.claimed[theirs.start].load(Ordering::Relaxed) {
                    break;
                }
                if claim(c) {
                    chunk(c);
                }
            }
        }
        // Then wait for (or compute) the chunks others claimed or will
        // claim, and compute here any computed before this output was lent.
        // A rank with a core of its own first gives the others a while to
        // finish their shares, looking and yielding: the once's wait would
        // park its thread, and the wake-up cost the computing rank a system
        // call and this one a scheduling, at every call of two ranks.
        let mut wait = alone.then(|| Instant::now() + SHARE_WAIT);
        for c in 0..chunks {
            if !own.is_done(c) {
                while let Some(deadline) = wait {
                    if own.is_done(c) || board.done[c].get().is_some() {
                        break;
                    }
                    if Instant::now() >= deadline {
                        wait = None;
                    } else {
                        std::thread::yield_now();
                    }
                }
                chunk(c);
                lending.complete(c, |out| self.compute(range(c), op, out));
            }
        }
        Ok(())
    }

    /// An allgather's result, from the inputs every rank agreed on: each
    /// input copied into `out` at its rank's offset (`rank × len` bytes),
    /// zeros where a rank has none (left out). Rank `me` reads the others'
    /// once each ([`Lent::copy_to`], which their owners count to end their
    /// loans, as a broadcast root does) and its own under a lease. `out`
    /// must hold `procs × len` bytes.
    pub fn gather_into(&self, me: Rank, out: &mut [u8]) {
        let len = self.len;
        debug_assert_eq!(out.len(), len * self.procs);
        let mut filled = 0;
        for t in &self.terms {
            let at = t.rank as usize * len;
            out[filled..at].fill(0);
            let block = &mut out[at..at + len];
            if t.rank == me {
                block.copy_from_slice(&t.input.read());
            } else {
                t.input.copy_to(block);
            }
            filled = at + len;
        }
        out[filled..].fill(0);
    }

    /// A reduce-scatter's block: the reduction with `op` of bytes `range`
    /// of every input, folded in rank order, straight into `out` (no chunk
    /// is shared: each rank reads the others' inputs in its own range);
    /// then rank `me` counts as done with the others' inputs
    /// ([`Lent::refuse`]), so their owners may end their loans.
    pub fn reduce_range_into<T: Pod>(
        &self,
        me: Rank,
        range: std::ops::Range<usize>,
        op: &(impl Operation<T> + ?Sized),
        out: &mut [T],
    ) {
        self.compute(range, op, bytemuck::cast_slice_mut(out));
        self.refuse_inputs(me);
    }

    /// Rank `me` is done with the other ranks' inputs ([`Lent::refuse`]).
    pub fn refuse_inputs(&self, me: Rank) {
        for t in self.terms.iter().filter(|t| t.rank != me) {
            t.input.refuse();
        }
    }

    /// The reduction of `range` (bytes) of every input, folded in order,
    /// into `out`.
    fn compute<T: Pod>(
        &self,
        range: std::ops::Range<usize>,
        op: &(impl Operation<T> + ?Sized),
        out: &mut [u8],
    ) {
        let acc: &mut [T] = bytemuck::cast_slice_mut(out);
        match self.terms.as_slice() {
            [] => acc.fill(T::zeroed()),
            [only] => {
                let a = only.input.read();
                acc.copy_from_slice(bytemuck::cast_slice(&a[range.clone()]));
            }
            [first, second, rest @ ..] => {
                let (a, b) = (first.input.read(), second.input.read());
                op.apply_slices(
                    bytemuck::cast_slice(&a[range.clone()]),
                    bytemuck::cast_slice(&b[range.clone()]),
                    acc,
                );
                drop((a, b));
                for t in rest {
                    let x = t.input.read();
                    op.accumulate(acc, bytemuck::cast_slice(&x[range.clone()]));
                }
            }
        }
    }
}

impl std::fmt::Debug for LazySum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "LazySum({} inputs of {} bytes)",
            self.terms.len(),
            self.len
        )
    }
}

/// Two lazy values are equal when they are the same value.
impl PartialEq for LazySum {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

#[cfg(test)]
#[path = "lazy_tests.rs"]
mod tests;
