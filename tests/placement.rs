//! Topology-aware placement: synthetic, sysfs and hwloc machines, layouts,
//! the gap bound after domain kills, simulated correction after a domain
//! kill, and delivery on threads after a domain kill.

use corrected::Collectives;
use std::collections::BTreeSet;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use corrected::placement::{
    from_sysfs, from_sysfs_root, gap_lower_bound, kill_domain, synthetic, DomainRef, Level,
    Machine, Placement, Policy,
};
use corrected::runtime::{Pinning, RankOutcome, Team};
use corrected::sim::domain::predict;
use corrected::topology::TreeSpec;
use corrected::types::LogP;
use corrected::{ConfigError, Error};

const BALANCED: &str = "package:2 l3:4 core:8 pu:2";
/// Packages of 22 and 14 PUs: package 0 holds more than half the ranks.
const UNEVEN: &str = "package:2 l3:3,2 core:4,3 pu:2";

/// Every domain of every level holding some but not all ranks, with |D|.
fn domains(placement: &Placement) -> Vec<(DomainRef, u32)> {
    let m = placement.machine();
    let mut out = Vec::new();
    for &level in m.levels() {
        for index in 0..m.domains(level).len() {
            let d = DomainRef { level, index };
            let size = placement.ranks_in(d).unwrap().len() as u32;
            if size > 0 && size < placement.ranks() {
                out.push((d, size));
            }
        }
    }
    out
}

/// Checks every single-domain kill: separated is within `slack` of the
/// bound, compact's gap is |D|. Returns how many domains were checked.
fn check_gaps(m: &Machine, ranks: u32, slack: u32) -> usize {
    let sep = Policy::Separated.place(m, ranks).unwrap();
    let compact = Policy::Compact.place(m, ranks).unwrap();
    let all = domains(&sep);
    for &(d, size) in &all {
        let bound = gap_lower_bound(size, ranks);
        let gap = sep.max_gap(d).unwrap();
        assert!(
            gap >= bound && gap <= bound + slack,
            "{} P={ranks} {d} |D|={size}: separated gap {gap}, bound {bound}",
            m.source()
        );
        // Compact fills domains contiguously (only its first P PUs hold ranks).
        let in_compact = compact.ranks_in(d).unwrap().len() as u32;
        if in_compact > 0 && in_compact < ranks {
            assert_eq!(compact.max_gap(d).unwrap(), in_compact, "compact {d}");
        }
    }
    all.len()
}

#[test]
fn separated_reaches_the_bound_on_balanced_machines() {
    for spec in [
        BALANCED,
        "package:2 numa:2 l3:2 core:4 pu:2",
        "package:4 core:3 pu:2",
        "l3:3 core:5",
    ] {
        let m = synthetic(spec).unwrap();
        let checked = check_gaps(&m, m.pus() as u32, 0);
        let expected: usize = m
            .levels()
            .iter()
            .map(|&l| m.domains(l).len())
            .filter(|&n| n > 1)
            .sum();
        assert_eq!(checked, expected, "{spec}: every domain of every level");
    }
    // 2 x 4 x 8 x 2: every domain holds at most half the ranks, so one dead
    // domain never leaves two dead ranks side by side on the ring.
    let m = synthetic(BALANCED).unwrap();
    let sep = Policy::Separated.place(&m, 128).unwrap();
    for (d, _) in domains(&sep) {
        assert_eq!(sep.max_gap(d).unwrap(), 1, "{d}");
    }
}

