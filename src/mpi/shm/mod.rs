//! Regions of shared memory between the MPI processes of one node: the
//! frame rings that carry every frame between them
//! ([`NodeRegions::take_rings`], `crate::mailbox::frames`), large
//! broadcasts (the root's value in its slot, `crate::mpi::shared_broadcast`),
//! and large allreduces: each process copies its input once into its own
//! region, messages carry a [`RegionRef`] (whose input, which call), and
//! the processes fold the inputs the protocol agreed on straight from the
//! regions, block by block, each block once: a process folds the blocks
//! nobody has published yet (starting at its own share), publishes each in
//! its region, and copies the others' (`MpiComm`'s `all_reduce_shared`).
//! Not in the papers; a large allreduce's guarantee between processes (every
//! element the reduction over one and the same set of inputs) with one
//! copy in, a share of the fold and one copy out, where an MPI message per
//! input costs the kernel's cross-memory copy and two of ours (docs/mpi.md,
//! *Shared memory on one node*).
//!
//! **Regions.** Each process creates a file in `/dev/shm`, reserves it by
//! writing it whole (a full file system is then an error at start, not a
//! `SIGBUS` later), and maps it; once every process has mapped every
//! other's, each unlinks its own, so nothing is left behind whoever dies.
//! A region holds a frame ring from every process ([`RING_SLOTS`] lines
//! each), two input *slots* and two result slots of
//! [`NodeRegions::slot_bytes`], used in turn by a process's large calls
//! (call `seq` uses slot `seq % 2`); each input slot's call number, each
//! result slot's fingerprint (of the agreed list) and each result block's
//! tag (the operation's number plus one) are words of the region's header.
//!
//! **Lifetimes.** A mapping lives as long as this process holds
//! [`NodeRegions`], whoever else dies: a process SIGKILLed after it
//! published its input leaves it readable, so it can be in every live
//! process's result or in none, as between threads. A slot is written again
//! two large calls later, once every live process has ended the operation
//! that last published into it ([`NodeRegions::finished`], waited for by
//! `crate::mpi::shared_broadcast`'s `claim_slot`); a process left out as
//! failed may still be reading. So a reader checks after it read
//! ([`NodeRegions::still`], [`NodeRegions::block_still`]): the writer marks
//! the slot or block before it writes (0) and numbers it after (Release),
//! and a reader that finds another number than the one it read by drops
//! what it read (a block: it folds the block itself; an input: it was left
//! out, and ends with [`crate::Error::Failed`]). The reads themselves race
//! with such a writer, in memory another process writes: no Rust memory
//! model covers that, and the check after is what makes a torn read
//! harmless. The checks are the seqlock's; loom cannot run two processes,
//! and `tests/mpi.rs` kills processes at every send of such allreduces.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::Arc;

use memmap2::MmapRaw;
use mpi::collective::{CommunicatorCollectives, Root};
use mpi::topology::{Communicator, SimpleCommunicator};

use crate::mailbox::frames::{FrameReader, FrameRing, FrameWriter};
use crate::types::{OpId, Rank};

/// Bytes of a slot by default: 8 MiB (a process's region is four of them,
/// two for inputs and two for results, 32 MiB reserved in `/dev/shm`
/// while the communicator lives).
pub const DEFAULT_SLOT_BYTES: usize = 8 << 20;

/// The largest slot asked for that is tried (larger asks are cut to it, so
/// that a region's size is still a number; it then does not fit in
/// `/dev/shm`'s free space, and no region is made).
const MAX_SLOT_BYTES: usize = usize::MAX / 8;

/// Bytes of a block of a result, at most: the unit in which processes
/// share the fold (each block folded once, by whoever gets to it first).
pub const BLOCK_BYTES: usize = 64 << 10;

