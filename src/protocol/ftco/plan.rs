//! What every node of one FTCO operation shares (FTCO, Section 4: f_tree,
//! f_ETA, f_timeout; Appendix A): the tree, the model, the timeout unit,
//! and the fault-free schedule the expected arrival times come from.

use crate::error::ConfigError;
use crate::topology::{multiroot, Tree, TreeSpec};
use crate::types::{LogP, Rank, Tick};

use super::suspicion::Known;

/// What every node of one FTCO broadcast, reduce or allreduce shares: the
/// tree, the model, the timeout unit and every node's expected arrival
/// times (FTCO, Section 4: f_tree, f_ETA, f_timeout; Appendix A).
#[derive(Clone, Debug)]
pub struct FtcoPlan {
    pub(super) tree: Tree,
    logp: LogP,
    timeout: Tick,
    /// How long past its f_ETA a node waits for a DATA before it asks by
    /// KEEPALIVE: 0, as Algorithm 4 line 21 reads, unless an engine says
    /// otherwise ([`FtcoPlan::with_patience`]).
    patience: Tick,
    /// f_ETA of the broadcast (and of an allreduce's down phase, shifted
    /// by [`FtcoPlan::reduce_time`]): when each node gets the value.
    pub(super) eta: Vec<Tick>,
    /// f_ETA of the reduce (up) phase: when each node's DATA has been
    /// received by its parent, fault-free.
    up_eta: Vec<Tick>,
    /// When the root has received its last child's DATA, fault-free.
    reduce_time: Tick,
    /// Tree level of each node (the root at 0).
    depth: Vec<u32>,
    /// Nodes in each node's subtree, itself included.
    size: Vec<u32>,
    /// Fully connected roots of the tree (FTCO Section 5.2.1; 1 but for
    /// `multiroot:K`): ranks `0..roots`.
    roots: u32,
    /// f_ETA of an allreduce's result (Section 4: "one [time] for the
    /// subtree data and the other for the final result"): when each node
    /// has it, fault-free.
    result_eta: Vec<Tick>,
}

impl FtcoPlan {
    /// The tree `spec` over `procs` ranks in `logp`, with timeout unit
    /// `timeout` ticks (`None`: [`FtcoPlan::default_timeout`]). Errors on a
    /// bad tree, team size or a zero timeout.
    pub fn new(
        spec: TreeSpec,
        procs: u32,
        logp: LogP,
        timeout: Option<Tick>,
    ) -> Result<Self, ConfigError> {
        let tree = Tree::build(spec, procs, logp)?;
        let timeout = timeout.unwrap_or_else(|| Self::default_timeout(logp));
        if timeout == 0 {
            return Err(ConfigError::BadTimeout {
                why: "the timeout must be at least 1 tick".to_string(),
            });
        }
        let eta = tree.coloring_times(logp);
        let n = procs as usize;
        let (order, depth) = tree.levels();
        // The fault-free reduce, bottom-up: a node sends its DATA up once it
        // has received every child's (leaves at 0); a parent receives the
        // DATA one at a time, o each, in arrival order.
        let (o, l) = (logp.overhead, logp.latency);
        let mut done = vec![0 as Tick; n];
        let mut up_eta = vec![0 as Tick; n];
        let mut size = vec![1u32; n];
        for &r in order.iter().rev() {
            let mut arrivals: Vec<(Tick, Rank)> = tree
                .children(r)
                .iter()
                .map(|&c| (done[c as usize] + o + l, c))
                .collect();
            arrivals.sort_unstable();
            let mut recv = 0;
            for (a, c) in arrivals {
                recv = recv.max(a) + o;
                up_eta[c as usize] = recv;
                size[r as usize] += size[c as usize];
            }
            done[r as usize] = recv;
        }
        let roots = tree.roots();
        let result_eta = if roots > 1 {
            multiroot_result_eta(&tree, logp, roots, &done, &up_eta)
        } else {
            eta.iter().map(|&t| done[0] + t).collect()
        };
        Ok(FtcoPlan {
            tree,
            logp,
            timeout,
            patience: 0,
            eta,
            up_eta,
            reduce_time: done[0],
            depth,
            size,
            roots,
            result_eta,
        })
    }

