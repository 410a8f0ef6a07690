//! Operation fencing: which operation a message belongs to, relative to the
//! one a rank is in. Messages of later operations wait here until the rank
//! gets there; messages of earlier ones are the caller's to route or drop.

use std::collections::BTreeMap;

use crate::types::{OpId, Rank};

/// Where a message goes, given the operation it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// The operation the rank is in: hand it to the current core.
    Current,
    /// An operation the rank has left: a lingering core's, or stale.
    Past,
    /// An operation the rank has not reached: kept (see [`Fence::hold`]).
    Early,
}

/// A rank's fence: the operation it is in (or will enter next) and the
/// messages that came early, in arrival order.
#[derive(Debug)]
pub struct Fence<M> {
    /// Operations below this one have been entered.
    next: OpId,
    /// Early messages by operation, in arrival order within one: a sender
    /// that runs far ahead leaves many, and releasing one operation's must
    /// not cost a scan of all.
    early: BTreeMap<OpId, Vec<(Rank, M)>>,
    held: usize,
}

impl<M> Default for Fence<M> {
    fn default() -> Self {
        Fence {
            next: 0,
            early: BTreeMap::new(),
            held: 0,
        }
    }
}

impl<M> Fence<M> {
    /// A fence before operation 0.
    pub fn new() -> Self {
        Fence::default()
    }

    /// The number the next [`enter`](Fence::enter) gives.
    pub fn next(&self) -> OpId {
        self.next
    }

    /// Enters the next operation and returns its number.
    pub fn enter(&mut self) -> OpId {
        self.next += 1;
        self.next - 1
    }

    /// Where a message of operation `op` goes while the rank is in the last
    /// operation it entered (or, before the first, waiting for operation 0).
    pub fn route(&self, op: OpId) -> Route {
        if op >= self.next {
            Route::Early
        } else if op + 1 == self.next {
            Route::Current
        } else {
            Route::Past
        }
    }

    /// Keeps a message of a later operation.
    pub fn hold(&mut self, from: Rank, op: OpId, msg: M) {
        debug_assert!(op >= self.next);
        self.early.entry(op).or_default().push((from, msg));
        self.held += 1;
    }

    /// Takes the kept messages of operation `op`, in arrival order.
    pub fn release(&mut self, op: OpId) -> Vec<(Rank, M)> {
        let now = self.early.remove(&op).unwrap_or_default();
        self.held -= now.len();
        now
    }

    /// How many messages wait for later operations (the loom model and the
    /// tests check that none is lost).
    #[cfg(any(test, loom))]
    pub fn held(&self) -> usize {
        self.held
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn early_messages_wait_for_their_operation() {
        let mut f = Fence::new();
        assert_eq!(f.route(0), Route::Early);
        f.hold(3, 0, 'a');
        f.hold(4, 1, 'b');
        f.hold(5, 0, 'c');
        assert_eq!(f.enter(), 0);
        assert_eq!(f.release(0), vec![(3, 'a'), (5, 'c')]);
        assert_eq!((f.route(0), f.route(1)), (Route::Current, Route::Early));
        assert_eq!(f.enter(), 1);
        assert_eq!(f.route(0), Route::Past);
        assert_eq!(f.release(1), vec![(4, 'b')]);
        assert_eq!(f.held(), 0);
    }
}