/// A region's layout for slots of `slot_bytes` on a node of `procs`
/// processes: a line per slot for its input's call number, a line per slot
/// for its result's fingerprint, a flag per block per slot (the tag of the
/// call whose block it holds), a line for the operation its owner has
/// finished reading others' slots before, a frame ring from each process
/// (the transport's channel, [`NodeRegions::take_rings`]), then the two
/// input slots and the two result slots.
#[derive(Clone, Copy, Debug)]
struct Layout {
    slot_bytes: usize,
    /// Bytes of a slot's block flags (a whole number of lines).
    flags_bytes: usize,
    procs: usize,
}

impl Layout {
    fn new(slot_bytes: usize, procs: usize) -> Layout {
        // A block holds at least half of `BLOCK_BYTES` (whole elements of
        // up to `BLOCK_BYTES / 2`) or one element (larger ones): so many
        // blocks at most.
        let blocks = 2 * slot_bytes.div_ceil(BLOCK_BYTES) + 1;
        Layout {
            slot_bytes,
            flags_bytes: (8 * blocks).div_ceil(64) * 64,
            procs,
        }
    }
    fn blocks(&self) -> usize {
        self.flags_bytes / 8
    }
    fn header(&self) -> usize {
        Self::finished(self) + 64
    }
    /// The line of the operation number this process's calls that may
    /// read others' slots have all ended before ([`NodeRegions::finish`]),
    /// and, in its next word, one more than the last operation it entered
    /// ([`EntryWords`]).
    fn finished(&self) -> usize {
        256 + 2 * self.flags_bytes
    }
    /// The ring that process `from` writes into this region.
    fn ring(&self, from: usize) -> usize {
        self.header() + from * FrameRing::bytes(RING_SLOTS)
    }
    fn slots_at(&self) -> usize {
        self.ring(self.procs)
    }
    fn size(&self) -> usize {
        self.slots_at() + 4 * self.slot_bytes
    }
    fn input_number(s: usize) -> usize {
        s * 64
    }
    fn fingerprint(s: usize) -> usize {
        128 + s * 64
    }
    fn flag(&self, s: usize, j: usize) -> usize {
        256 + s * self.flags_bytes + 8 * j
    }
    fn input(&self, s: usize) -> usize {
        self.slots_at() + s * self.slot_bytes
    }
    fn result(&self, s: usize) -> usize {
        self.slots_at() + (2 + s) * self.slot_bytes
    }
}

/// Slots of a frame ring between two processes of the node (32 KiB).
pub const RING_SLOTS: usize = 512;

/// This process's ends of the frame rings of the node: the one it writes to
/// each other process, and the one it reads from each (none to itself);
/// and the words that tell which operations each process entered, for the
/// transport.
pub struct NodeRings {
    /// Per rank: the ring this process writes to it.
    pub writers: Vec<Option<FrameWriter>>,
    /// Per rank: the ring this process reads from it.
    pub readers: Vec<Option<FrameReader>>,
    /// This process's entry into each operation, told in its region, and
    /// every other's, read from theirs.
    pub entries: EntryWords,
}

/// The words of the node's regions that tell how far each process got: in
/// the line of [`Layout::finished`], the operation before which its owner
/// finished every call ([`NodeRegions::finish`], which the transport also
/// writes as its process enters each operation: a process that entered an
/// operation has ended every call before it, and reads no slot of theirs
/// again), and one more than the last operation it entered. Written before
/// any message of the operation is sent, so a process killed inside an
/// operation is known to have entered it by every process of the node
/// (a heartbeat may be many operations old: `MpiTransport::peer`).
pub struct EntryWords {
    me: usize,
    /// Per rank: its region's finished word (entered is the next word).
    words: Vec<std::ptr::NonNull<AtomicU64>>,
    _keep: Arc<dyn Send + Sync>,
}

impl EntryWords {
    /// This process enters operation `op`: it ended every call before it.
    pub fn publish(&self, op: OpId) {
        // Release, as `NodeRegions::finish`: every read of a slot before
        // is ordered before it, and (entered) every write before the
        // operation's first send.
        self.word(self.me, 0)
            .store(u64::from(op), Ordering::Release);
        self.word(self.me, 1)
            .store(u64::from(op) + 1, Ordering::Release);
    }

