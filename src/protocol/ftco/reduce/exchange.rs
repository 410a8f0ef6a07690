//! The multi-root allreduce's exchange (FTCO Section 5.2.1): the roots of
//! the multi-root k-nomial tree, which never fail, send each other their
//! partials and each combines all of them in root order, so every root
//! holds the same result (and the union of what the partials lack) before
//! its down phase starts.

use crate::protocol::reduce::Combine;
use crate::types::Rank;

use super::FtcoReduce;

impl<P, O> FtcoReduce<'_, P, O>
where
    P: Clone + Send + 'static,
    O: Combine<P>,
{
    /// True when this node is one of several roots exchanging partials.
    pub(super) fn exchanges(&self) -> bool {
        !self.peer_parts.is_empty()
    }

    /// A root of several with its own partial and every peer's: the result
    /// is all the partials combined in root order (the same value, bit for
    /// bit, on every root), and its down phase starts.
    pub(super) fn try_exchange(&mut self) {
        if self.settled || !self.exchanges() {
            return;
        }
        let Some(own) = self.part.as_ref() else {
            return;
        };
        if (0..self.roots).any(|q| q != self.me && self.peer_parts[q as usize].is_none()) {
            return;
        }
        let part = |q: Rank| {
            if q == self.me {
                own
            } else {
                self.peer_parts[q as usize].as_ref().expect("checked above")
            }
        };
        let (mut result, mut missing) = part(0).clone();
        for q in 1..self.roots {
            let (value, lacks) = part(q);
            self.combine.combine(&mut result, value);
            missing.extend_from_slice(lacks);
        }
        missing.sort_unstable();
        missing.dedup();
        self.settle(Some((result, missing)), None);
    }
}
