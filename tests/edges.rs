//! The edges of the fault model on threads: more failures than
//! the budget, hung and stalled ranks, dead roots and mismatched calls end
//! in a prompt, typed outcome, and the team goes on.
//!
//! "Prompt" is asserted as a property, not measured as a speed: the team's
//! operation timeout (or, where a test says so, its failure timeout) is
//! set far above the bound the test asserts, so a call that waited it out
//! fails the assertion by a wide margin on any machine; where no bound is
//! needed, the timeout is set beyond the test's own hang guard.

mod common;

use common::serial;
use std::time::{Duration, Instant};

use corrected::runtime::{
    AllreduceAlgorithm, Comm, Fault, FaultSchedule, RankOutcome, SystemOperation, Team,
};
use corrected::topology::TreeSpec;
use corrected::types::Rank;
use corrected::{Collectives, Error};

/// Far above every bound the tests assert.
const OP_TIMEOUT: Duration = Duration::from_secs(60);

fn team(ranks: u32, f: u32, faults: FaultSchedule, failure_timeout: Duration) -> Team {
    team_with(ranks, f, faults, failure_timeout, AllreduceAlgorithm::Auto)
}

fn team_with(
    ranks: u32,
    f: u32,
    faults: FaultSchedule,
    failure_timeout: Duration,
    algorithm: AllreduceAlgorithm,
) -> Team {
    // The binomial tree, named: the findings below are its inner ranks'
    // (the team's own pick where ranks outnumber cores is the flat tree).
    Team::builder()
        .ranks(ranks)
        .tree(TreeSpec::binomial())
        .fault_budget(f)
        .allreduce(algorithm)
        .faults(faults)
        .failure_timeout(failure_timeout)
        .op_timeout(OP_TIMEOUT)
        .build()
        .unwrap()
}

fn input(rank: Rank) -> u64 {
    1 << rank
}

/// `calls - 1` allreduces of [`input`] and then a barrier (as 0), each
/// with its outcome and how long it took.
fn allreduces_then_barrier(
    comm: &mut Comm<'_>,
    calls: usize,
) -> Vec<(Result<u64, Error>, Duration)> {
    (0..calls)
        .map(|i| {
            let started = Instant::now();
            let mut out = 0u64;
            let got = if i + 1 == calls {
                comm.barrier().map(|()| 0)
            } else {
                comm.all_reduce_into(&input(comm.rank()), &mut out, SystemOperation::sum())
                    .map(|()| out)
            };
            (got, started.elapsed())
        })
        .collect()
}

/// More failures than the budget (`--ranks 8 --op allreduce --f 1 --kill
/// 4,5`): every live rank gets `TooManyFailures` naming 4 and 5, in this
/// operation and the next ones, no live rank is declared failed (a live
/// rank that waits on a dead one must not be taken for failed by the
/// ranks waiting on it), and no call waits for the failure timeout. (The tree allreduce: the up-
/// correction groups {4, 5} have no live member, so no complete result
/// exists. The star needs no groups: see the next test.)
#[test]
fn beyond_the_budget_every_live_rank_gets_too_many_failures_promptly() {
    let _s = serial();
    let failure_timeout = Duration::from_secs(5);
    let faults = FaultSchedule::none().kill(4, 0).kill(5, 0);
    let tree = AllreduceAlgorithm::Tree;
    let report =
        team_with(8, 1, faults, failure_timeout, tree).run(|comm| allreduces_then_barrier(comm, 3));
    assert_eq!(report.failed, vec![4, 5], "no live rank declared failed");
    for (r, calls) in report.returned().filter(|&(r, _)| r != 4 && r != 5) {
        for (op, (got, took)) in calls.iter().enumerate() {
            assert_eq!(
                *got,
                Err(Error::TooManyFailures {
                    op: op as u32,
                    f: 1,
                    failed: vec![4, 5]
                }),
                "rank {r} op {op}"
            );
            assert!(*took < failure_timeout, "rank {r} op {op} took {took:?}");
        }
    }
}

