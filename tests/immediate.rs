//! The immediate (non-blocking) collectives on threads
//! (`src/request.rs`, `src/call/immediate.rs`, `src/driver/pending.rs`):
//! several requests in flight on one communicator, completed in any
//! order, with blocking calls between; the kill matrix of the immediate
//! allreduce (every victim set of up to f ranks, at sampled kill points),
//! with the blocking call's guarantee (reduce paper Section 5.1: every
//! live rank the same value and the same contributors, every live rank's
//! input in, a failed rank's in everywhere or nowhere); a rank killed with
//! three requests in flight; a mismatch; large values; a shrink with
//! requests pending; requests dropped unwaited.

use std::time::Duration;

use corrected::check::input_of;
use corrected::op::SystemOperation;
use corrected::protocol::gossip::GossipSpec;
use corrected::runtime::{BroadcastAlgorithm, Fault, FaultSchedule, Team};
use corrected::types::Rank;
use corrected::{Collectives, Contributors, Error, Request};

mod common;
use common::{assignments, subsets};

const OP_TIMEOUT: Duration = Duration::from_secs(20);
/// After the n-th send, or at the end of the call.
const END: u32 = 1 << 20;

fn team(procs: u32, f: u32, faults: FaultSchedule) -> Team {
    Team::builder()
        .ranks(procs)
        .fault_budget(f)
        .faults(faults)
        .failure_timeout(Duration::from_secs(1))
        .op_timeout(OP_TIMEOUT)
        .build()
        .unwrap()
}

fn wrapping_sum(a: &u64, b: &u64) -> u64 {
    a.wrapping_add(*b)
}

/// Four requests of four kinds in flight, waited in an order that differs
/// from rank to rank, a blocking broadcast between the starts and the
/// waits: each result is the blocking call's.
#[test]
fn requests_complete_in_any_order_with_blocking_calls_between() {
    for procs in [1, 2, 3, 5, 8] {
        let team = team(procs, 1.min(procs - 1), FaultSchedule::none());
        let report = team.run(|comm| -> Result<(), Error> {
            let me = comm.rank();
            let size = comm.size();
            let all = comm.immediate_all_reduce(vec![input_of(me), 1], wrapping_sum)?;
            let root = size - 1;
            let mine = if me == root {
                vec![7u32, 8, 9]
            } else {
                vec![0; 3]
            };
            let bcast = comm.immediate_broadcast(root, mine)?;
            let reduce = comm.immediate_reduce(0, vec![u64::from(me)], SystemOperation::max())?;
            let barrier = comm.immediate_barrier()?;
            let mut between = if me == 0 { 42u64 } else { 0 };
            comm.broadcast_into(0, &mut between)?;
            assert_eq!(between, 42);
            let order = me % 3;
            let got_all;
            let got_bcast;
            let got_reduce;
            let mut barrier = Some(barrier);
            match order {
                0 => {
                    comm.wait(barrier.take().unwrap())?;
                    got_reduce = Some(comm.wait(reduce)?);
                    got_bcast = Some(comm.wait(bcast)?);
                    got_all = Some(comm.wait(all)?);
                }
                1 => {
                    got_bcast = Some(comm.wait(bcast)?);
                    got_all = Some(comm.wait(all)?);
                    got_reduce = Some(comm.wait(reduce)?);
                }
                _ => {
                    got_all = Some(comm.wait(all)?);
                    got_reduce = Some(comm.wait(reduce)?);
                    got_bcast = Some(comm.wait(bcast)?);
                }
            }
            if let Some(b) = barrier {
                comm.wait(b)?;
            }
            let sum = (0..size).fold(0u64, |s, r| s.wrapping_add(input_of(r)));
            assert_eq!(got_all.unwrap(), vec![sum, u64::from(size)], "rank {me}");
            assert_eq!(got_bcast.unwrap(), vec![7, 8, 9], "rank {me}");
            let reduced = got_reduce.unwrap();
            if me == 0 {
                assert_eq!(reduced, Some(vec![u64::from(size - 1)]));
            } else {
                assert_eq!(reduced, None);
            }
            Ok(())
        });
        for (r, got) in report.returned() {
            assert_eq!(got, &Ok(()), "P={procs} rank {r}");
        }
    }
}

