//! Helpers shared by the tests: fault sets and kill points for the
//! exhaustive simulator tests; teams, values and loops of broadcasts for
//! the broadcast algorithms on threads.

// Each test file uses its own share of these.
#![allow(dead_code)]

use corrected::Collectives;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use corrected::runtime::{BroadcastAlgorithm, FaultSchedule, Team, TeamBuilder, TeamReport};
use corrected::sim::engine::{NEVER, UNLIMITED};
use corrected::topology::Tree;
use corrected::types::{LogP, Rank, Tick};
use corrected::Error;

/// Teams of up to 33 threads: one test at a time on this 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the test binary's one team at a time.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A team of `ranks` broadcasting with `algorithm` under `faults`, with a
/// 20 s operation timeout and operation records on; the caller adds the
/// rest and builds.
pub fn broadcast_team(
    ranks: u32,
    algorithm: BroadcastAlgorithm,
    faults: FaultSchedule,
) -> TeamBuilder {
    Team::builder()
        .ranks(ranks)
        .broadcast(algorithm)
        .faults(faults)
        .op_timeout(Duration::from_secs(20))
        .op_records(true)
}

/// The value of operation `i` from `root`: every operation's differs.
pub fn value(root: Rank, i: u32) -> u64 {
    0x5eed_0000_0000_0000 | (u64::from(root) << 24) | u64::from(i)
}

/// `ops` broadcasts from roots rotating over `roots`, each sending
/// [`value`]; per rank, what each call returned.
pub fn broadcasts(team: &Team, ops: u32, roots: &[Rank]) -> TeamReport<Vec<Result<u64, Error>>> {
    team.run(|comm| {
        (0..ops)
            .map(|i| {
                let root = roots[i as usize % roots.len()];
                let mut v = if comm.rank() == root {
                    value(root, i)
                } else {
                    0
                };
                comm.broadcast_into(root, &mut v).map(|()| v)
            })
            .collect()
    })
}

/// Every subset of `0..procs` with at most `f` members.
pub fn subsets(procs: u32, f: u32) -> Vec<Vec<Rank>> {
    let mut out = vec![vec![]];
    for r in 0..procs {
        let more: Vec<_> = out
            .iter()
            .filter(|s| (s.len() as u32) < f)
            .map(|s| {
                let mut t = s.clone();
                t.push(r);
                t
            })
            .collect();
        out.extend(more);
    }
    out
}

/// Calls `run(points, budget)` for every combination of kill points of the
/// ranks in `set`: member k dies right after its `points[k]`-th send, for
/// `points[k]` in `0..=sends[set[k]]` stepped by `stride` (0: before the
/// operation). `budget` is the engine's per-rank send budget for `procs`.
pub fn for_each_kill_point(
    procs: u32,
    set: &[Rank],
    sends: &[u32],
    stride: u32,
    mut run: impl FnMut(&[u32], &[u32]),
) {
    let mut points = vec![0u32; set.len()];
    loop {
        let mut budget = vec![UNLIMITED; procs as usize];
        for (k, &r) in set.iter().enumerate() {
            budget[r as usize] = points[k];
        }
        run(&points, &budget);
        // Odometer: advance the first member that has points left.
        let mut k = 0;
        while k < set.len() {
            points[k] += stride;
            if points[k] <= sends[set[k] as usize] {
                break;
            }
            points[k] = 0;
            k += 1;
        }
        if k == set.len() {
            return;
        }
    }
}

/// When the last ACK is received, computed apart from the engine: node c,
/// colored at t_c with k_c children, sends its k_c DATA and then its ACK
/// (Figure 2), which arrives o + L after the send starts; a parent
/// receives its children's ACKs one at a time, o each, in arrival order.
pub fn one_ack_wave(tree: &Tree, logp: LogP) -> Tick {
    let at = tree.coloring_times(logp);
    let o = logp.overhead;
    let mut last = 0;
    for p in 0..tree.procs() {
        let mut arrivals: Vec<Tick> = tree
            .children(p)
            .iter()
            .map(|&c| at[c as usize] + tree.children(c).len() as Tick * o + o + logp.latency)
            .collect();
        arrivals.sort_unstable();
        let mut recv = at[p as usize];
        for a in arrivals {
            recv = recv.max(a) + o;
        }
        last = last.max(recv);
    }
    last
}

/// Calls `run(death, what)` for every non-root rank of `procs` dying at
/// every tick of `ticks` (one death per run).
pub fn for_each_death_time(
    procs: u32,
    ticks: std::ops::RangeInclusive<Tick>,
    mut run: impl FnMut(&[Tick], String),
) {
    for victim in 1..procs {
        for t in ticks.clone() {
            let mut death = vec![NEVER; procs as usize];
            death[victim as usize] = t;
            run(&death, format!("{victim} dies at {t}"));
        }
    }
}

/// Calls `run(budget, what)` for every non-root rank of `procs` but those
/// in `spare` dying right after each of its `sends` (one death per run:
/// the engine's send budgets, rank r dies after send 1..=sends[r]).
pub fn for_each_send_death(
    procs: u32,
    sends: &[u32],
    spare: &[Rank],
    mut run: impl FnMut(&[u32], String),
) {
    for victim in (1..procs).filter(|v| !spare.contains(v)) {
        for n in 1..=sends[victim as usize] {
            let mut budget = vec![UNLIMITED; procs as usize];
            budget[victim as usize] = n;
            run(&budget, format!("{victim} dies after send {n}"));
        }
    }
}

/// FTCO found the hung rank by a timeout and suspected no live rank
/// ([`TeamReport::false_suspicions`]); the timeouts by operation otherwise.
pub fn only_the_hung_rank_was_suspected<R>(report: &TeamReport<R>) {
    assert!(report.timeouts > 0, "the hang was not found by a timeout");
    assert_eq!(
        report.false_suspicions,
        0,
        "{} timeouts, by operation: {:?}",
        report.timeouts,
        report.ops.iter().map(|o| o.timeouts).collect::<Vec<_>>()
    );
}
