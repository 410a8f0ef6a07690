//! The plans a team's cores share, built once per team size from the
//! engine-neutral [`Config`]: one plan per collective, each an enum of the
//! algorithms that collective may run, so that no combination the
//! configuration cannot mean is representable.

use std::time::Duration;

use crate::call::config::{
    BroadcastAlgorithm, Config, ReduceAlgorithm, DEFAULT_FTCO_TIMEOUT, DEFAULT_TREE, FTCO_LOGP,
    MAX_FTCO_TIMEOUT,
};
use crate::error::ConfigError;
use crate::protocol::ack_tree::AckTreePlan;
use crate::protocol::allreduce::{AllreduceAlgorithm, AllreducePlan};
use crate::protocol::bcast::{BcastPlan, Correction};
use crate::protocol::ftco::FtcoPlan;
use crate::protocol::gossip::{BigPlan, GossipPlan};
use crate::protocol::reduce::ReducePlan;
use crate::topology::{Shape, Tree, TreeSpec};
use crate::types::{LogP, Rank, Tick};

/// What a broadcast runs ([`BroadcastAlgorithm`], resolved for the team's
/// size).
// Built once per team (and shrink): the size of its variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum BroadcastPlan {
    /// A corrected tree (Corrected Trees, Section 3). Also what gossip and
    /// BIG fall back to in a team of one.
    Tree(BcastPlan),
    /// Corrected gossip, and the seed of its peers.
    Gossip(GossipPlan, u64),
    /// The binomial graph.
    Big(BigPlan),
    /// FTCO's broadcast, its times in nanoseconds.
    Ftco(FtcoPlan),
    /// The ack tree.
    AckTree(AckTreePlan),
}

/// What reduce, allreduce and barrier run ([`ReduceAlgorithm`]).
// Built once per team (and shrink): the size of its variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum ReductionPlan {
    /// Up-correction: the reduce's plan and the allreduce's (whose
    /// broadcast uses the team's correction if that guarantees delivery,
    /// checked correction otherwise).
    UpCorrection {
        reduce: ReducePlan,
        allreduce: AllreducePlan,
    },
    /// FTCO's reduce and allreduce, times in nanoseconds.
    Ftco(FtcoPlan),
}

/// The plans every rank's cores share.
#[derive(Debug)]
pub(crate) struct Plans {
    pub(crate) broadcast: BroadcastPlan,
    pub(crate) reduction: ReductionPlan,
    /// The broadcast of [agreement](super::Caller::agree_failed): one that
    /// reaches every live rank from a live root whatever the team's
    /// correction (the up-correction allreduce's broadcast: a correction
    /// that guarantees delivery, or the star's flat tree).
    pub(crate) agreement: BcastPlan,
    /// The fault budget f of reduce, allreduce and barrier.
    pub(crate) f: u32,
    /// The allreduce's shape, `Auto` resolved.
    pub(crate) allreduce_shape: AllreduceAlgorithm,
    /// The tree of the corrected broadcast (and of the tree allreduce's
    /// broadcast), the team's pick resolved.
    pub(crate) broadcast_tree: TreeSpec,
}

