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
//!
//! A slot is the stamp and then the value, from the start of a cache line.
//! A value its [`Compact`] codec squeezes into one line travels as that small
//! form, written and read in the slot's first line only (the stamp's low
//! bit says which form a position holds): a second line crossing costs a
//! message about 90 ns with the cores in separate cache clusters
//! (`cargo bench --bench mailbox -- message_sizes`, docs/mailbox.md).

use std::mem::{ManuallyDrop, MaybeUninit};

use crossbeam_utils::CachePadded;

use super::compact::Compact;
use crate::sync::{AtomicUsize, Ordering, UnsafeCell};

/// A bounded SPSC ring. Every method is `unsafe`: it is the caller's duty that
/// at most one thread at a time acts as the producer (`push`) and at most one
/// as the consumer (`pop`, `has_next`), and that a change of the thread in a
/// role is ordered by a happens-before edge (the mailbox gets this from the
/// uniqueness of endpoints, `&mut self` and the `taken` flag).
pub(super) struct Lane<T, C: Compact<T>> {
    producer: CachePadded<ProducerSide>,
    consumer: CachePadded<ConsumerSide>,
    slots: Box<[Slot<T, C::Small>]>,
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

/// Cache-line aligned and laid out in order: the stamp and a small form
/// share the first line; a runtime message (stamp and 120 bytes) fills
/// exactly two lines instead of straddling three.
#[repr(C, align(64))]
struct Slot<T, S: Copy> {
    /// `stamp(pos, small)` once position `pos` holds a value in this slot.
    stamp: AtomicUsize,
    value: UnsafeCell<MaybeUninit<Body<T, S>>>,
}

/// A slot's value: whole, or its codec's small form, which starts at the
/// same place (right after the stamp) and ends within the first line.
#[repr(C)]
union Body<T, S: Copy> {
    whole: ManuallyDrop<T>,
    small: S,
}

/// The stamp of position `pos`: `pos + 1`, shifted to make room for the
/// bit that says the slot holds the small form. Unique per position until
/// 2^63 messages have passed one lane.
#[inline]
fn stamp(pos: usize, small: bool) -> usize {
    (pos.wrapping_add(1) << 1) | small as usize
}

/// Whether `stamp` is position `pos`'s, of either form.
#[inline]
fn stamps(stamp: usize, pos: usize) -> bool {
    stamp >> 1 == pos.wrapping_add(1) & (usize::MAX >> 1)
}

// SAFETY: a Lane hands values of T from one thread (the producer) to another
// (the consumer), so sharing it needs T: Send (and the small forms, Copy
// data made from a T, are handed the same way); the producer's and
// consumer's cells are each touched by one thread at a time (the contract of
// the unsafe methods), and slot values are handed over through the stamp's
// Release/Acquire pair.
unsafe impl<T: Send, C: Compact<T>> Sync for Lane<T, C> where C::Small: Send {}
// SAFETY: owning a Lane is owning its undelivered values of T.
unsafe impl<T: Send, C: Compact<T>> Send for Lane<T, C> where C::Small: Send {}

impl<T, C: Compact<T>> Lane<T, C> {
    /// A codec's small form lies in the slot's first line, right after the
    /// stamp (so neither it nor the value may ask for more than 8-byte
    /// alignment). [`super::Whole`]'s small form has no size.
    const SMALL_FITS: () = assert!(
        std::mem::size_of::<C::Small>() == 0
            || (std::mem::size_of::<C::Small>() <= 56
                && std::mem::align_of::<C::Small>() <= 8
                && std::mem::align_of::<T>() <= 8),
        "a small form is at most 56 bytes, and it and the value are aligned to at most 8"
    );

    /// An empty lane of `capacity` slots (a power of two, at least 2).
    pub(super) fn new(capacity: usize) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::SMALL_FITS;
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
        let small = C::compact(&value);
        // SAFETY: position `tail - capacity`, the last one to use this slot,
        // has been read by the consumer (tail - head < capacity, with the
        // Acquire above or on an earlier push ordering that read before this
        // write), and only the producer writes slots. Only the field written
        // is touched: a small form leaves the slot's second line alone.
        slot.value.with_mut(|p| unsafe {
            let body = (*p).as_mut_ptr();
            match small {
                Some(small) => std::ptr::addr_of_mut!((*body).small).write(small),
                None => std::ptr::addr_of_mut!((*body).whole).write(ManuallyDrop::new(value)),
            }
        });
        crate::fault_point::reach(crate::fault_point::FaultPoint::SlotWritten);
        // Release: publishes the value written above to the consumer's
        // Acquire load of the stamp.
        slot.stamp
            .store(stamp(tail, small.is_some()), Ordering::Release);
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
        let found = slot.stamp.load(Ordering::Acquire);
        if !stamps(found, head) {
            return None;
        }
        // SAFETY: the stamp says position `head` is filled, and with which
        // field (its write happens before this read); the producer will not
        // touch this slot again until we publish a `head` past it, and we
        // are the only reader. The value is read out exactly once: `next`
        // moves past it below.
        let value = slot.value.with(|p| unsafe {
            let body = (*p).as_ptr();
            if found & 1 == 1 {
                C::expand(std::ptr::addr_of!((*body).small).read())
            } else {
                ManuallyDrop::into_inner(std::ptr::addr_of!((*body).whole).read())
            }
        });
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
        stamps(
            self.slots[head & self.mask].stamp.load(Ordering::Relaxed),
            head,
        )
    }
}

impl<T, C: Compact<T>> Drop for Lane<T, C> {
    fn drop(&mut self) {
        // `&mut self`: no producer or consumer is active any more.
        // SAFETY: exclusive access; the cells hold plain positions.
        let head = self.consumer.next.with(|p| unsafe { *p });
        // SAFETY: as above.
        let tail = self.producer.tail.with(|p| unsafe { *p });
        for i in 0..tail.wrapping_sub(head) {
            let slot = &self.slots[head.wrapping_add(i) & self.mask];
            // Relaxed: `&mut self` orders every store before this drop.
            if slot.stamp.load(Ordering::Relaxed) & 1 == 1 {
                continue; // a small form: Copy, nothing to drop
            }
            // SAFETY: positions head..tail were written by the producer and
            // never read by the consumer, so each holds an initialized value
            // (whole: its stamp's bit is clear), dropped here exactly once.
            slot.value
                .with_mut(|p| unsafe { ManuallyDrop::drop(&mut (*(*p).as_mut_ptr()).whole) });
        }
    }
}
