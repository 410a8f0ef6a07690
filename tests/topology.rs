//! Properties of the trees of Corrected Trees Section 3.2.

use corrected::topology::{
    interleave, interleaved_children, interleaved_parent, Numbering, Shape, Tree, TreeSpec,
};
use corrected::types::LogP;

const MODELS: [LogP; 5] = [
    LogP {
        latency: 2,
        overhead: 1,
    },
    LogP {
        latency: 1,
        overhead: 1,
    },
    LogP {
        latency: 3,
        overhead: 2,
    },
    LogP {
        latency: 5,
        overhead: 2,
    },
    LogP {
        latency: 1,
        overhead: 3,
    },
];

fn shapes() -> Vec<Shape> {
    let mut v = vec![Shape::Binomial, Shape::Optimal];
    v.extend([2, 3, 4, 8].map(Shape::KAry));
    v.extend([1, 2, 3, 4].map(Shape::Lame));
    v
}

fn all_specs() -> Vec<TreeSpec> {
    shapes()
        .into_iter()
        .flat_map(|shape| {
            [Numbering::Interleaved, Numbering::InOrder]
                .map(|numbering| TreeSpec { shape, numbering })
        })
        .collect()
}

/// Every rank but 0 has exactly one parent, which lists it as a child, and
/// every rank is reachable from 0.
fn assert_spanning(tree: &Tree) {
    let p = tree.procs();
    let mut seen = vec![0u32; p as usize];
    let mut reached = 0;
    let mut stack = vec![0];
    while let Some(r) = stack.pop() {
        reached += 1;
        for &c in tree.children(r) {
            assert!(
                c < p,
                "{}: child {c} of {r} out of range for P={p}",
                tree.spec()
            );
            assert_eq!(
                tree.parent(c),
                Some(r),
                "{}: parent of {c}, P={p}",
                tree.spec()
            );
            seen[c as usize] += 1;
            stack.push(c);
        }
    }
    assert_eq!(tree.parent(0), None);
    assert_eq!(seen[0], 0, "{}: the root has a parent, P={p}", tree.spec());
    assert!(
        seen[1..].iter().all(|&n| n == 1),
        "{}: a rank has two parents or none, P={p}",
        tree.spec()
    );
    assert_eq!(
        reached,
        p,
        "{}: not every rank is reachable, P={p}",
        tree.spec()
    );
}

#[test]
fn every_tree_spans_every_team_up_to_4096() {
    for spec in all_specs() {
        let models: &[LogP] = if spec.shape == Shape::Optimal {
            &MODELS
        } else {
            &MODELS[..1]
        };
        for &logp in models {
            for p in 1..=4096 {
                assert_spanning(&Tree::build(spec, p, logp).unwrap());
            }
        }
    }
}

#[test]
fn interleaved_trees_satisfy_definition_1() {
    for shape in shapes() {
        let models: &[LogP] = if shape == Shape::Optimal {
            &MODELS
        } else {
            &MODELS[..1]
        };
        for &logp in models {
            for p in 1..=512 {
                let tree = Tree::build(TreeSpec::interleaved(shape), p, logp).unwrap();
                assert_eq!(interleave::check(&tree), None, "{shape:?} P={p} {logp:?}");
            }
        }
    }
}

#[test]
fn in_order_trees_are_not_interleaved() {
    // The checker can fail: depth-first numbering breaks Definition 1 as soon
    // as a subtree has two children with descendants.
    for shape in shapes() {
        let tree = Tree::build(
            TreeSpec {
                shape,
                numbering: Numbering::InOrder,
            },
            64,
            LogP::PAPER,
        )
        .unwrap();
        assert!(interleave::check(&tree).is_some(), "{shape:?}");
    }
}

#[test]
fn lame_of_order_1_is_binomial() {
    for p in 1..=4096 {
        let b = Tree::build(TreeSpec::interleaved(Shape::Binomial), p, LogP::PAPER).unwrap();
        let l = Tree::build(TreeSpec::interleaved(Shape::Lame(1)), p, LogP::PAPER).unwrap();
        for r in 0..p {
            assert_eq!(b.children(r), l.children(r), "P={p} rank {r}");
        }
    }
}

#[test]
fn optimal_with_unit_overhead_is_lame_of_order_2o_plus_l() {
    for l in 1..=4 {
        let logp = LogP {
            latency: l,
            overhead: 1,
        };
        for p in [1, 7, 100, 1000] {
            let opt = Tree::build(TreeSpec::interleaved(Shape::Optimal), p, logp).unwrap();
            let lame =
                Tree::build(TreeSpec::interleaved(Shape::Lame(2 + l as u32)), p, logp).unwrap();
            for r in 0..p {
                assert_eq!(opt.children(r), lame.children(r));
            }
        }
    }
}