    /// The default timeout unit: one round trip of a tree hop, 2(2o + L)
    /// (8 ticks for L = 2, o = 1; Appendix A, see the module doc).
    pub fn default_timeout(logp: LogP) -> Tick {
        2 * logp.hop()
    }

    /// The tree (rooted at virtual rank 0).
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// P.
    pub fn procs(&self) -> u32 {
        self.tree.procs()
    }

    /// The timeout unit T.
    pub fn timeout(&self) -> Tick {
        self.timeout
    }

    /// The same plan with nodes waiting `patience` ticks past their f_ETA
    /// before they ask for a missing DATA by KEEPALIVE. The paper's node
    /// asks as soon as its f_ETA has passed (Section 4, Algorithm 4 line
    /// 21: `now > f_ETA(x)`), which is right where f_ETA is the fault-free
    /// schedule itself, as in the simulator (the default, 0). On threads
    /// f_ETA comes from a model of a hop that scheduling noise overruns
    /// every few calls: asking then would cost KEEPALIVE/ACK pairs in runs
    /// where nothing failed, so the call layer waits one timeout unit T.
    pub fn with_patience(mut self, patience: Tick) -> Self {
        self.patience = patience;
        self
    }

    /// How long past its f_ETA a node waits before it asks by KEEPALIVE
    /// ([`FtcoPlan::with_patience`]).
    pub fn patience(&self) -> Tick {
        self.patience
    }

    /// When a node waiting for DATA expected at `eta` asks for it first:
    /// once `eta` has passed (Algorithm 4 line 21's strict `>`), after the
    /// plan's patience.
    pub(super) fn ask_after(&self, eta: Tick) -> Tick {
        eta + 1 + self.patience
    }

    /// f_timeout (Appendix A): how long node `from` waits for an answer
    /// from node `to`, `dist` tree levels away (virtual ranks):
    /// dist·T + o·(children(to) + children(from)).
    pub fn f_timeout(&self, from: Rank, to: Rank, dist: u32) -> Tick {
        let kids = self.tree.children(to).len() + self.tree.children(from).len();
        Tick::from(dist) * self.timeout + self.logp.overhead * kids as Tick
    }

    /// The fault-free reduce's completion (Section 4, f_ETA of the result
    /// at the root): when the root (virtual rank 0) has received its last
    /// child's DATA. An allreduce's down phase starts here.
    pub fn reduce_time(&self) -> Tick {
        self.reduce_time
    }

    /// How many fully connected roots the tree has (FTCO Section 5.2.1):
    /// ranks `0..roots` (virtual), 1 but for `multiroot:K`. An allreduce
    /// on several roots exchanges their partials all-to-all.
    pub fn roots(&self) -> u32 {
        self.roots
    }

    /// f_ETA of an allreduce's result at node `rank` (virtual; Section 4):
    /// when it has the result in a fault-free allreduce. One root: the
    /// reduce's completion plus the broadcast's arrival; several: each
    /// root's own tree reduced, the partials exchanged, the result down
    /// the root's own tree.
    pub fn result_eta(&self, rank: Rank) -> Tick {
        self.result_eta[rank as usize]
    }

    /// The fault-free allreduce's latency: when the last node has the
    /// result (the largest [`FtcoPlan::result_eta`]).
    pub fn allreduce_time(&self) -> Tick {
        self.result_eta.iter().copied().max().unwrap_or(0)
    }

    /// f_ETA of the up phase (Section 4): when node `rank`'s (virtual)
    /// DATA has been received by its parent in a fault-free reduce.
    pub fn up_eta(&self, rank: Rank) -> Tick {
        self.up_eta[rank as usize]
    }

    /// Tree level of node `rank` (virtual; the root is at 0).
    pub fn depth(&self, rank: Rank) -> u32 {
        self.depth[rank as usize]
    }

    /// Nodes in the subtree of node `rank` (virtual), itself included.
    pub fn subtree_size(&self, rank: Rank) -> u32 {
        self.size[rank as usize]
    }

