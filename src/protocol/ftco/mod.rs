//! FTCO: the timeout-based collectives of *Tree-based Fault-Tolerant
//! Collective Operations* (Sections 3-5, Algorithms 1-4, Appendices A and
//! D), the baseline correction is measured against. One concept per file:
//!
//! * [`plan`]: what every node shares: the tree (f_tree), the expected
//!   arrival times of both phases (f_ETA) and the timeout function
//!   (f_timeout, Appendix A);
//! * [`bcast`]: the broadcast ([`Ftco`]), which is also an allreduce's down
//!   phase;
//! * `cover`: which nodes a partial result includes, so that none is
//!   counted twice;
//! * [`reduce`]: reduce and allreduce ([`FtcoReduce`]).
//!
//! # Reduce and allreduce
//!
//! **Up phase** (Figure 1, Algorithm 3 lines 2-7). A node waits for DATA
//! ([`Tag::Upward`](crate::protocol::Tag::Upward)) from every node in its
//! Down set (its children at first), folds each partial into its own
//! input, then sends its partial up as DATA and acknowledges each DATA it
//! received with an ACK. We acknowledge a DATA as soon as it is folded in
//! rather than after the node's own DATA went up (Figure 1's order): the
//! ACK then overlaps the wait for the other children and never delays the
//! DATA up (a node receives one message per o, and an ACK takes o to
//! send), while a child waiting on a parent that waits on a dead sibling
//! would otherwise time out and suspect a live parent.
//!
//! **A silent child** (Algorithm 4 lines 18-25, then 2-10; Figure 4). A
//! node that has no DATA from a Down node by its expected arrival (f_ETA of
//! the up phase, [`FtcoPlan::up_eta`]) plus one timeout unit asks it by
//! KEEPALIVE. An ACK says it lives and waits too: the node asks again one
//! timeout later. A node with its partial complete answers a KEEPALIVE
//! from above with the partial as DATA. No answer within f_timeout and the
//! node is suspected and circumvented: its children join the Down set
//! (Down ← Down_x ∪ (Down − {x})), asked by KEEPALIVE at once (their
//! expected arrival has passed).
//!
//! **A silent parent** (Appendix D's grand-parent fall-back; Figure 3). The
//! DATA sent up is watched; no ACK within f_timeout and the parent is
//! suspected, and the same DATA goes to the grand-parent, and so on up to
//! the root.
//!
//! **Each value used once** (Section 4 asks non-idempotent operators such
//! as addition for "a specific routine"; ours). A partial of node w
//! includes exactly subtree(w) minus a list of single nodes (`missing`):
//! those w, or a node below it, circumvented. DATA carries the partial,
//! that list, and w's own input alone. A receiver folds in the whole
//! partial if it shares no node with what it already has; otherwise only
//! w's own input, if that is not in yet, and then waits on w's children
//! itself as if w had been circumvented (so what the partial held below w
//! comes by other DATA). A node whose partial went up already (or that has
//! the result) acknowledges a late DATA only if the sender's own input is
//! in; otherwise it stays silent, and the sender walks on up towards the
//! root, which acknowledges everything. Which nodes a partial holds is
//! thus always known exactly, and the root's result counts every node at
//! most once, whatever the timing.
//!
//! **Down phase** (Figure 2, Algorithm 3 lines 8-14). The root's partial
//! is the result. An allreduce sends it down with the broadcast core
//! ([`Ftco`]), started on the Down set the up phase ended with (the nodes
//! whose DATA it folded in) and waiting on the node that acknowledged its
//! DATA: the circumventions of the up phase carry over, as Algorithm 4's
//! updates of Up and Down do. Its f_ETA is the fault-free reduce time plus
//! the broadcast's. A KEEPALIVE from below is a wait for the result (the
//! down phase answers it); from above, a request for the partial (the up
//! phase answers, or the down phase once the result is here, so that a
//! node circumvented and still collecting learns the result and stops).
//!
//! **The root never fails** (Section 2's assumption, which the reduce and
//! allreduce keep): a DATA sent to the root waits for its ACK however
//! late, and the down phase's KEEPALIVE walk, once at the root, keeps
//! asking it instead of giving up. A KEEPALIVE answered by an ACK ("alive,
//! waiting") is repeated after a wait that doubles each time (in both
//! phases): with a timeout far below the network's round trip, askers that
//! never give up would otherwise swamp the root's receive port faster than
//! it drains, and the run would not end.
//!
//! **Several roots** (Section 5.2.1, the multi-root k-nomial tree,
//! [`FtcoPlan::roots`] > 1; allreduce only). Each root reduces its own
//! tree as above, sends its partial to every other root (DATA, no ACK: the
//! roots never fail, each as the root of Section 2), combines the R
//! partials in root order once it has them all, and sends the result down
//! its own tree. A KEEPALIVE walk ends at the node's own root. A reduce
//! on that tree is the K-nomial reduce to root 0
//! ([`multiroot`](crate::topology::multiroot)).
//!
//! **Priorities** (Algorithm 2: DATA, then KEEPALIVE, then ACK, as an
//! engine hands messages one at a time, they show in what a node sends):
//! its DATA up, DATA answering a KEEPALIVE, the down phase's DATA, then
//! ACKs, then its own KEEPALIVEs.
//!
//! **Guarantees** (Definition 3.2, the root alive as in Section 2). Every
//! live node delivers once (a reduce's non-root: that its DATA was
//! acknowledged; the root and every allreduce node: the result); an
//! allreduce delivers the root's one result everywhere; no node is counted
//! twice; a failed node may be in or out. Every node that never failed is
//! included as long as no live node is suspected (the timeout exceeds the
//! time a live node takes to answer). **With false suspicions** (a timeout
//! shorter than the network's round trip) a live node circumvented while
//! its DATA was late may be left out, as if it had failed; the result is
//! still the same on every node and counts no node twice. Every node falls
//! silent after finitely many sends; none ever
//! [finishes](crate::protocol::Protocol::is_finished): a KEEPALIVE may
//! still ask for its partial or the result (Section 4, "requires the root
//! to remain active throughout").
//!
//! **Fault-free work**: every non-root node sends one DATA up and one ACK
//! for each child's DATA; an allreduce adds one DATA down per edge and its
//! ACK: 2(P − 1) messages for a reduce, 4(P − 1) for an allreduce, no
//! KEEPALIVE. The paper's "3 messages per node" counts until the operation
//! completes: most nodes are leaves, whose ACK of the result is sent after
//! the last node has it.

