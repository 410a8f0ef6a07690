//! Operation fencing: which operation a message belongs to, relative to the
//! one a rank is in. Messages of later operations wait here until the rank
//! gets there; messages of earlier ones are the caller's to route or drop.

use std::collections::VecDeque;

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
    /// Early messages by operation: `early[i]` holds those of operation
    /// `base + i`, in arrival order. Releasing one operation's costs no scan
    /// of the others' (a sender that runs far ahead leaves many), and the
    /// lists are reused ([`Fence::release_into`]): a rank holding messages
    /// every operation allocates nothing once warm.
    early: VecDeque<Vec<(Rank, M)>>,
    base: OpId,
    /// Emptied lists, for reuse.
    spare: Vec<Vec<(Rank, M)>>,
    held: usize,
    /// Messages a new list has room for when it is made.
    per_op: usize,
    /// Operations' lists made room for ([`Fence::with_room`]).
    lists: usize,
}

impl<M> Default for Fence<M> {
    fn default() -> Self {
        Fence {
            next: 0,
            early: VecDeque::new(),
            base: 0,
            spare: Vec::new(),
            held: 0,
            per_op: 0,
            lists: 0,
        }
    }
}

impl<M> Fence<M> {
    /// A fence before operation 0 (no room made: see [`Fence::with_room`]).
    #[cfg(any(test, loom))]
    pub fn new() -> Self {
        Fence::default()
    }

    /// A fence before operation 0 with room, made now, for the early
    /// messages of `ops` operations, `per_op` each: a rank that runs one
    /// operation ahead of a peer or two (every allreduce's neighbours do)
    /// then allocates nothing when it first happens, in a steady loop.
    /// And room for `ahead` more operations' lists, of `ahead_room`
    /// messages each: a peer that runs that far ahead (a broadcast root
    /// that waits for nobody runs a lane's capacity ahead) costs no
    /// allocation either, in a steady loop or when it first happens.
    pub fn with_room(ops: usize, per_op: usize, ahead: usize, ahead_room: usize) -> Self {
        let lists = ops + ahead;
        let mut spare = Vec::with_capacity(lists);
        spare.extend((0..ahead).map(|_| Vec::with_capacity(ahead_room)));
        // The roomy lists on top: taken first.
        spare.extend((0..ops).map(|_| Vec::with_capacity(per_op)));
        Fence {
            early: VecDeque::with_capacity(lists),
            spare,
            per_op,
            lists,
            ..Fence::default()
        }
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
        if self.held == 0 {
            // Every list is empty (a caller skips releasing while nothing is
            // held): start over at `op`, rather than fill the gap from a
            // stale base with lists (made anew once the spares run out).
            self.spare.extend(self.early.drain(..));
            self.base = op;
        }
        while op < self.base {
            let list = self.list();
            self.early.push_front(list);
            self.base -= 1;
        }
        let i = (op - self.base) as usize;
        while self.early.len() <= i {
            let list = self.list();
            self.early.push_back(list);
        }
        self.early[i].push((from, msg));
        self.held += 1;
    }

    /// A spare list, or a new one with room made (so that a list made to
    /// fill a gap, and used later, does not allocate then).
    fn list(&mut self) -> Vec<(Rank, M)> {
        self.spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(self.per_op))
    }

    /// Whether no message waits here.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.held == 0
    }

    /// Whether the kept messages span as many operations as the fence made
    /// room for: one more message of a later operation would allocate. A
    /// helper then takes no more (the rank's own thread still does): see
    /// `Driver::advance`.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.held > 0 && self.early.len() >= self.lists
    }

    /// Moves the kept messages of operation `op` into `out`, in arrival
    /// order, and drops those of earlier operations (entered but never
    /// driven: their messages are past).
    pub fn release_into(&mut self, op: OpId, out: &mut Vec<(Rank, M)>) {
        while self.base <= op {
            let Some(mut list) = self.early.pop_front() else {
                break;
            };
            self.held -= list.len();
            if self.base == op {
                out.append(&mut list);
            } else {
                list.clear();
            }
            self.spare.push(list);
            self.base += 1;
        }
    }

    /// Takes the kept messages of operation `op`, in arrival order (see
    /// [`Fence::release_into`]).
    #[cfg(any(test, loom))]
    pub fn release(&mut self, op: OpId) -> Vec<(Rank, M)> {
        let mut out = Vec::new();
        self.release_into(op, &mut out);
        out
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
        // Held out of order, far ahead; one operation entered but never
        // released (its messages are dropped with the next release).
        f.hold(1, 5, 'e');
        f.hold(2, 3, 'c');
        f.hold(3, 2, 'x');
        f.hold(4, 5, 'f');
        assert_eq!(f.held(), 4);
        for _ in 2..4 {
            f.enter();
        }
        assert_eq!(f.release(3), vec![(2, 'c')]);
        assert_eq!(f.held(), 2);
        f.enter();
        f.enter();
        let mut out = Vec::new();
        f.release_into(5, &mut out);
        assert_eq!(out, vec![(1, 'e'), (4, 'f')]);
        assert_eq!(f.held(), 0);
    }

    #[test]
    fn a_fence_is_full_when_its_lists_span_the_room_made() {
        // Room for 1 + 2 operations' lists.
        let mut f = Fence::with_room(1, 4, 2, 1);
        assert!(!f.is_full());
        f.enter();
        f.hold(0, 1, 'a');
        f.hold(0, 2, 'b');
        assert!(!f.is_full());
        f.hold(0, 3, 'c');
        assert!(f.is_full(), "operations 1, 2 and 3 kept: three lists");
        f.enter();
        let mut out = Vec::new();
        f.release_into(1, &mut out);
        assert!(!f.is_full());
        f.enter();
        f.enter();
        out.clear();
        f.release_into(3, &mut out);
        assert_eq!(out, vec![(0, 'c')]);
        // Empty again: the lists left behind do not count.
        assert!(!f.is_full());
    }
}