/// A request completes by tests alone while its rank does other work
/// between them, and `wait` after a successful `test` returns at once.
#[test]
fn tests_complete_a_request_while_the_rank_computes() {
    let team = team(4, 1, FaultSchedule::none());
    let report = team.run(|comm| -> Result<(u64, u32), Error> {
        let me = comm.rank();
        let mut req = comm.immediate_all_reduce(vec![u64::from(me) + 1], wrapping_sum)?;
        let mut tests = 0u32;
        let mut work = 0u64;
        while !comm.test(&mut req)? {
            tests += 1;
            // Computation between tests.
            for i in 0..1000u64 {
                work = work.wrapping_mul(31).wrapping_add(i);
            }
            std::hint::black_box(work);
        }
        assert!(req.is_complete());
        assert!(comm.test(&mut req)?, "a completed request stays complete");
        let got = comm.wait(req)?;
        Ok((got[0], tests))
    });
    for (r, got) in report.returned() {
        let (sum, _) = got.as_ref().unwrap_or_else(|e| panic!("rank {r}: {e}"));
        assert_eq!(*sum, 1 + 2 + 3 + 4, "rank {r}");
    }
}

/// A live rank's outcome of the kill matrix: the sum and its contributors.
type Got = Result<(u64, Contributors), Error>;

/// The immediate allreduce under the kill matrix, waited after a blocking
/// barrier started behind it: the blocking allreduce's guarantee.
fn kill_run(procs: u32, f: u32, kills: &[(Rank, u32)], len: usize) {
    let name = format!("P={procs} f={f} len={len} kills {kills:?}");
    let faults = kills.iter().fold(FaultSchedule::none(), |s, &(r, n)| {
        s.at(r, 0, Fault::DieAfterSends(n))
    });
    let report = team(procs, f, faults).run(|comm| -> Got {
        let me = comm.rank();
        let req = comm.immediate_all_reduce(vec![input_of(me); len], wrapping_sum)?;
        let (sum, who) = comm.wait_contributors(req)?;
        assert!(sum.iter().all(|&x| x == sum[0]), "{name}: elements differ");
        Ok((sum[0], who.expect("the list scheme knows its contributors")))
    });
    let victims: Vec<Rank> = kills.iter().map(|&(r, _)| r).collect();
    assert!(
        report.failed.iter().all(|r| victims.contains(r)),
        "{name}: live ranks declared failed: {:?}",
        report.failed
    );
    let within = victims.len() as u32 <= f;
    let mut agreed: Option<Result<(u64, Contributors), ()>> = None;
    for (r, got) in report.returned().filter(|(r, _)| !victims.contains(r)) {
        match got {
            Ok((sum, who)) => {
                let ranks = who.ranks().expect("listed");
                assert!(
                    (0..procs)
                        .filter(|r| !victims.contains(r))
                        .all(|r| ranks.contains(&r)),
                    "{name}: rank {r}: a live rank left out: {ranks:?}"
                );
                let want = ranks.iter().fold(0u64, |s, &c| s.wrapping_add(input_of(c)));
                assert_eq!(*sum, want, "{name}: rank {r}: not the contributors' sum");
                let mine = Ok((*sum, who.clone()));
                assert_eq!(
                    agreed.get_or_insert(mine.clone()),
                    &mine,
                    "{name}: rank {r}"
                );
            }
            Err(Error::TooManyFailures { .. }) if !within => {
                assert_eq!(agreed.get_or_insert(Err(())), &Err(()), "{name}: rank {r}");
            }
            Err(e) => panic!("{name}: live rank {r} got {e:?}"),
        }
    }
}

#[test]
fn immediate_allreduce_kill_matrix() {
    let mut runs = 0;
    for (procs, f) in [(2, 1), (3, 1), (4, 2), (5, 1)] {
        for set in subsets(procs, f).into_iter().filter(|s| !s.is_empty()) {
            let points: &[u32] = match set.len() {
                1 => &[0, 1, 2, 3, END],
                _ => &[0, 1, END],
            };
            for kills in assignments(&set, points) {
                kill_run(procs, f, &kills, 1);
                runs += 1;
            }
        }
    }
    assert!(runs > 40, "{runs} runs");
}

