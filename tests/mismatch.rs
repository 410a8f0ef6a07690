//! Mismatched calls on threads: when one rank calls another
//! collective, or another root, than the rest at the same operation number,
//! the operation ends in `Mismatch`, never in a wait for the operation
//! timeout, on every allreduce and broadcast shape `auto` can pick (the star
//! allreduce with the flat tree where ranks outnumber cores, the tree
//! allreduce with the binomial tree otherwise), and the team goes on.
//!
//! In the star allreduce no message need ever show the mismatch (its root
//! waits for inputs while the others wait for a broadcast from it): a
//! waiting rank finds it in the call its awaited peer publishes
//! (`PeerView::call`), and aborts the operation for the team.
//!
//! "Prompt" is asserted as a state: the operation timeout is a minute, so
//! a rank that waited it out returns `Timeout`, which fails the test.

mod common;

use common::serial;
use std::time::Duration;

use corrected::runtime::{AllreduceAlgorithm, Comm, SystemOperation, Team};
use corrected::types::Rank;
use corrected::{Collectives, Error};

/// A collective call as a rank makes it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Call {
    Broadcast(Rank),
    Reduce(Rank),
    Allreduce,
    Barrier,
}

/// Every call a root and a non-root can make at one operation number:
/// each collective, and the rooted ones from two roots.
const CALLS: [Call; 6] = [
    Call::Broadcast(0),
    Call::Broadcast(1),
    Call::Reduce(0),
    Call::Reduce(1),
    Call::Allreduce,
    Call::Barrier,
];

fn input(rank: Rank) -> u64 {
    1 << rank
}

/// The value a root broadcasts.
fn root_value(root: Rank) -> u64 {
    1_000 + u64::from(root)
}

/// Makes `call` on `comm`: `Ok(Some(v))` for a call that delivers `v` to
/// this rank, `Ok(None)` for one that delivers nothing here.
fn make(comm: &mut Comm<'_>, call: Call) -> Result<Option<u64>, Error> {
    let me = comm.rank();
    let sum = SystemOperation::sum();
    match call {
        Call::Broadcast(root) => {
            let mut v = if me == root { root_value(root) } else { 0 };
            comm.broadcast_into(root, &mut v).map(|()| Some(v))
        }
        Call::Reduce(root) => {
            let mut out = 0u64;
            comm.reduce_into(root, &input(me), &mut out, sum)
                .map(|()| (me == root).then_some(out))
        }
        Call::Allreduce => {
            let mut out = 0u64;
            comm.all_reduce_into(&input(me), &mut out, sum)
                .map(|()| Some(out))
        }
        Call::Barrier => comm.barrier().map(|()| None),
    }
}

/// What `call` delivers to a rank when every rank of `ranks` makes it.
fn expected(call: Call, ranks: u32) -> Option<u64> {
    let all = (0..ranks).map(input).sum();
    match call {
        Call::Broadcast(root) => Some(root_value(root)),
        Call::Reduce(_) | Call::Allreduce => Some(all),
        Call::Barrier => None,
    }
}

/// The shapes `auto` picks from (and `auto` itself, whatever it picks on
/// this machine).
fn teams(ranks: u32) -> Vec<(&'static str, Team)> {
    let build = |allreduce, tree: Option<String>| {
        let b = Team::builder()
            .ranks(ranks)
            .fault_budget(1)
            .allreduce(allreduce)
            .op_timeout(Duration::from_secs(60));
        match tree {
            Some(t) => b.tree(t.parse().unwrap()),
            None => b,
        }
        .build()
        .unwrap()
    };
    vec![
        ("auto", build(AllreduceAlgorithm::Auto, None)),
        (
            "star, flat tree",
            build(
                AllreduceAlgorithm::Star,
                Some(format!("kary:{}", ranks - 1)),
            ),
        ),
        (
            "tree, binomial",
            build(AllreduceAlgorithm::Tree, Some("binomial".into())),
        ),
    ]
}

/// Rank `odd` makes `theirs` while every other rank makes `mine`, then all
/// allreduce alike. Every rank ends the first call with `Mismatch` or with
/// the result its own call would have had (a rank may finish before the
/// abort reaches it), at least one with `Mismatch`; the next allreduce
/// delivers every input to every rank, with nobody taken for failed.
fn check(name: &str, team: &Team, ranks: u32, odd: Rank, mine: Call, theirs: Call) {
    let report = team.run(|comm| {
        let call = if comm.rank() == odd { theirs } else { mine };
        let first = make(comm, call);
        let next = make(comm, Call::Allreduce);
        (call, first, next)
    });
    let case = format!("{name}, P={ranks}: rank {odd} calls {theirs:?}, the others {mine:?}");
    assert_eq!(report.failed, Vec::<Rank>::new(), "{case}");
    let mut mismatched = 0;
    for (r, (call, first, next)) in report.returned() {
        match first {
            Err(Error::Mismatch { op: 0, .. }) => mismatched += 1,
            Ok(Some(v)) => assert_eq!(Some(*v), expected(*call, ranks), "{case}: rank {r}"),
            Ok(None) => {}
            other => panic!("{case}: rank {r}: {other:?}"),
        }
        assert_eq!(
            *next,
            Ok(expected(Call::Allreduce, ranks)),
            "{case}: rank {r}"
        );
    }
    assert_eq!(report.returned().count(), ranks as usize, "{case}");
    assert!(mismatched >= 1, "{case}: nobody saw the mismatch");
}

#[test]
fn every_pair_of_calls_at_one_operation_is_a_mismatch() {
    let _s = serial();
    for ranks in [4u32, 8] {
        for (name, team) in teams(ranks) {
            for mine in CALLS {
                for theirs in CALLS.into_iter().filter(|&c| c != mine) {
                    // The odd rank is the root of the others' call, or a
                    // rank that is no root of either.
                    for odd in [0, ranks - 1] {
                        check(name, &team, ranks, odd, mine, theirs);
                    }
                }
            }
        }
    }
}

/// The case the issue names: the star allreduce's root calls an allreduce
/// or a barrier while the others call a broadcast from it. No message of
/// either call reaches the other side, so only the published call shows
/// it: every rank ends with `Mismatch`.
#[test]
fn the_star_root_finds_the_mismatch_no_message_shows() {
    let _s = serial();
    for ranks in [4u32, 8, 16] {
        let team = Team::builder()
            .ranks(ranks)
            .allreduce(AllreduceAlgorithm::Star)
            .tree(format!("kary:{}", ranks - 1).parse().unwrap())
            .op_timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        for root_call in [Call::Allreduce, Call::Barrier] {
            let report = team.run(|comm| {
                let call = if comm.rank() == 0 {
                    root_call
                } else {
                    Call::Broadcast(0)
                };
                (make(comm, call), make(comm, Call::Allreduce))
            });
            assert!(report.failed.is_empty(), "{:?}", report.failed);
            for (r, (first, next)) in report.returned() {
                assert!(
                    matches!(first, Err(Error::Mismatch { op: 0, .. })),
                    "P={ranks}, root {root_call:?}: rank {r}: {first:?}"
                );
                assert_eq!(*next, Ok(expected(Call::Allreduce, ranks)), "rank {r}");
            }
        }
    }
}
