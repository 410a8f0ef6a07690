//! Which transport ranks a communicator's ranks are: all of them, or, after
//! a shrink, the survivors renumbered densely.

use crate::types::Rank;

/// A communicator's ranks as transport ranks. Cores number ranks densely
/// from 0 (their communicator's numbering); the transport numbers the
/// whole team. Until a shrink the two are the same; after one, rank `i` of
/// the communicator is transport rank `members[i]`, and the ranks left out
/// are not in it at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Members<'t>(Option<&'t [Rank]>);

impl<'t> Members<'t> {
    /// Every rank of the transport, numbered as it numbers them.
    pub const ALL: Members<'static> = Members(None);

    /// The transport ranks `members`, in increasing order, as ranks
    /// `0..members.len()`.
    ///
    /// # Panics
    ///
    /// If `members` is not strictly increasing.
    pub fn dense(members: &'t [Rank]) -> Self {
        assert!(
            members.windows(2).all(|w| w[0] < w[1]),
            "members must be strictly increasing"
        );
        Members(Some(members))
    }

    /// The communicator's size, given the transport's.
    #[inline]
    pub fn size(self, procs: u32) -> u32 {
        self.0.map_or(procs, |m| m.len() as u32)
    }

    /// The transport rank of communicator rank `r`.
    #[inline]
    pub fn to_transport(self, r: Rank) -> Rank {
        match self.0 {
            None => r,
            Some(m) => m[r as usize],
        }
    }

    /// The communicator rank of transport rank `t`, if it is a member.
    #[inline]
    pub fn of_transport(self, t: Rank) -> Option<Rank> {
        match self.0 {
            None => Some(t),
            Some(m) => m.binary_search(&t).ok().map(|i| i as Rank),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_numbering_round_trips() {
        let survivors = [0, 2, 3, 7];
        let m = Members::dense(&survivors);
        assert_eq!(m.size(8), 4);
        for (i, &t) in survivors.iter().enumerate() {
            assert_eq!(m.to_transport(i as Rank), t);
            assert_eq!(m.of_transport(t), Some(i as Rank));
        }
        assert_eq!(m.of_transport(1), None);
        assert_eq!(m.of_transport(8), None);
        assert_eq!(Members::ALL.of_transport(5), Some(5));
        assert_eq!(Members::ALL.size(8), 8);
    }
}