/// The same dead ranks under the star allreduce: every input goes straight
/// to the root, so two failed ranks beyond f = 1 cost only their own
/// inputs. Every live rank gets the exact sum of the live inputs, in every
/// operation and barrier, promptly, and no live rank is declared failed.
#[test]
fn beyond_the_budget_the_star_delivers_the_live_inputs_promptly() {
    let _s = serial();
    let failure_timeout = Duration::from_secs(5);
    // Rank 0, the first round's root, among the dead: the star retries.
    let faults = FaultSchedule::none().kill(0, 0).kill(5, 0).kill(6, 1);
    let star = AllreduceAlgorithm::Star;
    let report =
        team_with(8, 1, faults, failure_timeout, star).run(|comm| allreduces_then_barrier(comm, 4));
    assert_eq!(report.failed, vec![0, 5, 6], "no live rank declared failed");
    for (r, calls) in report.returned().filter(|&(r, _)| ![0, 5, 6].contains(&r)) {
        for (op, (got, took)) in calls.iter().enumerate() {
            let live = |also: &[Rank]| -> u64 {
                (0..8)
                    .filter(|r| ![0, 5, 6].contains(r) || also.contains(r))
                    .map(input)
                    .sum()
            };
            match (op, got) {
                (3, Ok(0)) => {}
                (0, Ok(v)) => assert_eq!(*v, live(&[6]), "rank {r} op 0"),
                (_, Ok(v)) => assert_eq!(*v, live(&[]), "rank {r} op {op}"),
                (_, Err(e)) => panic!("rank {r} op {op}: {e}"),
            }
            assert!(*took < failure_timeout, "rank {r} op {op} took {took:?}");
        }
    }
}

/// Failures beyond the budget spread over operations: P = 16, f = 2, ranks
/// 6 and 9 dead and rank 12 dying in operation 0. Each of 20 operations
/// either delivers the exact result or ends in `TooManyFailures` on every
/// live rank alike, none waits for the failure timeout, and no live rank
/// is ever declared failed (the team does not collapse).
#[test]
fn failures_spread_over_operations_never_collapse_the_team() {
    let _s = serial();
    let failure_timeout = Duration::from_secs(5);
    let faults = FaultSchedule::none()
        .kill(6, 0)
        .kill(9, 0)
        .at(12, 0, Fault::DieAfterSends(2));
    let report = team(16, 2, faults, failure_timeout).run(|comm| {
        (0..20)
            .map(|_| {
                let started = Instant::now();
                let mut out = 0u64;
                let got = comm
                    .all_reduce_into(&input(comm.rank()), &mut out, SystemOperation::sum())
                    .map(|()| out);
                (got, started.elapsed())
            })
            .collect::<Vec<_>>()
    });
    assert_eq!(report.failed, vec![6, 9, 12]);
    let live: Vec<Rank> = (0..16).filter(|r| ![6, 9, 12].contains(r)).collect();
    let live_sum: u64 = live.iter().map(|&r| input(r)).sum();
    for op in 0..20 {
        let outcomes: Vec<_> = live
            .iter()
            .map(|&r| report.outcomes[r as usize].returned().unwrap()[op].clone())
            .collect();
        for (&r, (got, took)) in live.iter().zip(&outcomes) {
            assert!(*took < failure_timeout, "rank {r} op {op} took {took:?}");
            match got {
                // Rank 12's input is in every result of operation 0 or in none.
                Ok(v) => assert!(
                    *v == live_sum || (op == 0 && *v == live_sum + input(12)),
                    "rank {r} op {op}: {v:#x}"
                ),
                Err(Error::TooManyFailures { .. }) => {}
                Err(e) => panic!("rank {r} op {op}: {e}"),
            }
        }
        let first = &outcomes[0].0;
        assert!(
            outcomes.iter().all(|(g, _)| g == first),
            "op {op}: live ranks disagree: {outcomes:?}"
        );
    }
}

