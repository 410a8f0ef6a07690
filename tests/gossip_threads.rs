//! Corrected gossip on threads (Hoefler et al., IPDPS 2017), driven by the
//! one driver through the slot clock: delivery under dead ranks (CCG,
//! Claim 3; FCG, Corollary 3), all or none under deaths during the
//! operation (FCG, Claim 4), no duplicate or stale delivery across
//! operations (Claim 1), the gossip phase bounded by T and as the model
//! expects it (Lemma 1), and a rank no message reaches getting a typed
//! error instead of hanging.

mod common;

use corrected::Collectives;
use std::time::{Duration, Instant};

use common::{broadcast_once, broadcast_team, serial, value};
use corrected::protocol::gossip::{CorrectionChoice, GossipSpec, GossipTime};
use corrected::runtime::{BroadcastAlgorithm, Fault, FaultSchedule, Team};
use corrected::types::Rank;
use corrected::Error;

fn gossip(time: GossipTime, correction: CorrectionChoice) -> BroadcastAlgorithm {
    BroadcastAlgorithm::Gossip(GossipSpec {
        time,
        correction,
        ..GossipSpec::default()
    })
}

fn team(ranks: u32, algorithm: BroadcastAlgorithm, faults: FaultSchedule, seed: u64) -> Team {
    broadcast_team(ranks, algorithm, faults)
        .seed(seed)
        .build()
        .unwrap()
}

/// `ops` broadcasts from rotating roots (skipping dead ones); per rank,
/// what each call returned.
fn broadcasts(team: &Team, ops: u32, dead: &[Rank]) -> Vec<Vec<Result<u64, Error>>> {
    let roots: Vec<Rank> = (0..team.ranks()).filter(|r| !dead.contains(r)).collect();
    common::broadcasts(team, ops, &roots)
        .outcomes
        .into_iter()
        .map(|o| o.returned().cloned().expect("no rank panics"))
        .collect()
}

/// CCG reaches every live rank whatever T and the dead set (Claim 3), and
/// FCG too (Corollary 3: any failures before the operation): T = 0 (only
/// the root gossips: the correction does everything), a small T, and T
/// from Eq. 4 / Eq. 5; dead sets up to a third of the team; and every
/// operation delivers exactly its own value, once (Claim 1: a late
/// correction message of operation k is never taken for operation k + 1).
#[test]
fn ccg_and_fcg_reach_every_live_rank_on_threads() {
    let _serial = serial();
    for correction in [
        CorrectionChoice::Checked,
        CorrectionChoice::FailureProof(1),
        CorrectionChoice::FailureProof(2),
    ] {
        reach_every_live_rank(correction);
    }
}

fn reach_every_live_rank(correction: CorrectionChoice) {
    for (procs, dead) in [
        (2, vec![]),
        (3, vec![1]),
        (8, vec![]),
        (8, vec![3, 4, 5]),
        (16, vec![1, 2, 9]),
        (33, vec![5, 6, 7, 8, 20]),
    ] {
        for time in [GossipTime::Ticks(0), GossipTime::Ticks(3), GossipTime::Auto] {
            let faults = FaultSchedule::none().kill_group(dead.iter().copied(), 0);
            let team = team(procs, gossip(time, correction), faults, 7);
            let ops = 12;
            let roots = (0..procs).filter(|r| !dead.contains(r)).collect::<Vec<_>>();
            for (rank, results) in broadcasts(&team, ops, &dead).iter().enumerate() {
                let rank = rank as Rank;
                for (i, got) in results.iter().enumerate() {
                    if dead.contains(&rank) {
                        assert!(got.is_err(), "dead rank {rank} delivered");
                        continue;
                    }
                    let root = roots[i % roots.len()];
                    assert_eq!(
                        got.as_ref().ok(),
                        Some(&value(root, i as u32)),
                        "{correction}: P={procs} dead={dead:?} T={time} rank {rank} op {i}"
                    );
                }
            }
        }
    }
}

/// The gossip phase ends at T on threads too: with no correction (GOS), a
/// g-node colored at logical time t sends T - t messages, so the whole
/// operation sends at most T per rank and at least the root's T; and the
/// messages a fault-free CCG operation sends stay below the T gossip
/// messages per rank plus a ring's worth of correction per rank.
#[test]
fn the_gossip_phase_is_bounded_by_t_on_threads() {
    let _serial = serial();
    let (procs, t) = (16u32, 6u64);
    for (correction, most) in [
        (CorrectionChoice::None, u64::from(procs) * t),
        (
            CorrectionChoice::Checked,
            u64::from(procs) * (t + u64::from(procs)),
        ),
    ] {
        let algorithm = gossip(GossipTime::Ticks(t), correction);
        let team = broadcast_team(procs, algorithm, FaultSchedule::none())
            .op_timeout(Duration::from_millis(300))
            .build()
            .unwrap();
        let report = broadcast_once(&team, 42);
        let sent = report.ops[0].messages;
        assert!(
            (t..=most).contains(&sent),
            "{correction}: {sent} messages, expected {t}..={most}"
        );
        if correction == CorrectionChoice::Checked {
            assert!(report.returned().all(|(_, got)| got == &Ok(42)));
        }
    }
}

