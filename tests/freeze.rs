//! A rank's thread frozen at an arbitrary point of the mailbox or the
//! driver: after it wrote a slot and before it published it,
//! after it published and before it rang the doorbell, after it rang and
//! before it woke the receiver, after it took a message and before it
//! handed it on, after its core gave a message and before it sent it. For
//! a while, or for ever (until the rest of the team is done).
//!
//! One rank of eight (0, 3 or 7) arms a [`FaultPoint`] for its 1st, 2nd or
//! 5th passage at the start of its closure; every rank then runs ten
//! operations, in one of which the freeze fires (asserted), and a tail
//! operation that needs the frozen rank (an allreduce, or a broadcast from
//! it), so that a rank frozen for long is always awaited and found. The
//! broadcasts' root is the frozen rank in every other operation and
//! another rank in between: on the flat tree a team of eight runs here, a
//! receiver sends nothing and a root takes nothing, so the frozen rank
//! sends seven messages in each broadcast it roots and takes one in each
//! other, and every point's fifth passage comes within the ten.
//!
//! * Frozen below the failure timeout: every rank gets every operation's
//!   exact result, and nobody is declared failed.
//! * Frozen beyond it, or until the others are done: the frozen rank, and
//!   only it, is declared failed. Before the operation it froze in, every
//!   result is exact; from it on, each allreduce result holds every other
//!   input exactly once and the frozen rank's once or not at all, the same
//!   on every rank; a broadcast from a live root is delivered everywhere,
//!   one from the frozen root is delivered or fails with `RootFailed`. The
//!   frozen rank's later calls fail with `Error::Failed`.
//!
//! Every operation's inputs differ, so a value of another operation (or a
//! duplicated input) is caught.
//!
//! Each case runs twice: with helping off, and on (`corrected::helping`:
//! waiting ranks pump each other's calls). A point freezes a thread, and
//! with helping on another thread may do the armed rank's mailbox work, so
//! there the point may fire late (as late as the tail operation) or not at
//! all: if it never fires, every result must be exact and nobody declared
//! failed; if it fires in the tail operation, the frozen rank may or may
//! not be declared failed (nobody may need it any more), and the results
//! are checked by what happened. With helping off it must fire within the
//! ten operations.

#![cfg(all(feature = "fault-points", not(loom)))]

use corrected::Collectives;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use corrected::check::input_of;
use corrected::fault_point::{arm, armed, disarm, FaultPoint, Freeze};
use corrected::runtime::Team;
use corrected::types::Rank;
use corrected::Error;

const P: u32 = 8;
const FAILURE_TIMEOUT: Duration = Duration::from_millis(200);
/// Operations in which the armed point must fire; a tail operation follows.
const OPS: usize = 10;
const POINTS: [FaultPoint; 5] = [
    FaultPoint::SlotWritten,
    FaultPoint::Published,
    FaultPoint::Rung,
    FaultPoint::Taken,
    FaultPoint::BeforeSend,
];
const NTH: [u32; 3] = [1, 2, 5];
const FROZEN: [Rank; 3] = [0, 3, 7];

/// One team at a time: the short freeze must stay far below the failure
/// timeout, which a second team's threads on the same cores could eat.
static SERIAL: Mutex<()> = Mutex::new(());

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Coll {
    Allreduce,
    Bcast,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// 20 ms, a tenth of the failure timeout.
    Short,
    /// 600 ms, three failure timeouts.
    Long,
    /// Until every other rank's closure has returned.
    Forever,
}

/// Rank `rank`'s input to operation `op` (distinct for every pair).
fn input(rank: Rank, op: usize) -> u64 {
    input_of(rank + P * op as Rank)
}

fn sum(ranks: impl Iterator<Item = Rank>, op: usize) -> u64 {
    ranks.fold(0, |s, r| s.wrapping_add(input(r, op)))
}

/// The root of broadcast `op`: the frozen rank in even operations and the
/// tail, another rank in odd ones (each time another), so that the frozen
/// rank both sends and receives within the operations.
fn root(op: usize, frozen: Rank) -> Rank {
    if op < OPS && op % 2 == 1 {
        (frozen + 1 + op as Rank / 2) % P
    } else {
        frozen
    }
}

/// What a rank saw of one operation: its result, and whether its arming
/// was still waiting to fire after it.
type Seen = (Result<u64, Error>, bool);

struct Case {
    helping: bool,
    coll: Coll,
    kind: Kind,
    point: FaultPoint,
    nth: u32,
    frozen: Rank,
}

impl Case {
    fn name(&self) -> String {
        format!(
            "{:?} {:?} freeze at {:?} #{} on rank {}, helping {}",
            self.coll, self.kind, self.point, self.nth, self.frozen, self.helping
        )
    }

    fn freeze(&self, done: &Arc<AtomicUsize>) -> Freeze {
        match self.kind {
            Kind::Short => Freeze::For(Duration::from_millis(20)),
            Kind::Long => Freeze::For(Duration::from_millis(600)),
            Kind::Forever => {
                let done = Arc::clone(done);
                Freeze::Until(Box::new(move || {
                    done.load(Ordering::Acquire) >= P as usize - 1
                }))
            }
        }
    }