pub mod bcast;
mod cover;
pub mod plan;
pub mod reduce;
mod suspicion;

pub use bcast::Ftco;
pub use plan::FtcoPlan;
pub use reduce::{FtcoCollective, FtcoData, FtcoOutput, FtcoReduce};

use crate::types::{Rank, Tick};

/// What an FTCO core's timeouts did (Appendix A's f_timeout fired), for
/// an engine's report: every FTCO core, broadcast or reduction, tells it
/// the same way.
pub trait Timeouts {
    /// Timeouts fired so far.
    fn timeouts(&self) -> u32;

    /// The ranks suspected (real ranks) and the core's time of each
    /// suspicion: a rank alive then is a false suspicion.
    fn suspected(&self) -> Vec<(Rank, Tick)>;
}

impl<P: Clone + Send + 'static> Timeouts for Ftco<'_, P> {
    fn timeouts(&self) -> u32 {
        Ftco::timeouts(self)
    }

    fn suspected(&self) -> Vec<(Rank, Tick)> {
        self.suspicions().collect()
    }
}

impl<P, O> Timeouts for FtcoReduce<'_, P, O>
where
    P: Clone + Send + 'static,
    O: crate::protocol::reduce::Combine<P>,
{
    fn timeouts(&self) -> u32 {
        FtcoReduce::timeouts(self)
    }

    fn suspected(&self) -> Vec<(Rank, Tick)> {
        self.suspicions().collect()
    }
}