#[test]
fn separated_is_within_one_on_uneven_machines() {
    let m = synthetic(UNEVEN).unwrap();
    assert_eq!(m.pus(), 36);
    for ranks in [36, 30, 17] {
        check_gaps(&m, ranks, 1);
    }
    // Package 0 holds 22 of 36: the least gap is 2, and separated reaches it.
    let sep = Policy::Separated.place(&m, 36).unwrap();
    assert_eq!(sep.max_gap("package:0".parse().unwrap()).unwrap(), 2);
    // A balanced machine under a restricted cpuset (taskset 0-99) is uneven.
    let r = synthetic(BALANCED).unwrap().restrict(|c| c < 100).unwrap();
    assert_eq!(r.pus(), 100);
    for ranks in [100, 64, 33] {
        check_gaps(&r, ranks, 1);
    }
    // Seeded random uneven machines with 1..4 children per parent, 4 levels.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let mut checked = 0;
    for _ in 0..200 {
        let mut spec: Vec<String> = Vec::new();
        for l in Level::ALL {
            if l == Level::Pu || rng.gen_bool(0.7) {
                let counts: Vec<String> = (0..rng.gen_range(1..4))
                    .map(|_| rng.gen_range(1..5).to_string())
                    .collect();
                spec.push(format!("{l}:{}", counts.join(",")));
            }
        }
        let m = synthetic(&spec.join(" ")).unwrap();
        let ranks = rng.gen_range(1..=m.pus() as u32);
        checked += check_gaps(&m, ranks, 1);
    }
    assert!(checked > 5000, "{checked}");
}

/// Live ranks cut off from the root by the dead: some tree ancestor is dead.
fn cut_off(tree: &corrected::topology::Tree, dead: &[u32]) -> usize {
    (0..tree.procs())
        .filter(|r| !dead.contains(r))
        .filter(|&r| {
            let mut a = r;
            while let Some(p) = tree.parent(a) {
                if dead.contains(&p) {
                    return true;
                }
                a = p;
            }
            false
        })
        .count()
}

#[test]
fn domains_follow_interleaved_subtrees() {
    // The subtrees of an interleaved binomial tree are residue classes of
    // ranks, and so are the separated layout's domains: sibling subtrees sit
    // in different packages, and a dead package is a union of whole
    // subtrees, cutting no live rank off the tree.
    let m = synthetic(BALANCED).unwrap();
    let tree = corrected::topology::Tree::build(TreeSpec::binomial(), 128, LogP::PAPER).unwrap();
    let sep = Policy::Separated.place(&m, 128).unwrap();
    for index in 0..2 {
        let d = DomainRef {
            level: Level::Package,
            index,
        };
        let dead = sep.ranks_in(d).unwrap();
        if dead.contains(&0) {
            // The root's package: everything else is one subtree of it.
            assert_eq!(dead.len(), 64);
        } else {
            assert_eq!(cut_off(&tree, &dead), 0, "separated {d}");
        }
    }
}

#[test]
fn simulated_correction_after_a_domain_kill() {
    let m = synthetic(BALANCED).unwrap();
    let tree = TreeSpec::binomial();
    let correction = "checked-sync".parse().unwrap();
    let mut latency = Vec::new();
    for policy in [Policy::Compact, Policy::Separated] {
        let p = policy.place(&m, 128).unwrap();
        // l3:0 holds rank 0 under both: the root moves to the first live rank.
        let pred = predict(&p, "l3:0".parse().unwrap(), tree, correction, LogP::PAPER).unwrap();
        assert_eq!(pred.dead.len(), 16);
        assert_ne!(pred.root, 0);
        assert_eq!(pred.run.dead, 16);
        assert_eq!((pred.run.uncolored_live, pred.run.violations), (0, 0));
        assert_eq!(pred.max_gap, if policy == Policy::Compact { 16 } else { 1 });
        latency.push(pred.run.correction_latency);
    }
    // A gap of 16 takes checked correction longer to close than gaps of 1.
    assert!(latency[0] > latency[1], "{latency:?}");
    // Killing the whole machine is an error, not a panic.
    let one = synthetic("package:1 core:4").unwrap();
    let p = Policy::Separated.place(&one, 4).unwrap();
    assert!(matches!(
        predict(
            &p,
            "package:0".parse().unwrap(),
            tree,
            correction,
            LogP::PAPER
        ),
        Err(ConfigError::BadFaults(_))
    ));
}

