//! What `corrected run` checks: every live rank's result of every
//! operation against the faults asked for, sorted into delivered, expected
//! misses and violations.

use std::collections::BTreeMap;

use corrected::runtime::{RankOutcome, TeamReport};
use corrected::sim::engine::NEVER;
use corrected::sim::reduce::includes_exactly;
use corrected::types::{Rank, Tick};
use corrected::Error;

use super::RunArgs;
use crate::bcast::Delivery;
use crate::op::Op;

pub(super) fn expected(i: u32) -> u64 {
    0x5eed_0000_0000 + i as u64
}

/// One operation on one rank: the value it produced (`None` where the
/// collective gives none, e.g. a reduce's non-roots or a barrier).
pub(super) type Got = Result<Option<u64>, Error>;

/// How a rank stands in one operation, by the faults asked for and what
/// the run found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Alive throughout.
    Live,
    /// Failed during the operation (or at a time the run cannot tell).
    During,
    /// Failed (or hung) before the operation began.
    Before,
}

/// The faults of a run as they happened: what was asked for, and which
/// ranks the run reports failed.
struct Faults<'a> {
    args: &'a RunArgs,
    failed: &'a [Rank],
}

impl Faults<'_> {
    /// The first operation a `--panic` rank no longer calls.
    fn panics_at(&self) -> u32 {
        self.args.iters / 2
    }

    /// Whether `rank`'s `--kill-after-sends` fired (it is reported failed).
    fn fired(&self, rank: Rank) -> bool {
        self.failed.contains(&rank)
    }

    /// How `rank` stands in operation `op`. A `--panic` rank panics between
    /// two operations, while slower ranks may still be in the earlier one:
    /// that one counts as a failure during the operation.
    fn state(&self, rank: Rank, op: u32) -> State {
        let args = self.args;
        if args.kill.contains(&rank) || args.hang.contains(&rank) {
            return State::Before;
        }
        if args.panic.contains(&rank) {
            let at = self.panics_at();
            return if op >= at {
                State::Before
            } else if op + 1 == at {
                State::During
            } else {
                State::Live
            };
        }
        if args.kill_after_sends.iter().any(|&(r, _)| r == rank) {
            return match (self.fired(rank), op) {
                (false, _) => State::Live,
                (true, 0) => State::During,
                (true, _) => State::Before,
            };
        }
        if self.failed.contains(&rank) {
            // Declared failed by the detector, at a time the run cannot tell.
            return State::During;
        }
        State::Live
    }

    /// Every rank that may not be live in some operation: the ranks of the
    /// fault lists and those the run reports failed.
    fn suspects(&self) -> Vec<Rank> {
        let args = self.args;
        let mut ranks: Vec<Rank> = args
            .kill
            .iter()
            .chain(&args.hang)
            .chain(&args.panic)
            .chain(args.kill_after_sends.iter().map(|(r, _)| r))
            .chain(self.failed)
            .copied()
            .collect();
        ranks.sort_unstable();
        ranks.dedup();
        ranks
    }

    /// Per rank, when it failed in operation `op` in the sense of the
    /// inclusion check (`NEVER`: live, 0: before it, 1: during it).
    fn deaths(&self, ranks: u32, op: u32, into: &mut Vec<Tick>) {
        into.clear();
        into.extend((0..ranks).map(|r| match self.state(r, op) {
            State::Live => NEVER,
            State::During => 1,
            State::Before => 0,
        }));
    }
}

/// A short name of an error's kind, for the breakdown of missing results.
fn kind(e: &Error) -> &'static str {
    match e {
        Error::Failed(_) => "failed",
        Error::Hung(_) => "hung",
        Error::Mismatch { .. } => "mismatch",
        Error::RootFailed { .. } => "root_failed",
        Error::NotReached { .. } => "not_reached",
        Error::Timeout { .. } => "timeout",
        Error::TooManyFailures { .. } => "too_many_failures",
        _ => "other",
    }
}

