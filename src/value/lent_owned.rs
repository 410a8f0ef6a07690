//! Buffers lent for as long as an immediate operation runs
//! ([`crate::request`]): the request owns the caller's `Vec`s, so a loan
//! cannot borrow them for a call frame as a blocking call's [`Lending`]
//! and [`LendingOutput`] do. [`OwnedInput`] and [`OwnedOutput`] hold a
//! `Vec`'s allocation in raw parts for the loan's duration and end the
//! loan before they free the allocation or hand the `Vec` back. So a large
//! immediate allreduce on threads reads each input where it is and writes
//! each chunk of the result straight into the request's output, also while
//! its rank computes outside the library, as the blocking call does:
//! without the loans, a copy of the input and a reduction of the chunks
//! computed before each rank's wait again cost 170 µs against 43 for the
//! blocking call at 1 MiB and two ranks (`examples/overlap.rs`;
//! docs/benchmarks.md).
//!
//! The loans' concurrency is [`Lending`]'s and [`LendingOutput`]'s,
//! checked by the loom models of `loom-tests/tests/lent.rs`; these guards
//! add ownership only. A guard that is leaked leaks its buffer with it:
//! the loan never ends, and the allocation is never freed.

use std::ptr::NonNull;

use bytemuck::Pod;

use crate::value::lent::{Lending, LendingOutput, Lent, LentOutput};
use crate::value::segment::SegmentPool;
use std::sync::Arc;

/// A `Vec<T>` lent as a lazy sum's output until [`OwnedOutput::into_vec`]
/// or the guard's drop.
pub struct OwnedOutput<T> {
    /// The loan; `None` once ended.
    lending: Option<LendingOutput<'static>>,
    ptr: NonNull<T>,
    len: usize,
    cap: usize,
}

impl<T: Pod> OwnedOutput<T> {
    /// Lends `buf` in chunks of `chunk` bytes (its shared half from
    /// `pool`).
    pub fn new(buf: Vec<T>, chunk: usize, pool: &SegmentPool) -> OwnedOutput<T> {
        let mut buf = std::mem::ManuallyDrop::new(buf);
        let (len, cap) = (buf.len(), buf.capacity());
        let ptr = NonNull::new(buf.as_mut_ptr()).unwrap_or(NonNull::dangling());
        let bytes = len * std::mem::size_of::<T>();
        // SAFETY: `ptr` and `len` describe the live allocation of `len`
        // initialized `T`s that this guard owns from here on, as raw parts
        // (the `Vec` is not used again), or a dangling, aligned pointer and
        // no byte. Nothing but the loan reads or writes it (the guard
        // exposes no access to it), and the allocation is freed or handed
        // out only after the loan ended: `into_vec` and `drop` drop
        // `lending` first, which waits out the writes in progress and
        // closes the chunks nobody wrote. `T: Pod`: any bytes written are
        // a valid `T`.
        let out: &'static mut [u8] =
            unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr().cast::<u8>(), bytes) };
        OwnedOutput {
            lending: Some(LendingOutput::new(out, chunk, pool)),
            ptr,
            len,
            cap,
        }
    }

    /// The buffer's length, in `T`s.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no `T`.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The loan, to register where writers find it.
    pub fn lent(&self) -> &Arc<LentOutput> {
        self.lending().lent()
    }

    /// The loan's guard, for the owner's reduction
    /// ([`crate::value::data::Data::reduce_lent`]).
    pub fn lending(&self) -> &LendingOutput<'static> {
        self.lending
            .as_ref()
            .expect("the loan ends only in into_vec and drop")
    }

    /// Ends the loan and hands the buffer back, with every chunk written
    /// by then.
    pub fn into_vec(mut self) -> Vec<T> {
        self.lending = None;
        // SAFETY: the raw parts taken from a `Vec<T>` in `new`, the loan
        // ended above: the allocation is this guard's alone, handed out
        // once (the guard is forgotten, so its drop does not free it).
        let vec = unsafe { Vec::from_raw_parts(self.ptr.as_ptr(), self.len, self.cap) };
        std::mem::forget(self);
        vec
    }
}

impl<T> Drop for OwnedOutput<T> {
    fn drop(&mut self) {
        self.lending = None;
        // SAFETY: as in `into_vec`: the loan ended above, and the raw
        // parts are those of the `Vec` taken in `new`, freed once.
        drop(unsafe { Vec::from_raw_parts(self.ptr.as_ptr(), self.len, self.cap) });
    }
}

/// A `Vec<T>` lent as a lazy sum's input until [`OwnedInput::into_vec`] or
/// the guard's drop, which revoke the loan ([`Lending`]: the bytes copied
/// to a fallback first unless [settled](OwnedInput::settle)).
pub struct OwnedInput<T> {
    /// The loan; `None` once ended.
    lending: Option<Lending<'static>>,
    /// The pool the loan's fallback comes from, held past the loan.
    pool: Arc<SegmentPool>,
    ptr: NonNull<T>,
    len: usize,
    cap: usize,
}

