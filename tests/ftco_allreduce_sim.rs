//! FTCO reduce and allreduce (*Tree-based Fault-Tolerant Collective
//! Operations*, Sections 3-4, Algorithms 1-4, Appendices A and D) in the
//! LogP simulator, L = 2, o = 1 unless said. Every result is a [`Tally`]:
//! it shows how many times each rank is counted, so a live rank left out
//! or any rank counted twice fails Definition 3.2 exactly (P <= 32).
//!
//! * fault-free: latency and completion exactly the plain tree's plus the
//!   ACK scheme's, messages exactly 2(P - 1) (reduce) and 4(P - 1)
//!   (allreduce);
//! * every dead set of up to 3 non-root nodes before the operation, every
//!   single death after each send, a dead node plus a death after each
//!   send, a death at every tick, and 1-6 failures at random times: the
//!   operation ends and Definition 3.2 holds;
//! * a timeout below the network's round trip: live nodes are suspected,
//!   the result is still one value counting no node twice, and a live node
//!   is left out only if some node suspected it.

mod common;

use common::{dead_from_start, for_each_death_time, for_each_send_death, one_ack_wave, subsets};
use corrected::protocol::Tag;
use corrected::sim::{CollectiveRun, FaultPlan, FtcoReduceScenario, FtcoReduceSim, Tally, NEVER};
use corrected::topology::{Shape, Tree, TreeSpec};
use corrected::types::{Collective, LogP, Rank, Tick};

const BINOMIAL: TreeSpec = TreeSpec::interleaved(Shape::Binomial);
const BINARY: TreeSpec = TreeSpec::interleaved(Shape::KAry(2));
const QUAD: TreeSpec = TreeSpec::interleaved(Shape::KAry(4));
/// FTCO's own tree (Section 5.2.1).
const KNOMIAL: TreeSpec = TreeSpec::interleaved(Shape::KNomial(3));
/// The trees the exhaustive tests sweep.
const FOUR_TREES: [TreeSpec; 4] = [BINOMIAL, BINARY, QUAD, KNOMIAL];
const KINDS: [Collective; 2] = [Collective::Reduce, Collective::Allreduce];

fn paper() -> LogP {
    LogP::new(2, 1).unwrap()
}

fn scenario(
    kind: Collective,
    spec: TreeSpec,
    procs: u32,
    timeout: Option<Tick>,
) -> FtcoReduceScenario {
    FtcoReduceScenario::new(kind, spec, procs, paper(), timeout, FaultPlan::none()).unwrap()
}

/// A fault-free scenario on `logp`, default timeout.
fn fault_free(kind: Collective, spec: TreeSpec, procs: u32, logp: LogP) -> FtcoReduceScenario {
    FtcoReduceScenario::new(kind, spec, procs, logp, None, FaultPlan::none()).unwrap()
}

/// The plain tree's reduce, computed apart from the engine: a node sends
/// its value up once it has received every child's (leaves at 0), a
/// message arrives o + L after its send starts, and a node receives one
/// message at a time, o each, in arrival order. When the root has all.
fn plain_reduce_time(tree: &Tree, logp: LogP) -> Tick {
    fn done(tree: &Tree, logp: LogP, r: Rank) -> Tick {
        let mut arrivals: Vec<Tick> = tree
            .children(r)
            .iter()
            .map(|&c| done(tree, logp, c) + logp.overhead + logp.latency)
            .collect();
        arrivals.sort_unstable();
        arrivals
            .into_iter()
            .fold(0, |recv, a| recv.max(a) + logp.overhead)
    }
    done(tree, logp, 0)
}