/// What the results of a run add up to.
#[derive(Debug, Default)]
pub(super) struct Tally {
    /// Results on live ranks that are right.
    pub(super) delivered: u64,
    /// Results on live ranks that are errors.
    pub(super) missing: u64,
    /// Results on live ranks that are wrong values.
    pub(super) wrong: u64,
    /// Missing or wrong results the algorithm does not promise: the root
    /// failed, a correction without a delivery guarantee met a fault, a rank
    /// failed during the operation, more than f ranks failed.
    pub(super) expected_misses: u64,
    /// Missing or wrong results where a guarantee holds.
    pub(super) violations: u64,
    /// Operations whose root had failed (rooted collectives).
    pub(super) root_failed: u64,
    /// Missing results by error kind.
    pub(super) errors: BTreeMap<&'static str, u64>,
    /// Every live rank's value holds every live input once, and all agree.
    pub(super) consistent: bool,
    /// By operation: the share of live ranks' results that are right (1
    /// where no live rank reported).
    pub(super) consistency: Vec<f64>,
}

/// Goes through every live rank's results and sorts them into delivered,
/// expected misses and violations.
pub(super) fn tally(
    args: &RunArgs,
    op: Op,
    bcast: Delivery,
    f: u32,
    report: &TeamReport<Vec<Got>>,
) -> Tally {
    let ranks = report.outcomes.len() as u32;
    let faults = Faults {
        args,
        failed: &report.failed,
    };
    let live: Vec<&Vec<Got>> = report
        .outcomes
        .iter()
        .enumerate()
        .filter(|&(r, _)| {
            let r = r as Rank;
            !report.failed.contains(&r) && !report.hung.contains(&r)
        })
        .filter_map(|(_, o)| match o {
            RankOutcome::Returned(got) => Some(got),
            RankOutcome::Panicked(_) => None,
        })
        .collect();
    let mut t = Tally {
        consistent: true,
        ..Tally::default()
    };
    let suspects = faults.suspects();
    let mut deaths = Vec::with_capacity(ranks as usize);
    for i in 0..args.iters {
        let states = suspects.iter().map(|&r| faults.state(r, i));
        let faulty = states.clone().filter(|&s| s != State::Live).count() as u32;
        let during = states.clone().any(|s| s == State::During);
        let results = live.iter().filter_map(|got| got.get(i as usize));
        // The root failed before the operation, or during it and some rank
        // saw it (a root that fails after sending everything loses nothing).
        let root_failed = op.rooted()
            && match faults.state(args.root, i) {
                State::Live => false,
                State::Before => true,
                State::During => results
                    .clone()
                    .any(|g| matches!(g, Err(Error::RootFailed { .. }))),
            };
        t.root_failed += u64::from(root_failed);
        // Reduce, allreduce and barrier survive f failures, no more.
        let over_budget = op != Op::Bcast && faulty > f;
        // Why this operation may lose results without breaking a guarantee.
        let excused = root_failed
            || over_budget
            || (op == Op::Bcast
                && (!bcast.always
                    || (faulty > 0
                        && ((during && !bcast.despite_deaths_during)
                            || !bcast.despite_dead_ranks))));
        let mut agreed: Option<(u64, bool)> = None;
        let (mut right_here, mut here) = (0u32, 0u32);
        for got in results {
            here += 1;
            let ok = match got {
                Err(e) => {
                    t.missing += 1;
                    *t.errors.entry(kind(e)).or_default() += 1;
                    false
                }
                Ok(v) => {
                    let right = match v {
                        _ if op == Op::Bcast => *v == Some(expected(i)),
                        Some(v) => {
                            let (first, includes) = *agreed.get_or_insert_with(|| {
                                faults.deaths(ranks, i, &mut deaths);
                                (*v, includes_exactly(*v, &deaths))
                            });
                            first == *v && includes
                        }
                        None => true,
                    };
                    if !right {
                        t.wrong += 1;
                        t.consistent = false;
                    }
                    right
                }
            };
            if ok {
                right_here += 1;
                t.delivered += 1;
            } else if excused && (got.is_err() || over_budget) {
                t.expected_misses += 1;
            } else {
                t.violations += 1;
            }
        }
        t.consistency.push(if here == 0 {
            1.0
        } else {
            f64::from(right_here) / f64::from(here)
        });
    }
    t
}