/// A hung rank (`--ranks 16 --hang 3`) costs one failure timeout in all,
/// not a grace period per broadcast: the ranks below rank 3 wait on it as
/// their tree parent, the detector declares it failed once its heartbeat
/// has stood still for the failure timeout, and every broadcast that
/// starts after that returns without a grace period.
#[test]
fn a_hung_rank_costs_one_failure_timeout_in_all() {
    let _s = serial();
    let failure_timeout = Duration::from_millis(300);
    // The driver's default grace period.
    let grace = Duration::from_millis(50);
    let faults = FaultSchedule::none().at(3, 0, Fault::Hang);
    let report = team(16, 1, faults, failure_timeout).run(|comm| {
        let mut late = Vec::new();
        let mut delivered = 0;
        let started = Instant::now();
        loop {
            let known = comm.failed_ranks().contains(&3);
            let t = Instant::now();
            // The root says whether another broadcast follows, so that every
            // rank makes the same calls.
            let more = started.elapsed() < failure_timeout * 4;
            let mut v = if comm.rank() == 0 { 1 + more as u64 } else { 0 };
            if let Err(e) = comm.broadcast_into(0, &mut v) {
                assert_eq!((comm.rank(), e), (3, Error::Hung(3)));
                return (delivered, late, true);
            }
            assert!(v == 1 || v == 2);
            delivered += 1;
            if known && t.elapsed() >= grace {
                late.push(t.elapsed());
            }
            if v == 1 {
                return (delivered, late, comm.failed_ranks().contains(&3));
            }
        }
    });
    assert_eq!(report.failed, vec![3]);
    assert_eq!(report.hung, vec![3]);
    for (r, (delivered, late, known)) in report.returned().filter(|&(r, _)| r != 3) {
        assert!(*known, "rank {r} never learned that rank 3 failed");
        assert!(*delivered > 0, "rank {r}");
        // A scheduler hiccup may make one call slow; a grace period in each
        // would make dozens.
        assert!(
            late.len() <= 1,
            "rank {r}: broadcasts after the detection still took {late:?}"
        );
    }
}

/// A broadcast from a root already known to be dead ends with
/// `RootFailed` at once, without waiting: the root failed before it entered
/// the operation, so no rank can hold its value. The operation timeout is
/// an hour, beyond the test's hang guard: a call that waited for it hangs
/// the run and fails the test; the team goes on with the next broadcast.
#[test]
fn a_broadcast_from_a_dead_root_fails_at_once() {
    let _s = serial();
    let report = within_the_hang_guard(|| {
        let faults = FaultSchedule::none().kill(2, 1);
        Team::builder()
            .ranks(8)
            .tree(TreeSpec::binomial())
            .fault_budget(1)
            .faults(faults)
            .failure_timeout(Duration::from_secs(5))
            .op_timeout(Duration::from_secs(3600))
            .build()
            .unwrap()
            .run(|comm| {
                [0, 2, 2, 0].map(|root| {
                    let mut v = if comm.rank() == root { 7u64 } else { 0 };
                    comm.broadcast_into(root, &mut v).map(|()| v)
                })
            })
    });
    assert_eq!(report.failed, vec![2]);
    for (r, calls) in report.returned().filter(|&(r, _)| r != 2) {
        assert_eq!(calls[0], Ok(7), "rank {r}");
        for (op, got) in calls.iter().enumerate().take(3).skip(1) {
            let root_failed = Err(Error::RootFailed {
                op: op as u32,
                root: 2,
            });
            assert_eq!(*got, root_failed, "rank {r}");
        }
        assert_eq!(calls[3], Ok(7), "rank {r}: the team goes on");
    }
}

/// Runs `run` on a thread of its own and returns what it returns; a run
/// still going after two minutes (a call waiting for an hour-long
/// operation timeout) fails the test instead of hanging it.
fn within_the_hang_guard<T: Send + 'static>(run: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(run()));
    finished
        .recv_timeout(Duration::from_secs(120))
        .expect("the run hung: a call waited for its operation timeout")
}

