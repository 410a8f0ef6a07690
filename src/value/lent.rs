//! Large buffers, used in place. A large allreduce's: a rank lends its
//! input for the length of its call, and the ranks that compute chunks of
//! the reduction ([`crate::value::lazy`]) read it there instead of a copy
//! in a segment ([`Lent`], [`Lending`]); and it lends its output while it
//! reduces, so that whoever computes a chunk writes the result straight
//! into it ([`LentOutput`], [`LendingOutput`]). Together they cut a 16 MiB
//! allreduce's time by 40-50 % (`cargo bench --bench data`;
//! docs/benchmarks.md). A large broadcast's: the root lends its buffer,
//! each receiver copies the value from there once, a piece at a time
//! ([`Lent::copy_to`]), and the root's call waits for the copies under way
//! before it ends the loan ([`Lending::wait_copies`]), so the value is
//! copied once per receiver and, when every receiver is there to copy,
//! never into a segment: 2.9 -> 1.4 ms at 16 MiB and 2 ranks, 328 -> 187
//! µs at 1 MiB and 8 ranks on 2 cores (docs/benchmarks.md).
//!
//! **Lifetimes.** A [`Lent`] buffer is shared (an `Arc`) with every message
//! and every value that carries the input, which may outlive the owner's
//! call by far. The bytes do not: they are the owner's borrowed slice. So
//! every read happens under a *lease* ([`Lent::read`]), and the owner's
//! call ends by *revoking* the loan ([`Lending`]'s drop, on every path out
//! of the call: a result, an error, this rank's failure, a panic
//! unwinding): no new lease after it, and the revocation waits for the
//! leases in flight (a chunk's reduction: microseconds). A reader that comes
//! later reads the *fallback*, a copy of the input in a segment that the
//! owner writes before it revokes, unless the input is *settled*: the owner
//! has completed the reduction of the sum it delivered, so every chunk of
//! that sum is computed and nobody reads the inputs again (every live rank
//! delivers the same sum, and its chunks are computed once, for all).
//!
//! So the copy into a segment, which every large input paid before, is paid
//! only by a rank that leaves its call without completing the reduction (it
//! failed, it got an error, it panicked), and its input stays readable for
//! the ranks that include it. A broadcast root settles once every receiver
//! has copied (each reads once, so nobody reads after); if one has not by
//! the end of the root's wait (it failed, it is slow, or it had not begun
//! when the root's grace ended), the root copies, and the receivers still
//! copying take their remaining pieces from the copy. A reader that found a settled input revoked
//! would mean two ranks delivered different sums: it panics with that
//! message rather than read freed memory.
//!
//! A hung or frozen owner holds its buffer (it never leaves its call), so
//! the leases of others go on; a reader that panics (a user operation) ends
//! its lease as it unwinds. An output's owner ends its loan by closing the
//! chunks nobody wrote and waiting out the writes in progress (see
//! [`LentOutput`]). Checked by the loom models `loom-tests/tests/lent.rs`.

use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use crate::sync::{spin_loop, thread, AtomicU8, AtomicUsize, Ordering};
use crate::value::recycle::Recycle;
use crate::value::segment::{Segment, SegmentPool};

/// The state's top bit: revoked (no new lease); the rest: leases in flight.
const REVOKED: usize = 1 << (usize::BITS - 1);

/// A rank's input buffer, lent for the length of its call (see the module).
pub struct Lent {
    ptr: *const u8,
    len: usize,
    state: AtomicUsize,
    /// Receivers of a broadcast that began to copy the value
    /// ([`Lent::copy_to`]).
    started: AtomicUsize,
    /// Receivers of a broadcast that are done with the value
    /// ([`Lent::copy_to`], [`Lent::refuse`]).
    copies: AtomicUsize,
    /// A copy of the bytes, written before the loan is revoked, unless the
    /// input was settled.
    fallback: OnceLock<Segment>,
}

// SAFETY: the pointer is only dereferenced in `Lent::read` under a lease,
// and `Lending` (the owner's guard, which borrows the buffer for as long as
// it lives) revokes the loan and waits for every lease before the borrow
// ends. The buffer is a shared borrow, so reads from several threads at once
// are sound; nothing writes through `ptr`.
unsafe impl Send for Lent {}
// SAFETY: as for `Send`: shared access is reads of an immutable borrow under
// leases, and atomics and a `OnceLock` otherwise.
unsafe impl Sync for Lent {}

