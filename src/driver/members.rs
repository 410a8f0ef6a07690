//! Which transport ranks a communicator's ranks are: all of them, or, after
//! a shrink, the survivors renumbered densely, or after a split, its
//! color's ranks numbered by key.

use crate::types::Rank;

/// A communicator's ranks as transport ranks. Cores number ranks densely
/// from 0 (their communicator's numbering); the transport numbers the
/// whole team. Until a shrink or a split the two are the same; after one,
/// rank `i` of the communicator is transport rank `order[i]`, and the
/// ranks left out are not in it at all. A shrink keeps the ranks' order
/// ([`Members::dense`]); a split numbers them by key
/// ([`Members::ordered`], with an index by transport rank).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Members<'t>(Option<Numbering<'t>>);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Numbering<'t> {
    /// The transport rank of each communicator rank.
    order: &'t [Rank],
    /// (transport rank, communicator rank), by transport rank; `None`
    /// where `order` increases (it is its own index).
    index: Option<&'t [(Rank, Rank)]>,
}

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
        Members(Some(Numbering {
            order: members,
            index: None,
        }))
    }

    /// The transport ranks `order`, in any order, as ranks
    /// `0..order.len()`; `index` is [`Members::index_of`]`(order)`.
    ///
    /// # Panics
    ///
    /// If `index` is not `order`'s.
    pub fn ordered(order: &'t [Rank], index: &'t [(Rank, Rank)]) -> Self {
        assert!(
            index.len() == order.len()
                && index.windows(2).all(|w| w[0].0 < w[1].0)
                && index
                    .iter()
                    .all(|&(t, r)| order.get(r as usize) == Some(&t)),
            "index must be order's"
        );
        Members(Some(Numbering {
            order,
            index: Some(index),
        }))
    }

    /// The index [`Members::ordered`] needs: (transport rank,
    /// communicator rank) of each of `order`, by transport rank.
    pub fn index_of(order: &[Rank]) -> Box<[(Rank, Rank)]> {
        let mut index: Box<[(Rank, Rank)]> = (order.iter().enumerate())
            .map(|(i, &t)| (t, i as Rank))
            .collect();
        index.sort_unstable();
        index
    }

    /// The communicator's size, given the transport's.
    #[inline]
    pub fn size(self, procs: u32) -> u32 {
        self.0.map_or(procs, |n| n.order.len() as u32)
    }

    /// The transport rank of communicator rank `r`.
    #[inline]
    pub fn to_transport(self, r: Rank) -> Rank {
        match self.0 {
            None => r,
            Some(n) => n.order[r as usize],
        }
    }

    /// The communicator rank of transport rank `t`, if it is a member.
    #[inline]
    pub fn of_transport(self, t: Rank) -> Option<Rank> {
        match self.0 {
            None => Some(t),
            Some(Numbering { order, index: None }) => {
                order.binary_search(&t).ok().map(|i| i as Rank)
            }
            Some(Numbering {
                index: Some(index), ..
            }) => (index.binary_search_by_key(&t, |&(t, _)| t).ok()).map(|i| index[i].1),
        }
    }

    /// Whether `self` and `other` are one communicator's numbering (the
    /// same generation: compared by address, in constant time).
    #[inline]
    pub fn is(self, other: Members<'_>) -> bool {
        match (self.0, other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => std::ptr::eq(a.order, b.order),
            _ => false,
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

    #[test]
    fn ordered_numbering_round_trips() {
        let order = [7, 2, 5];
        let index = Members::index_of(&order);
        let m = Members::ordered(&order, &index);
        assert_eq!(m.size(8), 3);
        for (i, &t) in order.iter().enumerate() {
            assert_eq!(m.to_transport(i as Rank), t);
            assert_eq!(m.of_transport(t), Some(i as Rank));
        }
        assert_eq!(m.of_transport(0), None);
        assert!(m.is(m) && !m.is(Members::ALL));
        let same = order;
        assert!(!m.is(Members::ordered(&same, &index)), "another generation");
    }
}