#[test]
fn threads_deliver_after_a_domain_kill() {
    // 16 ranks placed on a synthetic 2 x 2 x 2 x 2 machine; pinned to this
    // machine's cores modulo their number (Pinning::Placed).
    let m = synthetic("package:2 l3:2 core:2 pu:2").unwrap();
    let placement = Policy::Separated.place(&m, 16).unwrap();
    for domain in ["l3:1", "package:1", "core:0"] {
        let d: DomainRef = domain.parse().unwrap();
        let dead = placement.ranks_in(d).unwrap();
        let root = (0..16).find(|r| !dead.contains(r)).unwrap();
        let team = Team::builder()
            .ranks(16)
            .pinning(Pinning::from(&placement))
            .correction("checked".parse().unwrap())
            .faults(kill_domain(&placement, d, 0).unwrap())
            .op_timeout(Duration::from_secs(20))
            .build()
            .unwrap();
        let report = team.run(|comm| {
            (0..3u64)
                .map(|i| {
                    let mut v = if comm.rank() == root { 100 + i } else { 0 };
                    comm.broadcast_into(root, &mut v).map(|()| v)
                })
                .collect::<Vec<_>>()
        });
        assert_eq!(report.failed, dead, "{domain}");
        for (rank, outcome) in report.outcomes.iter().enumerate() {
            let RankOutcome::Returned(got) = outcome else {
                panic!("rank {rank} panicked")
            };
            for (i, r) in got.iter().enumerate() {
                if dead.contains(&(rank as u32)) {
                    assert!(matches!(r, Err(Error::Failed(_))), "{domain} rank {rank}");
                } else {
                    assert_eq!(r, &Ok(100 + i as u64), "{domain} rank {rank} op {i}");
                }
            }
        }
    }
    // A placement for another team size is refused at build time.
    let err = Team::builder()
        .ranks(8)
        .pinning(Pinning::from(&placement))
        .build()
        .unwrap_err();
    assert!(matches!(
        err,
        ConfigError::PlacementSize {
            placed: 16,
            ranks: 8
        }
    ));
}

/// Per level, the domains as sets of OS cpu ids (independent of numbering).
fn domain_sets(m: &Machine) -> Vec<(Level, BTreeSet<Vec<u32>>)> {
    m.levels()
        .iter()
        .map(|&l| {
            let sets = m
                .domains(l)
                .iter()
                .map(|r| {
                    let mut c = m.cpus()[r.clone()].to_vec();
                    c.sort_unstable();
                    c
                })
                .collect();
            (l, sets)
        })
        .collect()
}

