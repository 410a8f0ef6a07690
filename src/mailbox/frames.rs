//! A frame ring: a bounded single-producer single-consumer ring of byte
//! frames of any length, in memory that two processes of one node may
//! share (the MPI engine's channel to a process of its node,
//! `src/mpi/transport.rs`; docs/mpi.md, *Frames through the node's shared
//! memory*). Not in the papers: a thread lane (`src/mailbox/lane.rs`) carries values
//! of one process's heap; this carries bytes.
//!
//! **Slots.** The ring is a power of two of 64-byte slots, each a stamp and
//! [`SLOT_BYTES`] of payload, as the lane's: the producer writes slot
//! `pos & mask` and then stores the stamp `pos + 1` (Release); the consumer
//! owns position `pos` once it loads that stamp (Acquire). A frame of up to
//! [`FIRST_BYTES`] bytes is one slot, so one cache line crosses between the
//! cores per small message; a longer one takes consecutive slots, the
//! first headed by the frame's length.
//!
//! **Streaming.** A frame need not fit in the ring: [`FrameWriter::write`]
//! writes the slots there is room for and says how far it got, and the
//! caller comes back for the rest; [`FrameReader::read`] appends the slots
//! written so far and says when a frame is whole. Neither side ever waits
//! for the other, so a peer that stops reading (it died, or hangs) leaves
//! its writer with frames not written, never blocked (what happens to them
//! is the transport's business), and a writer that dies mid-frame leaves a
//! part its reader never hands on.
//!
//! **Between processes.** [`FrameRing::in_memory`] places a ring in memory
//! another process maps too. The atomics there are the very instructions
//! they are in one process (lock-free, naturally aligned), which is how
//! shared-memory MPI implementations rely on them; no Rust memory model
//! speaks of two processes, and loom checks the ring's protocol between two
//! threads (`loom-tests/tests/frames.rs`).

use std::sync::Arc;

use crate::sync::{AtomicU64, Ordering, UnsafeCell};

/// Payload bytes of a slot (a slot is one 64-byte cache line).
pub const SLOT_BYTES: usize = 56;

/// Bytes of a frame that its first slot holds (after the frame's length).
pub const FIRST_BYTES: usize = SLOT_BYTES - 8;

/// One slot: a stamp and its payload, one cache line.
#[repr(C, align(64))]
pub struct Slot {
    /// `pos + 1` once position `pos` is written here.
    stamp: AtomicU64,
    bytes: UnsafeCell<[u8; SLOT_BYTES]>,
}

// SAFETY: a slot is shared by one writer and one reader, which hand it
// over by its stamp (Release / Acquire) and the head (the same), so its
// payload is never written and read at once (module doc).
unsafe impl Sync for Slot {}

/// The consumer's position, on a line of its own.
#[repr(C, align(64))]
struct Head {
    /// Positions below this one are read (their slots free to write).
    read: AtomicU64,
}

/// Where a ring's memory is, and what keeps it alive.
struct Memory {
    head: *const Head,
    slots: *const Slot,
    mask: u64,
    _keep: Arc<dyn Send + Sync>,
}

// SAFETY: the pointers point into memory that `_keep` keeps alive (a heap
// block or a mapping) and that is only accessed through atomics and the
// slots' cells, by one producer and one consumer, as the module doc says.
unsafe impl Send for Memory {}

impl Memory {
    fn slot(&self, pos: u64) -> &Slot {
        // SAFETY: `pos & mask` is below the ring's slot count, and the
        // slots live as long as `_keep`, which `self` holds.
        unsafe { &*self.slots.add((pos & self.mask) as usize) }
    }
    fn head(&self) -> &Head {
        // SAFETY: as `slot`.
        unsafe { &*self.head }
    }
    fn capacity(&self) -> u64 {
        self.mask + 1
    }
}

/// The heap memory of a ring made by [`FrameRing::on_heap`].
struct HeapRing {
    head: Head,
    slots: Box<[Slot]>,
}

