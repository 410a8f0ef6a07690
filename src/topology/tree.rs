//! A built tree: parent and children of every rank, in send order.

use crate::error::ConfigError;
use crate::topology::spec::{Numbering, Shape, TreeSpec};
use crate::topology::{binomial, interleave, kary, knomial, multiroot, timed::ReadySequence};
use crate::types::{LogP, Rank, Tick};

/// The largest team the topology module numbers (ranks are `u32`, and a few
/// sentinels need room).
pub const MAX_PROCS: u32 = 1 << 30;

/// A dissemination tree over ranks `0..procs`, rooted at 0, with every rank's
/// children stored in the order the rank sends to them. Built once per
/// (spec, procs, LogP) and shared by all protocol cores of a team.
#[derive(Clone, Debug)]
pub struct Tree {
    spec: TreeSpec,
    procs: u32,
    parent: Vec<Rank>,
    first_child: Vec<u32>,
    children: Vec<Rank>,
}

/// Children of `rank` in the interleaved numbering of `shape`, in send order,
/// computed from the closed forms of the paper (no table).
pub fn interleaved_children(shape: Shape, rank: Rank, procs: u32, logp: LogP) -> Vec<Rank> {
    match shape {
        Shape::KAry(k) => kary::children(rank, k, procs).collect(),
        Shape::KNomial(k) | Shape::MultiRoot(k) => knomial::children(rank, k, procs).collect(),
        Shape::Binomial => binomial::children(rank, procs).collect(),
        Shape::Lame(k) => ReadySequence::lame(k, procs)
            .children(rank, procs)
            .collect(),
        Shape::Optimal if logp.overhead > 1 => optimal_table(procs, logp).children(rank).to_vec(),
        Shape::Optimal => ReadySequence::optimal(logp.latency, logp.overhead, procs)
            .children(rank, procs)
            .collect(),
    }
}

/// The optimal tree for o > 1 has no closed form: it is the greedy LogP
/// schedule renumbered by [`interleave::merge_numbering`].
fn optimal_table(procs: u32, logp: LogP) -> Tree {
    Tree::build(TreeSpec::interleaved(Shape::Optimal), procs, logp).expect("validated parameters")
}

/// Parent of `rank` in the interleaved numbering of `shape`, from the closed forms.
pub fn interleaved_parent(shape: Shape, rank: Rank, procs: u32, logp: LogP) -> Option<Rank> {
    match shape {
        Shape::KAry(k) => kary::parent(rank, k),
        Shape::KNomial(k) | Shape::MultiRoot(k) => knomial::parent(rank, k),
        Shape::Binomial => binomial::parent(rank),
        Shape::Lame(k) => ReadySequence::lame(k, procs).parent(rank),
        Shape::Optimal if logp.overhead > 1 => optimal_table(procs, logp).parent(rank),
        Shape::Optimal => ReadySequence::optimal(logp.latency, logp.overhead, procs).parent(rank),
    }
}

impl Tree {
    /// Builds the tree `spec` over `procs` ranks. `logp` matters only for the
    /// optimal tree. Errors on zero ranks, too many ranks or a bad parameter.
    pub fn build(spec: TreeSpec, procs: u32, logp: LogP) -> Result<Tree, ConfigError> {
        if procs == 0 {
            return Err(ConfigError::ZeroRanks);
        }
        if procs > MAX_PROCS {
            return Err(ConfigError::TooManyRanks {
                procs: procs as u64,
                max: MAX_PROCS as u64,
            });
        }
        let bad = |why: &str| ConfigError::BadTree {
            spec: spec.to_string(),
            why: why.to_string(),
        };
        match spec.shape {
            Shape::KAry(k) if k < 2 => return Err(bad("k-ary trees need k >= 2")),
            Shape::KNomial(k) | Shape::MultiRoot(k) if k < 2 => {
                return Err(bad("k-nomial trees need k >= 2"))
            }
            Shape::Lame(0) => return Err(bad("Lamé trees need order k >= 1")),
            Shape::MultiRoot(_) if spec.numbering == Numbering::InOrder => {
                return Err(bad(
                    "the multi-root tree's roots are ranks 0..K; only the interleaved numbering keeps them there",
                ))
            }
            _ => {}
        }
        LogP::new(logp.latency, logp.overhead)?;
        let mut lists: Vec<Vec<Rank>> = Vec::with_capacity(procs as usize);
        match spec.shape {
            Shape::KAry(k) => {
                lists.extend((0..procs).map(|r| kary::children(r, k, procs).collect()))
            }
            Shape::Binomial => {
                lists.extend((0..procs).map(|r| binomial::children(r, procs).collect()))
            }
            Shape::KNomial(k) | Shape::MultiRoot(k) => {
                lists.extend((0..procs).map(|r| knomial::children(r, k, procs).collect()))
            }
            Shape::Lame(_) | Shape::Optimal => {
                let seq = match spec.shape {
                    Shape::Lame(k) => ReadySequence::lame(k, procs),
                    _ => ReadySequence::optimal(logp.latency, logp.overhead, procs),
                };
                lists.extend((0..procs).map(|r| seq.children(r, procs).collect()));
            }
        }
        let mut tree = Tree::from_lists(spec, &lists);
        if spec.shape == Shape::Optimal && logp.overhead > 1 {
            // Time order is Eq. 2 only when every process sends at every step;
            // with o > 1 it is not interleaved, so merge subtrees instead.
            tree = tree.with_merge_numbering();
        }
        Ok(match spec.numbering {
            Numbering::Interleaved => tree,
            Numbering::InOrder => tree.renumbered_depth_first(),
        })
    }

