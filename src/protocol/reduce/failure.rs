//! Failure information sent up the tree with every partial result
//! (Küttler, Härtig, Section 4.4), so the root can pick a subtree whose value
//! is complete.

use std::fmt;
use std::str::FromStr;

use crate::error::ConfigError;
use crate::types::Rank;

/// Which failure information travels with a partial result. All three let the
/// root find a complete subtree; they differ in what the root learns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FailureScheme {
    /// The ranks found failed (in up-correction and in the tree phase): the
    /// root learns who failed, and so which inputs its result lacks
    /// ([`crate::Contributors`]). Most data per message once ranks fail;
    /// the same messages fault-free. The engines' default.
    #[default]
    List,
    /// Their number plus a bit "a tree-phase failure happened in this
    /// subtree": the root learns how many failed.
    Count,
    /// Only the subtree bit: the root learns whether a subtree is complete.
    /// The simulator's default (the paper's least data).
    Bit,
}

impl FromStr for FailureScheme {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        match s {
            "list" => Ok(FailureScheme::List),
            "count" => Ok(FailureScheme::Count),
            "bit" => Ok(FailureScheme::Bit),
            _ => Err(ConfigError::BadFailureScheme {
                spec: s.to_string(),
            }),
        }
    }
}

impl fmt::Display for FailureScheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FailureScheme::List => "list",
            FailureScheme::Count => "count",
            FailureScheme::Bit => "bit",
        })
    }
}

/// Failed ranks a message carries at most; beyond that only the count grows
/// (a subtree sees at most f failures while the guarantees hold). Six keeps
/// a runtime message with eight payload words within two cache lines.
pub const LIST_CAPACITY: usize = 6;

/// The failure information of one partial result. Fixed size, so that it fits
/// a mailbox slot; which fields are meaningful depends on the
/// [`FailureScheme`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FailureInfo {
    /// A rank of this subtree failed to deliver in the tree phase: the value
    /// may be incomplete. Up-correction failures do not set it.
    pub subtree_failed: bool,
    /// Ranks found failed (count and list schemes).
    pub count: u32,
    len: u8,
    ranks: [Rank; LIST_CAPACITY],
}

impl FailureInfo {
    /// Records that `rank` did not deliver; `in_tree` for a tree child.
    pub fn note_failed(&mut self, rank: Rank, in_tree: bool, scheme: FailureScheme) {
        self.subtree_failed |= in_tree;
        if scheme != FailureScheme::Bit {
            self.count += 1;
        }
        if scheme == FailureScheme::List {
            self.push(rank);
        }
    }

    /// Adds a child's information.
    pub fn merge(&mut self, child: &FailureInfo) {
        self.subtree_failed |= child.subtree_failed;
        self.count += child.count;
        for &r in child.ranks() {
            self.push(r);
        }
    }

    /// The information with these parts (as a transport that copies
    /// messages between processes rebuilds it; ranks beyond
    /// [`LIST_CAPACITY`] are dropped, as [`FailureInfo::merge`] drops them).
    pub fn from_parts(subtree_failed: bool, count: u32, ranks: &[Rank]) -> Self {
        let mut info = FailureInfo {
            subtree_failed,
            count,
            ..FailureInfo::default()
        };
        for &r in ranks {
            info.push(r);
        }
        info
    }

    fn push(&mut self, rank: Rank) {
        if (self.len as usize) < LIST_CAPACITY {
            self.ranks[self.len as usize] = rank;
            self.len += 1;
        }
    }

    /// The failed ranks listed (list scheme; at most [`LIST_CAPACITY`], the
    /// rest only counted).
    pub fn ranks(&self) -> &[Rank] {
        &self.ranks[..self.len as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_carry_what_they_promise() {
        for scheme in [
            FailureScheme::List,
            FailureScheme::Count,
            FailureScheme::Bit,
        ] {
            let mut a = FailureInfo::default();
            a.note_failed(3, false, scheme);
            assert!(!a.subtree_failed, "up-correction failures leave the bit");
            let mut b = FailureInfo::default();
            b.note_failed(7, true, scheme);
            a.merge(&b);
            assert!(a.subtree_failed);
            let (count, listed): (u32, &[Rank]) = match scheme {
                FailureScheme::List => (2, &[3, 7]),
                FailureScheme::Count => (2, &[]),
                FailureScheme::Bit => (0, &[]),
            };
            assert_eq!((a.count, a.ranks()), (count, listed), "{scheme}");
            assert_eq!(scheme.to_string().parse::<FailureScheme>(), Ok(scheme));
        }
        let mut full = FailureInfo::default();
        for r in 0..20 {
            full.note_failed(r, false, FailureScheme::List);
        }
        assert_eq!((full.count, full.ranks().len()), (20, LIST_CAPACITY));
    }
}