impl Lent {
    /// No buffer, no fallback: what a recycled loan is set up from.
    fn unlent() -> Lent {
        Lent {
            ptr: std::ptr::null(),
            len: 0,
            state: AtomicUsize::new(0),
            started: AtomicUsize::new(0),
            copies: AtomicUsize::new(0),
            fallback: OnceLock::new(),
        }
    }

    /// An input that is a segment already (no owner to wait for): revoked
    /// from the start, its fallback the segment.
    pub fn from_segment(segment: Segment) -> Arc<Lent> {
        let lent = Lent {
            len: segment.len(),
            state: AtomicUsize::new(REVOKED),
            ..Lent::unlent()
        };
        let _ = lent.fallback.set(segment);
        Arc::new(lent)
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A broadcast receiver's one read: copies the value into `out` (of
    /// the value's length), a piece of [`COPY_PIECE`] bytes at a time, each
    /// under its own lease while the loan stands and from the fallback
    /// after, so that a root ending its loan while this copy is under way
    /// waits for one piece, not for the whole copy. Then this receiver
    /// counts as done with the value, so that the root may end its loan
    /// without a copy once all are ([`Lending::wait_copies`]).
    ///
    /// # Panics
    /// If `out`'s length is not the value's (see [`Lent::refuse`]).
    pub fn copy_to(&self, out: &mut [u8]) {
        assert_eq!(
            out.len(),
            self.len,
            "a copy of a lent value of another length"
        );
        self.started.fetch_add(1, Ordering::Relaxed);
        for (i, piece) in out.chunks_mut(COPY_PIECE).enumerate() {
            let at = i * COPY_PIECE;
            let reading = self.read();
            piece.copy_from_slice(&reading[at..at + piece.len()]);
        }
        self.done();
    }

    /// A broadcast receiver that will not copy the value (its buffer has
    /// another length), or a reader that has read what it needed under
    /// leases of its own ([`Lent::read`], a reduce-scatter's block): counted
    /// as done with it, so that the owner does not wait for it.
    pub fn refuse(&self) {
        // Begun and done at once: the root's grace waits for it no more
        // than for a copier.
        self.started.fetch_add(1, Ordering::Relaxed);
        self.done();
    }

    fn done(&self) {
        // Release: after the last lease ended (its own Release), so the
        // owner's Acquire load that sees this count sees no lease of this
        // reader.
        self.copies.fetch_add(1, Ordering::Release);
    }

    /// The bytes: the owner's buffer under a lease (held until the
    /// returned [`Reading`] drops) while the loan stands, else the fallback.
    ///
    /// # Panics
    /// If the loan was revoked as settled (no fallback): only if two ranks
    /// delivered different sums, which the allreduce protocol rules out, or
    /// a broadcast's receiver read twice.
    pub fn read(&self) -> Reading<'_> {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            if s & REVOKED != 0 {
                // `OnceLock::get` acquires what the owner's `set` wrote.
                let copy = self.fallback.get().expect(
                    "a lent buffer read after its owner settled it: two ranks \
                     delivered different sums, or a receiver read twice",
                );
                return Reading {
                    bytes: copy.bytes(),
                    lease: None,
                };
            }
            // Acquire: keeps the reads under the lease after it is taken.
            match self
                .state
                .compare_exchange_weak(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        let lease = Lease(&self.state);
        // SAFETY: the lease is taken and the loan was not revoked when it
        // was; the owner's revocation waits until this lease ends (`Lease`'s
        // drop, also on unwinding) before its borrow of the buffer ends, and
        // the slice cannot outlive the `Reading` that holds the lease.
        let bytes = unsafe { std::slice::from_raw_parts(self.ptr, self.len) };
        Reading {
            bytes,
            lease: Some(lease),
        }
    }
}

/// An input's bytes, readable while this lives (a lease on the owner's
/// buffer, or the fallback).
pub struct Reading<'a> {
    bytes: &'a [u8],
    lease: Option<Lease<'a>>,
}

impl Reading<'_> {
    /// Whether the bytes are the owner's buffer, read in place.
    pub fn in_place(&self) -> bool {
        self.lease.is_some()
    }
}

impl std::ops::Deref for Reading<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes
    }
}

/// A loan is itself: two values are equal if they lend the same buffer.
impl PartialEq for Lent {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl std::fmt::Debug for Lent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Lent({} bytes)", self.len)
    }
}

/// A free loan lets go of its fallback copy at once: it must not keep a
/// segment from reuse until the loan is lent again.
impl Recycle for Lent {
    const HOLDS_OTHERS: bool = true;

    fn holds_others(&self) -> bool {
        self.fallback.get().is_some()
    }

    fn release(&mut self) {
        self.fallback.take();
    }
}