/// The same matrix with 1 MiB values, which on threads go as the blocking
/// call's large reduction (inputs lent in place, outputs lent from the
/// start, the chunks reduced together): a victim's input is read from its
/// copy after its death, in every element or in none.
#[test]
fn immediate_large_allreduce_kill_matrix() {
    let mut runs = 0;
    for (procs, f) in [(2, 1), (3, 1), (4, 2)] {
        for set in subsets(procs, f).into_iter().filter(|s| !s.is_empty()) {
            for kills in assignments(&set, &[0, 1, 2, END]) {
                kill_run(procs, f, &kills, 1 << 17);
                runs += 1;
            }
        }
    }
    assert!(runs > 20, "{runs} runs");
}

/// A rank that dies after starting three requests (at its next call; the
/// first a large allreduce, its input lent) fails all three; the others complete theirs with the blocking calls'
/// guarantees, the dead rank's input in every survivor's result or in
/// none, and go on.
#[test]
fn a_rank_killed_with_three_requests_in_flight_fails_them_all() {
    let (procs, victim) = (5, 2);
    // Operations 0-2 are the three starts; operation 3, its next call.
    let faults = FaultSchedule::none().at(victim, 3, Fault::Dead);
    let report = team(procs, 1, faults).run(|comm| -> Result<Vec<u64>, Error> {
        let me = comm.rank();
        let reqs: Vec<Request<Vec<u64>>> = vec![
            // 1 MiB: on threads, lent in place.
            comm.immediate_all_reduce(vec![input_of(me); 1 << 17], wrapping_sum)?,
            comm.immediate_broadcast(0, vec![if me == 0 { 99 } else { 0 }])?,
            comm.immediate_all_reduce(vec![1u64], wrapping_sum)?,
        ];
        let barrier = comm.barrier();
        let got = comm.wait_all(reqs);
        if me == victim {
            assert_eq!(barrier, Err(Error::Failed(victim)));
            for g in &got {
                assert_eq!(g, &Err(Error::Failed(victim)));
            }
            return Err(Error::Failed(victim));
        }
        barrier?;
        let mut out = Vec::new();
        for g in got {
            let g = g?;
            assert!(g.iter().all(|&x| x == g[0]), "rank {me}: elements differ");
            out.push(g[0]);
        }
        // And the team goes on without it.
        let mut after = 0u64;
        comm.all_reduce_into(&1u64, &mut after, wrapping_sum)?;
        out.push(after);
        Ok(out)
    });
    let mut agreed = None;
    for (r, got) in report.returned().filter(|&(r, _)| r != victim) {
        let got = got.as_ref().unwrap_or_else(|e| panic!("rank {r}: {e}"));
        let all: u64 = (0..procs).fold(0, |s, c| s.wrapping_add(input_of(c)));
        let without = all.wrapping_sub(input_of(victim));
        assert!(got[0] == all || got[0] == without, "rank {r}: {got:?}");
        assert_eq!(got[1], 99);
        assert!(got[2] == 5 || got[2] == 4, "rank {r}: {got:?}");
        assert_eq!(got[3], 4, "rank {r}: the victim is failed for later calls");
        assert_eq!(agreed.get_or_insert(got.clone()), got, "rank {r} disagrees");
    }
}

/// Ranks that start different collectives at one operation get
/// `Mismatch` from their waits (or at the start), never a hang.
#[test]
fn an_immediate_mismatch_is_an_error_not_a_hang() {
    let report = team(3, 1, FaultSchedule::none()).run(|comm| -> Result<(), Error> {
        if comm.rank() == 1 {
            let req = comm.immediate_broadcast(0, vec![0u64])?;
            comm.wait(req).map(drop)
        } else {
            let req = comm.immediate_all_reduce(vec![1u64], wrapping_sum)?;
            comm.wait(req).map(drop)
        }
    });
    for (r, got) in report.returned() {
        assert!(
            matches!(got, Err(Error::Mismatch { .. })),
            "rank {r}: {got:?}"
        );
    }
}