    /// True when node `rank` is in the subtree of node `top` (itself
    /// included); virtual ranks.
    pub fn is_below(&self, mut rank: Rank, top: Rank) -> bool {
        let target = self.depth[top as usize];
        while self.depth[rank as usize] > target {
            match self.tree.parent(rank) {
                Some(p) => rank = p,
                None => return false,
            }
        }
        rank == top
    }

    /// The node above `rank` (virtual) `dist` levels up, and `dist + 1`: the
    /// next node a walk towards the root asks (Appendix D's grand-parent
    /// fall-back); `None` past the root.
    pub(super) fn above(&self, rank: Rank, dist: u32) -> Option<(Rank, u32)> {
        self.tree.parent(rank).map(|p| (p, dist + 1))
    }

    /// The first node above `rank` (at `dist` from the asking node) that is
    /// not known failed, or is one of the `immune` roots (virtual ranks
    /// `0..immune`, which never fail: Section 2).
    pub(super) fn live_above(
        &self,
        rank: Rank,
        dist: u32,
        known: &Known,
        immune: u32,
    ) -> Option<(Rank, u32)> {
        let mut at = self.above(rank, dist)?;
        while at.0 >= immune && known.contains(at.0) {
            match self.above(at.0, at.1) {
                Some(next) => at = next,
                None => return Some(at),
            }
        }
        Some(at)
    }

    /// The children of `rank` (at `dist`), each replaced by its own where
    /// it is known failed: where DATA goes around the known failures.
    pub(super) fn live_children(&self, rank: Rank, dist: u32, known: &Known) -> Vec<(Rank, u32)> {
        let mut out = Vec::new();
        for &c in self.tree.children(rank) {
            if known.contains(c) {
                out.extend(self.live_children(c, dist + 1, known));
            } else {
                out.push((c, dist + 1));
            }
        }
        out
    }
}

/// The fault-free schedule of an allreduce on the multi-root tree (FTCO
/// Section 5.2.1), from the single-parent view's bottom-up `done` times:
/// root `r` completes its own tree's partial (`own[r]`, root 0 without its
/// peers' DATA), sends it to its `roots - 1` peers (one per o, in
/// [`multiroot::peers`] order), receives theirs in arrival order (o each),
/// and then sends the result down its own tree; a node has the result one
/// hop after its parent's send, as in [`Tree::coloring_times`].
fn multiroot_result_eta(
    tree: &Tree,
    logp: LogP,
    roots: u32,
    done: &[Tick],
    up_eta: &[Tick],
) -> Vec<Tick> {
    let (o, l) = (logp.overhead, logp.latency);
    // Root 0's own partial: its last non-root child's DATA received.
    let mut own: Vec<Tick> = done[..roots as usize].to_vec();
    own[0] = tree.children(0)[roots as usize - 1..]
        .iter()
        .map(|&c| up_eta[c as usize])
        .max()
        .unwrap_or(0);
    let mut at = vec![0 as Tick; tree.procs() as usize];
    let mut start = vec![0 as Tick; roots as usize];
    for r in 0..roots {
        let mut arrivals: Vec<Tick> = (0..roots)
            .filter(|&q| q != r)
            .map(|q| {
                let i = multiroot::peers(q, roots).position(|p| p == r).unwrap_or(0);
                own[q as usize] + (i as Tick + 1) * o + l
            })
            .collect();
        arrivals.sort_unstable();
        let have = arrivals
            .into_iter()
            .fold(own[r as usize], |recv, a| recv.max(a) + o);
        at[r as usize] = have;
        // Its own DATA to its peers goes first (Algorithm 2's priorities).
        start[r as usize] = have.max(own[r as usize] + Tick::from(roots - 1) * o);
    }
    let (order, _) = tree.levels();
    for &p in &order {
        let kids = tree.children(p);
        let (kids, from) = if p < roots {
            (
                &kids[if p == 0 { roots as usize - 1 } else { 0 }..],
                start[p as usize],
            )
        } else {
            (kids, at[p as usize])
        };
        for (j, &c) in kids.iter().enumerate() {
            at[c as usize] = from + j as Tick * o + logp.hop();
        }
    }
    at
}