    /// One more than the last operation process `rank` entered (0: none),
    /// as its region tells; `None` for a rank not of the node's regions.
    pub fn entered(&self, rank: Rank) -> Option<OpId> {
        if rank as usize >= self.words.len() {
            return None;
        }
        let next = self.word(rank as usize, 1).load(Ordering::Acquire);
        Some(OpId::try_from(next).unwrap_or(OpId::MAX))
    }

    fn word(&self, rank: usize, i: usize) -> &AtomicU64 {
        // SAFETY: `words[rank]` is the finished word of a mapped region's
        // header, 8-byte aligned, with the entered word after it in the
        // same line (`Layout::finished`), kept mapped by `_keep`; both are
        // only ever accessed as atomics, and only their owner writes them.
        unsafe { &*self.words[rank].as_ptr().add(i) }
    }
}

/// Where a block of a result was found: whose region, which slot and
/// block, and under which tag and fingerprint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockRef {
    rank: Rank,
    slot: usize,
    block: usize,
    tag: u64,
    fingerprint: u64,
}

/// One process's input to one call, in its region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionRef {
    /// The process whose region holds it.
    pub rank: Rank,
    /// Its large call's number (from 1; the slot is `seq % 2`).
    pub seq: u64,
}

/// Every process's region, mapped in this one (see the module doc).
pub struct NodeRegions {
    me: Rank,
    layout: Layout,
    maps: Arc<Vec<MmapRaw>>,
    /// This process's large calls so far.
    calls: u64,
    /// Per input slot: the operation whose call last published into it.
    slot_ops: [Option<OpId>; 2],
    /// Whether the rings' ends were handed out ([`NodeRegions::take_rings`]).
    rings_taken: bool,
}

impl NodeRegions {
    /// Maps a region of four slots of `slot_bytes` for every process of
    /// `comm` into every one, if they all run on one node and all can make
    /// theirs; `None` otherwise (the same answer on every process).
    /// Collective: every process of `comm` calls it, while all are alive.
    pub fn new(comm: &SimpleCommunicator, slot_bytes: usize) -> Option<NodeRegions> {
        let (me, procs) = (comm.rank(), comm.size());
        // Whole lines, and a region size that does not overflow.
        let slot_bytes = slot_bytes.min(MAX_SLOT_BYTES).div_ceil(64) * 64;
        let one_node = comm.split_shared(0).size() == procs;
        // A name for this job's regions, from rank 0.
        let mut job = if me == 0 {
            std::process::id() as u64 ^ (nanos_now() << 20)
        } else {
            0
        };
        comm.process_at_rank(0).broadcast_into(&mut job);
        let path = |r: i32| format!("/dev/shm/corrected-{job:016x}-{r}");
        let size = Layout::new(slot_bytes, procs as usize).size();
        // Reserving a region writes it whole, and `/dev/shm` is memory: all
        // regions of the node must fit in half of its free space, or none
        // is made (a slot asked too large must not eat the node's memory).
        let room = free_shm_bytes() / 2 / (procs.max(1) as u64);
        let mine = (one_node && slot_bytes > 0 && size as u64 <= room)
            .then(|| create(&path(me), size).ok())
            .flatten();
        if !all(comm, mine.is_some()) {
            let _ = std::fs::remove_file(path(me));
            return None;
        }
        let paths: Vec<String> = (0..procs).map(path).collect();
        let regions = NodeRegions::map(me as Rank, &paths, slot_bytes);
        let ok = all(comm, regions.is_some());
        // Every process has opened every region (or given up): the names
        // can go, so a death leaves no file behind.
        let _ = std::fs::remove_file(path(me));
        regions.filter(|_| ok)
    }