/// Fault-free, default timeout: the reduce's result at the root exactly
/// when the plain tree's (R), its last ACK received 2o + L later; the
/// allreduce's last node has the result at R + the plain broadcast's
/// dissemination time, and the last ACK is received one ACK wave after (as
/// the FTCO broadcast's, from R) or when the root's ACK of its last child's
/// DATA, sent after its DATA down, is, whichever is later. Messages exactly: one
/// DATA up and its ACK per non-root node (2(P - 1)), and for the allreduce
/// one DATA down and its ACK more (4(P - 1)); no KEEPALIVE, no timeout.
#[test]
fn fault_free_latency_completion_and_messages() {
    for logp in [paper(), LogP::new(5, 2).unwrap()] {
        for spec in [
            BINOMIAL,
            BINARY,
            QUAD,
            TreeSpec::interleaved(Shape::Lame(2)),
        ] {
            for procs in (1..=40).chain([100, 1000]) {
                for kind in KINDS {
                    let sc = fault_free(kind, spec, procs, logp);
                    let mut sim = FtcoReduceSim::new(&sc);
                    let run = sim.run(0);
                    let tree = sc.plan().tree();
                    let what = format!("{kind} {spec} P = {procs} {logp:?}");
                    let r = plain_reduce_time(tree, logp);
                    assert_eq!(sc.plan().reduce_time(), r, "{what}");
                    let by_tag = sim.last_trace().sends_by_tag;
                    let n = u64::from(procs - 1);
                    assert_eq!(by_tag[Tag::Upward as usize], n, "{what}");
                    assert_eq!(by_tag[Tag::KeepAlive as usize], 0, "{what}");
                    if kind == Collective::Reduce {
                        assert_eq!(run.latency, r, "{what}");
                        let last_ack = if procs > 1 {
                            r + 2 * logp.overhead + logp.latency
                        } else {
                            0
                        };
                        assert_eq!(run.quiescence_latency, last_ack, "{what}");
                        assert_eq!(by_tag[Tag::Ack as usize], n, "{what}");
                        assert_eq!(run.messages, 2 * n, "{what}");
                    } else {
                        assert_eq!(run.latency, r + tree.dissemination_time(logp), "{what}");
                        // The root acknowledges its last child's DATA after
                        // its k DATA down: received at R + (k + 2)o + L.
                        let k = tree.children(0).len() as Tick;
                        let o = logp.overhead;
                        let root_ack = if procs > 1 {
                            r + (k + 2) * o + logp.latency
                        } else {
                            0
                        };
                        let last_ack = (r + one_ack_wave(tree, logp)).max(root_ack);
                        assert_eq!(run.quiescence_latency, last_ack, "{what}");
                        assert_eq!(by_tag[Tag::Tree as usize], n, "{what}");
                        assert_eq!(by_tag[Tag::Ack as usize], 2 * n, "{what}");
                        assert_eq!(run.messages, 4 * n, "{what}");
                    }
                    assert_eq!((run.timeouts, run.false_suspicions), (0, 0), "{what}");
                    assert!(run.result_consistent, "{what}: {run:?}");
                    assert_eq!(run.violations, 0, "{what}: {run:?}");
                    let all = sim.result().unwrap();
                    assert!(
                        (0..procs.min(Tally::EXACT)).all(|r| all.count(r) == 1),
                        "{what}"
                    );
                }
            }
        }
    }
}

/// Definition 3.2 for one run, without false suspicions: the run ends
/// (nobody left busy, a bounded completion), every live node delivered,
/// allreduce nodes agree, every rank that never failed is counted once,
/// every other at most once, nodes dead from the start not at all.
fn definition_3_2(
    sim: &mut FtcoReduceSim,
    death: &[Tick],
    budget: &[u32],
    what: &str,
) -> CollectiveRun {
    let run = sim.run_with(death, budget);
    assert!(run.result_consistent, "{what}: {run:?} {:?}", sim.result());
    assert_eq!(run.violations, 0, "{what}: {run:?}");
    assert!(run.quiescence_latency < 10_000, "{what}: {run:?}");
    let result = sim.result().expect("the root lives");
    assert!(result.check(&sim.last_trace().death, true), "{what}");
    run
}

