//! Regions of shared memory between the MPI processes of one node, for
//! large allreduces: each process copies its input once into its own
//! region, messages carry a [`RegionRef`] (whose input, which call), and
//! every process folds the inputs the protocol agreed on straight from the
//! regions into its output. Not in the papers; issue 14's guarantee
//! between processes (every element the reduction over one and the same
//! set of inputs) with one copy in and one fold out, where an MPI message
//! per input costs the kernel's cross-memory copy and two of ours
//! (docs/mpi.md, *Shared memory on one node*).
//!
//! **Regions.** Each process creates a file in `/dev/shm`, reserves it by
//! writing it whole (a full file system is then an error at start, not a
//! `SIGBUS` later), and maps it; once every process has mapped every
//! other's, each unlinks its own, so nothing is left behind whoever dies.
//! A region holds two *slots* of [`NodeRegions::slot_bytes`], used in turn
//! by a process's large calls (call `seq` uses slot `seq % 2`), each
//! slot's call number in its own cache line.
//!
//! **Lifetimes.** A mapping lives as long as this process holds
//! [`NodeRegions`], whoever else dies: a process SIGKILLed after it
//! published its input leaves it readable, so it can be in every live
//! process's result or in none, as between threads. A slot is written again
//! two calls later. By then every process whose next call included this
//! one's input has read it (it entered that next call after its own call
//! returned); a process that did not take part in it was left out as
//! failed, and may still be reading. So a reader checks the slot's call
//! number after it read ([`NodeRegions::still`]): the writer marks the slot
//! before it writes (number 0) and numbers it after (Release), and a
//! reader that finds another number than the one it read by discards what
//! it computed.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::atomic::{fence, AtomicU64, Ordering};

use memmap2::MmapRaw;
use mpi::collective::{CommunicatorCollectives, Root};
use mpi::topology::{Communicator, SimpleCommunicator};

use crate::types::Rank;

/// Bytes of a slot by default: 16 MiB (a process's region is two of them,
/// reserved in `/dev/shm` while the communicator lives).
pub const DEFAULT_SLOT_BYTES: usize = 16 << 20;

/// The region's header: one cache line per slot, for its call number.
const HEADER: usize = 128;

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
    slot_bytes: usize,
    maps: Vec<MmapRaw>,
    /// This process's large calls so far.
    calls: u64,
}