/// A lease in flight; its drop ends it.
struct Lease<'a>(&'a AtomicUsize);

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        // Release: the reads under the lease happen before the owner's
        // Acquire load that sees the count drop.
        self.0.fetch_sub(1, Ordering::Release);
    }
}

/// The owner's side of a loan: it borrows the buffer, and its drop revokes
/// the loan (copying the bytes to the fallback first, unless
/// [`Lending::settle`] was called) and waits for the leases in flight.
/// Never leaked: it lives in the owner's call frame only.
pub struct Lending<'a> {
    lent: Arc<Lent>,
    pool: &'a SegmentPool,
    settled: bool,
    _buffer: PhantomData<&'a [u8]>,
}

impl<'a> Lending<'a> {
    /// Lends `bytes` until the returned guard drops (its shared half taken
    /// from the pool's free ones, if any).
    pub fn new(bytes: &'a [u8], pool: &'a SegmentPool) -> Lending<'a> {
        let mut lent = pool.lents.take(Lent::unlent);
        *lent = Lent {
            ptr: bytes.as_ptr(),
            len: bytes.len(),
            ..Lent::unlent()
        };
        Lending {
            lent: lent.share(),
            pool,
            settled: false,
            _buffer: PhantomData,
        }
    }

    /// The loan, to travel in the allreduce's value.
    pub fn lent(&self) -> &Arc<Lent> {
        &self.lent
    }

    /// Nobody will read the input after the owner's call: the reduction of
    /// the sum this rank delivered is complete (every chunk computed).
    pub fn settle(&mut self) {
        self.settled = true;
    }

    /// A broadcast root's end of the loan: waits (spinning, then yielding)
    /// until `receivers` ranks have [copied](Lent::copy_to) the value, or
    /// until `enough()` says the ones still missing will not come (they
    /// failed), or until `deadline`; and from `grace` on, only while every
    /// receiver has begun its copy: one that has not by then may not run
    /// for a while (its core is busy, or its program is elsewhere), and the
    /// root copies the value for it instead of waiting. Settles (no
    /// fallback copy) only if every receiver copied: then nobody reads the
    /// buffer again, since a receiver reads once. Otherwise the drop
    /// copies, waiting only for the pieces being copied, and the others
    /// read the copy. True if settled.
    pub fn wait_copies(
        &mut self,
        receivers: usize,
        mut enough: impl FnMut(usize) -> bool,
        grace: std::time::Instant,
        deadline: std::time::Instant,
    ) -> bool {
        let mut spins = 0u32;
        let mut turns = 0u32;
        loop {
            // Acquire: every counted reader's leases ended before.
            let copies = self.lent.copies.load(Ordering::Acquire);
            if copies >= receivers {
                self.settled = true;
                return true;
            }
            turns = turns.wrapping_add(1);
            // A clock read every 64 turns while spinning, and at every turn
            // once yielding: a yield may hand the core to others for a time
            // slice (under loom every turn: each is a scheduling point).
            if cfg!(loom) || turns % 64 == 0 || spins >= 64 {
                let now = std::time::Instant::now();
                let lagging = now >= grace && self.lent.started.load(Ordering::Relaxed) < receivers;
                if lagging || enough(copies) || now >= deadline {
                    return false;
                }
            }
            back_off(&mut spins);
        }
    }
}

impl Drop for Lending<'_> {
    fn drop(&mut self) {
        let lent = &*self.lent;
        if !self.settled {
            // Others may still need the input: copy it while the buffer is
            // ours (concurrent leases only read), and publish the copy
            // before the revocation.
            // SAFETY: `Lending` borrows the buffer for its whole life.
            let bytes = unsafe { std::slice::from_raw_parts(lent.ptr, lent.len) };
            let copy = self.pool.fill(bytes.len(), |b| b.copy_from_slice(bytes));
            let _ = lent.fallback.set(copy);
        }
        lent.state.fetch_or(REVOKED, Ordering::AcqRel);
        // Acquire: every lease's reads happen before this returns and the
        // borrow of the buffer ends.
        let mut spins = 0u32;
        while lent.state.load(Ordering::Acquire) != REVOKED {
            back_off(&mut spins);
        }
    }
}

/// Bytes a broadcast receiver copies under one lease ([`Lent::copy_to`]);
/// a few under loom, so that the models revoke a loan between pieces.
#[cfg(not(loom))]
pub const COPY_PIECE: usize = 64 << 10;
/// Bytes a broadcast receiver copies under one lease ([`Lent::copy_to`]);
/// a few under loom, so that the models revoke a loan between pieces.
#[cfg(loom)]
pub const COPY_PIECE: usize = 2;