/// Calls `test(sim, procs, what)` for reduce and allreduce over each of
/// `specs` and P in `procs`, default timeout.
fn each_scenario(
    specs: &[TreeSpec],
    procs: impl IntoIterator<Item = u32> + Clone,
    mut test: impl FnMut(&mut FtcoReduceSim, u32, &str),
) {
    for kind in KINDS {
        for &spec in specs {
            for p in procs.clone() {
                let sc = scenario(kind, spec, p, None);
                let mut sim = FtcoReduceSim::new(&sc);
                test(&mut sim, p, &format!("{kind} {spec} P = {p}"));
            }
        }
    }
}

/// Every dead set of 1, 2 and 3 non-root nodes before the operation (all
/// of them, none sampled), P = 2..=17, binomial, binary, 4-ary and
/// 3-nomial trees,
/// reduce and allreduce: Definition 3.2 holds, and a timeout fired
/// whenever a node was dead.
#[test]
fn every_dead_set_of_up_to_three_before_the_operation() {
    let mut runs = 0u32;
    each_scenario(&FOUR_TREES, 2..=17, |sim, procs, what| {
        for set in subsets(procs - 1, 3).into_iter().filter(|s| !s.is_empty()) {
            let dead: Vec<Rank> = set.iter().map(|r| r + 1).collect();
            let what = format!("{what} dead {dead:?}");
            let run = definition_3_2(sim, &dead_from_start(procs, &dead), &[], &what);
            assert!(run.timeouts > 0, "{what}");
            runs += 1;
        }
    });
    // Per tree and collective: the sets of 1-3 of P - 1 = 1..=16 ranks.
    let per: u32 = (1..=16u32)
        .map(|n| n + n * (n - 1) / 2 + n * (n - 1) * n.saturating_sub(2) / 6)
        .sum();
    assert_eq!(runs, 8 * per);
}

/// Sends each rank makes in a fault-free run of `sim`'s scenario.
fn fault_free_sends(sim: &mut FtcoReduceSim, procs: u32) -> Vec<u32> {
    sim.run_with(&vec![NEVER; procs as usize], &[]);
    sim.last_trace().sends_by_rank.clone()
}

/// Every non-root node dying right after each of its fault-free sends (the
/// engine's send budgets), P = 2..=17, four trees, reduce and allreduce:
/// Definition 3.2 holds (the victim in or out, counted at most once).
#[test]
fn every_single_death_after_each_send() {
    let mut runs = 0u32;
    each_scenario(&FOUR_TREES, 2..=17, |sim, procs, what| {
        let sends = fault_free_sends(sim, procs);
        let never = vec![NEVER; procs as usize];
        for_each_send_death(procs, &sends, &[], |budget, when| {
            definition_3_2(sim, &never, budget, &format!("{what}: {when}"));
            runs += 1;
        });
    });
    assert!(runs > 2000, "{runs}");
}

/// A disruption (Section 4): one node dead from the start and another
/// dying right after each of its sends, P = 3..=12, binomial and binary
/// trees, reduce and allreduce: Definition 3.2 holds; some runs needed a
/// KEEPALIVE walk.
#[test]
fn a_dead_node_and_a_death_after_each_send() {
    let mut keepalive_runs = 0u32;
    each_scenario(&[BINOMIAL, BINARY], 3..=12, |sim, procs, what| {
        for dead in 1..procs {
            let death = dead_from_start(procs, &[dead]);
            sim.run_with(&death, &[]);
            let sends = sim.last_trace().sends_by_rank.clone();
            for_each_send_death(procs, &sends, &[dead], |budget, when| {
                let what = format!("{what}: {dead} dead, {when}");
                definition_3_2(sim, &death, budget, &what);
                let by_tag = sim.last_trace().sends_by_tag;
                keepalive_runs += u32::from(by_tag[Tag::KeepAlive as usize] > 0);
            });
        }
    });
    assert!(keepalive_runs > 0);
}

