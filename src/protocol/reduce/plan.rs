//! The reduce plan: what every rank of a reduce configuration shares (RA
//! Sections 4.2-4.4: the I(f)-tree, its up-correction groups, f and the
//! failure scheme).

use super::FailureScheme;
use crate::error::ConfigError;
use crate::topology::{Groups, IfTree, Shape, TreeSpec};
use crate::types::LogP;

/// The shape every rank of a reduce configuration shares: team size, fault
/// budget f, the I(f)-tree, the groups and the failure scheme. Root
/// independent: cores relabel ranks so the root is virtual rank 0.
#[derive(Clone, Debug)]
pub struct ReducePlan {
    pub(super) tree: IfTree,
    pub(super) groups: Groups,
    pub(super) f: u32,
    pub(super) scheme: FailureScheme,
    /// Every non-root sends its input straight to the root ([`ReducePlan::star`]).
    pub(super) star: bool,
}

impl ReducePlan {
    /// A plan for `procs` ranks tolerating `f` failures, subtrees shaped as
    /// `spec`. Errors if `procs` is 0 or `f >= procs` (at least one rank
    /// must survive).
    pub fn new(
        spec: TreeSpec,
        procs: u32,
        f: u32,
        scheme: FailureScheme,
        logp: LogP,
    ) -> Result<Self, ConfigError> {
        if procs == 0 {
            return Err(ConfigError::ZeroRanks);
        }
        if f >= procs {
            return Err(ConfigError::FaultBudget { f, procs });
        }
        Ok(ReducePlan {
            tree: IfTree::build(spec, procs, f, logp)?,
            groups: Groups::new(procs, f),
            f,
            scheme,
            star: false,
        })
    }

    /// The star reduce: every non-root sends its input straight to the root,
    /// which waits for each rank's input or news of its failure and combines
    /// what it got in ring order from the root (its own input first). Up-correction exists to keep
    /// the inputs below an inner node that fails (Section 4.2); a star has
    /// no inner node, so it needs no groups, and any number of failed
    /// non-roots costs only their own inputs. A failing rank's input is in
    /// the result if the root got it before the failure was reported, out
    /// otherwise: the root alone decides. P - 1 messages in one delay, but
    /// the root handles all of them in turn, so it suits small teams (and
    /// teams whose ranks share cores, where messages, not delays, cost).
    /// `f` is kept for the engines (detector, retries); the star itself
    /// survives any number of non-root failures.
    pub fn star(procs: u32, f: u32, scheme: FailureScheme) -> Result<Self, ConfigError> {
        let mut plan = ReducePlan::new(
            TreeSpec::interleaved(Shape::Binomial),
            procs,
            0,
            scheme,
            LogP::PAPER,
        )?;
        if f >= procs {
            return Err(ConfigError::FaultBudget { f, procs });
        }
        plan.f = f;
        plan.star = true;
        Ok(plan)
    }

    /// True for a [star](ReducePlan::star) reduce.
    pub fn is_star(&self) -> bool {
        self.star
    }

    /// The team size.
    pub fn procs(&self) -> u32 {
        self.tree.procs()
    }

    /// The fault budget f.
    pub fn f(&self) -> u32 {
        self.f
    }

    /// The failure information scheme.
    pub fn scheme(&self) -> FailureScheme {
        self.scheme
    }

    /// The I(f)-tree (virtual ranks). A [star](ReducePlan::star) does not
    /// use it.
    pub fn tree(&self) -> &IfTree {
        &self.tree
    }

    /// The up-correction groups (virtual ranks).
    pub fn groups(&self) -> &Groups {
        &self.groups
    }

    /// Theorem 5: messages of a fault-free reduce,
    /// f(f+1)·floor((P-1)/(f+1)) + a(a-1) + (P-1).
    /// A star sends P - 1.
    pub fn fault_free_messages(&self) -> u64 {
        if self.star {
            return (self.procs() - 1) as u64;
        }
        self.groups.fault_free_messages() + (self.procs() - 1) as u64
    }
}
