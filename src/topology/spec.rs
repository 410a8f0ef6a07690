//! Names of trees, as the CLI and the team builder spell them.

use std::fmt;
use std::str::FromStr;

use crate::error::ConfigError;

/// The shape of a dissemination tree (Corrected Trees, Section 3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// Interleaved k-ary tree, k >= 2 (Section 3.2.1).
    KAry(u32),
    /// Binomial tree (Section 3.2.2).
    Binomial,
    /// Lamé tree of order k >= 1 (Section 3.2.2, Eq. 1-2); order 1 is binomial.
    Lame(u32),
    /// The LogP-optimal tree for the model's L and o (Section 3.2.3).
    Optimal,
    /// Interleaved k-nomial tree, k >= 2 (FTCO Section 5.2.1: k - 1 sends
    /// a round); k = 2 is binomial.
    KNomial(u32),
    /// Multi-root k-nomial tree, k >= 2 (FTCO Section 5.2.1): k fully
    /// connected roots, each the top of a k-nomial tree. As a
    /// single-parent tree it is `KNomial(k)` (root 0 reaches the other
    /// roots first); the FTCO allreduce uses the clique of roots
    /// ([`multiroot`](crate::topology::multiroot)).
    MultiRoot(u32),
}

/// How ranks are numbered within a shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Numbering {
    /// The paper's interleaved numbering (Definition 1): subtrees spread over
    /// the ring, so a failure leaves small gaps.
    #[default]
    Interleaved,
    /// Depth-first (pre-order) numbering, children visited in send order:
    /// every subtree is a contiguous run of the ring. Kept for comparison.
    InOrder,
}

/// A tree: shape and numbering. Parses from and prints as `binomial`,
/// `lame:K`, `kary:K`, `knomial:K`, `multiroot:K`, `optimal`, each optionally prefixed by
/// `inorder-`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TreeSpec {
    /// The shape.
    pub shape: Shape,
    /// The numbering.
    pub numbering: Numbering,
}

impl TreeSpec {
    /// An interleaved tree of the given shape.
    pub const fn interleaved(shape: Shape) -> Self {
        TreeSpec {
            shape,
            numbering: Numbering::Interleaved,
        }
    }

    /// The interleaved binomial tree (Corrected Trees, Section 3.2.2).
    pub const fn binomial() -> Self {
        TreeSpec::interleaved(Shape::Binomial)
    }

    /// The interleaved k-ary tree, k >= 2 (Section 3.2.1); a k of at
    /// least the ranks less one is the flat tree (the root sends to all).
    pub const fn kary(k: u32) -> Self {
        TreeSpec::interleaved(Shape::KAry(k))
    }

    /// The interleaved Lamé tree of order k >= 1 (Section 3.2.2).
    pub const fn lame(k: u32) -> Self {
        TreeSpec::interleaved(Shape::Lame(k))
    }

    /// The interleaved k-nomial tree, k >= 2 (FTCO Section 5.2.1).
    pub const fn knomial(k: u32) -> Self {
        TreeSpec::interleaved(Shape::KNomial(k))
    }

    /// The LogP-optimal tree (Section 3.2.3).
    pub const fn optimal() -> Self {
        TreeSpec::interleaved(Shape::Optimal)
    }

    /// This shape, numbered depth-first instead of interleaved (kept for
    /// comparison: a failure leaves one long gap).
    pub const fn in_order(self) -> Self {
        TreeSpec {
            shape: self.shape,
            numbering: Numbering::InOrder,
        }
    }

    /// The paper's four trees of Table 1: binomial, Lamé k=2, 4-ary, optimal.
    pub const PAPER: [TreeSpec; 4] = [
        TreeSpec::interleaved(Shape::Binomial),
        TreeSpec::interleaved(Shape::Lame(2)),
        TreeSpec::interleaved(Shape::KAry(4)),
        TreeSpec::interleaved(Shape::Optimal),
    ];
}

impl FromStr for TreeSpec {
    type Err = ConfigError;

    fn from_str(text: &str) -> Result<Self, ConfigError> {
        let bad = |why: &str| ConfigError::BadTree {
            spec: text.to_string(),
            why: why.to_string(),
        };
        let lower = text.trim().to_ascii_lowercase();
        let (numbering, rest) = match lower.strip_prefix("inorder-") {
            Some(rest) => (Numbering::InOrder, rest),
            None => (Numbering::Interleaved, lower.as_str()),
        };
        let (name, arg) = match rest.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (rest, None),
        };
        let param = |min: u32| -> Result<u32, ConfigError> {
            let a = arg.ok_or_else(|| bad("this tree needs a parameter after ':'"))?;
            let k: u32 = a
                .parse()
                .map_err(|_| bad("the parameter must be a whole number"))?;
            if k < min {
                return Err(bad(&format!("the parameter must be at least {min}")));
            }
            Ok(k)
        };
        let no_param = || match arg {
            Some(_) => Err(bad("this tree takes no parameter")),
            None => Ok(()),
        };
        let shape = match name {
            "binomial" => no_param().map(|_| Shape::Binomial)?,
            "optimal" => no_param().map(|_| Shape::Optimal)?,
            "lame" => Shape::Lame(param(1)?),
            "kary" => Shape::KAry(param(2)?),
            "knomial" => Shape::KNomial(param(2)?),
            "multiroot" => Shape::MultiRoot(param(2)?),
            _ => return Err(bad("unknown tree")),
        };
        Ok(TreeSpec { shape, numbering })
    }
}

impl fmt::Display for TreeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.numbering == Numbering::InOrder {
            f.write_str("inorder-")?;
        }
        match self.shape {
            Shape::KAry(k) => write!(f, "kary:{k}"),
            Shape::Binomial => f.write_str("binomial"),
            Shape::Lame(k) => write!(f, "lame:{k}"),
            Shape::Optimal => f.write_str("optimal"),
            Shape::KNomial(k) => write!(f, "knomial:{k}"),
            Shape::MultiRoot(k) => write!(f, "multiroot:{k}"),
        }
    }
}