/// Every non-root node dying at every tick of the fault-free run, P = 12
/// and 17, reduce and allreduce: Definition 3.2 holds.
#[test]
fn a_death_at_every_tick() {
    each_scenario(&[BINOMIAL, BINARY], [12, 17], |sim, procs, what| {
        let end = sim.run(0).quiescence_latency;
        for_each_death_time(procs, 1..=end, |death, when| {
            definition_3_2(sim, death, &[], &format!("{what}: {when}"));
        });
    });
}

/// A timeout unit of 1 tick, below the network's round trip (8 ticks for
/// L = 2, o = 1): live nodes are suspected. The guarantee that remains:
/// every live node delivers, the allreduce's nodes agree, no rank is
/// counted twice, nodes dead from the start are not counted, the run
/// ends. The one lost: a live rank may be left out, but only one that
/// some node suspected. Without a dead node, and with each single one.
#[test]
fn a_timeout_below_the_round_trip_suspects_live_nodes_and_stays_consistent() {
    let mut left_out = 0u32;
    for kind in KINDS {
        for spec in [BINOMIAL, BINARY, QUAD] {
            for procs in [9u32, 17, 32] {
                let sc = scenario(kind, spec, procs, Some(1));
                let mut sim = FtcoReduceSim::new(&sc);
                for dead in std::iter::once(None).chain((1..procs).map(Some)) {
                    let death = dead_from_start(procs, dead.as_slice());
                    let run = sim.run_with(&death, &[]);
                    let what = format!("{kind} {spec} P = {procs} dead {dead:?}");
                    assert!(run.false_suspicions > 0, "{what}: {run:?}");
                    assert_eq!(run.violations, 0, "{what}: {run:?}");
                    assert!(run.quiescence_latency < 10_000, "{what}: {run:?}");
                    let result = sim.result().unwrap();
                    assert!(result.check(&death, false), "{what}: {result:?}");
                    let suspected: Vec<Rank> = sim
                        .cores()
                        .iter()
                        .flat_map(|c| c.suspicions().map(|(r, _)| r))
                        .collect();
                    for r in (0..procs).filter(|&r| death[r as usize] == NEVER) {
                        if result.count(r) == 0 {
                            assert!(suspected.contains(&r), "{what}: {r} left out unsuspected");
                            left_out += 1;
                        }
                    }
                    if dead.is_none() {
                        assert!(
                            run.messages
                                > if kind == Collective::Reduce { 2 } else { 4 }
                                    * u64::from(procs - 1)
                        );
                    }
                }
            }
        }
    }
    // Recorded, not promised: how often the lost guarantee showed.
    println!("live ranks left out after a false suspicion: {left_out}");
}

/// Random dead sets (10 % of 256 nodes) on the 4-ary tree: every run ends
/// with a consistent result and no violation (the sum check above 32
/// ranks).
#[test]
fn random_faults_at_256() {
    for kind in KINDS {
        let sc =
            FtcoReduceScenario::new(kind, QUAD, 256, paper(), None, FaultPlan::rate(0.1)).unwrap();
        let mut sim = FtcoReduceSim::new(&sc);
        for seed in 0..30 {
            let run = sim.run(seed);
            assert_eq!(run.failed, 25, "seed {seed}");
            assert!(run.result_consistent, "{kind} seed {seed}: {run:?}");
            assert_eq!(run.violations, 0, "{kind} seed {seed}: {run:?}");
        }
    }
}

/// Bad input is a typed error: a collective FTCO reduce does not simulate,
/// a failing root, a zero timeout.
#[test]
fn bad_input_is_a_typed_error() {
    let none = FaultPlan::none;
    assert!(
        FtcoReduceScenario::new(Collective::Broadcast, BINARY, 8, paper(), None, none()).is_err()
    );
    assert!(
        FtcoReduceScenario::new(Collective::Reduce, BINARY, 8, paper(), Some(0), none()).is_err()
    );
    let dies = FaultPlan {
        die_at: vec![(0, 5)],
        ..FaultPlan::none()
    };
    assert!(
        FtcoReduceScenario::new(Collective::Allreduce, BINARY, 8, paper(), None, dies).is_err()
    );
    assert!(FtcoReduceScenario::new(Collective::Reduce, BINARY, 0, paper(), None, none()).is_err());
}