impl Plans {
    /// The plans of `config` for a team of `ranks` with fault budget
    /// `f < ranks`; `crowded`: its ranks outnumber the cores they run on
    /// (the engine knows), which picks the flat tree for the corrected
    /// broadcast and the star allreduce where the configuration leaves the
    /// choice to the team.
    pub(crate) fn build(
        config: &Config,
        ranks: u32,
        f: u32,
        crowded: bool,
    ) -> Result<Self, ConfigError> {
        // The team's picks follow the machine unless told otherwise.
        let crowded = crowded && config.adapt_to_machine;
        // The tree set, or the binomial tree; for the corrected broadcast
        // where ranks outnumber cores, the flat tree (Config::tree).
        let given = config.tree.unwrap_or(DEFAULT_TREE);
        let bcast_tree = match config.tree {
            None if crowded => TreeSpec::interleaved(Shape::KAry(ranks.saturating_sub(1).max(2))),
            _ => given,
        };
        // Engines have no LogP model: trees are built for the paper's.
        let tree = Tree::build(bcast_tree, ranks, LogP::PAPER)?;
        let reduce = ReducePlan::new(given, ranks, f, config.scheme, LogP::PAPER)?;
        // Allreduce needs a broadcast that reaches every live rank.
        let correction = if config.correction.guarantees_delivery() {
            config.correction
        } else {
            Correction::Checked
        };
        let pace = config.correction_pace.as_nanos() as Tick;
        let star = match config.allreduce {
            AllreduceAlgorithm::Star => true,
            AllreduceAlgorithm::Tree => false,
            AllreduceAlgorithm::Auto => crowded,
        };
        let allreduce = if star {
            AllreducePlan::star(ranks, f, config.scheme)?
        } else {
            AllreducePlan::new(
                reduce.clone(),
                BcastPlan::new(tree.clone(), correction, 0).with_pace(pace),
            )?
        };
        let agreement = allreduce.bcast().clone();
        let allreduce_shape = if star {
            AllreduceAlgorithm::Star
        } else {
            AllreduceAlgorithm::Tree
        };
        // Gossip and BIG need two ranks; a team of one broadcasts to
        // itself through the tree.
        let broadcast = match config.broadcast {
            BroadcastAlgorithm::Gossip(spec) if ranks >= 2 => {
                BroadcastPlan::Gossip(spec.choose(ranks, LogP::PAPER)?.plan, config.seed)
            }
            BroadcastAlgorithm::Big if ranks >= 2 => BroadcastPlan::Big(BigPlan::new(ranks)?),
            BroadcastAlgorithm::Ftco { timeout } => {
                let timeout = ftco_timeout(timeout)?;
                BroadcastPlan::Ftco(
                    FtcoPlan::new(given, ranks, FTCO_LOGP, Some(timeout))?.with_patience(timeout),
                )
            }
            BroadcastAlgorithm::AckTree => {
                BroadcastPlan::AckTree(AckTreePlan::new(given, ranks, LogP::PAPER)?)
            }
            BroadcastAlgorithm::Tree | BroadcastAlgorithm::Gossip(_) | BroadcastAlgorithm::Big => {
                BroadcastPlan::Tree(BcastPlan::new(tree, config.correction, 0).with_pace(pace))
            }
        };
        let reduction = match config.reduce {
            ReduceAlgorithm::Ftco { timeout } => {
                let timeout = ftco_timeout(timeout)?;
                ReductionPlan::Ftco(
                    FtcoPlan::new(given, ranks, FTCO_LOGP, Some(timeout))?.with_patience(timeout),
                )
            }
            ReduceAlgorithm::UpCorrection => ReductionPlan::UpCorrection { reduce, allreduce },
        };
        Ok(Plans {
            broadcast_tree: bcast_tree,
            broadcast,
            reduction,
            agreement,
            f,
            allreduce_shape,
        })
    }
}

/// FTCO's timeout unit in nanoseconds: the default, or `timeout` if it is
/// at most [`MAX_FTCO_TIMEOUT`] (a zero one the plan refuses).
fn ftco_timeout(timeout: Option<Duration>) -> Result<Tick, ConfigError> {
    let timeout = timeout.unwrap_or(DEFAULT_FTCO_TIMEOUT);
    if timeout > MAX_FTCO_TIMEOUT {
        return Err(ConfigError::BadTimeout {
            why: format!("{timeout:?} is above the longest, {MAX_FTCO_TIMEOUT:?}"),
        });
    }
    Ok(crate::driver::nanos(timeout))
}

/// A communicator shrunk or split from a team ([`super::Caller::regroup`]):
/// its members (in the transport's numbering, in their new order) and its
/// plans. Kept for as long
/// as the engine runs, so that cores borrow them for its lifetime.
#[derive(Debug)]
pub(crate) struct Generation {
    pub(crate) members: Box<[Rank]>,
    /// `members`' index by transport rank (`Members::index_of`).
    pub(crate) index: Box<[(Rank, Rank)]>,
    pub(crate) plans: Plans,
}