    /// The regions in the files at `paths` (rank order), mapped, for
    /// process `me`; `None` if one cannot be mapped or is too small.
    fn map(me: Rank, paths: &[String], slot_bytes: usize) -> Option<NodeRegions> {
        let layout = Layout::new(slot_bytes, paths.len());
        let size = layout.size();
        let maps = paths
            .iter()
            .map(|p| {
                let file = OpenOptions::new().read(true).write(true).open(p).ok()?;
                let map = MmapRaw::map_raw(&file).ok()?;
                (map.len() >= size).then_some(map)
            })
            .collect::<Option<Vec<MmapRaw>>>()?;
        Some(NodeRegions {
            me,
            layout,
            maps: Arc::new(maps),
            calls: 0,
            slot_ops: [None; 2],
            rings_taken: false,
        })
    }

    /// This process's ends of the node's frame rings, the first time it is
    /// asked (each ring has one writer and one reader: the ends are handed
    /// out once). The mappings live as long as any end does.
    pub fn take_rings(&mut self) -> Option<NodeRings> {
        if std::mem::replace(&mut self.rings_taken, true) {
            return None;
        }
        let procs = self.maps.len();
        let me = self.me as usize;
        let keep: Arc<dyn Send + Sync> = self.maps.clone();
        let ring = |region: usize, from: usize| {
            let at = self.maps[region].as_mut_ptr();
            // SAFETY: the ring lies in the region (its size was checked when
            // mapped), on a line boundary (a mapping starts on a page, and
            // the layout's offsets are whole lines), zero until first used
            // (the region was written with zeros and nothing else touches
            // this ring), and kept mapped by `keep`. Of its two ends, the
            // writer is used by process `from` only and the reader by the
            // region's owner only: every process takes its writers' ends in
            // others' regions and its readers' in its own, once.
            unsafe {
                FrameRing::in_memory(at.add(self.layout.ring(from)), RING_SLOTS, keep.clone())
            }
        };
        let writers = (0..procs)
            .map(|to| (to != me).then(|| ring(to, me).0))
            .collect();
        let readers = (0..procs)
            .map(|from| (from != me).then(|| ring(me, from).1))
            .collect();
        let entries = EntryWords {
            me,
            words: (0..procs as Rank)
                .map(|r| std::ptr::NonNull::from(self.word(r, self.layout.finished())))
                .collect(),
            _keep: keep,
        };
        Some(NodeRings {
            writers,
            readers,
            entries,
        })
    }

    /// The largest input a slot holds.
    pub fn slot_bytes(&self) -> usize {
        self.layout.slot_bytes
    }

    /// Copies `bytes` (at most [`NodeRegions::slot_bytes`]) into this
    /// process's next slot for the call of operation `op`, and numbers it.
    /// The caller has made sure that no live process still reads what the
    /// slot held ([`NodeRegions::next_slot_op`]).
    pub fn publish(&mut self, bytes: &[u8], op: OpId) -> RegionRef {
        assert!(
            bytes.len() <= self.layout.slot_bytes,
            "a slot holds the input"
        );
        self.calls += 1;
        let seq = self.calls;
        self.slot_ops[(seq % 2) as usize] = Some(op);
        let (number, data) = self.slot(self.me, seq);
        // Marked first, so that a late reader of the call two back sees a
        // number that is not its own once any byte may have changed.
        number.store(0, Ordering::Relaxed);
        fence(Ordering::Release);
        // SAFETY: the slot is this process's own, `bytes` fits in it
        // (asserted), and the mapping lives as long as `self`. Other
        // processes only read it; one that may still read the call two
        // back checks the number after, so it never uses bytes changed
        // under it (module doc).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), data, bytes.len()) };
        number.store(seq, Ordering::Release);
        RegionRef { rank: self.me, seq }
    }