/// One turn of waiting for another thread's copy (microseconds at most):
/// spin briefly, then yield (the copier may be waiting for this core).
fn back_off(spins: &mut u32) {
    if *spins < 64 {
        spin_loop();
        *spins += 1;
    } else {
        thread::yield_now();
    }
}

/// A chunk of a lent output nobody has written yet.
const EMPTY: u8 = 0;
/// A chunk being written, by one thread: the one whose CAS set it.
const WRITING: u8 = 1;
/// A chunk holding its result.
const DONE: u8 = 2;
/// A chunk nobody may write: its owner left its call without it.
const CLOSED: u8 = 3;

/// A rank's output buffer for a large allreduce, lent for its call: the
/// rank that computes a chunk of the result computes it straight into one
/// lent output ([`LentOutput::take`]) and copies it from there into every
/// other (*pushes* it, [`LentOutput::write`]), so the result reaches each
/// rank's buffer in one copy, from a chunk still in the computing core's
/// cache, instead of each rank pulling every chunk out of shared memory.
///
/// Each chunk of the buffer has its own state (empty, being written, done,
/// closed): a writer takes a chunk from empty to being written and then to
/// done (or back to empty, if it gives the chunk back unfinished), so one
/// thread at a time writes a chunk, and the owner writes what nobody pushed
/// itself the same way. The owner ends the loan
/// ([`LendingOutput`]'s drop) by closing every chunk still empty and waiting
/// out every chunk being written (closing it too if its writer gives it
/// back); nothing writes the buffer after that.
pub struct LentOutput {
    ptr: *mut u8,
    len: usize,
    /// Bytes per chunk (the last one is shorter).
    chunk: usize,
    states: Vec<AtomicU8>,
    /// Under loom, a cell per chunk that every write of the chunk touches,
    /// and the owner touches when its loan ends: loom then checks that
    /// writes of a chunk never overlap, and all end before the loan does.
    #[cfg(loom)]
    cells: Vec<crate::sync::UnsafeCell<()>>,
}

// SAFETY: the pointer is only used through a `Writing` guard, for a chunk
// whose state the writer took from EMPTY to WRITING (so one writer per
// chunk), and `LendingOutput` (the owner's guard, which holds the buffer's
// unique borrow for as long as it lives, and through which alone the owner
// reaches the buffer meanwhile) closes every chunk and waits out every
// writer before that borrow ends.
unsafe impl Send for LentOutput {}
// SAFETY: as for `Send`.
unsafe impl Sync for LentOutput {}

impl LentOutput {
    /// Takes chunk `c` for writing, unless it is written or being written
    /// already, or closed: the guard gives the chunk's bytes to this thread
    /// alone, and the owner's loan does not end while it lives. The chunk
    /// holds its result once the guard is [finished](Writing::finish); a
    /// guard dropped unfinished (a user operation panicked while computing
    /// into it) leaves the chunk empty again, for another writer.
    pub fn take(&self, c: usize) -> Option<Writing<'_>> {
        // Acquire: our writes come after whatever the previous holder of
        // the state did (a writer that gave the chunk back unfinished).
        self.states[c]
            .compare_exchange(EMPTY, WRITING, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        Some(Writing {
            output: self,
            c,
            finished: false,
        })
    }

    /// Writes `bytes`, the result of chunk `c`, unless the chunk is written
    /// or being written already, or closed. Returns whether it wrote.
    pub fn write(&self, c: usize, bytes: &[u8]) -> bool {
        let Some(mut chunk) = self.take(c) else {
            return false;
        };
        chunk.bytes_mut().copy_from_slice(bytes);
        chunk.finish();
        true
    }

    /// The bytes of chunk `c`.
    fn range(&self, c: usize) -> std::ops::Range<usize> {
        let start = c * self.chunk;
        start..(start + self.chunk).min(self.len)
    }

    /// Whether this output takes the chunks of a value of `len` bytes cut
    /// every `chunk` bytes (its owner's element type may cut them apart).
    pub fn fits(&self, len: usize, chunk: usize) -> bool {
        (self.len, self.chunk) == (len, chunk)
    }

    /// Whether chunk `c` holds its result (Acquire: its bytes are visible).
    pub fn is_done(&self, c: usize) -> bool {
        self.states[c].load(Ordering::Acquire) == DONE
    }

    /// Waits while chunk `c` is being written; returns its state after.
    fn settle_chunk(&self, c: usize) -> u8 {
        let mut spins = 0u32;
        loop {
            match self.states[c].load(Ordering::Acquire) {
                WRITING => back_off(&mut spins),
                s => return s,
            }
        }
    }
}