/// A rank that no gossip message reaches (GOS with T = 1: the root sends
/// in its first slot only, and the rank it reaches is colored too late to
/// gossip) does not hang: it gets a typed error after the operation
/// timeout, while the root returns at once.
#[test]
fn an_unreached_rank_gets_a_timeout_not_a_hang() {
    let _serial = serial();
    let timeout = Duration::from_millis(200);
    let gos = gossip(GossipTime::Ticks(1), CorrectionChoice::None);
    let team = broadcast_team(4, gos, FaultSchedule::none())
        .op_timeout(timeout)
        .build()
        .unwrap();
    let started = Instant::now();
    let report = broadcast_once(&team, 5);
    let mut unreached = 0;
    for (rank, got) in report.returned() {
        match (rank, got) {
            (0, got) => assert_eq!(got, &Ok(5)),
            (_, Ok(v)) => assert_eq!(*v, 5, "rank {rank}"),
            (_, Err(Error::Timeout { .. })) => unreached += 1,
            (_, got) => panic!("rank {rank}: {got:?}"),
        }
    }
    assert!(
        started.elapsed() < timeout * 20,
        "took {:?}",
        started.elapsed()
    );
    // T = 1: the root gossips once, and GOS does not correct.
    assert_eq!(report.ops[0].messages, 1);
    assert_eq!(unreached, 2);
}

/// OCG whose correction time covers the ring reaches everyone even when
/// only the root gossips (T = 0): the root alone sweeps C/O ranks.
#[test]
fn ocg_with_a_ring_long_correction_reaches_everyone() {
    let _serial = serial();
    let procs = 12;
    let correction = CorrectionChoice::Opportunistic(Some(u64::from(procs) + 4));
    let team = team(
        procs,
        gossip(GossipTime::Ticks(0), correction),
        FaultSchedule::none(),
        3,
    );
    for results in broadcasts(&team, 6, &[]) {
        for (i, got) in results.iter().enumerate() {
            let root = i as Rank % procs;
            assert_eq!(got.as_ref().ok(), Some(&value(root, i as u32)));
        }
    }
}

/// The gossip phase on threads is the model's: with GOS (no correction,
/// so every message is a gossip message), the mean number of messages per
/// operation is near the expected number of send slots of colored nodes
/// before T, Lemma 1's sum of c(t) over t < T (o = 1), over 300
/// operations. At P = 8 on 2 cores it is the model's within 5 % (measured
/// within 0.5 %); at P = 32 a rank is more often colored late in logical
/// time (a message with an earlier logical arrival comes after it already
/// gossiped, from a sender the scheduler ran later), which costs it slots:
/// measured 7 % below the model, asserted within 15 %. Messages taken at
/// once instead of at their logical arrival give 69 % and 60 % of the
/// model (measured): this test fails on that clock.
#[test]
fn gossip_on_threads_sends_what_lemma_1_expects() {
    use corrected::protocol::gossip::GossipModel;
    use corrected::types::LogP;
    let _serial = serial();
    for (procs, t, below) in [(8u32, 8u64, 0.95), (32, 12, 0.85)] {
        let ops = 300u32;
        let gos = gossip(GossipTime::Ticks(t), CorrectionChoice::None);
        let team = broadcast_team(procs, gos, FaultSchedule::none())
            .seed(11)
            .op_timeout(Duration::from_millis(10))
            .failure_timeout(Duration::from_millis(10))
            .build()
            .unwrap();
        let report = team.run(|comm| {
            for i in 0..ops {
                let mut v = if comm.rank() == 0 { u64::from(i) } else { 0 };
                // Unreached ranks time out: GOS is weakly consistent.
                if let Ok(()) = comm.broadcast_into(0, &mut v) {
                    assert_eq!(v, u64::from(i), "a stale or foreign value");
                }
            }
        });
        assert_eq!(report.ops.len(), ops as usize);
        let measured = report.ops.iter().map(|o| o.messages).sum::<u64>() as f64 / f64::from(ops);
        let model = GossipModel::new(procs, procs, LogP::PAPER).unwrap();
        let expected: f64 = model.expected_colored(t)[..t as usize].iter().sum();
        assert!(
            measured >= below * expected && measured <= 1.02 * expected,
            "P = {procs}, T = {t}: {measured:.2} messages per operation, Lemma 1 expects {expected:.2}"
        );
    }
}