    /// The operation whose call last published into the slot that the
    /// next [`NodeRegions::publish`] writes: until every live process has
    /// finished it ([`NodeRegions::finished`]), one may still read the slot.
    pub fn next_slot_op(&self) -> Option<OpId> {
        self.slot_ops[((self.calls + 1) % 2) as usize]
    }

    /// The operation before which process `rank` has finished every call
    /// that may read others' slots ([`NodeRegions::finish`]).
    pub fn finished(&self, rank: Rank) -> OpId {
        if rank as usize >= self.maps.len() {
            return 0;
        }
        // Acquire: pairs with `finish`'s Release, so that this process's
        // writes to a slot come after `rank`'s reads of it.
        let next = self
            .word(rank, self.layout.finished())
            .load(Ordering::Acquire);
        OpId::try_from(next).unwrap_or(OpId::MAX)
    }

    /// This process has ended every call before operation `next`: it reads
    /// no slot of a call before it again. Called as each call that may read
    /// others' slots ends, whatever its outcome.
    pub fn finish(&self, next: OpId) {
        // Release: every read of a slot before is ordered before it.
        self.word(self.me, self.layout.finished())
            .store(u64::from(next), Ordering::Release);
    }

    /// The `len` bytes of input `r`, if its slot holds that call now.
    ///
    /// # Safety
    /// The bytes are only valid while [`NodeRegions::still`] says so after
    /// the caller has read them: another process writes its slot again two
    /// calls later (a caller left out of the call between may still read).
    /// A caller must check, and drop what it computed from them if not.
    pub unsafe fn view(&self, r: RegionRef, len: usize) -> Option<&[u8]> {
        if len > self.layout.slot_bytes || r.rank as usize >= self.maps.len() {
            return None;
        }
        let (number, data) = self.slot(r.rank, r.seq);
        if number.load(Ordering::Acquire) != r.seq {
            return None;
        }
        // SAFETY: in bounds (checked above) of a mapping that lives as long
        // as `self`; the caller checks the number after reading (contract).
        Some(unsafe { std::slice::from_raw_parts(data, len) })
    }

    /// Whether the slot of `r` still holds its call, after reads of it.
    pub fn still(&self, r: RegionRef) -> bool {
        if r.rank as usize >= self.maps.len() {
            return false;
        }
        // Acquire: the reads before are ordered before this load, so a
        // writer's mark that any of them could have seen is seen here.
        fence(Ordering::Acquire);
        self.slot(r.rank, r.seq).0.load(Ordering::Relaxed) == r.seq
    }