impl Recycle for LentOutput {}

impl std::fmt::Debug for LentOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LentOutput({} bytes)", self.len)
    }
}

/// A chunk of a [`LentOutput`] taken for writing ([`LentOutput::take`]):
/// this thread's alone until the guard drops.
pub struct Writing<'a> {
    output: &'a LentOutput,
    c: usize,
    finished: bool,
}

impl Writing<'_> {
    /// The chunk's bytes, to write its result into.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let range = self.output.range(self.c);
        // SAFETY: the chunk is ours alone (WRITING, set by our `take`), in
        // bounds (`range`), and the owner's guard waits for it to leave
        // WRITING before the buffer's borrow ends.
        unsafe { std::slice::from_raw_parts_mut(self.output.ptr.add(range.start), range.len()) }
    }

    /// The chunk's bytes as written so far.
    pub fn bytes(&self) -> &[u8] {
        let range = self.output.range(self.c);
        // SAFETY: as in `bytes_mut`; nobody else writes the chunk meanwhile.
        unsafe { std::slice::from_raw_parts(self.output.ptr.add(range.start), range.len()) }
    }

    /// The chunk holds its result: others see it done.
    pub fn finish(mut self) {
        self.finished = true;
    }
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        #[cfg(loom)]
        self.output.cells[self.c].with_mut(|_| ());
        // Release: the bytes are in place before anyone sees DONE; an
        // unfinished chunk (a panic while computing it) is empty again.
        let state = if self.finished { DONE } else { EMPTY };
        self.output.states[self.c].store(state, Ordering::Release);
    }
}

/// The owner's side of a lent output: it holds the buffer's unique borrow,
/// and its drop closes the loan (no chunk written after it returns).
/// Never leaked: it lives in the owner's call frame only.
pub struct LendingOutput<'a> {
    lent: Arc<LentOutput>,
    _buffer: PhantomData<&'a mut [u8]>,
}

impl<'a> LendingOutput<'a> {
    /// Lends `out`, in chunks of `chunk` bytes, until the guard drops (its
    /// shared half taken from the pool's free ones, if any).
    pub fn new(out: &'a mut [u8], chunk: usize, pool: &SegmentPool) -> LendingOutput<'a> {
        let chunks = out.len().div_ceil(chunk.max(1));
        let (ptr, len) = (out.as_mut_ptr(), out.len());
        let mut lent = pool.outputs.take(|| LentOutput {
            ptr,
            len,
            chunk,
            states: Vec::new(),
            #[cfg(loom)]
            cells: Vec::new(),
        });
        let o = &mut *lent;
        (o.ptr, o.len, o.chunk) = (ptr, len, chunk);
        o.states.clear();
        o.states.extend((0..chunks).map(|_| AtomicU8::new(EMPTY)));
        #[cfg(loom)]
        {
            o.cells.clear();
            o.cells
                .extend((0..chunks).map(|_| crate::sync::UnsafeCell::new(())));
        }
        LendingOutput {
            lent: lent.share(),
            _buffer: PhantomData,
        }
    }

    /// The loan, to register where writers find it.
    pub fn lent(&self) -> &Arc<LentOutput> {
        &self.lent
    }

    /// Makes sure chunk `c` holds its result: written by someone already,
    /// or now by this rank with `fill`, which writes the result into the
    /// chunk's bytes (called only when needed).
    pub fn complete(&self, c: usize, fill: impl FnOnce(&mut [u8])) {
        // While the loan lasts a chunk is empty, being written or done: a
        // writer that gave it back unfinished left it empty.
        while self.lent.settle_chunk(c) != DONE {
            if let Some(mut chunk) = self.lent.take(c) {
                fill(chunk.bytes_mut());
                chunk.finish();
                return;
            }
        }
    }
}

impl Drop for LendingOutput<'_> {
    fn drop(&mut self) {
        for (c, state) in self.lent.states.iter().enumerate() {
            // A chunk being written ends done, or empty again if its writer
            // gave it back unfinished: that one is closed too.
            while state
                .compare_exchange(EMPTY, CLOSED, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                if self.lent.settle_chunk(c) != EMPTY {
                    break;
                }
            }
        }
        // The buffer is the owner's again (loom checks no write is left).
        #[cfg(loom)]
        for cell in self.lent.cells.iter() {
            cell.with_mut(|_| ());
        }
    }
}

#[cfg(all(test, not(loom)))]
#[path = "lent_tests.rs"]
mod tests;