/// Constructors of a ring's two ends.
pub struct FrameRing;

impl FrameRing {
    /// Bytes of memory a ring of `slots` slots takes ([`FrameRing::in_memory`]).
    pub const fn bytes(slots: usize) -> usize {
        64 * (1 + slots)
    }

    /// A ring of `slots` slots (a power of two, at least 2) on the heap, for
    /// two threads of this process: its writing and its reading end.
    pub fn on_heap(slots: usize) -> (FrameWriter, FrameReader) {
        assert!(
            slots.is_power_of_two() && slots >= 2,
            "a power of two slots"
        );
        let ring = Arc::new(HeapRing {
            head: Head {
                read: AtomicU64::new(0),
            },
            slots: (0..slots)
                .map(|_| Slot {
                    stamp: AtomicU64::new(0),
                    bytes: UnsafeCell::new([0; SLOT_BYTES]),
                })
                .collect(),
        });
        let memory = || Memory {
            head: &ring.head,
            slots: ring.slots.as_ptr(),
            mask: slots as u64 - 1,
            _keep: ring.clone(),
        };
        FrameRing::ends(memory(), memory())
    }

    /// The two ends of a ring of `slots` slots (a power of two, at least 2)
    /// in the [`FrameRing::bytes`]`(slots)` bytes at `at`, kept alive by
    /// `keep`. Each process takes the end that is its own.
    ///
    /// # Safety
    /// `at` is 64-byte aligned, the bytes are zero before either end is
    /// first used and stay mapped while `keep` lives, and nothing but these
    /// two ends (one writer, in one process; one reader, in one process)
    /// ever touches them.
    #[cfg(not(loom))]
    pub unsafe fn in_memory(
        at: *mut u8,
        slots: usize,
        keep: Arc<dyn Send + Sync>,
    ) -> (FrameWriter, FrameReader) {
        assert!(
            slots.is_power_of_two() && slots >= 2,
            "a power of two slots"
        );
        assert_eq!(at as usize % 64, 0, "a ring is aligned to its lines");
        // Zeroed memory is a ring with nothing written: every stamp is 0,
        // which no position's stamp (`pos + 1`) is, and the head is 0.
        let memory = || Memory {
            head: at.cast::<Head>(),
            // SAFETY: within the caller's `bytes(slots)` bytes.
            slots: unsafe { at.add(64) }.cast::<Slot>(),
            mask: slots as u64 - 1,
            _keep: keep.clone(),
        };
        FrameRing::ends(memory(), memory())
    }

    fn ends(w: Memory, r: Memory) -> (FrameWriter, FrameReader) {
        (
            FrameWriter {
                memory: w,
                tail: 0,
                read: 0,
            },
            FrameReader {
                memory: r,
                next: 0,
                left: None,
            },
        )
    }
}

/// The writing end of a frame ring.
pub struct FrameWriter {
    memory: Memory,
    /// The next position to write.
    tail: u64,
    /// The reader's position as last loaded (reloaded only when the ring
    /// looks full, so the reader's line is rarely pulled over).
    read: u64,
}

impl FrameWriter {
    /// Slots a frame of `len` bytes takes.
    pub const fn slots_for(len: usize) -> usize {
        1 + len.saturating_sub(FIRST_BYTES).div_ceil(SLOT_BYTES)
    }