fn fixture(name: &str) -> Machine {
    from_sysfs_root(format!(
        "{}/tests/fixtures/sysfs/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[test]
fn sysfs_fixtures() {
    let m = fixture("two-socket-smt");
    assert_eq!(
        m.levels(),
        &[
            Level::Package,
            Level::Numa,
            Level::L3,
            Level::Core,
            Level::Pu
        ]
    );
    assert_eq!(m.shape(), "package:2 numa:1 l3:1 core:4 pu:2");
    // Tree order puts hyperthread siblings (i, i+8) side by side.
    assert_eq!(&m.cpus()[..4], &[0, 8, 1, 9]);
    assert_eq!(m.domain("package:1".parse().unwrap()).unwrap(), 8..16);
    let packages: BTreeSet<Vec<u32>> = [
        vec![0, 1, 2, 3, 8, 9, 10, 11],
        vec![4, 5, 6, 7, 12, 13, 14, 15],
    ]
    .into();
    assert_eq!(domain_sets(&m)[0], (Level::Package, packages));
    assert_eq!(m.domain("core:5".parse().unwrap()).unwrap(), 10..12);
    assert_eq!(&m.cpus()[10..12], &[5, 13]);
    // The same machine described synthetically has the same shape.
    assert_eq!(
        m.shape(),
        synthetic("package:2 numa:1 l3:1 core:4 pu:2")
            .unwrap()
            .shape()
    );
    // Separated puts ranks 0 and 1 in different packages, and ranks 0 and 2
    // in different cores of one package.
    let p = Policy::Separated.place(&m, 16).unwrap();
    assert_eq!(&p.cpus()[..4], &[0, 4, 1, 5]);
    // A taskset of 0-5 leaves package 0 whole and two cores of package 1.
    let r = m.restrict(|c| c <= 5).unwrap();
    assert_eq!(r.shape(), "package:2 numa:1 l3:1 core:2-4 pu:1");

    let m = fixture("no-cache-offline");
    assert_eq!(m.levels(), &[Level::Package, Level::Core, Level::Pu]);
    assert_eq!(m.cpus(), &[0, 1, 2, 3, 4, 5]);
    assert_eq!(m.shape(), "package:1 core:6 pu:1");
    assert!(matches!(
        m.domain("l3:0".parse().unwrap()),
        Err(ConfigError::UnknownDomain { .. })
    ));
    assert!(matches!(
        from_sysfs_root("/nonexistent/sysfs"),
        Err(ConfigError::BadTopology(_))
    ));
}

#[test]
fn sysfs_of_this_machine() {
    let m = from_sysfs().unwrap();
    let mut allowed: Vec<u32> = core_affinity::get_core_ids()
        .unwrap()
        .iter()
        .map(|c| c.id as u32)
        .collect();
    allowed.sort_unstable();
    let mut cpus = m.cpus().to_vec();
    cpus.sort_unstable();
    assert_eq!(cpus, allowed, "one PU per cpu this process may use");
    assert_eq!(m.levels().first(), Some(&Level::Package));
    assert_eq!(m.levels().last(), Some(&Level::Pu));
    assert!(m.depth(Level::Core).is_some());
    let p = Policy::Separated.place(&m, m.pus() as u32).unwrap();
    assert_eq!(p.ranks() as usize, allowed.len());
}

#[test]
fn bad_input_is_a_typed_error() {
    assert!(matches!(
        synthetic("package:2 core:0"),
        Err(ConfigError::BadSynthetic { .. })
    ));
    let m = synthetic(BALANCED).unwrap();
    let p = Policy::Separated.place(&m, 128).unwrap();
    let e = p.ranks_in("l3:9".parse().unwrap()).unwrap_err();
    assert!(e.to_string().contains("l3:0..l3:7"), "{e}");
    assert!(matches!(
        p.max_gap("numa:0".parse().unwrap()),
        Err(ConfigError::UnknownDomain { .. })
    ));
    assert!(matches!(
        "l9:0".parse::<DomainRef>(),
        Err(ConfigError::UnknownDomain { .. })
    ));
    assert!(matches!(
        Policy::Separated.place(&m, 129),
        Err(ConfigError::NotEnoughPus {
            ranks: 129,
            pus: 128
        })
    ));
}

#[cfg(feature = "hwloc")]
mod hwloc {
    use super::*;
    use corrected::placement::hwloc::{from_hwloc, from_hwloc_synthetic};

    #[test]
    fn hwloc_reads_synthetic_descriptions_as_we_do() {
        for spec in [
            BALANCED,
            "package:2 core:3 pu:2",
            "package:2 numa:2 l3:2 core:4 pu:2",
        ] {
            let ours = synthetic(spec).unwrap();
            let theirs = from_hwloc_synthetic(spec).unwrap();
            assert_eq!(domain_sets(&theirs), domain_sets(&ours), "{spec}");
            assert_eq!(theirs.cpus(), ours.cpus(), "{spec}");
        }
        assert!(matches!(
            from_hwloc_synthetic("package:x"),
            Err(ConfigError::BadSynthetic { .. })
        ));
    }

    #[test]
    fn hwloc_agrees_with_sysfs_here() {
        let (h, s) = (from_hwloc().unwrap(), from_sysfs().unwrap());
        assert_eq!(domain_sets(&h), domain_sets(&s));
    }
}
