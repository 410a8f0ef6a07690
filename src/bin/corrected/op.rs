//! The collectives the command line runs (`run`) or simulates (`sim`).

use crate::error::CliError;

/// A collective named by `--op`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Broadcast from a root.
    Bcast,
    /// Reduce to a root.
    Reduce,
    /// Allreduce.
    Allreduce,
    /// Barrier.
    Barrier,
}

impl Op {
    /// Parses `--op`, accepting only the collectives in `accepted` (which
    /// `expected` lists for the error).
    pub fn parse(text: &str, accepted: &[Op], expected: &'static str) -> Result<Op, CliError> {
        let op = match text {
            "bcast" | "broadcast" => Some(Op::Bcast),
            "reduce" => Some(Op::Reduce),
            "allreduce" => Some(Op::Allreduce),
            "barrier" => Some(Op::Barrier),
            _ => None,
        };
        op.filter(|op| accepted.contains(op))
            .ok_or_else(|| CliError::UnknownOp {
                op: text.to_string(),
                expected,
            })
    }

    /// The name `--op` takes.
    pub fn name(self) -> &'static str {
        match self {
            Op::Bcast => "bcast",
            Op::Reduce => "reduce",
            Op::Allreduce => "allreduce",
            Op::Barrier => "barrier",
        }
    }

    /// True for the collectives with a root (`--root`).
    pub fn rooted(self) -> bool {
        matches!(self, Op::Bcast | Op::Reduce)
    }
}
