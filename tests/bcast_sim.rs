//! Corrected-tree broadcast in the LogP simulator: the claims of the
//! Corrected Trees paper as tests.

use corrected::protocol::bcast::{Bcast, BcastPlan, Correction};
use corrected::protocol::Protocol;
use corrected::sim::{BcastScenario, BcastSim, Engine, FaultPlan, MonteCarlo, NEVER};
use corrected::topology::{Shape, TreeSpec};
use corrected::types::{LogP, Rank, Tick};
use proptest::prelude::*;

fn scenario(
    tree: &str,
    procs: u32,
    correction: Correction,
    logp: LogP,
    faults: FaultPlan,
) -> BcastScenario {
    BcastScenario::new(tree.parse().unwrap(), procs, correction, logp, faults).unwrap()
}

const TREES: [&str; 6] = [
    "binomial",
    "lame:2",
    "kary:4",
    "optimal",
    "kary:2",
    "inorder-binomial",
];

fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

/// Lemma 2 and Corollary 1: fault-free synchronized checked correction takes
/// 4o + L + ⌈L/o⌉·o after the fault-free dissemination time, and every
/// process sends 3 + ⌈L/o⌉ correction messages. The paper writes ⌊L/o⌋; the
/// two agree whenever o divides L, as in all of the paper's settings, and the
/// authors' own simulator also gives ⌈L/o⌉ otherwise (docs/algorithms.md).
#[test]
fn lemma_2_and_corollary_1() {
    let models = [
        (2, 1),
        (1, 1),
        (3, 1),
        (5, 1),
        (4, 2),
        (6, 3),
        (2, 2),
        (3, 2),
        (5, 2),
        (1, 2),
        (7, 3),
    ];
    for (l, o) in models {
        let logp = LogP::new(l, o).unwrap();
        for tree in TREES {
            for procs in [64, 1000, 4096] {
                let sc = scenario(
                    tree,
                    procs,
                    Correction::CheckedSync,
                    logp,
                    FaultPlan::none(),
                );
                let mut sim = BcastSim::new(&sc);
                let run = sim.run(0);
                let expect = 4 * o + l + ceil_div(l, o) * o;
                assert_eq!(
                    run.correction_latency, expect as i64,
                    "{tree} P={procs} L={l} o={o}"
                );
                if l % o == 0 {
                    assert_eq!(expect, 4 * o + l + (l / o) * o, "the paper's floor form");
                    if (l, o) == (2, 1) {
                        assert_eq!(expect, 8);
                    }
                }
                let per_process = 3 + ceil_div(l, o);
                let plan = sc.plan();
                for r in 0..procs {
                    let tree_sends = plan.tree().children(r).len() as u64;
                    let sent = sim.last_trace().sends_by_rank[r as usize] as u64;
                    assert_eq!(
                        sent - tree_sends,
                        per_process,
                        "{tree} P={procs} L={l} o={o} rank {r}"
                    );
                }
                assert_eq!(run.violations, 0);
                assert_eq!(run.uncolored_live, 0);
                assert_eq!(run.coloring_latency, sc.dissemination_time());
            }
        }
    }
}

