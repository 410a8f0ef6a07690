//! The kill matrix on threads: every victim set of up to f + 1
//! ranks, each victim killed at a point of its operation (before it, after
//! its n-th send, or at the end of its call: a kill point always fires),
//! for broadcast, reduce, allreduce and barrier, P up to 9, f = 1 and 2.
//!
//! Within the budget every live rank gets the exact result (Sections 4.1
//! and 5.1: every live input exactly once, a failed rank's everywhere or
//! nowhere; a broadcast from a live root delivers everywhere), and a
//! reduction's contributors name exactly the inputs it sums, the same on
//! every rank of an allreduce. Beyond it,
//! an allreduce or barrier ends on every live rank in the same exact result
//! or in `TooManyFailures`, and a reduce's root in the exact result or
//! `TooManyFailures`. Always: no live rank is declared failed, and no call
//! waits longer than the failure timeout plus slack (the operation timeout
//! is set far above it, so a call that waited it out fails the test).

use corrected::Collectives;
use std::time::Duration;

use corrected::protocol::allreduce::AllreduceAlgorithm;
use corrected::runtime::{Fault, FaultSchedule, Team};
use corrected::sim::engine::NEVER;
use corrected::sim::reduce::{includes_exactly, input_of};
use corrected::types::{Rank, Tick};
use corrected::{Contributors, Error};

mod common;
use common::{assignments, subsets};

const FAILURE_TIMEOUT: Duration = Duration::from_secs(1);
/// Far above what a survivor needs (a failure timeout or two): a rank that
/// waits it out gets `Error::Timeout`, which no case accepts, so every
/// live rank's outcome is prompt.
const OP_TIMEOUT: Duration = Duration::from_secs(20);

/// After the n-th send, or the end of the call (a rank sends at most a few
/// dozen messages in these teams).
const END: u32 = 1 << 20;

#[derive(Clone, Copy, Debug)]
enum Op {
    Bcast,
    Reduce,
    Allreduce,
    Barrier,
}

fn wrapping_sum(a: &u64, b: &u64) -> u64 {
    a.wrapping_add(*b)
}

/// Kill points for a victim set of `size` ranks: every one for a single
/// victim, fewer per victim as sets grow (the product stays small).
fn points(size: usize) -> &'static [u32] {
    match size {
        1 => &[0, 1, 2, 3, 4, 6, 8, END],
        2 => &[0, 1, 3, END],
        _ => &[0, 2, END],
    }
}

struct Case {
    procs: u32,
    f: u32,
    op: Op,
    /// The allreduce and barrier algorithm (either for the others).
    algorithm: AllreduceAlgorithm,
    kills: Vec<(Rank, u32)>,
}

impl Case {
    fn name(&self) -> String {
        format!(
            "P={} f={} {:?} ({}) kills {:?}",
            self.procs, self.f, self.op, self.algorithm, self.kills
        )
    }

