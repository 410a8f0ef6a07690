//! Helping (`corrected::helping`): waiting ranks pump each other's
//! calls. These tests force it on (and, unpinned, let every rank help every
//! other, across cores) and check that what a helper does is what the rank
//! itself would have done: exact results, an emulated death by send count
//! that fires in whichever thread sends, a panic in a user operation that a
//! helper applied surfacing on the rank it belongs to, and nothing left
//! hanging.

use corrected::Collectives;
use std::time::Duration;

use corrected::check::input_of;
use corrected::runtime::{Fault, FaultSchedule, Pinning, RankOutcome, Team};
use corrected::types::Rank;
use corrected::Error;

const P: u32 = 8;

fn team(pinning: Pinning) -> corrected::runtime::TeamBuilder {
    Team::builder()
        .ranks(P)
        .fault_budget(1)
        .helping(true)
        .pinning(pinning)
        .failure_timeout(Duration::from_millis(200))
        .op_timeout(Duration::from_secs(20))
}

fn input(rank: Rank, op: u32) -> u64 {
    input_of(rank + P * op)
}

fn sum(ranks: impl Iterator<Item = Rank>, op: u32) -> u64 {
    ranks.fold(0, |s, r| s.wrapping_add(input(r, op)))
}

/// Many allreduces, reduces and barriers with helping on, pinned (helpers
/// are core mates) and unpinned (every rank helps every other): every
/// result exact.
#[test]
fn helped_collectives_give_exact_results() {
    const OPS: u32 = 300;
    for pinning in [Pinning::Packed, Pinning::None] {
        let report = team(pinning.clone()).build().unwrap().run(|comm| {
            let me = comm.rank();
            for op in 0..OPS {
                let mut out = 0u64;
                match op % 3 {
                    0 => {
                        comm.all_reduce_into(&input(me, op), &mut out, |a: &u64, b: &u64| {
                            a.wrapping_add(*b)
                        })?;
                        assert_eq!(out, sum(0..P, op), "{pinning:?} allreduce {op}");
                    }
                    1 => {
                        let root = op % P;
                        comm.reduce_into(root, &input(me, op), &mut out, |a: &u64, b: &u64| {
                            a.wrapping_add(*b)
                        })?;
                        if me == root {
                            assert_eq!(out, sum(0..P, op), "{pinning:?} reduce {op}");
                        }
                    }
                    _ => comm.barrier()?,
                }
            }
            Ok::<(), Error>(())
        });
        for (rank, got) in report.returned() {
            assert_eq!(*got, Ok(()), "{pinning:?}: rank {rank}");
        }
        assert_eq!(report.returned().count(), P as usize, "{pinning:?}");
        assert!(report.failed.is_empty(), "{pinning:?}: {:?}", report.failed);
        // 8 ranks on at most 2 cores (CI and this machine) wait for each
        // other hundreds of times: helpers must have pumped.
        if corrected::runtime::pin::available_cores().len() < P as usize {
            assert!(report.helped > 0, "{pinning:?}: nobody helped");
        }
    }
}

/// A rank that dies after its n-th send, for every n up to past its last
/// send, with helping on: it fails, and every live rank gets the same sum,
/// with the dead rank's input in it or not.
#[test]
fn a_death_by_send_count_fires_in_whoever_sends() {
    const VICTIM: Rank = 5;
    for n in 1..=12 {
        let faults = FaultSchedule::none().at(VICTIM, 0, Fault::DieAfterSends(n));
        let report = team(Pinning::None)
            .faults(faults)
            .build()
            .unwrap()
            .run(|comm| {
                let me = comm.rank();
                let mut out = 0u64;
                comm.all_reduce_into(&input(me, 0), &mut out, |a: &u64, b: &u64| {
                    a.wrapping_add(*b)
                })
                .map(|()| out)
            });
        let all = sum(0..P, 0);
        let without = sum((0..P).filter(|&r| r != VICTIM), 0);
        let mut agreed = None;
        for (rank, got) in report.returned() {
            if rank == VICTIM {
                assert_eq!(*got, Err(Error::Failed(VICTIM)), "n = {n}");
                continue;
            }
            let v = got
                .clone()
                .unwrap_or_else(|e| panic!("n = {n}, rank {rank}: {e}"));
            assert!(v == all || v == without, "n = {n}, rank {rank}: {v}");
            assert_eq!(
                *agreed.get_or_insert(v),
                v,
                "n = {n}, rank {rank} disagrees"
            );
        }
        assert_eq!(report.failed, vec![VICTIM], "n = {n}");
    }
}

/// A user operation that panics on one rank's call: whichever thread
/// applied it, the panic is that rank's (its outcome says so, it is marked
/// failed), and the others complete without hanging. Which ranks combine
/// in an operation depends on timing (a rank may only forward), so the
/// operation panics on rank 0 from operation 10 on, wherever it is first
/// applied; a run in which it never was must give exact results, and at
/// least one of five runs must see the panic.
#[test]
fn a_panic_in_a_helped_operation_is_the_lenders() {
    const BAD: Rank = 0;
    const OPS: u32 = 20;
    let mut panics = 0;
    for _ in 0..5 {
        let report = team(Pinning::None).build().unwrap().run(|comm| {
            let me = comm.rank();
            let mut out = 0u64;
            for op in 0..OPS {
                comm.all_reduce_into(&input(me, op), &mut out, move |a: &u64, b: &u64| {
                    if me == BAD && op >= 10 {
                        panic!("operation of rank {me} refuses");
                    }
                    a.wrapping_add(*b)
                })?;
            }
            Ok::<u64, Error>(out)
        });
        let panicked = match &report.outcomes[BAD as usize] {
            RankOutcome::Panicked(msg) => {
                assert!(msg.contains("refuses"), "{msg}");
                true
            }
            RankOutcome::Returned(got) => {
                assert_eq!(*got, Ok(sum(0..P, OPS - 1)), "rank {BAD} never combined");
                false
            }
        };
        let (all, without) = (
            sum(0..P, OPS - 1),
            sum((0..P).filter(|&r| r != BAD), OPS - 1),
        );
        if panicked {
            assert!(report.failed.contains(&BAD), "{:?}", report.failed);
            panics += 1;
        }
        // The last operation: rank 0's input in it for every rank or for
        // none (it may have panicked in that very operation).
        let mut agreed = None;
        for (rank, got) in report.returned() {
            if rank != BAD {
                let v = got.clone().unwrap_or_else(|e| panic!("rank {rank}: {e}"));
                assert!(v == without || v == all, "rank {rank}: {v}");
                if !panicked {
                    assert_eq!(v, all, "rank {rank}");
                }
                assert_eq!(*agreed.get_or_insert(v), v, "rank {rank} disagrees");
            }
        }
        assert_eq!(
            report.returned().count(),
            P as usize - usize::from(panicked)
        );
    }
    assert!(panics > 0, "rank {BAD}'s operation was never applied");
}