/// Several failures at once: 1 to 6 non-root nodes, each dead from the
/// start or dying at a random tick up to 40 past the fault-free run's end
/// (a fixed xorshift stream), P = 20..200, binomial, binary and 4-nomial
/// trees, reduce and allreduce, 100 runs each. With the default timeout:
/// Definition 3.2 in full (every node that never failed counted once).
/// With T = 1..4: every guarantee but the inclusion of a live node that was
/// suspected (no violation, nobody left busy, the run ends).
#[test]
fn several_failures_at_random_times() {
    let mut state: u64 = 12345;
    let mut draw = |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let specs = [BINOMIAL, BINARY, TreeSpec::interleaved(Shape::KNomial(4))];
    let configs = [
        (20u32, None),
        (64, None),
        (200, None),
        (20, Some(1)),
        (31, Some(2)),
        (100, Some(4)),
    ];
    for kind in KINDS {
        for spec in specs {
            for (procs, timeout) in configs {
                let sc = scenario(kind, spec, procs, timeout);
                let mut sim = FtcoReduceSim::new(&sc);
                let end = sim.run(0).quiescence_latency;
                for _ in 0..100 {
                    let mut death = vec![NEVER; procs as usize];
                    for _ in 0..=draw(6) {
                        let r = 1 + draw(u64::from(procs) - 1) as usize;
                        death[r] = if draw(2) == 0 { 0 } else { draw(end + 40) };
                    }
                    let what = format!("{kind} {spec} P = {procs} T = {timeout:?} {death:?}");
                    if timeout.is_none() {
                        definition_3_2(&mut sim, &death, &[], &what);
                        continue;
                    }
                    let run = sim.run_with(&death, &[]);
                    assert_eq!(run.violations, 0, "{what}: {run:?}");
                    assert!(run.quiescence_latency < 200_000, "{what}: {run:?}");
                }
            }
        }
    }
}

/// The multi-root k-nomial tree (Section 5.2.1), fault-free, K = 2..5, P =
/// 1..=40, 100, 1000, L = 2, o = 1 and L = 10, o = 1: the allreduce ends
/// when the plan's fault-free schedule says ([`FtcoPlan::allreduce_time`]:
/// each root's own tree reduced, the partials exchanged, the result down;
/// an upper bound where P = K + 1),
/// never later than on the K-nomial tree of the same K and strictly
/// earlier from P = 2K on (the clique saves the top hop); messages
/// exactly: R(R - 1) partials between the R = min(K, P) roots plus one
/// DATA up and down and two ACKs per other node, no KEEPALIVE; every rank
/// counted once. The reduce on `multiroot:K` is the K-nomial reduce.
///
/// [`FtcoPlan::allreduce_time`]: corrected::protocol::ftco::FtcoPlan::allreduce_time
#[test]
fn multiroot_fault_free_latency_and_messages() {
    for logp in [paper(), LogP::new(10, 1).unwrap()] {
        for k in 2..=5u32 {
            for procs in (1..=40).chain([100, 1000]) {
                let what = format!("multiroot:{k} P = {procs} {logp:?}");
                let multi = TreeSpec::interleaved(Shape::MultiRoot(k));
                let single = TreeSpec::interleaved(Shape::KNomial(k));
                let run_of = |kind, spec| {
                    let sc = fault_free(kind, spec, procs, logp);
                    let mut sim = FtcoReduceSim::new(&sc);
                    let run = sim.run(0);
                    let all = sim.result().unwrap();
                    let once = (0..procs.min(Tally::EXACT)).all(|r| all.count(r) == 1);
                    assert!(once && run.result_consistent, "{what} {spec}: {run:?}");
                    assert_eq!(run.violations + run.timeouts, 0, "{what} {spec}: {run:?}");
                    (
                        run,
                        sim.last_trace().sends_by_tag,
                        sc.plan().allreduce_time(),
                    )
                };
                let (run, by_tag, planned) = run_of(Collective::Allreduce, multi);
                let (knomial, _, _) = run_of(Collective::Allreduce, single);
                // The plan counts the roots' partials as root 0's children's
                // DATA on its receive port: later than the engine only where
                // root 0's one child meets them (P = K + 1).
                if procs == k + 1 {
                    assert!(run.latency <= planned, "{what}");
                } else {
                    assert_eq!(run.latency, planned, "{what}");
                }
                assert!(run.latency <= knomial.latency, "{what}");
                if procs >= 2 * k {
                    assert!(run.latency < knomial.latency, "{what}");
                }
                let r = u64::from(k.min(procs));
                let n = u64::from(procs) - r;
                assert_eq!(by_tag[Tag::Upward as usize], n + r * (r - 1), "{what}");
                assert_eq!(by_tag[Tag::Tree as usize], n, "{what}");
                assert_eq!(by_tag[Tag::Ack as usize], 2 * n, "{what}");
                assert_eq!(by_tag[Tag::KeepAlive as usize], 0, "{what}");
                let (reduce, _, _) = run_of(Collective::Reduce, multi);
                let (reduce_kn, _, _) = run_of(Collective::Reduce, single);
                assert_eq!(
                    (reduce.latency, reduce.messages),
                    (reduce_kn.latency, reduce_kn.messages),
                    "{what}"
                );
            }
        }
    }
}

