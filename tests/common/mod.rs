//! Helpers shared by the tests: fault sets and kill points for the
//! exhaustive simulator tests; teams, values and loops of broadcasts for
//! the broadcast algorithms on threads.

// Each test file uses its own share of these.
#![allow(dead_code)]

use corrected::Collectives;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use corrected::runtime::{BroadcastAlgorithm, Fault, FaultSchedule, Team, TeamBuilder, TeamReport};
use corrected::sim::engine::{NEVER, UNLIMITED};
use corrected::sim::GossipRun;
use corrected::topology::Tree;
use corrected::types::{LogP, Rank, Tick};
use corrected::{ConfigError, Error};

/// Teams of up to 33 threads: one test at a time on this 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the test binary's one team at a time.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A team of `ranks` under `faults`, with a 20 s operation timeout and
/// operation records on; the caller adds the rest and builds.
pub fn recorded_team(ranks: u32, faults: FaultSchedule) -> TeamBuilder {
    Team::builder()
        .ranks(ranks)
        .faults(faults)
        .op_timeout(Duration::from_secs(20))
        .op_records(true)
}

/// A [`recorded_team`] broadcasting with `algorithm`.
pub fn broadcast_team(
    ranks: u32,
    algorithm: BroadcastAlgorithm,
    faults: FaultSchedule,
) -> TeamBuilder {
    recorded_team(ranks, faults).broadcast(algorithm)
}

