//! A global allocator that counts allocations (and reallocations), for
//! `examples/allocations.rs` and `tests/allocations.rs`: a program that
//! includes this module allocates through it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // Const-initialized, no destructor: reading it allocates nothing.
    static MINE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Allocations and reallocations made so far, by every thread.
#[allow(dead_code)]
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// Allocations and reallocations made so far by the calling thread.
#[allow(dead_code)]
pub fn thread_allocations() -> u64 {
    MINE.with(|m| m.get())
}

fn count() {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    MINE.with(|m| m.set(m.get() + 1));
}

// SAFETY: forwards every call to the system allocator unchanged; counting
// is a relaxed atomic add and a const thread-local cell, which allocate
// nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract is System's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        count();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;
