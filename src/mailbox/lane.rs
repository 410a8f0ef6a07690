//! One lane: a bounded single-producer single-consumer ring.
//!
//! Each slot carries a stamp next to its value. The producer fills slot
//! `pos & mask` and then stores the stamp `pos + 1` (Release); the consumer
//! owns position `pos` once it loads that stamp (Acquire). So a consumer that
//! polls its next slot learns "a message is here" and reads the message from
//! the same cache line: one line crosses cores per message, where a
//! head/tail-only ring (rtrb) moves the tail's line and then the slot's.
//! The consumer never writes slots; it publishes how far it has read in its
//! own padded `head` word, which the producer reads only when its cached copy
//! says the ring is full. Stamps of a position are unique (`pos + 1` grows
//! without bound, in `usize`), so an old stamp is never mistaken for a new one.
//!
//! The producer's and the consumer's private positions live in their own
//! cache-padded halves, so the two sides never write the same line except the
//! slot being handed over.

use std::mem::MaybeUninit;

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicUsize, Ordering, UnsafeCell};

/// A bounded SPSC ring. Every method is `unsafe`: it is the caller's duty that
/// at most one thread at a time acts as the producer (`push`) and at most one
/// as the consumer (`pop`, `has_next`), and that a change of the thread in a
/// role is ordered by a happens-before edge (the mailbox gets this from the
/// uniqueness of endpoints, `&mut self` and the `taken` flag).
pub(super) struct Lane<T> {
    producer: CachePadded<ProducerSide>,
    consumer: CachePadded<ConsumerSide>,
    slots: Box<[Slot<T>]>,
    mask: usize,
}

/// Written by the producer only.
struct ProducerSide {
    /// Next position to fill.
    tail: UnsafeCell<usize>,
    /// The consumer's `head` as last read: the producer need not read the
    /// consumer's line while `tail - cached_head < capacity`.
    cached_head: UnsafeCell<usize>,
}

/// Written by the consumer only.
struct ConsumerSide {
    /// Next position to read, published for the producer's full check.
    head: AtomicUsize,
    /// The consumer's own copy of `head` (no atomic load on its fast path).
    next: UnsafeCell<usize>,
}

/// Cache-line aligned: a slot of a runtime message (stamp and 120 bytes)
/// fills exactly two lines instead of straddling three.
#[repr(align(64))]
struct Slot<T> {
    /// `pos + 1` once position `pos` holds a value in this slot.
    stamp: AtomicUsize,
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: a Lane hands values of T from one thread (the producer) to another
// (the consumer), so sharing it needs T: Send; the producer's and consumer's
// cells are each touched by one thread at a time (the contract of the unsafe
// methods), and slot values are handed over through the stamp's
// Release/Acquire pair.
unsafe impl<T: Send> Sync for Lane<T> {}
// SAFETY: owning a Lane is owning its undelivered values of T.
unsafe impl<T: Send> Send for Lane<T> {}

impl<T> Lane<T> {
    /// An empty lane of `capacity` slots (a power of two, at least 2).
    pub(super) fn new(capacity: usize) -> Lane<T> {
        debug_assert!(capacity >= 2 && capacity.is_power_of_two());
        Lane {
            producer: CachePadded::new(ProducerSide {
                tail: UnsafeCell::new(0),
                cached_head: UnsafeCell::new(0),
            }),
            consumer: CachePadded::new(ConsumerSide {
                head: AtomicUsize::new(0),
                next: UnsafeCell::new(0),
            }),
            slots: (0..capacity)
                .map(|_| Slot {
                    stamp: AtomicUsize::new(0),
                    value: UnsafeCell::new(MaybeUninit::uninit()),
                })
                .collect(),
            mask: capacity - 1,
        }
    }

