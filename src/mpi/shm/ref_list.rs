//! A large allreduce's value between the processes of one node: the list
//! of region references to the inputs it includes ([`RefList`]).

use super::RegionRef;

/// A list of region references with the length of each input: a large
/// allreduce's value between processes ([`RefList::encode`]), which the
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

    /// A fingerprint of the list and the element size it is reduced as
    /// (FNV-1a over its bytes): blocks of a result computed from another
    /// list, or as another type, are not taken for this one's.
    pub fn fingerprint(&self, element_size: usize) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let bytes = self.encode();
        for b in bytes.iter().chain(&(element_size as u64).to_le_bytes()) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    }

    /// Both lists' references in rank order (a rank in both once: the
    /// protocol never joins an input twice, but a list is not trusted).
    pub fn join(&self, other: &RefList) -> RefList {
        let mut refs = crate::types::merge_by_rank(&self.refs, &other.refs, |r| r.rank);
        refs.dedup_by_key(|r| r.rank);
        RefList {
            len: self.len,
            refs,
        }
    }
}