    /// Folds the inputs `list` names (each `recv`'s length), in rank order
    /// with `op`, into `recv`. With `shared`, `Some((tag, share))`, it shares
    /// the work with every other process that folds the same list for the
    /// operation tagged `tag` (its number plus one): by blocks of up to
    /// [`BLOCK_BYTES`], starting at block `share.0 * blocks / share.1`,
    /// each block copied from a process that has published it under this
    /// tag and the list's fingerprint, else folded here and published. A
    /// copied block that changed under the copy is folded here instead.
    /// With `None` (a reduce's root, the only process that folds), every
    /// block is folded here and none published. False if an input's slot
    /// does not hold its call, or changed under the fold: its owner went on
    /// without this process, which it took for failed, and `recv` is not
    /// the result.
    pub fn fold<T: bytemuck::Pod>(
        &self,
        list: &RefList,
        shared: Option<(u64, (usize, usize))>,
        op: &(impl crate::op::Operation<T> + ?Sized),
        recv: &mut [T],
    ) -> bool {
        let len = std::mem::size_of_val(recv);
        let views: Option<Vec<&[T]>> = list
            .refs
            .iter()
            .map(|r| {
                // SAFETY: `view`'s contract: every slot read is checked at
                // the end, and the result refused if one changed.
                let bytes = unsafe { self.view(*r, len) };
                bytes.map(bytemuck::cast_slice)
            })
            .collect();
        let Some(views) = views else {
            return false;
        };
        let size = std::mem::size_of::<T>().max(1);
        let per_block = (BLOCK_BYTES / size).max(1);
        let blocks = recv.len().div_ceil(per_block);
        let fold = |into: &mut [T], j: usize| {
            let range = j * per_block..((j + 1) * per_block).min(into.len());
            let into = &mut into[range.clone()];
            match views.as_slice() {
                [] => into.fill(T::zeroed()),
                [only] => into.copy_from_slice(&only[range]),
                [a, b, rest @ ..] => {
                    op.apply_slices(&a[range.clone()], &b[range.clone()], into);
                    for x in rest {
                        op.accumulate(into, &x[range.clone()]);
                    }
                }
            }
        };
        let Some((tag, share)) = shared else {
            for j in 0..blocks {
                fold(recv, j);
            }
            return list.refs.iter().all(|r| self.still(*r));
        };
        let fingerprint = list.fingerprint(size);
        self.begin_result(fingerprint);
        let start = share.0 * blocks / share.1.max(1);
        let bytes_of = |j: usize| j * per_block * size..((j + 1) * per_block * size).min(len);
        let mut copied = Vec::new();
        for k in 0..blocks {
            let j = (start + k) % blocks;
            let at = bytes_of(j);
            // SAFETY: `find_block`'s contract: the block is checked below,
            // after the copy, and folded here instead if it changed.
            let found = unsafe { self.find_block(tag, fingerprint, j, at.start, at.len()) };
            if let Some((found, src)) = found {
                bytemuck::cast_slice_mut::<T, u8>(recv)[at].copy_from_slice(src);
                copied.push((found, j));
                continue;
            }
            fold(recv, j);
            self.publish_block(j, at.start, tag, &bytemuck::cast_slice::<T, u8>(recv)[at]);
        }
        for (found, j) in copied {
            if !self.block_still(found) {
                fold(recv, j);
            }
        }
        list.refs.iter().all(|r| self.still(*r))
    }

    /// Starts this process's result of the call it last published for:
    /// blocks it folds from now on are tagged with `fingerprint` (of the
    /// agreed list, [`RefList::fingerprint`]) in the result slot of that
    /// call, which readers of the call two back check after they copy.
    pub fn begin_result(&self, fingerprint: u64) {
        let s = (self.calls % 2) as usize;
        self.word(self.me, Layout::fingerprint(s))
            .store(fingerprint, Ordering::Relaxed);
    }