    fn run(&self) {
        let team = Team::builder()
            .ranks(P)
            .fault_budget(1)
            .failure_timeout(FAILURE_TIMEOUT)
            .op_timeout(Duration::from_secs(30))
            .helping(self.helping)
            .build()
            .unwrap();
        let done = Arc::new(AtomicUsize::new(0));
        let report = team.run(|comm| {
            let me = comm.rank();
            if me == self.frozen {
                arm(self.point, self.nth, self.freeze(&done));
            }
            let seen: Vec<Seen> = (0..=OPS)
                .map(|op| {
                    let got = match self.coll {
                        Coll::Allreduce => {
                            let mut out = 0u64;
                            comm.all_reduce_into(&input(me, op), &mut out, |a: &u64, b: &u64| {
                                a.wrapping_add(*b)
                            })
                            .map(|()| out)
                        }
                        Coll::Bcast => {
                            let root = root(op, self.frozen);
                            let mut out = if me == root { input(me, op) } else { 0 };
                            comm.broadcast_into(root, &mut out).map(|()| out)
                        }
                    };
                    (got, armed())
                })
                .collect();
            // Not fired within the operations: the check below says so
            // (and the rank does not freeze while the team winds down).
            disarm();
            done.fetch_add(1, Ordering::AcqRel);
            seen
        });
        let name = self.name();
        assert_eq!(
            report.returned().count(),
            P as usize,
            "{name}: a rank panicked"
        );
        let seen = |r: Rank| report.outcomes[r as usize].returned().unwrap();
        // The operation the freeze fired in. With helping, helpers may have
        // done the armed rank's mailbox work in every earlier operation, so
        // the point may fire as late as the tail operation, or never.
        let fired = seen(self.frozen)
            .iter()
            .position(|&(_, still_armed)| !still_armed);
        let k = match fired {
            Some(k) if k < OPS || self.helping => k,
            // Helpers did the work the point is on: no freeze, all exact.
            None if self.helping => OPS + 1,
            _ => panic!("{name}: the point did not fire in the first {OPS} operations"),
        };
        // Frozen in the tail operation (helping only), the rank may have
        // frozen after the others needed it for the last time (taking a
        // late message, say): then nobody waits for it, nobody declares it
        // failed, and every result must be exact. Before the tail, the next
        // operation always needs it.
        let in_tail = fired == Some(OPS);
        let frozen_for_long = self.kind != Kind::Short
            && fired.is_some()
            && (!in_tail || report.failed.contains(&self.frozen));
        let want_failed = if frozen_for_long {
            vec![self.frozen]
        } else {
            vec![]
        };
        assert_eq!(report.failed, want_failed, "{name}: ranks declared failed");
        for op in 0..=OPS {
            let exact = match self.coll {
                Coll::Allreduce => sum(0..P, op),
                Coll::Bcast => input(root(op, self.frozen), op),
            };
            let mut agreed = None;
            for r in 0..P {
                let got = &seen(r)[op].0;
                let what = format!("{name}: rank {r}, operation {op} (froze in {k}): {got:?}");
                if !frozen_for_long || op < k {
                    assert_eq!(*got, Ok(exact), "{what}");
                    continue;
                }
                let is_frozen = r == self.frozen;
                match (self.coll, got) {
                    // Declared failed while frozen: it fails from then on,
                    // or completes the operation it froze in.
                    (_, Err(Error::Failed(f))) if is_frozen && *f == r => {}
                    (_, Ok(_)) if is_frozen && op > k => panic!("{what}"),
                    (Coll::Allreduce, Ok(v)) => {
                        let without = sum((0..P).filter(|&q| q != self.frozen), op);
                        assert!(*v == without || *v == exact && op == k, "{what}");
                        assert_eq!(*agreed.get_or_insert(*v), *v, "{what}: disagrees");
                    }
                    (Coll::Bcast, Ok(v)) => assert_eq!(*v, exact, "{what}"),
                    (Coll::Bcast, Err(Error::RootFailed { root, .. }))
                        if *root == self.frozen && !is_frozen => {}
                    _ => panic!("{what}"),
                }
            }
        }
    }
}

/// Every point and nth for one collective and one kind of freeze; the
/// frozen rank rotates so that each point meets every one of them.
fn sweep(coll: Coll, kind: Kind) {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (i, &point) in POINTS.iter().enumerate() {
        for (j, &nth) in NTH.iter().enumerate() {
            for helping in [false, true] {
                Case {
                    helping,
                    coll,
                    kind,
                    point,
                    nth,
                    frozen: FROZEN[(i + j) % FROZEN.len()],
                }
                .run();
            }
        }
    }
}

/// One test per collective and kind of freeze, each a [`sweep`].
macro_rules! sweeps {
    ($($name:ident: $coll:ident, $kind:ident;)*) => {$(
        #[test]
        fn $name() {
            sweep(Coll::$coll, Kind::$kind);
        }
    )*};
}

sweeps! {
    allreduce_frozen_briefly_loses_nothing: Allreduce, Short;
    allreduce_frozen_beyond_the_failure_timeout: Allreduce, Long;
    allreduce_frozen_until_the_others_are_done: Allreduce, Forever;
    broadcast_frozen_briefly_loses_nothing: Bcast, Short;
    broadcast_frozen_beyond_the_failure_timeout: Bcast, Long;
    broadcast_frozen_until_the_others_are_done: Bcast, Forever;
}