/// FCG on threads (Claim 4): with up to f ranks dying during the
/// operation, at any of their sends, every live rank delivers or none does,
/// and all do if the root lives; every call returns. Sampled: victims the
/// root and others, dying after 0 to 11 sends (for f = 2, pairs). T = 0 (the
/// root is the only g-node, so a dead root leaves the c-nodes to SOS) and T
/// from Eq. 5. The c-nodes' SOS timeout is a quarter of the failure
/// timeout, so their SOS reaches the ranks nothing reached before these
/// give up on the failed root.
#[test]
fn fcg_is_all_or_none_under_deaths_during_the_operation() {
    let _serial = serial();
    let procs = 12;
    let mut cases: Vec<(u8, Vec<(Rank, u32)>)> = Vec::new();
    for victim in [0, 3, 7] {
        for sends in [0, 1, 2, 4, 7, 11] {
            cases.push((1, vec![(victim, sends)]));
        }
    }
    for (a, b) in [(0, 5), (2, 3), (6, 11)] {
        for sends in [1, 3, 6] {
            cases.push((2, vec![(a, sends), (b, sends + 1)]));
        }
    }
    let mut all = 0;
    for time in [GossipTime::Ticks(0), GossipTime::Auto] {
        for (f, victims) in &cases {
            let faults = victims.iter().fold(FaultSchedule::none(), |s, &(r, n)| {
                s.at(r, 0, Fault::DieAfterSends(n))
            });
            let team = Team::builder()
                .ranks(procs)
                .broadcast(gossip(time, CorrectionChoice::FailureProof(*f)))
                .faults(faults)
                .seed(5)
                .failure_timeout(Duration::from_millis(200))
                .op_timeout(Duration::from_secs(5))
                .build()
                .unwrap();
            let report = broadcast_once(&team, 77);
            let live: Vec<_> = report
                .returned()
                .filter(|(r, _)| !report.failed.contains(r))
                .collect();
            let delivered = live.iter().filter(|(_, got)| **got == Ok(77)).count();
            let root_lives = !report.failed.contains(&0);
            let case = format!("f={f} T={time} victims {victims:?}: {live:?}");
            assert!(
                delivered == 0 || delivered == live.len(),
                "not all or none: {case}"
            );
            assert!(
                !root_lives || delivered == live.len(),
                "root alive, not all: {case}"
            );
            all += usize::from(delivered == live.len());
        }
    }
    // Most cases deliver: a root dying after its first sends has colored
    // someone, whose SOS then reaches everyone.
    assert!(
        all > cases.len(),
        "{all} of {} cases delivered",
        2 * cases.len()
    );
}

/// BIG on threads (the Corrected Gossip paper's binomial graph baseline,
/// Section IV-B.3): fault-free every rank sends to its ⌈log2 P⌉ neighbours
/// once, exactly P ⌈log2 P⌉ messages; with fewer than ⌈log2 P⌉ ranks dead
/// every live rank is reached (every single dead rank, and a sample of
/// pairs and triples, at P = 16).
#[test]
fn big_reaches_every_live_rank_below_log2_p_dead() {
    let _serial = serial();
    let procs = 16u32;
    let mut dead_sets: Vec<Vec<Rank>> = vec![vec![]];
    dead_sets.extend((1..procs).map(|r| vec![r]));
    dead_sets.extend((1..procs).map(|r| vec![r, (r * 7) % (procs - 1) + 1]));
    dead_sets.extend((1..procs).map(|r| vec![r, r % 15 + 1, (r + 5) % 15 + 1]));
    for dead in dead_sets {
        let mut dead = dead;
        dead.sort_unstable();
        dead.dedup();
        let faults = FaultSchedule::none().kill_group(dead.iter().copied(), 0);
        let team = team(procs, BroadcastAlgorithm::Big, faults, 0);
        let report = team.run(|comm| {
            let mut v = if comm.rank() == 0 { 99u64 } else { 0 };
            comm.broadcast_into(0, &mut v).map(|()| v)
        });
        for (rank, got) in report.returned() {
            if !dead.contains(&rank) {
                assert_eq!(got, &Ok(99), "dead {dead:?}: rank {rank}");
            }
        }
        let live = u64::from(procs) - dead.len() as u64;
        assert_eq!(report.ops[0].messages, live * 4, "dead {dead:?}");
    }
}