/// Values far beyond a message: a 1 MiB allreduce and broadcast, two in
/// flight at once; and a length that differs between ranks is the
/// blocking call's `LengthMismatch`.
#[test]
fn large_values_and_lengths_that_differ() {
    const N: usize = 1 << 17;
    let report = team(4, 1, FaultSchedule::none()).run(|comm| -> Result<(), Error> {
        let me = comm.rank();
        let send: Vec<u64> = (0..N as u64).map(|i| i * u64::from(me + 1)).collect();
        let all = comm.immediate_all_reduce(send, wrapping_sum)?;
        let value: Vec<u64> = if me == 3 {
            (0..N as u64).map(|i| i ^ 0xabc).collect()
        } else {
            vec![0; N]
        };
        let bcast = comm.immediate_broadcast(3, value)?;
        let got = comm.wait(bcast)?;
        assert!(got.iter().enumerate().all(|(i, &x)| x == i as u64 ^ 0xabc));
        let sum = comm.wait(all)?;
        assert!(sum.iter().enumerate().all(|(i, &x)| x == i as u64 * 10));
        let uneven = vec![1u64; if me == 0 { 2 } else { 3 }];
        let req = comm.immediate_all_reduce(uneven, wrapping_sum)?;
        match comm.wait(req) {
            Err(Error::LengthMismatch { .. }) => Ok(()),
            other => panic!("rank {me}: {other:?}"),
        }
    });
    for (r, got) in report.returned() {
        assert_eq!(got, &Ok(()), "rank {r}");
    }
}

/// A shrink with requests pending completes them first (each wait then
/// returns its outcome); the survivors' numbering applies from the shrink.
#[test]
fn a_shrink_settles_the_requests_in_flight() {
    let faults = FaultSchedule::none().at(3, 1, Fault::Dead);
    let report = team(4, 1, faults).run(|comm| -> Result<(u64, u64, u32), Error> {
        comm.barrier()?;
        let me = comm.rank();
        let req = comm.immediate_all_reduce(vec![u64::from(me)], wrapping_sum)?;
        let failed = comm.shrink()?;
        assert_eq!(failed, vec![3]);
        let before = comm.wait(req)?;
        let mut after = 0u64;
        comm.all_reduce_into(&u64::from(comm.rank()), &mut after, wrapping_sum)?;
        Ok((before[0], after, comm.size()))
    });
    for (r, got) in report.returned().filter(|&(r, _)| r != 3) {
        // Ranks 0, 1, 2 before the shrink and after it.
        assert_eq!(got, &Ok((3, 3, 3)), "rank {r}");
    }
}

/// Requests dropped unwaited still complete among the team's operations:
/// later calls succeed, and the team's run ends (quiet).
#[test]
fn requests_dropped_unwaited_do_not_stall_the_team() {
    for algorithm in [
        BroadcastAlgorithm::default(),
        BroadcastAlgorithm::Gossip(GossipSpec::default()),
    ] {
        let team = Team::builder()
            .ranks(4)
            .broadcast(algorithm)
            .op_timeout(OP_TIMEOUT)
            .build()
            .unwrap();
        let report = team.run(|comm| -> Result<u64, Error> {
            for i in 0..5u64 {
                let _ = comm.immediate_broadcast(0, vec![i; 3])?;
                let _ = comm.immediate_all_reduce(vec![i], wrapping_sum)?;
            }
            let mut v = if comm.rank() == 0 { 5u64 } else { 0 };
            comm.broadcast_into(0, &mut v)?;
            Ok(v)
        });
        for (r, got) in report.returned() {
            assert_eq!(got, &Ok(5), "{algorithm:?} rank {r}");
        }
    }
}

/// A pending reduce's messages handed to it between calls and inside
/// another call (a barrier), then its wait: the core's clock never runs
/// backwards whoever hands it time (the up-correction reduce checks it in
/// debug builds; a process of `corrected mpi --in-flight` panicked so).
#[test]
fn a_pending_reduce_is_served_inside_other_calls_and_waited() {
    let report = team(5, 1, FaultSchedule::none()).run(|comm| -> Result<(), Error> {
        let me = comm.rank();
        for round in 0..20u64 {
            let req = comm.immediate_reduce(0, vec![u64::from(me) + round], wrapping_sum)?;
            comm.barrier()?;
            comm.progress()?;
            let got = comm.wait(req)?;
            if me == 0 {
                assert_eq!(got, Some(vec![10 + 5 * round]));
            } else {
                assert_eq!(got, None);
            }
        }
        Ok(())
    });
    for (r, got) in report.returned() {
        assert_eq!(got, &Ok(()), "rank {r}");
    }
}
