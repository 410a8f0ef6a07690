//! What every node of one FTCO operation shares (FTCO, Section 4: f_tree,
//! f_ETA, f_timeout; Appendix A): the tree, the model, the timeout unit,
//! and the fault-free schedule the expected arrival times come from.

use crate::error::ConfigError;
use crate::topology::{Tree, TreeSpec};
use crate::types::{LogP, Rank, Tick};

/// What every node of one FTCO broadcast, reduce or allreduce shares: the
/// tree, the model, the timeout unit and every node's expected arrival
/// times (FTCO, Section 4: f_tree, f_ETA, f_timeout; Appendix A).
#[derive(Clone, Debug)]
pub struct FtcoPlan {
    pub(super) tree: Tree,
    logp: LogP,
    timeout: Tick,
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
        Ok(FtcoPlan {
            tree,
            logp,
            timeout,
            eta,
            up_eta,
            reduce_time: done[0],
            depth,
            size,
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
}