    /// Publishes `bytes`, block `block` of this process's result at
    /// `offset` bytes in, under `tag` (the operation's number plus one,
    /// never 0) and the fingerprint of [`NodeRegions::begin_result`].
    pub fn publish_block(&self, block: usize, offset: usize, tag: u64, bytes: &[u8]) {
        assert!(block < self.layout.blocks() && offset + bytes.len() <= self.layout.slot_bytes);
        let s = (self.calls % 2) as usize;
        let flag = self.word(self.me, self.layout.flag(s, block));
        // As `publish`: marked first, numbered after (Release).
        flag.store(0, Ordering::Relaxed);
        fence(Ordering::Release);
        let base = self.maps[self.me as usize].as_mut_ptr();
        // SAFETY: the result slot is this process's own, the block lies in
        // it (asserted), and the mapping lives as long as `self`; readers
        // of an earlier call check the flag after they copy.
        unsafe {
            let at = base.add(self.layout.result(s) + offset);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), at, bytes.len());
        }
        flag.store(tag, Ordering::Release);
    }

    /// Block `block` (`len` bytes at `offset`) of a result tagged `tag`
    /// with `fingerprint`, from another process's region that holds it.
    ///
    /// # Safety
    /// As [`NodeRegions::view`]: valid only while
    /// [`NodeRegions::block_still`] says so after the caller read it.
    pub unsafe fn find_block(
        &self,
        tag: u64,
        fingerprint: u64,
        block: usize,
        offset: usize,
        len: usize,
    ) -> Option<(BlockRef, &[u8])> {
        if tag == 0 || block >= self.layout.blocks() || offset + len > self.layout.slot_bytes {
            return None;
        }
        let procs = self.maps.len();
        for k in 1..procs {
            let rank = ((self.me as usize + k) % procs) as Rank;
            for slot in 0..2 {
                let flag = self.word(rank, self.layout.flag(slot, block));
                if flag.load(Ordering::Acquire) != tag
                    || self
                        .word(rank, Layout::fingerprint(slot))
                        .load(Ordering::Relaxed)
                        != fingerprint
                {
                    continue;
                }
                let base = self.maps[rank as usize].as_mut_ptr();
                // SAFETY: in bounds (checked above) of a mapping that lives
                // as long as `self`; the caller checks after reading.
                let bytes = unsafe {
                    std::slice::from_raw_parts(base.add(self.layout.result(slot) + offset), len)
                };
                let found = BlockRef {
                    rank,
                    slot,
                    block,
                    tag,
                    fingerprint,
                };
                return Some((found, bytes));
            }
        }
        None
    }

    /// Whether the block `b` found still holds what it held, after reads.
    pub fn block_still(&self, b: BlockRef) -> bool {
        fence(Ordering::Acquire);
        self.word(b.rank, self.layout.flag(b.slot, b.block))
            .load(Ordering::Relaxed)
            == b.tag
            && self
                .word(b.rank, Layout::fingerprint(b.slot))
                .load(Ordering::Relaxed)
                == b.fingerprint
    }

    /// The word at `offset` of `rank`'s region's header.
    fn word(&self, rank: Rank, offset: usize) -> &AtomicU64 {
        debug_assert!(offset + 8 <= self.layout.header() && offset % 8 == 0);
        // SAFETY: the header lies in the mapping (its size was checked when
        // mapped), its words are 8-byte aligned (a mapping starts on a
        // page), and they are only ever accessed as atomics.
        unsafe {
            &*self.maps[rank as usize]
                .as_mut_ptr()
                .add(offset)
                .cast::<AtomicU64>()
        }
    }

    /// The call number and the bytes of the input slot of call `seq` of
    /// `rank`.
    fn slot(&self, rank: Rank, seq: u64) -> (&AtomicU64, *mut u8) {
        let s = (seq % 2) as usize;
        let number = self.word(rank, Layout::input_number(s));
        // SAFETY: the slot lies in the mapping (its size was checked).
        let data = unsafe {
            self.maps[rank as usize]
                .as_mut_ptr()
                .add(self.layout.input(s))
        };
        (number, data)
    }
}

impl std::fmt::Debug for NodeRegions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "NodeRegions({} processes, slots of {} bytes)",
            self.maps.len(),
            self.layout.slot_bytes
        )
    }
}

/// A file of `size` bytes at `path`, written whole (so that its pages are
/// reserved: a full `/dev/shm` fails here, not later).
fn create(path: &str, size: usize) -> std::io::Result<File> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)?;
    let zeros = vec![0u8; 1 << 20];
    let mut left = size;
    while left > 0 {
        let n = left.min(zeros.len());
        file.write_all(&zeros[..n])?;
        left -= n;
    }
    Ok(file)
}

/// Bytes free in `/dev/shm` for this process (0 if it cannot tell).
fn free_shm_bytes() -> u64 {
    rustix::fs::statvfs("/dev/shm").map_or(0, |s| s.f_bavail.saturating_mul(s.f_frsize))
}

/// Whether `mine` holds on every process of `comm` (collective).
fn all(comm: &SimpleCommunicator, mine: bool) -> bool {
    let mut every = 0i32;
    comm.all_reduce_into(
        &i32::from(mine),
        &mut every,
        mpi::collective::SystemOperation::min(),
    );
    every == 1
}

fn nanos_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

mod ref_list;
pub use ref_list::RefList;

#[cfg(test)]
mod tests;