/// Mismatched calls (P = 8 and 16, rank 5 reduces while the others
/// allreduce): the rank that meets the mismatch aborts the operation for
/// the team, so every rank ends it with `Mismatch` or a result without
/// rank 5's input (never one holding the input of a rank that got an
/// error), and the next allreduce, called alike, delivers every rank's
/// input with nobody declared failed.
#[test]
fn after_a_mismatch_the_team_goes_on() {
    let _s = serial();
    for procs in [8u32, 16] {
        let report = team(procs, 1, FaultSchedule::none(), Duration::from_secs(5)).run(|comm| {
            let me = comm.rank();
            let mut out = 0u64;
            let first = if me == 5 {
                comm.reduce_into(0, &input(me), &mut out, SystemOperation::sum())
                    .map(|()| None)
            } else {
                comm.all_reduce_into(&input(me), &mut out, SystemOperation::sum())
                    .map(|()| Some(out))
            };
            let next = comm
                .all_reduce_into(&input(me), &mut out, SystemOperation::sum())
                .map(|()| out);
            (first, next)
        });
        assert_eq!(report.failed, Vec::<Rank>::new(), "P={procs}");
        let all: u64 = (0..procs).map(input).sum();
        for (r, (first, next)) in report.returned() {
            match first {
                Err(Error::Mismatch { op: 0, .. }) => {}
                Ok(Some(v)) => assert_eq!(v & input(5), 0, "P={procs} rank {r}: {v:#x}"),
                other => panic!("P={procs} rank {r}: {other:?}"),
            }
            assert_eq!(*next, Ok(all), "P={procs} rank {r}");
        }
        let mismatched = report
            .returned()
            .filter(|(_, (first, _))| first.is_err())
            .count();
        assert!(
            mismatched >= 2,
            "P={procs}: both sides of the mismatch see it"
        );
    }
}

/// Zombies stay out: a rank that stalls inside an operation for longer than
/// the failure timeout is declared failed meanwhile; when it wakes it gets
/// `Failed` for that operation and every later one, and the results of the
/// live ranks hold its input in no operation from the stall on.
#[test]
fn a_rank_declared_failed_while_slow_stays_out() {
    let _s = serial();
    let failure_timeout = Duration::from_millis(200);
    let faults = FaultSchedule::none().at(2, 1, Fault::Stall(failure_timeout * 5));
    let report = team(8, 1, faults, failure_timeout).run(|comm| {
        (0..5)
            .map(|_| {
                let mut out = 0u64;
                comm.all_reduce_into(&input(comm.rank()), &mut out, SystemOperation::sum())
                    .map(|()| out)
            })
            .collect::<Vec<_>>()
    });
    assert_eq!(report.failed, vec![2]);
    let all: u64 = (0..8).map(input).sum();
    let zombie = match &report.outcomes[2] {
        RankOutcome::Returned(calls) => calls.clone(),
        other => panic!("rank 2: {other:?}"),
    };
    assert_eq!(zombie[0], Ok(all));
    for (op, got) in zombie.iter().enumerate().skip(1) {
        assert_eq!(*got, Err(Error::Failed(2)), "rank 2, op {op}");
    }
    for (r, calls) in report.returned().filter(|&(r, _)| r != 2) {
        assert_eq!(calls[0], Ok(all), "rank {r}");
        for (op, got) in calls.iter().enumerate().skip(1) {
            assert_eq!(*got, Ok(all - input(2)), "rank {r} op {op}");
        }
    }
}

/// Agreement on the failed ranks: whatever fails before or during it, every
/// live rank ends with the same list, and every rank listed has failed.
#[test]
fn every_live_rank_agrees_on_the_failed_ranks() {
    let _s = serial();
    // Rank 3 is dead from the start: operation 0, a barrier, cannot end
    // anywhere before its failure is in the registry, so every rank knows it
    // when the agreement starts. Then the first coordinator (rank 0) dies
    // after one send of its round (operation 1), and rank 6 in its own round
    // (operation 7), before sending anything.
    // Its broadcasts use the allreduce's plan: a binomial tree with checked
    // correction, or the star's flat tree (the root sends to every rank).
    for algorithm in [AllreduceAlgorithm::Tree, AllreduceAlgorithm::Star] {
        let faults = FaultSchedule::none()
            .kill(3, 0)
            .at(0, 1, Fault::DieAfterSends(1))
            .kill(6, 7);
        let timeout = Duration::from_millis(500);
        let report = team_with(8, 1, faults, timeout, algorithm).run(|comm| {
            comm.barrier()?;
            comm.agree_failed()
        });
        let mut lists = report
            .returned()
            .filter(|(r, _)| ![0, 3, 6].contains(r))
            .map(|(r, got)| (r, got.clone().unwrap_or_else(|e| panic!("rank {r}: {e}"))));
        let (_, first) = lists.next().unwrap();
        assert!(first.iter().all(|r| report.failed.contains(r)), "{first:?}");
        assert!(first.contains(&3), "rank 3 was dead before the agreement");
        for (r, list) in lists {
            assert_eq!(list, first, "{algorithm}: rank {r}");
        }
    }
}