impl<T: Pod> OwnedInput<T> {
    /// Lends `buf` (a fallback, if one is needed, from `pool`).
    pub fn new(buf: Vec<T>, pool: Arc<SegmentPool>) -> OwnedInput<T> {
        let mut buf = std::mem::ManuallyDrop::new(buf);
        let (len, cap) = (buf.len(), buf.capacity());
        let ptr = NonNull::new(buf.as_mut_ptr()).unwrap_or(NonNull::dangling());
        let bytes = len * std::mem::size_of::<T>();
        // SAFETY: `ptr` and `len` describe the live allocation of `len`
        // initialized `T`s that this guard owns from here on, as raw parts
        // (the `Vec` is not used again), or a dangling, aligned pointer and
        // no byte; nothing writes it while lent (the guard exposes no
        // access), and it is freed or handed out only after the loan ended
        // (`into_vec` and `drop` drop `lending` first, which waits out the
        // leases in flight). The pool is the `Arc` this guard holds, which
        // it drops only after the loan.
        let (input, pool_ref): (&'static [u8], &'static SegmentPool) = unsafe {
            (
                std::slice::from_raw_parts(ptr.as_ptr().cast::<u8>(), bytes),
                &*Arc::as_ptr(&pool),
            )
        };
        OwnedInput {
            lending: Some(Lending::new(input, pool_ref)),
            pool,
            ptr,
            len,
            cap,
        }
    }

    /// The loan, to travel in the value.
    pub fn lent(&self) -> &Arc<Lent> {
        self.lending
            .as_ref()
            .expect("the loan ends only in into_vec and drop")
            .lent()
    }

    /// Nobody reads the input again (the reduction of the sum this rank
    /// delivered is complete): its loan ends without a fallback copy.
    pub fn settle(&mut self) {
        if let Some(lending) = self.lending.as_mut() {
            lending.settle();
        }
    }

    /// Ends the loan and hands the buffer back.
    pub fn into_vec(mut self) -> Vec<T> {
        self.lending = None;
        // SAFETY: the raw parts taken from a `Vec<T>` in `new`, the loan
        // ended above: the allocation is this guard's alone, handed out
        // once (the guard's drop is skipped below; its pool `Arc` is
        // dropped here).
        let vec = unsafe { Vec::from_raw_parts(self.ptr.as_ptr(), self.len, self.cap) };
        // SAFETY: read once, and `self` is forgotten right after, so the
        // `Arc` is not dropped twice.
        let pool = unsafe { std::ptr::read(&self.pool) };
        std::mem::forget(self);
        drop(pool);
        vec
    }
}

impl<T> Drop for OwnedInput<T> {
    fn drop(&mut self) {
        self.lending = None;
        // SAFETY: as in `into_vec`: the loan ended above, and the raw
        // parts are those of the `Vec` taken in `new`, freed once. (The
        // pool's `Arc` drops after this, with the fields.)
        drop(unsafe { Vec::from_raw_parts(self.ptr.as_ptr(), self.len, self.cap) });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Chunks written through the loan are in the buffer handed back; a
    /// buffer dropped with its loan is freed once (Miri-clean shape: raw
    /// parts in, raw parts out).
    #[test]
    fn what_the_loan_writes_is_in_the_buffer_handed_back() {
        let pool = SegmentPool::new();
        let owned = OwnedOutput::new(vec![0u64; 32], 64, &pool);
        let lent = Arc::clone(owned.lent());
        let mut chunk = lent.take(1).expect("chunk 1 is free");
        chunk.bytes_mut().fill(0xab);
        chunk.finish();
        owned.lending().complete(0, |out| out.fill(0x11));
        let back = owned.into_vec();
        assert!(lent.take(2).is_none(), "a chunk nobody wrote is closed");
        assert_eq!(back.len(), 32);
        assert!(back[..8].iter().all(|&x| x == 0x1111_1111_1111_1111));
        assert!(back[8..16].iter().all(|&x| x == 0xabab_abab_abab_abab));
        assert!(back[16..].iter().all(|&x| x == 0));
        let dropped = OwnedOutput::new(vec![1u32; 5], 8, &pool);
        let loan = Arc::clone(dropped.lent());
        drop(dropped);
        assert!(loan.take(0).is_none(), "the guard's drop ends the loan");
        let empty = OwnedOutput::new(Vec::<f64>::new(), 64, &pool);
        assert!(empty.into_vec().is_empty());
    }

    /// An input read under the loan while it stands, and from the fallback
    /// once the guard revoked it unsettled; handed back intact.
    #[test]
    fn an_input_is_read_in_place_and_from_its_fallback_after() {
        let pool = Arc::new(SegmentPool::new());
        let input = OwnedInput::new(vec![7u32; 4], Arc::clone(&pool));
        let lent = Arc::clone(input.lent());
        let mut got = [0u8; 16];
        lent.copy_to(&mut got);
        assert_eq!(got, bytemuck::cast::<[u32; 4], [u8; 16]>([7; 4]));
        let back = input.into_vec();
        assert_eq!(back, vec![7; 4]);
        let mut again = [0u8; 16];
        lent.copy_to(&mut again);
        assert_eq!(again, got, "the fallback holds the bytes");
        let settled = {
            let mut input = OwnedInput::new(vec![1u64; 2], Arc::clone(&pool));
            input.settle();
            input
        };
        drop(settled);
    }
}