    /// Writes the slots of `frame` there is room for, from its slot `done`
    /// on (0 for a frame not begun), and returns how many of its slots are
    /// written now: [`FrameWriter::slots_for`]`(frame.len())` once it is
    /// whole. Frames are read in the order they were begun; a frame must be
    /// finished before the next is begun.
    pub fn write(&mut self, frame: &[u8], mut done: usize) -> usize {
        let total = FrameWriter::slots_for(frame.len());
        while done < total {
            if self.tail - self.read >= self.memory.capacity() {
                // Acquire: the reader's reads of these slots happened
                // before, so they may be written again.
                self.read = self.memory.head().read.load(Ordering::Acquire);
                if self.tail - self.read >= self.memory.capacity() {
                    break;
                }
            }
            let slot = self.memory.slot(self.tail);
            slot.bytes.with_mut(|bytes| {
                // SAFETY: the slot at `tail` is the writer's until its
                // stamp is stored: the reader has read the position a
                // ring's length back (checked above) and touches this slot
                // only once it loads the stamp `tail + 1` below.
                let bytes = unsafe { &mut *bytes };
                if done == 0 {
                    bytes[..8].copy_from_slice(&(frame.len() as u64).to_le_bytes());
                    let n = frame.len().min(FIRST_BYTES);
                    bytes[8..8 + n].copy_from_slice(&frame[..n]);
                } else {
                    let from = FIRST_BYTES + (done - 1) * SLOT_BYTES;
                    let n = (frame.len() - from).min(SLOT_BYTES);
                    bytes[..n].copy_from_slice(&frame[from..from + n]);
                }
            });
            // Release: the payload is written before the stamp says so.
            slot.stamp.store(self.tail + 1, Ordering::Release);
            self.tail += 1;
            done += 1;
        }
        done
    }
}

/// The reading end of a frame ring.
pub struct FrameReader {
    memory: Memory,
    /// The next position to read.
    next: u64,
    /// Bytes of the frame being read still to come (`None`: its first slot
    /// is next).
    left: Option<usize>,
}

impl FrameReader {
    /// Whether the next slot is written: a frame, or the next part of one,
    /// is here to read.
    pub fn has_next(&self) -> bool {
        self.memory.slot(self.next).stamp.load(Ordering::Acquire) == self.next + 1
    }

    /// Appends to `into` the slots written so far of the frame being read
    /// (`into` holds its earlier parts) and returns true once it is whole:
    /// the caller takes the frame and clears `into` before the next read.
    pub fn read(&mut self, into: &mut Vec<u8>) -> bool {
        let start = self.next;
        let whole = loop {
            if self.left == Some(0) {
                break true;
            }
            if !self.has_next() {
                break false;
            }
            let slot = self.memory.slot(self.next);
            slot.bytes.with(|bytes| {
                // SAFETY: the Acquire load of the stamp in `has_next`
                // orders the writer's payload before this read, and the
                // writer writes this slot again only after the head below
                // has passed it.
                let bytes = unsafe { &*bytes };
                let left = match self.left {
                    Some(left) => left,
                    None => {
                        let mut len = [0; 8];
                        len.copy_from_slice(&bytes[..8]);
                        let len = u64::from_le_bytes(len) as usize;
                        into.reserve(len.min(1 << 20));
                        let n = len.min(FIRST_BYTES);
                        into.extend_from_slice(&bytes[8..8 + n]);
                        self.left = Some(len - n);
                        return;
                    }
                };
                let n = left.min(SLOT_BYTES);
                into.extend_from_slice(&bytes[..n]);
                self.left = Some(left - n);
            });
            self.next += 1;
        };
        if self.next != start {
            // Release: the reads above happen before the writer, which
            // loads this with Acquire, writes these slots again.
            self.memory.head().read.store(self.next, Ordering::Release);
        }
        if whole {
            self.left = None;
        }
        whole
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn frame(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed)
            .collect()
    }

    #[test]
    fn slots_for_counts_the_first_slot_and_whole_continuations() {
        assert_eq!(FrameWriter::slots_for(0), 1);
        assert_eq!(FrameWriter::slots_for(FIRST_BYTES), 1);
        assert_eq!(FrameWriter::slots_for(FIRST_BYTES + 1), 2);
        assert_eq!(FrameWriter::slots_for(FIRST_BYTES + SLOT_BYTES), 2);
        assert_eq!(FrameWriter::slots_for(FIRST_BYTES + SLOT_BYTES + 1), 3);
        assert_eq!(std::mem::size_of::<Slot>(), 64);
        assert_eq!(FrameRing::bytes(8), 64 * 9);
    }