    fn run(&self) {
        let faults = self.kills.iter().fold(FaultSchedule::none(), |s, &(r, n)| {
            s.at(r, 0, Fault::DieAfterSends(n))
        });
        let team = Team::builder()
            .ranks(self.procs)
            .fault_budget(self.f)
            .allreduce(self.algorithm)
            .faults(faults)
            .failure_timeout(FAILURE_TIMEOUT)
            .op_timeout(OP_TIMEOUT)
            .build()
            .unwrap();
        let op = self.op;
        let report = team.run(|comm| {
            let me = comm.rank();
            let mine = input_of(me);
            let mut out = 0u64;
            match op {
                Op::Bcast => {
                    out = if me == 0 { mine } else { 0 };
                    comm.broadcast_into(0, &mut out).map(|()| Some((out, None)))
                }
                Op::Reduce => comm
                    .reduce_into_contributors(0, &mine, &mut out, wrapping_sum)
                    .map(|c| c.map(|c| (out, Some(c)))),
                Op::Allreduce => comm
                    .all_reduce_into_contributors(&mine, &mut out, wrapping_sum)
                    .map(|c| Some((out, Some(c)))),
                Op::Barrier => comm.barrier().map(|()| None),
            }
        });
        let name = self.name();
        let victims: Vec<Rank> = self.kills.iter().map(|&(r, _)| r).collect();
        assert!(
            report.failed.iter().all(|r| victims.contains(r)),
            "{name}: live ranks declared failed: {:?}",
            report.failed
        );
        // Every kill point fires.
        let mut dead = report.failed.clone();
        dead.sort_unstable();
        let mut want = victims.clone();
        want.sort_unstable();
        assert_eq!(dead, want, "{name}: the victims die");
        // Dead before the operation (0), or dying in it (1): a dying rank's
        // input may be in the result, exactly once.
        let death: Vec<Tick> = (0..self.procs)
            .map(|r| match self.kills.iter().find(|&&(k, _)| k == r) {
                Some(&(_, 0)) => 0,
                Some(_) => 1,
                None => NEVER,
            })
            .collect();
        let within = victims.len() as u32 <= self.f;
        let root_dead = victims.contains(&0);
        let mut agreed: Option<Result<Option<Got>, ()>> = None;
        for (r, got) in report.returned().filter(|(r, _)| !victims.contains(r)) {
            let exact = |(v, who): &Got| {
                assert!(includes_exactly(*v, &death), "{name}: rank {r} got {v:#x}");
                if let Some(who) = who {
                    held_by(*v, who, &victims, &name);
                }
            };
            match (op, got) {
                (Op::Bcast, Ok(v)) => assert_eq!(*v, Some((input_of(0), None)), "{name}: rank {r}"),
                (Op::Bcast, Err(Error::RootFailed { root: 0, .. })) if root_dead => {}
                (Op::Reduce, Ok(None)) => assert_ne!(r, 0, "{name}"),
                (Op::Reduce, Ok(Some(v))) => exact(v),
                (Op::Reduce, Err(Error::RootFailed { root: 0, .. })) if root_dead => {}
                (Op::Reduce, Err(Error::TooManyFailures { .. })) if !within && r == 0 => {}
                (Op::Allreduce | Op::Barrier, Ok(v)) => {
                    if let Some(v) = v {
                        exact(v);
                    }
                    assert_eq!(
                        *agreed.get_or_insert(Ok(v.clone())),
                        Ok(v.clone()),
                        "{name}: rank {r} disagrees (value or contributors)"
                    );
                }
                (Op::Allreduce | Op::Barrier, Err(Error::TooManyFailures { .. })) if !within => {
                    assert_eq!(
                        *agreed.get_or_insert(Err(())),
                        Err(()),
                        "{name}: rank {r} disagrees"
                    );
                }
                (_, other) => panic!("{name}: live rank {r} got {other:?}"),
            }
        }
    }
}

/// A result and, for a reduction, its contributors.
type Got = (u64, Option<Contributors>);

/// The contributors of `value` are exactly the ranks whose inputs it sums:
/// every rank but some of the `victims`, each listed (a few failures fit
/// the list).
fn held_by(value: u64, who: &Contributors, victims: &[Rank], name: &str) {
    let missing = who.missing().expect("a few failures are listed");
    assert!(
        missing.iter().all(|r| victims.contains(r)),
        "{name}: live ranks listed missing: {missing:?}"
    );
    let ranks = who.ranks().expect("listed");
    assert_eq!(ranks.len() as u32, who.len(), "{name}");
    let sum = ranks.iter().fold(0u64, |s, &r| s.wrapping_add(input_of(r)));
    assert_eq!(
        sum, value,
        "{name}: contributors {ranks:?} do not sum to the result"
    );
}

/// Every case of `op`; allreduce and barrier once with each algorithm
/// (the tree and the star: the team's default picks one by the cores).
fn matrix(procs: u32, f: u32, op: Op) -> usize {
    let algorithms: &[AllreduceAlgorithm] = match op {
        Op::Allreduce | Op::Barrier => &[AllreduceAlgorithm::Tree, AllreduceAlgorithm::Star],
        Op::Bcast | Op::Reduce => &[AllreduceAlgorithm::Auto],
    };
    let mut runs = 0;
    for set in subsets(procs, f + 1) {
        if set.is_empty() || (matches!(op, Op::Bcast) && set.len() as u32 > f + 1) {
            continue;
        }
        for kills in assignments(&set, points(set.len())) {
            for &algorithm in algorithms {
                Case {
                    procs,
                    f,
                    op,
                    algorithm,
                    kills: kills.clone(),
                }
                .run();
                runs += 1;
            }
        }
    }
    runs
}

/// The matrix of every collective at `procs` ranks and fault budget `f`,
/// each of more than `least` runs.
fn every_collective(procs: u32, f: u32, least: usize) {
    for op in [Op::Bcast, Op::Reduce, Op::Allreduce, Op::Barrier] {
        let runs = matrix(procs, f, op);
        assert!(runs > least, "P={procs} f={f}: {runs} runs");
    }
}

#[test]
fn kill_matrix_p5_f1() {
    every_collective(5, 1, 100);
}

#[test]
fn kill_matrix_p9_f2() {
    every_collective(9, 2, 1000);
}

#[test]
fn kill_matrix_p9_f1() {
    every_collective(9, 1, 500);
}

#[test]
fn kill_matrix_small_teams() {
    // A pair (the pair exchange), and teams one group covers.
    for (procs, f) in [(2, 1), (3, 1), (3, 2), (4, 2)] {
        every_collective(procs, f, 10);
    }
}