/// Shrink: after failures beyond the budget the survivors renumber densely,
/// get a fresh budget, and go on; a failure after the shrink is within the
/// new budget again.
#[test]
fn shrink_lets_the_survivors_go_on() {
    let _s = serial();
    // Ranks 4 and 5 die before their first call (beyond f = 1). Each
    // rank's calls: the allreduce (0), the shrink (1, an agreement of one
    // operation per rank inside), then allreduces (2, 3, 4): team rank 7
    // (rank 5 after the shrink) dies after one send of its call 3, the
    // second allreduce of the shrunk communicator.
    let faults = FaultSchedule::none()
        .kill(4, 0)
        .kill(5, 0)
        .at(7, 3, Fault::DieAfterSends(1));
    // Written against the engine-neutral trait, as an MPI program would be.
    fn go_on(comm: &mut impl Collectives) -> Outcome {
        let mine = input(comm.rank());
        let mut out = 0u64;
        let first = comm.all_reduce_into(&mine, &mut out, SystemOperation::sum());
        let left_out = comm.shrink();
        let shrunk = (comm.rank(), comm.size(), comm.fault_budget());
        let mut results = Vec::new();
        for _ in 0..3 {
            results.push(
                comm.all_reduce_into(&mine, &mut out, SystemOperation::sum())
                    .map(|()| out),
            );
        }
        (first, left_out, shrunk, results)
    }
    type Outcome = (
        Result<(), Error>,
        Result<Vec<Rank>, Error>,
        (Rank, u32, u32),
        Vec<Result<u64, Error>>,
    );
    // The tree allreduce: beyond the budget its first operation fails.
    let tree = AllreduceAlgorithm::Tree;
    let report = team_with(8, 1, faults, Duration::from_secs(5), tree).run(|comm| go_on(comm));
    assert_eq!(report.failed, vec![4, 5, 7]);
    let survivors: u64 = [0, 1, 2, 3, 6, 7].iter().map(|&r| input(r)).sum();
    let mut first_after = None;
    for (r, (first, left_out, shrunk, results)) in
        report.returned().filter(|&(r, _)| r < 4 || r == 6)
    {
        assert!(
            matches!(first, Err(Error::TooManyFailures { .. })),
            "rank {r}: {first:?}"
        );
        assert_eq!(*left_out, Ok(vec![4, 5]), "rank {r}");
        let dense = if r == 6 { 4 } else { r };
        assert_eq!(*shrunk, (dense, 6, 1), "rank {r}");
        assert_eq!(results[0], Ok(survivors), "rank {r}");
        // Rank 7 died inside the next one: its input in all results or none.
        let v = results[1]
            .clone()
            .unwrap_or_else(|e| panic!("rank {r}: {e}"));
        assert!(
            v == survivors || v == survivors - input(7),
            "rank {r}: {v:#x}"
        );
        assert_eq!(*first_after.get_or_insert(v), v, "rank {r} disagrees");
        assert_eq!(results[2], Ok(survivors - input(7)), "rank {r}");
    }
}

/// A shrink to fewer survivors than the fault budget clamps the budget to
/// the survivors less one, and what the communicator then reports is its
/// own: `fault_budget()` and the `f` of `TooManyFailures` (before the
/// shrink, the team's). The MPI engine's counterpart is
/// `tests/mpi.rs`, `shrink_between_processes_leaves_out_the_failed_alike`.
#[test]
fn a_shrink_clamps_the_budget_and_errors_name_the_communicators_f() {
    let _s = serial();
    // Six of eight ranks dead before operation 0: beyond f = 5.
    let faults = FaultSchedule::none().kill_group(1..=6, 0);
    fn go_on(comm: &mut impl Collectives) -> (Result<(), Error>, u32, Result<u64, Error>) {
        let mine = input(comm.rank());
        let mut out = 0u64;
        let first = comm.all_reduce_into(&mine, &mut out, SystemOperation::sum());
        // The dead ranks' calls fail; the survivors' shrink.
        let after = comm.shrink().and_then(|_| {
            comm.all_reduce_into(&mine, &mut out, SystemOperation::sum())
                .map(|()| out)
        });
        (first, comm.fault_budget(), after)
    }
    let tree = AllreduceAlgorithm::Tree;
    let report = team_with(8, 5, faults, Duration::from_secs(5), tree).run(|comm| go_on(comm));
    for (r, (first, f, after)) in report.returned().filter(|&(r, _)| r == 0 || r == 7) {
        match first {
            Err(Error::TooManyFailures { f, failed, .. }) => {
                assert_eq!((*f, failed.len()), (5, 6), "rank {r}")
            }
            other => panic!("rank {r}: {other:?}"),
        }
        assert_eq!(*f, 1, "rank {r}: f clamped to the two survivors less one");
        // Each survivor adds the input it had before the shrink.
        assert_eq!(*after, Ok(input(0) + input(7)), "rank {r}");
    }
}