    fn from_lists(spec: TreeSpec, lists: &[Vec<Rank>]) -> Tree {
        let procs = lists.len() as u32;
        let mut parent = vec![Rank::MAX; procs as usize];
        let mut first_child = Vec::with_capacity(procs as usize + 1);
        let mut children = Vec::with_capacity(procs as usize);
        for (r, list) in lists.iter().enumerate() {
            first_child.push(children.len() as u32);
            for &c in list {
                parent[c as usize] = r as Rank;
                children.push(c);
            }
        }
        first_child.push(children.len() as u32);
        Tree {
            spec,
            procs,
            parent,
            first_child,
            children,
        }
    }

    /// The same shape with rank `r` renamed `label[r]` (a permutation fixing 0).
    fn relabeled(&self, numbering: Numbering, label: &[Rank]) -> Tree {
        let mut lists = vec![Vec::new(); self.procs as usize];
        for r in 0..self.procs {
            lists[label[r as usize] as usize] = self
                .children(r)
                .iter()
                .map(|&c| label[c as usize])
                .collect();
        }
        Tree::from_lists(
            TreeSpec {
                numbering,
                ..self.spec
            },
            &lists,
        )
    }

    /// The same shape numbered depth-first: pre-order, children in send order.
    fn renumbered_depth_first(&self) -> Tree {
        let mut label = vec![0 as Rank; self.procs as usize];
        let mut next = 0;
        let mut stack = vec![0 as Rank];
        while let Some(r) = stack.pop() {
            label[r as usize] = next;
            next += 1;
            stack.extend(self.children(r).iter().rev());
        }
        self.relabeled(Numbering::InOrder, &label)
    }

    /// The same shape renumbered by [`interleave::merge_numbering`]: an
    /// interleaved numbering (Definition 1) of any of our tree shapes.
    pub fn with_merge_numbering(&self) -> Tree {
        self.relabeled(Numbering::Interleaved, &interleave::merge_numbering(self))
    }

    /// What tree this is.
    pub fn spec(&self) -> TreeSpec {
        self.spec
    }

    /// The number of ranks.
    pub fn procs(&self) -> u32 {
        self.procs
    }

    /// How many fully connected roots the shape has (FTCO Section 5.2.1):
    /// `min(K, P)` for `multiroot:K` (ranks `0..roots`, which this tree
    /// holds as root 0's first children), 1 for every other shape.
    pub fn roots(&self) -> u32 {
        match self.spec.shape {
            Shape::MultiRoot(k) => multiroot::roots(k, self.procs),
            _ => 1,
        }
    }

    /// The children of `rank`, in the order `rank` sends to them.
    pub fn children(&self, rank: Rank) -> &[Rank] {
        let (a, b) = (
            self.first_child[rank as usize],
            self.first_child[rank as usize + 1],
        );
        &self.children[a as usize..b as usize]
    }

    /// Where the children of `rank` sit in the flat list of all children
    /// (see [`Tree::child_at`]): lets a caller keep a cursor in 4 bytes.
    pub fn child_range(&self, rank: Rank) -> std::ops::Range<u32> {
        self.first_child[rank as usize]..self.first_child[rank as usize + 1]
    }

    /// The child at position `index` of the flat list of all children, in
    /// which every rank's children stand together in send order.
    pub fn child_at(&self, index: u32) -> Rank {
        self.children[index as usize]
    }

    /// The parent of `rank`, `None` for the root 0.
    pub fn parent(&self, rank: Rank) -> Option<Rank> {
        let p = self.parent[rank as usize];
        (p != Rank::MAX).then_some(p)
    }

    /// The ranks top-down (every parent before its children, level by
    /// level from the root) and each rank's depth (the root at 0).
    pub fn levels(&self) -> (Vec<Rank>, Vec<u32>) {
        let mut depth = vec![0u32; self.procs as usize];
        let mut order = vec![0 as Rank];
        let mut i = 0;
        while i < order.len() {
            let r = order[i];
            for &c in self.children(r) {
                depth[c as usize] = depth[r as usize] + 1;
                order.push(c);
            }
            i += 1;
        }
        (order, depth)
    }

    /// When each rank is colored in a fault-free run under `logp`: the root at
    /// 0, and the j-th child (from 0) of a rank colored at `c` at
    /// `c + j·o + o + L + o`.
    pub fn coloring_times(&self, logp: LogP) -> Vec<Tick> {
        let mut at = vec![0; self.procs as usize];
        let mut stack = vec![0 as Rank];
        while let Some(r) = stack.pop() {
            for (j, &c) in self.children(r).iter().enumerate() {
                at[c as usize] = at[r as usize] + j as Tick * logp.overhead + logp.hop();
                stack.push(c);
            }
        }
        at
    }

    /// The fault-free dissemination time: when the last rank is colored in a
    /// fault-free run. Synchronized correction starts here; the correction
    /// latency of the paper (L_SCC) is measured from here.
    pub fn dissemination_time(&self, logp: LogP) -> Tick {
        self.coloring_times(logp).into_iter().max().unwrap_or(0)
    }
}