/// Definition 3.2 on the multi-root tree (Section 5.2.1), whose roots
/// never fail (Section 2's assumption, for each root): every dead set of
/// 1-3 non-root nodes before the operation, and every non-root node dying
/// right after each of its fault-free sends, `multiroot:3` and
/// `multiroot:4`, P = 5..=17, reduce and allreduce. A failing root is
/// refused.
#[test]
fn multiroot_every_dead_set_of_up_to_three_and_each_send_death() {
    let specs = [
        TreeSpec::interleaved(Shape::MultiRoot(3)),
        TreeSpec::interleaved(Shape::MultiRoot(4)),
    ];
    let (mut sets, mut deaths) = (0u32, 0u32);
    each_scenario(&specs, 5..=17, |sim, procs, what| {
        let roots = match what.split_whitespace().nth(1) {
            Some("multiroot:3") => 3,
            _ => 4,
        };
        for set in subsets(procs - roots, 3)
            .into_iter()
            .filter(|s| !s.is_empty())
        {
            let dead: Vec<Rank> = set.iter().map(|r| r + roots).collect();
            let what = format!("{what} dead {dead:?}");
            let run = definition_3_2(sim, &dead_from_start(procs, &dead), &[], &what);
            assert!(run.timeouts > 0, "{what}");
            sets += 1;
        }
        let sends = fault_free_sends(sim, procs);
        let never = vec![NEVER; procs as usize];
        let spare: Vec<Rank> = (1..roots).collect();
        for_each_send_death(procs, &sends, &spare, |budget, when| {
            definition_3_2(sim, &never, budget, &format!("{what}: {when}"));
            deaths += 1;
        });
    });
    assert!(sets > 4000 && deaths > 500, "{sets} {deaths}");
    let multi = specs[0];
    for (kind, root) in [(Collective::Allreduce, 2), (Collective::Reduce, 0)] {
        let dead = FaultPlan::dead([root]);
        assert!(FtcoReduceScenario::new(kind, multi, 9, paper(), None, dead).is_err());
    }
    // A random dead set spares the roots of an allreduce.
    let rate = FaultPlan::rate(0.3);
    let sc =
        FtcoReduceScenario::new(Collective::Allreduce, multi, 40, paper(), None, rate).unwrap();
    let mut sim = FtcoReduceSim::new(&sc);
    for seed in 0..50 {
        let run = sim.run(seed);
        assert_eq!(run.failed, 12, "seed {seed}");
        assert!(sim.last_trace().death[..3].iter().all(|&d| d == NEVER));
        assert!(
            run.result_consistent && run.violations == 0,
            "seed {seed}: {run:?}"
        );
    }
}