    /// Appends `value`, or hands it back if the lane is full.
    ///
    /// # Safety
    ///
    /// The caller is the lane's only producer (see [`Lane`]).
    #[inline]
    pub(super) unsafe fn push(&self, value: T) -> Result<(), T> {
        // SAFETY: the producer's cells are only touched by the producer, and
        // the caller is it.
        let tail = self.producer.tail.with(|p| unsafe { *p });
        // SAFETY: as above.
        let cached_head = self.producer.cached_head.with(|p| unsafe { *p });
        if tail.wrapping_sub(cached_head) > self.mask {
            // Acquire: pairs with the consumer's Release store of `head`, so
            // its reads of the slots below `head` happen before we overwrite
            // them.
            let head = self.consumer.head.load(Ordering::Acquire);
            // SAFETY: producer-only cell, and the caller is the producer.
            self.producer.cached_head.with_mut(|p| unsafe { *p = head });
            if tail.wrapping_sub(head) > self.mask {
                return Err(value);
            }
        }
        let slot = &self.slots[tail & self.mask];
        // SAFETY: position `tail - capacity`, the last one to use this slot,
        // has been read by the consumer (tail - head < capacity, with the
        // Acquire above or on an earlier push ordering that read before this
        // write), and only the producer writes slots.
        slot.value.with_mut(|p| unsafe { (*p).write(value) });
        crate::fault_point::reach(crate::fault_point::FaultPoint::SlotWritten);
        // Release: publishes the value written above to the consumer's
        // Acquire load of the stamp.
        slot.stamp.store(tail.wrapping_add(1), Ordering::Release);
        // SAFETY: producer-only cell.
        self.producer
            .tail
            .with_mut(|p| unsafe { *p = tail.wrapping_add(1) });
        Ok(())
    }

    /// Takes the oldest value, if any.
    ///
    /// # Safety
    ///
    /// The caller is the lane's only consumer (see [`Lane`]).
    #[inline]
    pub(super) unsafe fn pop(&self) -> Option<T> {
        // SAFETY: consumer-only cell, and the caller is the consumer.
        let head = self.consumer.next.with(|p| unsafe { *p });
        let slot = &self.slots[head & self.mask];
        // Acquire: pairs with the producer's Release store of this stamp, so
        // the value it wrote is visible below.
        if slot.stamp.load(Ordering::Acquire) != head.wrapping_add(1) {
            return None;
        }
        // SAFETY: the stamp says position `head` is filled (and its write
        // happens before this read); the producer will not touch this slot
        // again until we publish a `head` past it, and we are the only reader.
        // The value is read out exactly once: `next` moves past it below.
        let value = slot.value.with(|p| unsafe { (*p).assume_init_read() });
        // SAFETY: consumer-only cell.
        self.consumer
            .next
            .with_mut(|p| unsafe { *p = head.wrapping_add(1) });
        // Release: our read of the slot happens before the producer's
        // Acquire load of `head` that lets it refill the slot.
        self.consumer
            .head
            .store(head.wrapping_add(1), Ordering::Release);
        Some(value)
    }

    /// Whether the next `pop` would (probably) find a value. A hint: a value
    /// being published at this moment may or may not be seen.
    ///
    /// # Safety
    ///
    /// The caller is the lane's only consumer (see [`Lane`]).
    #[inline]
    pub(super) unsafe fn has_next(&self) -> bool {
        // SAFETY: consumer-only cell, and the caller is the consumer.
        let head = self.consumer.next.with(|p| unsafe { *p });
        // Relaxed: only a hint; `pop` re-reads the stamp with Acquire before
        // touching the value.
        self.slots[head & self.mask].stamp.load(Ordering::Relaxed) == head.wrapping_add(1)
    }
}

impl<T> Drop for Lane<T> {
    fn drop(&mut self) {
        // `&mut self`: no producer or consumer is active any more.
        // SAFETY: exclusive access; the cells hold plain positions.
        let head = self.consumer.next.with(|p| unsafe { *p });
        // SAFETY: as above.
        let tail = self.producer.tail.with(|p| unsafe { *p });
        for i in 0..tail.wrapping_sub(head) {
            let slot = &self.slots[head.wrapping_add(i) & self.mask];
            // SAFETY: positions head..tail were written by the producer and
            // never read by the consumer, so each holds an initialized value,
            // dropped here exactly once.
            slot.value.with_mut(|p| unsafe { (*p).assume_init_drop() });
        }
    }
}