impl NodeRegions {
    /// Maps a region of two slots of `slot_bytes` for every process of
    /// `comm` into every one, if they all run on one node and all can make
    /// theirs; `None` otherwise (the same answer on every process).
    /// Collective: every process of `comm` calls it, while all are alive.
    pub fn new(comm: &SimpleCommunicator, slot_bytes: usize) -> Option<NodeRegions> {
        let (me, procs) = (comm.rank(), comm.size());
        let slot_bytes = slot_bytes.div_ceil(64) * 64;
        let one_node = comm.split_shared(0).size() == procs;
        // A name for this job's regions, from rank 0.
        let mut job = if me == 0 {
            std::process::id() as u64 ^ (nanos_now() << 20)
        } else {
            0
        };
        comm.process_at_rank(0).broadcast_into(&mut job);
        let path = |r: i32| format!("/dev/shm/corrected-{job:016x}-{r}");
        let size = HEADER + 2 * slot_bytes;
        let mine = (one_node && slot_bytes > 0)
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
        let size = HEADER + 2 * slot_bytes;
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
            slot_bytes,
            maps,
            calls: 0,
        })
    }

    /// The largest input a slot holds.
    pub fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }

    /// Copies `bytes` (at most [`NodeRegions::slot_bytes`]) into this
    /// process's next slot for a new call, and numbers it.
    pub fn publish(&mut self, bytes: &[u8]) -> RegionRef {
        assert!(bytes.len() <= self.slot_bytes, "a slot holds the input");
        self.calls += 1;
        let seq = self.calls;
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

    /// The `len` bytes of input `r`, if its slot holds that call now.
    ///
    /// # Safety
    /// The bytes are only valid while [`NodeRegions::still`] says so after
    /// the caller has read them: another process writes its slot again two
    /// calls later (a caller left out of the call between may still read).
    /// A caller must check, and drop what it computed from them if not.
    pub unsafe fn view(&self, r: RegionRef, len: usize) -> Option<&[u8]> {
        if len > self.slot_bytes || r.rank as usize >= self.maps.len() {
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

    /// The call number and the bytes of the slot of call `seq` of `rank`.
    fn slot(&self, rank: Rank, seq: u64) -> (&AtomicU64, *mut u8) {
        let base = self.maps[rank as usize].as_mut_ptr();
        let s = (seq % 2) as usize;
        // SAFETY: the header's lines lie in the mapping (its size was
        // checked when mapped), are 64-byte aligned (a mapping starts on a
        // page), and are only ever accessed as atomics.
        let number = unsafe { &*base.add(s * 64).cast::<AtomicU64>() };
        // SAFETY: the slot lies in the mapping (as above).
        let data = unsafe { base.add(HEADER + s * self.slot_bytes) };
        (number, data)
    }
}

impl std::fmt::Debug for NodeRegions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "NodeRegions({} processes, slots of {} bytes)",
            self.maps.len(),
            self.slot_bytes
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

/// A list of region references with the length of each input: a large
/// allreduce's value between processes ([`encode_refs`]), which the
/// protocol cores carry as plain bytes and combine by joining lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefList {
    /// Bytes of each input.
    pub len: u64,
    /// The inputs, in rank order, one per rank.
    pub refs: Vec<RegionRef>,
}

/// The first word of an encoded [`RefList`]: tells it from a value's bytes.
const MAGIC: u64 = u64::from_le_bytes(*b"corr-shm");

impl RefList {
    /// The list's bytes: magic, length, count, then rank and call number
    /// of each reference.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(24 + 12 * self.refs.len());
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&(self.refs.len() as u64).to_le_bytes());
        for r in &self.refs {
            out.extend_from_slice(&r.rank.to_le_bytes());
            out.extend_from_slice(&r.seq.to_le_bytes());
        }
        out
    }

    /// The list `bytes` encode, or `None` if they are not one.
    pub fn decode(bytes: &[u8]) -> Option<RefList> {
        let word = |i: usize| -> Option<u64> {
            Some(u64::from_le_bytes(bytes.get(i..i + 8)?.try_into().ok()?))
        };
        if word(0)? != MAGIC {
            return None;
        }
        let (len, n) = (word(8)?, usize::try_from(word(16)?).ok()?);
        if bytes.len() != 24usize.checked_add(n.checked_mul(12)?)? {
            return None;
        }
        let refs: Vec<RegionRef> = bytes[24..]
            .chunks_exact(12)
            .map(|c| RegionRef {
                rank: u32::from_le_bytes(c[..4].try_into().expect("4 bytes")),
                seq: u64::from_le_bytes(c[4..].try_into().expect("8 bytes")),
            })
            .collect();
        refs.windows(2)
            .all(|w| w[0].rank < w[1].rank)
            .then_some(RefList { len, refs })
    }

    /// Both lists' references in rank order (a rank in both once: the
    /// protocol never joins an input twice, but a list is not trusted).
    pub fn join(&self, other: &RefList) -> RefList {
        let mut refs = Vec::with_capacity(self.refs.len() + other.refs.len());
        let (mut i, mut j) = (0, 0);
        while i < self.refs.len() || j < other.refs.len() {
            let a = self.refs.get(i);
            let b = other.refs.get(j);
            match (a, b) {
                (Some(x), Some(y)) if x.rank == y.rank => {
                    refs.push(*x);
                    i += 1;
                    j += 1;
                }
                (Some(x), Some(y)) if x.rank < y.rank => {
                    refs.push(*x);
                    i += 1;
                }
                (Some(_), Some(y)) | (None, Some(y)) => {
                    refs.push(*y);
                    j += 1;
                }
                (Some(x), None) => {
                    refs.push(*x);
                    i += 1;
                }
                (None, None) => unreachable!("the loop's condition"),
            }
        }
        RefList {
            len: self.len,
            refs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two processes' regions, as two handles on the same two files.
    fn pair(slot_bytes: usize) -> (NodeRegions, NodeRegions, Vec<String>) {
        let paths: Vec<String> = (0..2)
            .map(|r| format!("/dev/shm/corrected-test-{}-{r}", std::process::id()))
            .collect();
        for p in &paths {
            create(p, HEADER + 2 * slot_bytes).expect("a region file");
        }
        let a = NodeRegions::map(0, &paths, slot_bytes).expect("mapped");
        let b = NodeRegions::map(1, &paths, slot_bytes).expect("mapped");
        (a, b, paths)
    }

    #[test]
    fn a_published_input_reads_until_its_slot_is_written_again() {
        let (mut a, mut b, paths) = pair(4096);
        let one = a.publish(&[1u8; 4096]);
        let other = b.publish(&[7u8; 100]);
        // SAFETY: checked with `still` after each read.
        unsafe {
            assert_eq!(b.view(one, 4096), Some(&[1u8; 4096][..]));
            assert_eq!(a.view(other, 100), Some(&[7u8; 100][..]));
            // Longer than a slot: refused.
            assert_eq!(a.view(other, 4097), None);
        }
        assert!(b.still(one) && a.still(other));
        // The next call takes the other slot: the first stays readable.
        let two = a.publish(&[2u8; 4096]);
        assert!(b.still(one) && b.still(two));
        // The call after writes the first slot again: a reader of call one
        // sees it changed, and a new view of it is refused.
        let three = a.publish(&[3u8; 4096]);
        assert_eq!(three.seq % 2, one.seq % 2);
        assert!(!b.still(one));
        // SAFETY: as above.
        unsafe {
            assert_eq!(b.view(one, 4096), None);
            assert_eq!(b.view(three, 4096), Some(&[3u8; 4096][..]));
        }
        // A rank out of range is no region.
        assert!(!a.still(RegionRef { rank: 2, seq: 1 }));
        for p in paths {
            std::fs::remove_file(p).unwrap();
        }
    }

    #[test]
    fn a_region_file_that_is_too_small_is_not_mapped() {
        let paths: Vec<String> = (0..2)
            .map(|r| format!("/dev/shm/corrected-small-{}-{r}", std::process::id()))
            .collect();
        create(&paths[0], HEADER + 2 * 4096).unwrap();
        create(&paths[1], HEADER + 4096).unwrap();
        assert!(NodeRegions::map(0, &paths, 4096).is_none());
        for p in paths {
            std::fs::remove_file(p).unwrap();
        }
    }

    #[test]
    fn a_list_round_trips_and_joins_in_rank_order() {
        let r = |rank, seq| RegionRef { rank, seq };
        let a = RefList {
            len: 1 << 20,
            refs: vec![r(0, 5), r(3, 7)],
        };
        let b = RefList {
            len: 1 << 20,
            refs: vec![r(1, 2), r(3, 7), r(9, 1)],
        };
        assert_eq!(RefList::decode(&a.encode()), Some(a.clone()));
        let joined = a.join(&b);
        assert_eq!(joined.refs, vec![r(0, 5), r(1, 2), r(3, 7), r(9, 1)]);
        assert_eq!(RefList::decode(&joined.encode()), Some(joined));
        // Not a list: other bytes, a cut list, ranks out of order.
        assert_eq!(RefList::decode(&[0u8; 40]), None);
        let bytes = a.encode();
        assert_eq!(RefList::decode(&bytes[..bytes.len() - 1]), None);
        let unordered = RefList {
            len: 8,
            refs: vec![r(3, 1), r(1, 1)],
        };
        assert_eq!(RefList::decode(&unordered.encode()), None);
    }
}