/// A broadcast whose correction does not guarantee delivery (none, or
/// opportunistic with d = 1 on the in-order binomial tree, where a dead
/// inner rank leaves one long gap: Corrected Trees Section 3.3) ends on
/// every live rank it misses with `NotReached`, naming the nearest dead
/// rank on its path from the root, within a failure timeout, not the
/// operation timeout (an hour, beyond the hang guard). The ranks missed
/// are exactly those the paper's rule says: not colored by the tree (a
/// dead ancestor) and no tree-colored live rank within distance d on the
/// ring. Every other live rank delivers, and the team goes on.
#[test]
fn a_broadcast_that_cannot_reach_a_rank_says_so_within_a_failure_timeout() {
    use corrected::protocol::bcast::Correction;
    use corrected::topology::Tree;
    use corrected::types::LogP;
    let _s = serial();
    let (procs, dead) = (16u32, [1u32, 10]);
    let spec = TreeSpec::binomial().in_order();
    let tree = Tree::build(spec, procs, LogP::PAPER).unwrap();
    let ancestors = |r: Rank| std::iter::successors(tree.parent(r), |&a| tree.parent(a));
    let live = |r: Rank| !dead.contains(&r);
    let by_tree = |r: Rank| live(r) && ancestors(r).all(live);
    for (correction, d) in [
        (Correction::None, 0),
        (Correction::Opportunistic { distance: 1 }, 1),
    ] {
        let near = |r: Rank, s: Rank| {
            let gap = (r + procs - s) % procs;
            gap.min(procs - gap) <= d
        };
        let missed: Vec<Rank> = (0..procs)
            .filter(|&r| live(r) && !by_tree(r))
            .filter(|&r| !(0..procs).any(|s| s != r && by_tree(s) && near(r, s)))
            .collect();
        assert!(!missed.is_empty(), "{correction:?}: the case misses ranks");
        let faults = FaultSchedule::none().kill_group(dead, 0);
        let report = within_the_hang_guard(move || {
            Team::builder()
                .ranks(procs)
                .tree(spec)
                .correction(correction)
                .faults(faults)
                .failure_timeout(Duration::from_millis(500))
                .op_timeout(Duration::from_secs(3600))
                .build()
                .unwrap()
                .run(|comm| {
                    let mut v = if comm.rank() == 0 { 7u64 } else { 0 };
                    let first = comm.broadcast_into(0, &mut v).map(|()| v);
                    let mut sum = 0u64;
                    let next = comm.all_reduce_into(&1u64, &mut sum, SystemOperation::sum());
                    (first, next.map(|()| sum))
                })
        });
        for (r, (first, next)) in report.returned().filter(|&(r, _)| live(r)) {
            if missed.contains(&r) {
                let Err(Error::NotReached {
                    op: 0,
                    root: 0,
                    cut_by,
                }) = first
                else {
                    panic!("{correction:?}: rank {r} got {first:?}");
                };
                let nearest = ancestors(r).find(|a| !live(*a));
                assert_eq!(Some(*cut_by), nearest, "{correction:?}: rank {r}");
            } else {
                assert_eq!(*first, Ok(7), "{correction:?}: rank {r}");
            }
            assert_eq!(*next, Ok(14), "{correction:?}: rank {r}: the team goes on");
        }
    }
}