    #[test]
    fn frames_of_every_length_arrive_whole_in_order_through_a_small_ring() {
        let (mut w, mut r) = FrameRing::on_heap(4);
        let lens = [0, 1, 47, 48, 49, 104, 105, 300, 1000, 3];
        let mut got = Vec::new();
        let mut into = Vec::new();
        for (i, &len) in lens.iter().enumerate() {
            let f = frame(len, i as u8);
            let mut done = 0;
            // Streamed: write what fits, read what is there, until whole.
            loop {
                done = w.write(&f, done);
                if r.read(&mut into) {
                    got.push(std::mem::take(&mut into));
                }
                if done == FrameWriter::slots_for(len) {
                    break;
                }
            }
        }
        while r.read(&mut into) {
            got.push(std::mem::take(&mut into));
        }
        let want: Vec<Vec<u8>> = lens
            .iter()
            .enumerate()
            .map(|(i, &l)| frame(l, i as u8))
            .collect();
        assert_eq!(got, want);
        assert!(!r.has_next());
    }

    #[test]
    fn a_full_ring_takes_nothing_until_read_and_a_part_is_never_handed_on() {
        let (mut w, mut r) = FrameRing::on_heap(2);
        let f = frame(260, 7);
        assert_eq!(FrameWriter::slots_for(f.len()), 5);
        assert_eq!(w.write(&f, 0), 2, "two slots of room");
        assert_eq!(w.write(&f, 2), 2, "full: nothing more");
        let mut into = Vec::new();
        assert!(!r.read(&mut into), "a part is not a frame");
        assert_eq!(into.len(), FIRST_BYTES + SLOT_BYTES);
        assert_eq!(w.write(&f, 2), 4);
        assert!(!r.read(&mut into));
        assert_eq!(w.write(&f, 4), 5);
        assert!(r.read(&mut into));
        assert_eq!(into, f);
    }

    #[test]
    fn two_threads_stream_a_thousand_frames() {
        let (mut w, mut r) = FrameRing::on_heap(8);
        let lens: Vec<usize> = (0..1000).map(|i| (i * 37) % 700).collect();
        let sent = lens.clone();
        let writer = std::thread::spawn(move || {
            for (i, &len) in sent.iter().enumerate() {
                let f = frame(len, i as u8);
                let mut done = 0;
                while done < FrameWriter::slots_for(len) {
                    done = w.write(&f, done);
                    std::thread::yield_now();
                }
            }
        });
        let mut into = Vec::new();
        for (i, &len) in lens.iter().enumerate() {
            while !r.read(&mut into) {
                std::thread::yield_now();
            }
            assert_eq!(into, frame(len, i as u8), "frame {i}");
            into.clear();
        }
        writer.join().unwrap();
        assert!(!r.has_next());
    }

    #[test]
    fn a_ring_in_zeroed_memory_works_as_one_on_the_heap() {
        /// Zeroed lines on the heap, as a fresh mapping is.
        struct Lines(*mut u8, std::alloc::Layout);
        // SAFETY: the lines are reached only through the ring's ends.
        unsafe impl Send for Lines {}
        // SAFETY: as above.
        unsafe impl Sync for Lines {}
        impl Drop for Lines {
            fn drop(&mut self) {
                // SAFETY: allocated in the test with this layout.
                unsafe { std::alloc::dealloc(self.0, self.1) }
            }
        }
        let layout = std::alloc::Layout::from_size_align(FrameRing::bytes(4), 64).unwrap();
        // SAFETY: a layout of nonzero size.
        let at = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!at.is_null());
        let lines = Arc::new(Lines(at, layout));
        // SAFETY: aligned (the layout's), zeroed, alive while `lines` is
        // (the ends keep it), and used by these two ends only.
        let (mut w, mut r) = unsafe { FrameRing::in_memory(at, 4, lines) };
        let f = frame(150, 3);
        assert_eq!(w.write(&f, 0), 3);
        let mut into = Vec::new();
        assert!(r.read(&mut into));
        assert_eq!(into, f);
    }
}