/// One broadcast of `value` from rank 0; per rank, what the call returned.
pub fn broadcast_once(team: &Team, value: u64) -> TeamReport<Result<u64, Error>> {
    team.run(|comm| {
        let mut v = if comm.rank() == 0 { value } else { 0 };
        comm.broadcast_into(0, &mut v).map(|()| v)
    })
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

/// Every assignment of `points` to the members of `set` (a kill point
/// per victim).
pub fn assignments(set: &[Rank], points: &[u32]) -> Vec<Vec<(Rank, u32)>> {
    let mut out = vec![vec![]];
    for &r in set {
        out = out
            .into_iter()
            .flat_map(|a| {
                points.iter().map(move |&p| {
                    let mut b = a.clone();
                    b.push((r, p));
                    b
                })
            })
            .collect();
    }
    out
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

/// The death times of `procs` ranks with those in `dead` dead from the
/// start.
pub fn dead_from_start(procs: u32, dead: &[Rank]) -> Vec<Tick> {
    (0..procs)
        .map(|r| if dead.contains(&r) { 0 } else { NEVER })
        .collect()
}

/// The death times of `procs` ranks with those in `mask` dead from the
/// start: bit i kills rank i + 1, never the root.
pub fn dead_set(procs: u32, mask: u32) -> Vec<Tick> {
    (0..procs)
        .map(|r| {
            if r > 0 && mask & (1 << (r - 1)) != 0 {
                0
            } else {
                NEVER
            }
        })
        .collect()
}

/// A gossip run (`what` names it) reached every live node, no violation.
pub fn assert_every_live_node_reached(run: &GossipRun, what: &str) {
    assert_eq!(run.violations, 0, "{what}: {run:?}");
    assert_eq!(run.consistency, 1.0, "{what}: {run:?}");
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

/// Calls `run(tree, procs, dead, faults)` for dead sets fixed before the
/// operations (`faults` kills them at operation 0), sampled: inner ranks,
/// leaves, siblings, a parent with its child, at P up to 17, on the
/// binomial and kary:2 trees; one team at a time ([`serial`]).
pub fn for_each_dead_set_before(mut run: impl FnMut(&str, u32, &[Rank], FaultSchedule)) {
    let _serial = serial();
    let cases: [(u32, &[Rank]); 7] = [
        (2, &[1]),
        (5, &[1]),
        (8, &[1, 2]),
        (8, &[3, 4, 5]),
        (13, &[1, 3, 7]),
        (17, &[1, 2, 4]),
        (17, &[5, 9, 12, 16]),
    ];
    for tree in ["binomial", "kary:2"] {
        for (procs, dead) in cases {
            let faults = FaultSchedule::none().kill_group(dead.iter().copied(), 0);
            run(tree, procs, dead, faults);
        }
    }
}

/// Calls `run(procs, victim, faults, case)` for a rank killed during the
/// first operation after its n-th send, n = 0 to 3, inner ranks and a
/// leaf, at P = 12 and 17; one team at a time ([`serial`]).
pub fn for_each_death_in_the_first_operation(
    mut run: impl FnMut(u32, Rank, FaultSchedule, String),
) {
    let _serial = serial();
    for (procs, victims) in [(12u32, [1u32, 2, 11]), (17, [1, 3, 16])] {
        for victim in victims {
            for sends in 0..4 {
                let faults = FaultSchedule::none().at(victim, 0, Fault::DieAfterSends(sends));
                let case = format!("P={procs} rank {victim} dies after {sends} sends");
                run(procs, victim, faults, case);
            }
        }
    }
}

/// Calls `run(procs, tree)` for each fault-free team of `teams` (its size
/// and tree), one team at a time ([`serial`]); in the report it returns no
/// timeout fired, and the operations sent exactly `per_rank[0]`,
/// `per_rank[1]`, ... messages per non-root rank in turn (cycled).
pub fn fault_free_message_counts<R>(
    teams: &[(u32, &str)],
    per_rank: &[u64],
    mut run: impl FnMut(u32, &str) -> TeamReport<R>,
) {
    let _serial = serial();
    for &(procs, tree) in teams {
        let report = run(procs, tree);
        let case = format!("{tree} P={procs}");
        assert_eq!(report.timeouts, 0, "{case}");
        for op in &report.ops {
            let messages = per_rank[op.op as usize % per_rank.len()] * u64::from(procs - 1);
            assert_eq!(op.messages, messages, "{case} op {}", op.op);
        }
    }
}

/// Calls `run(procs, faults)`, which runs a team with a timeout far below a
/// hop's round trip, fault-free, with ranks dead before, and with one
/// dying during the operation, one team at a time ([`serial`]): in every
/// run's report no more false suspicions than timeouts, and in some a
/// live rank suspected.
pub fn short_timeouts_suspect_live_ranks<R>(
    mut run: impl FnMut(u32, FaultSchedule) -> TeamReport<R>,
) {
    let _serial = serial();
    let mut false_suspicions = 0;
    for (procs, faults) in [
        (8, FaultSchedule::none()),
        (16, FaultSchedule::none()),
        (16, FaultSchedule::none().kill_group([3, 6], 0)),
        (
            12,
            FaultSchedule::none()
                .kill(5, 0)
                .at(1, 0, Fault::DieAfterSends(1)),
        ),
    ] {
        let report = run(procs, faults);
        let case = format!("P={procs} dead {:?}", report.failed);
        assert!(report.timeouts >= report.false_suspicions, "{case}");
        false_suspicions += report.false_suspicions;
    }
    assert!(
        false_suspicions > 0,
        "the short timeout never suspected a live rank"
    );
}

/// A timeout of zero or above an hour is a typed configuration error when
/// `build` builds the team with it.
pub fn bad_timeouts_are_refused(build: impl Fn(Duration) -> Result<Team, ConfigError>) {
    for bad in [Duration::ZERO, Duration::from_secs(3601)] {
        let built = build(bad);
        assert!(
            matches!(built, Err(ConfigError::BadTimeout { .. })),
            "{bad:?}: {built:?}"
        );
    }
}

/// Rank 3, hung from the start, was reported hung and failed, and the
/// operations from `from` on fired no timeout: they routed around it.
pub fn the_hung_rank_was_remembered<R>(report: &TeamReport<R>, from: usize) {
    assert_eq!(
        (report.hung.clone(), report.failed.clone()),
        (vec![3], vec![3])
    );
    let late: Vec<u64> = report.ops[from..].iter().map(|o| o.timeouts).collect();
    assert!(
        late.iter().all(|&t| t == 0),
        "timeouts by operation: {late:?}"
    );
}

/// Rank 3 alone hung; FTCO found it by a timeout and suspected no live
/// rank ([`TeamReport::false_suspicions`]); the timeouts by operation
/// otherwise.
pub fn only_the_hung_rank_3_was_suspected<R>(report: &TeamReport<R>) {
    assert_eq!(report.hung, vec![3]);
    assert!(report.timeouts > 0, "the hang was not found by a timeout");
    assert_eq!(
        report.false_suspicions,
        0,
        "{} timeouts, by operation: {:?}",
        report.timeouts,
        report.ops.iter().map(|o| o.timeouts).collect::<Vec<_>>()
    );
}