/// Table 1's pattern (Section 5.1): "the latency with FTCO is proportional
/// to the number of serial faults: two parallel faults are approximately
/// the same as a single fault". In the allreduce on the paper's team sizes
/// P = 64, 128, 256, 384, 512, L = 10, o = 1, default timeout, on
/// `knomial:4` and `multiroot:4`: one fault is root 0's child x with the
/// largest subtree; two parallel faults are x and its next-largest sibling (disjoint subtrees: their timeouts run at once);
/// two serial faults are x and its own largest child (the second is found
/// only once the first is circumvented). The penalty is the latency less
/// the fault-free one. Table 1 has 2 parallel within 1.1 % of 1 fault and
/// 2 serial within 0.9 % of twice it, where ULFM's 2 s timeout, the same at
/// any distance, dwarfs the rest (0.5-2.4 ms fault-free). Here a timeout
/// unit T (24 ticks) is a fifth of the fault-free latency and, as Appendix
/// A sets it, the timeout grows with the distance: the second serial fault
/// is asked from two levels up and waited on for 2T, so 2 serial cost
/// twice one plus T. We allow ten times Table 1's spread: 2 parallel
/// within 10 % of 1 fault, 2 serial within 10 % of 2·(1 fault) + T.
/// Table 1's "3 mixed" (the 2 serial and x's sibling) costs what 2 serial
/// do (its largest deviation 0.5 %; here within 10 %). Measured: parallel
/// −3 % to +2 %, serial 0.97-1.02 of 2·(1 fault) + T, mixed −4 % to +3 %
/// (`docs/reproduction.md`).
#[test]
fn table_1_parallel_faults_cost_one_serial_faults_two() {
    let logp = LogP::new(10, 1).unwrap();
    for spec in [
        TreeSpec::interleaved(Shape::KNomial(4)),
        TreeSpec::interleaved(Shape::MultiRoot(4)),
    ] {
        for procs in [64u32, 128, 256, 384, 512] {
            let sc = fault_free(Collective::Allreduce, spec, procs, logp);
            let mut sim = FtcoReduceSim::new(&sc);
            let base = sim.run(0).latency;
            let plan = sc.plan();
            let tree = plan.tree();
            // Root 0's own children (not its peer roots), largest first.
            let by_size = |r: Rank| {
                let mut kids: Vec<Rank> = tree.children(r).to_vec();
                kids.retain(|&c| c >= plan.roots());
                kids.sort_by_key(|&c| std::cmp::Reverse(plan.subtree_size(c)));
                kids
            };
            let (x, sibling) = (by_size(0)[0], by_size(0)[1]);
            let child = by_size(x)[0];
            let what = format!("{spec} P = {procs}");
            let mut penalty = |dead: &[Rank]| {
                let run = definition_3_2(&mut sim, &dead_from_start(procs, dead), &[], &what);
                run.latency as f64 - base as f64
            };
            let one = penalty(&[x]);
            let parallel = penalty(&[x, sibling]);
            let serial = penalty(&[x, child]);
            let mixed = penalty(&[x, child, sibling]);
            println!(
                "{what}: fault-free {base}, 1: +{one}, 2 parallel: +{parallel}, \
                 2 serial: +{serial}, 3 mixed: +{mixed}"
            );
            assert!(one > 0.0, "{what}");
            assert!(
                (parallel / one - 1.0).abs() <= 0.1,
                "{what}: {one} {parallel}"
            );
            // The second serial fault is asked at distance 2 (Appendix A:
            // its timeout is 2T + o·children where the first's is T +
            // o·children): one fault's cost again, plus one more T.
            let t = plan.timeout() as f64;
            assert!(
                (serial / (2.0 * one + t) - 1.0).abs() <= 0.1,
                "{what}: {one} {serial}"
            );
            assert!(
                (mixed / serial - 1.0).abs() <= 0.1,
                "{what}: {serial} {mixed}"
            );
        }
    }
}
