//! The loom switch: the one place the crate takes its atomics, fences, cells,
//! thread parking and spin hint from (the shape of tokio's `src/loom/`).
//!
//! Built with `RUSTFLAGS="--cfg loom"` these are loom's instrumented types, so
//! the loom models in `loom-tests/` explore every interleaving (and every
//! weak-memory outcome loom models) of the code that uses them; otherwise they
//! are the std types at zero cost.
//!
//! Differences that callers must respect:
//!
//! * [`UnsafeCell`] is reached only through `with` / `with_mut` (loom checks
//!   that no two threads touch a cell concurrently); the std version is a
//!   transparent wrapper with the same methods.
//! * loom has no `thread::park_timeout`; code that parks with a deadline must
//!   take the deadline-free path under loom.
//! * loom treats SeqCst loads and stores as AcqRel (only `fence(SeqCst)` is
//!   modelled fully), so a protocol that loom is to check should build its
//!   store-load (Dekker) orderings from read-modify-writes or fences, not from
//!   SeqCst loads and stores.
//!
//! Only what the crate uses is re-exported here, in both builds: add an item
//! when code needs it (to both halves, so that the loom build checks it).

#[cfg(loom)]
mod imp {
    pub(crate) use loom::cell::UnsafeCell;
    pub(crate) use loom::hint::spin_loop;
    pub(crate) use loom::sync::atomic::{
        fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
    };

    /// Threads as loom models them (no `park_timeout`).
    pub(crate) mod thread {
        pub(crate) use loom::thread::{current, park, yield_now, Thread, ThreadId};
    }
}

#[cfg(not(loom))]
mod imp {
    pub(crate) use std::hint::spin_loop;
    pub(crate) use std::sync::atomic::{
        fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
    };

    /// std's threads.
    pub(crate) mod thread {
        pub(crate) use std::thread::{current, park, park_timeout, yield_now, Thread, ThreadId};
    }

    /// `std::cell::UnsafeCell` with loom's closure-based API, so code written
    /// against loom's cell compiles unchanged (and inlines to a raw pointer).
    #[derive(Debug, Default)]
    #[repr(transparent)]
    pub(crate) struct UnsafeCell<T: ?Sized>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        /// A cell holding `value`.
        #[inline(always)]
        pub(crate) const fn new(value: T) -> UnsafeCell<T> {
            UnsafeCell(std::cell::UnsafeCell::new(value))
        }
    }

    impl<T: ?Sized> UnsafeCell<T> {
        /// Calls `f` with a shared pointer to the value.
        #[inline(always)]
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        /// Calls `f` with a mutable pointer to the value.
        #[inline(always)]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

pub(crate) use imp::*;