/// Lemma 3: with failed processes and a maximum gap g, synchronized checked
/// correction ends between L_FF + g·o and L_FF + (2g + 1)·o after the
/// dissemination time, on every simulated run.
#[test]
fn lemma_3_bounds_hold_on_thousands_of_faulty_runs() {
    let mut checked = 0;
    for (l, o) in [(2, 1), (1, 1), (4, 2)] {
        let logp = LogP::new(l, o).unwrap();
        let l_ff = (4 * o + l + ceil_div(l, o) * o) as i64;
        for tree in ["binomial", "lame:2", "kary:4", "optimal"] {
            for rate in [0.001, 0.01, 0.02, 0.04] {
                let sc = scenario(
                    tree,
                    8192,
                    Correction::CheckedSync,
                    logp,
                    FaultPlan::rate(rate),
                );
                let mut sim = BcastSim::new(&sc);
                for seed in 0..(if (l, o) == (2, 1) { 200 } else { 40 }) {
                    let run = sim.run(seed);
                    let g = run.max_gap as i64;
                    let lat = run.correction_latency;
                    assert!(
                        l_ff + g * o as i64 <= lat && lat <= l_ff + (2 * g + 1) * o as i64,
                        "{tree} rate {rate} seed {seed} L={l} o={o}: g_max {g}, L_SCC {lat}"
                    );
                    assert_eq!(run.violations, 0);
                    assert_eq!(run.uncolored_live, 0);
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 4000);
}

fn run_with_dead(
    tree: &str,
    procs: u32,
    correction: Correction,
    dead: &[Rank],
) -> (Vec<bool>, u32, u64) {
    let sc = scenario(
        tree,
        procs,
        correction,
        LogP::PAPER,
        FaultPlan::dead(dead.iter().copied()),
    );
    let mut sim = BcastSim::new(&sc);
    let run = sim.run(0);
    let colored = sim.cores().iter().map(|c| c.colored()).collect();
    let sent = sim.last_trace().sends_by_tag.iter().sum();
    (colored, run.violations, sent)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Checked (both modes) and delayed correction color every live rank
    /// for any dead set that leaves the root alive, sparse or dense.
    #[test]
    fn guaranteed_corrections_reach_every_live_rank(
        procs in 1u32..300,
        density in 0.0f64..0.95,
        seed in any::<u64>(),
        tree in 0usize..TREES.len(),
        which in 0usize..4,
    ) {
        let correction = [Correction::Checked, Correction::CheckedSync, Correction::Delayed { delay: 4 }, Correction::Delayed { delay: 0 }][which];
        let sc = scenario(TREES[tree], procs, correction, LogP::PAPER, FaultPlan::rate(density));
        let mut sim = BcastSim::new(&sc);
        let run = sim.run(seed);
        prop_assert_eq!(run.uncolored_live, 0);
        prop_assert_eq!(run.violations, 0);
    }

}

/// The death times a fault rate of `density` draws from `seed` (the root
/// exempt), and the ranks dead before the operation.
fn seeded_dead_set(tree: &str, procs: u32, density: f64, seed: u64) -> (Vec<Tick>, Vec<Rank>) {
    let sc = scenario(
        tree,
        procs,
        Correction::None,
        LogP::PAPER,
        FaultPlan::rate(density),
    );
    let mut death = Vec::new();
    let mut rng = <rand_xoshiro::Xoshiro256PlusPlus as rand::SeedableRng>::seed_from_u64(seed);
    sc.faults().realize(procs, 0, &mut rng, &mut death);
    let dead = (0..procs).filter(|&r| death[r as usize] == 0).collect();
    (death, dead)
}

/// Seeded dead sets (the root alive) of 2 to 399 ranks, sparse to dense, on
/// each of [`TREES`], and a correction distance d from 1 to 5: the tree, P,
/// d, the death times and the dead ranks.
fn dead_sets() -> impl Strategy<Value = (&'static str, u32, u32, Vec<Tick>, Vec<Rank>)> {
    let inputs = (
        0..TREES.len(),
        2u32..400,
        0.0f64..0.9,
        1u32..6,
        any::<u64>(),
    );
    inputs.prop_map(|(tree, procs, density, d, seed)| {
        let (death, dead) = seeded_dead_set(TREES[tree], procs, density, seed);
        (TREES[tree], procs, d, death, dead)
    })
}

proptest! {
    // Thousands of seeded dead sets, sparse to dense.
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Optimized opportunistic correction is no less safe than plain
    /// opportunistic correction with the same d and dead set, and sends no
    /// more messages.
    #[test]
    fn optimized_is_no_less_safe_than_opportunistic((tree, procs, d, _, dead) in dead_sets()) {
        let (plain, v1, m1) = run_with_dead(tree, procs, Correction::Opportunistic { distance: d }, &dead);
        let (opt, v2, m2) = run_with_dead(tree, procs, Correction::Optimized { distance: d }, &dead);
        prop_assert_eq!(v1 + v2, 0);
        for r in 0..procs as usize {
            prop_assert!(opt[r] || !plain[r], "rank {} colored by plain but not optimized", r);
        }
        prop_assert!(m2 <= m1);
    }

    /// Relaying and forwarding color every rank plain opportunistic
    /// correction does (they only add sends); relaying colors every live
    /// rank whenever no d consecutive ranks of the ring are dead: each
    /// colored rank reaches d ranks on each side, so coloring spreads across
    /// every shorter run.
    #[test]
    fn relaying_and_forwarding_color_what_opportunistic_does_relaying_past_short_dead_runs(
        (tree, procs, d, death, dead) in dead_sets(),
    ) {
        let (plain, v1, _) = run_with_dead(tree, procs, Correction::Opportunistic { distance: d }, &dead);
        let (relay, v2, _) = run_with_dead(tree, procs, Correction::Relaying { distance: d }, &dead);
        let (forward, v3, _) = run_with_dead(tree, procs, Correction::Forwarding { distance: d }, &dead);
        prop_assert_eq!(v1 + v2 + v3, 0);
        for r in 0..procs as usize {
            prop_assert!(relay[r] || !plain[r], "rank {} colored by plain but not relaying", r);
            prop_assert!(forward[r] || !plain[r], "rank {} colored by plain but not forwarding", r);
        }
        let is_dead = |r: u32| death[(r % procs) as usize] == 0;
        let longest_dead_run = (0..procs)
            .map(|start| (0..procs).take_while(|&i| is_dead(start + i)).count() as u32)
            .max()
            .unwrap_or(0);
        if longest_dead_run < d {
            for r in 0..procs as usize {
                prop_assert!(relay[r] || death[r] == 0, "live rank {} uncolored, longest dead run {}", r, longest_dead_run);
            }
        }
    }
}

/// A dead rank whose subtree is contiguous (in-order numbering) leaves a gap
/// of live ranks far longer than 2d: plain opportunistic correction colors
/// only d ranks at each end of it; relaying colors the whole gap, and so
/// does forwarding (the ranks correction reaches send the tree on into it).
#[test]
fn relaying_and_forwarding_bridge_a_gap_of_live_ranks() {
    let (procs, d) = (256, 4);
    // In-order binomial numbering: rank 1's subtree is the contiguous range
    // 1..129 (half the ring), all alive but rank 1.
    let run = |correction| run_with_dead("inorder-binomial", procs, correction, &[1]);
    let (plain, _, m_plain) = run(Correction::Opportunistic { distance: d });
    let (relay, v, m_relay) = run(Correction::Relaying { distance: d });
    assert_eq!(v, 0);
    let uncolored = |c: &[bool]| (0..procs as usize).filter(|&r| r != 1 && !c[r]).count();
    assert!(
        uncolored(&plain) > 100,
        "plain leaves most of the gap: {}",
        uncolored(&plain)
    );
    assert_eq!(uncolored(&relay), 0);
    assert!(m_relay > m_plain);
    let (forward, v, _) = run(Correction::Forwarding { distance: d });
    assert_eq!(v, 0);
    assert_eq!(uncolored(&forward), 0);
}

/// Section 3.2.1: on a k-ary tree, opportunistic correction with d >= k
/// survives any k - 1 dead ranks. Exhaustive over all dead sets for small P.
#[test]
fn opportunistic_survives_k_minus_1_faults_on_k_ary_trees() {
    for k in 2u32..=4 {
        let procs = if k == 4 { 40 } else { 60 };
        let tree = format!("kary:{k}");
        let mut sets: Vec<Vec<Rank>> = vec![vec![]];
        for _ in 0..k - 1 {
            sets = sets
                .iter()
                .flat_map(|s| {
                    let from = s.last().map_or(1, |&l| l + 1);
                    (from..procs).map(move |r| {
                        let mut t = s.clone();
                        t.push(r);
                        t
                    })
                })
                .collect();
        }
        for d in [k, k + 1] {
            for correction in [
                Correction::Opportunistic { distance: d },
                Correction::Optimized { distance: d },
            ] {
                for dead in &sets {
                    let (colored, violations, _) = run_with_dead(&tree, procs, correction, dead);
                    assert_eq!(violations, 0);
                    for r in 0..procs {
                        assert!(
                            colored[r as usize] || dead.contains(&r),
                            "k={k} {correction} dead {dead:?}: rank {r} uncolored"
                        );
                    }
                }
            }
        }
        // The bound is tight: with k dead children of the root, a plain
        // tree with opportunistic correction of distance k - 1 can fail.
        let dead: Vec<Rank> = (1..=k).collect();
        let (colored, _, _) = run_with_dead(
            &tree,
            procs,
            Correction::Opportunistic { distance: 1 },
            &dead,
        );
        assert!((0..procs).any(|r| !colored[r as usize] && !dead.contains(&r)));
    }
}

#[test]
fn plain_tree_delivers_fault_free_and_misses_subtrees_of_dead_ranks() {
    for tree in TREES {
        let sc = scenario(tree, 1000, Correction::None, LogP::PAPER, FaultPlan::none());
        let mut sim = BcastSim::new(&sc);
        let run = sim.run(0);
        assert_eq!(run.uncolored_live, 0);
        assert_eq!(run.coloring_latency, sc.dissemination_time());
        assert_eq!(run.quiescence_latency, sc.dissemination_time());
        assert!((run.messages_per_process - 999.0 / 1000.0).abs() < 1e-12);
        // Killing rank 1 leaves its whole subtree uncolored.
        let subtree = {
            let mut n = 0;
            let mut stack = vec![1];
            while let Some(r) = stack.pop() {
                n += 1;
                stack.extend_from_slice(sc.plan().tree().children(r));
            }
            n
        };
        let sc = scenario(
            tree,
            1000,
            Correction::None,
            LogP::PAPER,
            FaultPlan::dead([1]),
        );
        let run = BcastSim::new(&sc).run(0);
        assert_eq!(run.uncolored_live, subtree - 1);
        assert_eq!(run.violations, 0, "no correction promises nothing");
    }
}

#[test]
fn delayed_correction_sends_one_message_per_process_fault_free() {
    let logp = LogP::PAPER;
    for tree in TREES {
        let sc = scenario(
            tree,
            2000,
            Correction::Delayed { delay: logp.hop() },
            logp,
            FaultPlan::none(),
        );
        let run = BcastSim::new(&sc).run(0);
        assert_eq!(run.correction_messages_per_process, 1.0, "{tree}");
        assert_eq!(run.violations, 0);
        // Too short a delay costs messages, never correctness.
        let sc = scenario(
            tree,
            2000,
            Correction::Delayed { delay: 1 },
            logp,
            FaultPlan::none(),
        );
        let run = BcastSim::new(&sc).run(0);
        assert!(run.correction_messages_per_process > 1.0);
        assert_eq!(run.uncolored_live, 0);
    }
}

/// A regression: a delay of 10^14 ticks made the simulator allocate a
/// bucket per tick and abort. Far in the future, the runs are those of a
/// delay just past the simulator's window, shifted in time.
#[test]
fn a_delay_of_10_to_the_14_ticks_runs_like_a_short_one_shifted() {
    let logp = LogP::PAPER;
    let (near, far) = (5_000, 100_000_000_000_000);
    // A time, as (after the delay?, ticks since the delay or the start).
    let shift = |t: Tick, delay: Tick| if t >= delay { (1, t - delay) } else { (0, t) };
    for tree in ["binomial", "lame:2"] {
        let runs = |delay| {
            let sc = scenario(
                tree,
                1000,
                Correction::Delayed { delay },
                logp,
                FaultPlan::rate(0.05),
            );
            let mut sim = BcastSim::new(&sc);
            (0..4)
                .map(|seed| {
                    let run = sim.run(seed);
                    assert_eq!(run.violations, 0, "{tree}, delay {delay}");
                    assert_eq!(run.uncolored_live, 0, "{tree}, delay {delay}");
                    (
                        shift(run.coloring_latency, delay),
                        shift(run.quiescence_latency, delay),
                        run.messages_per_process,
                        run.correction_messages_per_process,
                        run.dead,
                    )
                })
                .collect::<Vec<_>>()
        };
        let far_runs = runs(far);
        assert_eq!(far_runs, runs(near), "{tree}");
        assert!(
            far_runs.iter().any(|r| r.1 .0 == 1),
            "{tree}: the delay matters"
        );
    }
}

#[test]
fn deaths_during_the_operation_never_hang_or_corrupt() {
    for correction in [
        Correction::Checked,
        Correction::CheckedSync,
        Correction::Optimized { distance: 4 },
        Correction::Delayed { delay: 4 },
    ] {
        for at in [1, 5, 9, 20, 40, 70] {
            let faults = FaultPlan {
                die_at: vec![(1, at), (2, at + 1), (77, at), (500, at + 3)],
                ..FaultPlan::rate(0.02)
            };
            let sc = scenario("binomial", 1024, correction, LogP::PAPER, faults);
            let mut sim = BcastSim::new(&sc);
            for seed in 0..20 {
                let run = sim.run(seed);
                assert_eq!(run.violations, 0, "{correction} dying at {at}");
            }
        }
    }
}

#[test]
fn any_root_works() {
    // The core relabels ranks so that any root can start the broadcast.
    let logp = LogP::PAPER;
    for root in [0, 1, 5, 63, 99] {
        let plan = BcastPlan::for_logp(
            TreeSpec::interleaved(Shape::Binomial),
            100,
            Correction::Checked,
            logp,
        )
        .unwrap();
        let mut cores: Vec<Bcast<u32>> = (0..100)
            .map(|r| Bcast::new(&plan, root, r, 7, (r == root).then_some(42)).unwrap())
            .collect();
        let mut death = vec![NEVER; 100];
        for dead in [(root + 1) % 100, (root + 2) % 100, (root + 50) % 100] {
            death[dead as usize] = 0;
        }
        let trace = Engine::new(logp).run(&mut cores, &death);
        for (r, (out, &dies)) in trace.outputs.iter().zip(&death).enumerate() {
            let want = if dies == NEVER { Some(42) } else { None };
            assert_eq!(out.map(|(_, v)| v), want, "root {root} rank {r}");
        }
        assert_eq!(trace.duplicates, 0);
        assert!(cores.iter().all(|c| c.is_quiescent()));
    }
}

#[test]
fn bad_input_is_a_typed_error() {
    let logp = LogP::PAPER;
    let spec = TreeSpec::interleaved(Shape::Binomial);
    assert!(BcastScenario::new(spec, 0, Correction::Checked, logp, FaultPlan::none()).is_err());
    assert!(BcastScenario::new(spec, 10, Correction::Checked, logp, FaultPlan::dead([0])).is_err());
    assert!(
        BcastScenario::new(spec, 10, Correction::Checked, logp, FaultPlan::dead([10])).is_err()
    );
    assert!(BcastScenario::new(spec, 10, Correction::Checked, logp, FaultPlan::rate(1.5)).is_err());
    assert!(BcastScenario::new(
        spec,
        10,
        Correction::Checked,
        LogP {
            latency: 0,
            overhead: 1
        },
        FaultPlan::none()
    )
    .is_err());
    let plan = BcastPlan::for_logp(spec, 10, Correction::Checked, logp).unwrap();
    assert!(
        Bcast::<u8>::new(&plan, 10, 0, 0, None).is_err(),
        "root out of range"
    );
    assert!(
        Bcast::<u8>::new(&plan, 3, 3, 0, None).is_err(),
        "the root must bring a value"
    );
    assert!(Bcast::<u8>::new(&plan, 3, 11, 0, None).is_err());
    for bad in [
        "",
        "opportunistic",
        "optimized:0",
        "checked:3",
        "delayed",
        "delayed:x",
        "gossip",
    ] {
        assert!(bad.parse::<Correction>().is_err(), "{bad}");
    }
    for good in [
        "none",
        "opportunistic:4",
        "optimized:4",
        "checked",
        "checked-sync",
        "delayed:8",
    ] {
        assert_eq!(good.parse::<Correction>().unwrap().to_string(), good);
    }
}

#[test]
fn monte_carlo_is_deterministic_and_thread_independent() {
    let sc = scenario(
        "lame:2",
        4096,
        Correction::CheckedSync,
        LogP::PAPER,
        FaultPlan::rate(0.02),
    );
    let go = |threads| {
        MonteCarlo {
            runs: 24,
            seed: 9,
            threads,
        }
        .execute(|| BcastSim::new(&sc), |sim, seed| sim.run(seed), |_| {})
        .0
    };
    let one = go(1);
    assert_eq!(one, go(2));
    assert_eq!(one, go(3));
    assert!(
        one.windows(2).any(|w| w[0] != w[1]),
        "different seeds draw different dead sets"
    );
}

#[test]
fn a_rank_dying_at_a_time_stops_exactly_then() {
    // Rank 1 of a binomial tree is the root's first child: colored at o + L + o.
    let logp = LogP::PAPER;
    let sc = scenario("binomial", 64, Correction::None, logp, FaultPlan::none());
    let hop: Tick = logp.hop();
    for (at, expect_colored) in [(hop, false), (hop + 1, true)] {
        let mut death = vec![NEVER; 64];
        death[1] = at;
        let mut sim = BcastSim::new(&sc);
        sim.run_with(&death);
        assert_eq!(sim.cores()[1].colored(), expect_colored, "dying at {at}");
        // If 1 got the value it forwarded to its first child before dying.
        assert_eq!(sim.cores()[3].colored(), expect_colored);
    }
}

/// With two ranks the root's only peer is its tree child: no correction can
/// reach anyone the tree does not, and none is sent, whatever the variant.
/// So on any tree in which every rank is the root's child (three ranks on
/// a binomial tree, the flat tree `kary:P-1`).
#[test]
fn a_pair_sends_the_tree_message_only() {
    let corrections = [
        "none",
        "opportunistic:2",
        "optimized:4",
        "checked",
        "checked-sync",
        "delayed:8",
    ];
    for correction in corrections {
        let correction: Correction = correction.parse().unwrap();
        for tree in TREES {
            let sc = scenario(tree, 2, correction, LogP::PAPER, FaultPlan::none());
            let run = BcastSim::new(&sc).run(0);
            assert_eq!((run.uncolored_live, run.violations), (0, 0), "{correction}");
            assert_eq!(run.messages_per_process, 0.5, "{tree} {correction}");
            assert_eq!(run.quiescence_latency, sc.dissemination_time());
        }
        // Three ranks on a binomial tree: the root's children are 1 and 2.
        let sc = scenario("binomial", 3, correction, LogP::PAPER, FaultPlan::none());
        let run = BcastSim::new(&sc).run(0);
        assert_eq!(run.correction_messages_per_process, 0.0, "{correction}");
        // Four: rank 3 hangs below rank 1, and the correction runs.
        let sc = scenario("binomial", 4, correction, LogP::PAPER, FaultPlan::none());
        let run = BcastSim::new(&sc).run(0);
        assert_eq!(
            run.correction_messages_per_process > 0.0,
            correction != Correction::None
        );
    }
}

/// The flat tree (`kary:P-1`) has no inner node but the root: with any set
/// of non-root ranks dead before the operation, every live rank is colored
/// by its tree message, and no correction is sent (CT Section 3.3: a rank
/// is missed only below a failed inner node).
#[test]
fn a_flat_tree_reaches_every_live_rank_without_correction() {
    for procs in [3u32, 8, 64] {
        let flat = format!("kary:{}", procs - 1);
        for correction in [Correction::Checked, Correction::CheckedSync] {
            for dead in [vec![], vec![1], vec![1, 2], (1..procs / 2).collect()] {
                let faults = FaultPlan::dead(dead.iter().copied());
                let sc = scenario(&flat, procs, correction, LogP::PAPER, faults);
                let run = BcastSim::new(&sc).run(0);
                let name = format!("P={procs} {correction} dead {dead:?}");
                assert_eq!((run.uncolored_live, run.violations), (0, 0), "{name}");
                assert_eq!(run.correction_messages_per_process, 0.0, "{name}");
                assert_eq!(
                    run.messages_per_process,
                    f64::from(procs - 1) / f64::from(procs),
                    "{name}"
                );
            }
        }
        if procs == 3 {
            continue;
        }
        // One level deeper (the root's last child has a child) and the
        // correction runs again.
        let sc = scenario(
            &format!("kary:{}", procs - 2),
            procs,
            Correction::Checked,
            LogP::PAPER,
            FaultPlan::none(),
        );
        assert!(BcastSim::new(&sc).run(0).correction_messages_per_process > 0.0);
    }
}