#[test]
fn closed_forms_agree_with_the_built_tree() {
    for shape in shapes() {
        for &logp in &MODELS {
            for p in [1, 2, 5, 64, 100, 333] {
                let tree = Tree::build(TreeSpec::interleaved(shape), p, logp).unwrap();
                for r in 0..p {
                    assert_eq!(interleaved_children(shape, r, p, logp), tree.children(r));
                    assert_eq!(interleaved_parent(shape, r, p, logp), tree.parent(r));
                }
            }
        }
    }
}

#[test]
fn paper_examples() {
    let lp = LogP::PAPER;
    // Figure 3 (right): binary interleaved tree of 7.
    let t = Tree::build("kary:2".parse().unwrap(), 7, lp).unwrap();
    assert_eq!(t.children(0), &[1, 2]);
    assert_eq!(t.children(1), &[3, 5]);
    assert_eq!(t.children(2), &[4, 6]);
    // Figure 5: Lamé k=3, P=9: root sends to 1, 2, 3, 4, 6; 1 to 5, 7; 2 to 8.
    let t = Tree::build("lame:3".parse().unwrap(), 9, lp).unwrap();
    assert_eq!(t.children(0), &[1, 2, 3, 4, 6]);
    assert_eq!(t.children(1), &[5, 7]);
    assert_eq!(t.children(2), &[8]);
    // Binomial: 1 sends to 3, 5, 9.
    let t = Tree::build(TreeSpec::binomial(), 16, lp).unwrap();
    assert_eq!(t.children(1), &[3, 5, 9]);
    // In-order binary tree of 7: depth-first numbering.
    let t = Tree::build("inorder-kary:2".parse().unwrap(), 7, lp).unwrap();
    assert_eq!(t.children(0), &[1, 4]);
    assert_eq!(t.children(1), &[2, 3]);
}

#[test]
fn optimal_tree_disseminates_no_later_than_any_other() {
    for &logp in &MODELS {
        for p in (1..=600).chain([1000, 4096, 10_000]) {
            let best = Tree::build(TreeSpec::interleaved(Shape::Optimal), p, logp)
                .unwrap()
                .dissemination_time(logp);
            for spec in all_specs() {
                let t = Tree::build(spec, p, logp).unwrap().dissemination_time(logp);
                assert!(best <= t, "optimal {best} > {spec} {t} at P={p}, {logp:?}");
            }
        }
    }
}

#[test]
fn tree_specs_parse_and_print() {
    for text in [
        "binomial",
        "lame:3",
        "kary:4",
        "optimal",
        "inorder-binomial",
        "inorder-kary:2",
    ] {
        let spec: TreeSpec = text.parse().unwrap();
        assert_eq!(spec.to_string(), text);
    }
    for bad in [
        "",
        "kary",
        "kary:1",
        "lame:0",
        "lame:x",
        "binomial:2",
        "tree",
    ] {
        assert!(bad.parse::<TreeSpec>().is_err(), "{bad}");
    }
    assert!(Tree::build(TreeSpec::binomial(), 0, LogP::PAPER).is_err());
}

#[test]
fn merge_numbering_interleaves_every_shape() {
    for shape in shapes() {
        for &logp in &MODELS {
            for p in 1..=300 {
                let tree = Tree::build(
                    TreeSpec {
                        shape,
                        numbering: Numbering::InOrder,
                    },
                    p,
                    logp,
                )
                .unwrap();
                let merged = tree.with_merge_numbering();
                assert_eq!(interleave::check(&merged), None, "{shape:?} P={p} {logp:?}");
            }
        }
    }
    // For the binomial tree it gives back Eq. 2 itself.
    for p in [1, 2, 9, 100, 1000] {
        let tree = Tree::build(TreeSpec::interleaved(Shape::Binomial), p, LogP::PAPER).unwrap();
        let label = interleave::merge_numbering(&tree);
        assert!(
            label.iter().enumerate().all(|(r, &l)| r as u32 == l),
            "P={p}"
        );
    }
}

#[test]
fn logp_parameters_are_bounded() {
    use corrected::types::LogP;
    assert!(LogP::new(1, 1).is_ok());
    assert!(LogP::new(LogP::MAX, LogP::MAX).is_ok());
    for (l, o) in [(0, 1), (1, 0), (LogP::MAX + 1, 1), (1, u64::MAX)] {
        assert!(
            matches!(LogP::new(l, o), Err(corrected::ConfigError::BadLogP { .. })),
            "L={l} o={o}"
        );
    }
}
