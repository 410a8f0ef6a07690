//! What an allreduce runs: the algorithm a team picks
//! ([`AllreduceAlgorithm`]) and the reduce and broadcast plans a round
//! uses ([`AllreducePlan`]; Küttler, Härtig, Section 5, and the star).

use std::fmt;
use std::str::FromStr;

use crate::error::ConfigError;
use crate::protocol::bcast::{BcastPlan, Correction};
use crate::protocol::reduce::{FailureScheme, ReducePlan};
use crate::topology::{Shape, Tree, TreeSpec};
use crate::types::LogP;

/// Which allreduce (and barrier) algorithm a team runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AllreduceAlgorithm {
    /// [`Star`](AllreduceAlgorithm::Star) where ranks outnumber the cores
    /// they run on, [`Tree`](AllreduceAlgorithm::Tree) otherwise. Where
    /// ranks share cores an operation's time is its total work (every
    /// message is handled on one of few cores, and every rank must be
    /// scheduled once), not its critical path; the star sends 2(P - 1)
    /// messages against the tree's 7P or so (`docs/benchmarks.md`).
    #[default]
    Auto,
    /// Küttler and Härtig, Section 5: up-correction reduce along the
    /// I(f)-tree, then a corrected-tree broadcast (the pair exchange for a
    /// team of two with f >= 1). Logarithmic depth: for ranks with cores of
    /// their own, and the simulator.
    Tree,
    /// [`AllreducePlan::star`]: inputs straight to the round's root, the
    /// result straight back.
    Star,
}

impl FromStr for AllreduceAlgorithm {
    type Err = ConfigError;

    fn from_str(text: &str) -> Result<Self, ConfigError> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(AllreduceAlgorithm::Auto),
            "tree" => Ok(AllreduceAlgorithm::Tree),
            "star" => Ok(AllreduceAlgorithm::Star),
            _ => Err(ConfigError::BadAllreduce {
                spec: text.to_string(),
            }),
        }
    }
}

impl fmt::Display for AllreduceAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AllreduceAlgorithm::Auto => "auto",
            AllreduceAlgorithm::Tree => "tree",
            AllreduceAlgorithm::Star => "star",
        })
    }
}

/// The reduce and broadcast plans an allreduce uses. The broadcast's
/// correction must guarantee delivery (checked, checked-sync or delayed).
#[derive(Clone, Debug)]
pub struct AllreducePlan {
    reduce: ReducePlan,
    bcast: BcastPlan,
}

impl AllreducePlan {
    /// Combines the plans; errors if their team sizes differ or the
    /// broadcast's correction does not guarantee delivery.
    pub fn new(reduce: ReducePlan, bcast: BcastPlan) -> Result<Self, ConfigError> {
        if reduce.procs() != bcast.procs() {
            return Err(ConfigError::PlanSizes {
                reduce: reduce.procs(),
                bcast: bcast.procs(),
            });
        }
        if !bcast.correction().guarantees_delivery() {
            return Err(ConfigError::BadCorrection {
                spec: bcast.correction().to_string(),
                why: "allreduce needs a correction that guarantees delivery".into(),
            });
        }
        Ok(AllreducePlan { reduce, bcast })
    }

    /// The star allreduce of `procs` ranks: a [star reduce](ReducePlan::star)
    /// to the round's root, which sends the result straight to every other
    /// rank, with no correction, and the root retry of Section 5 as in every
    /// allreduce. A star's root reaches every live rank itself, so the
    /// broadcast needs no correction to deliver while the root lives; if it
    /// fails, the next round's root does (a rank that got the result
    /// contributes it decided). 2(P - 1) messages fault-free and two message
    /// delays, against Theorem 5's reduce plus a corrected broadcast; the
    /// root handles 2(P - 1) messages in turn, which pays where ranks share
    /// cores and total work, not the critical path, sets the time.
    pub fn star(procs: u32, f: u32, scheme: FailureScheme) -> Result<Self, ConfigError> {
        let reduce = ReducePlan::star(procs, f, scheme)?;
        let flat = TreeSpec::interleaved(Shape::KAry(procs.saturating_sub(1).max(2)));
        let tree = Tree::build(flat, procs, LogP::PAPER)?;
        Ok(AllreducePlan {
            reduce,
            bcast: BcastPlan::new(tree, Correction::None, 0),
        })
    }

    /// True for a [star](AllreducePlan::star) allreduce.
    pub fn is_star(&self) -> bool {
        self.reduce.is_star()
    }

    /// The reduce plan.
    pub fn reduce(&self) -> &ReducePlan {
        &self.reduce
    }

    /// The broadcast plan.
    pub fn bcast(&self) -> &BcastPlan {
        &self.bcast
    }

    /// The team size.
    pub fn procs(&self) -> u32 {
        self.reduce.procs()
    }

    /// True when the team is a pair: the allreduce is then a [pair
    /// exchange](crate::protocol::pair), one message each way, whatever f
    /// (it survives the one failure a pair can have; with f = 0 the paper's
    /// reduce and broadcast took three message delays and four times as
    /// long on threads, docs/benchmarks.md).
    pub fn is_pair(&self) -> bool {
        self.procs() == 2
    }
}
