//! Topology: pure functions of (rank, P, parameters).
//!
//! * [`Tree`]: the dissemination trees of Corrected Trees Section 3.2
//!   (interleaved k-ary, binomial, Lamé, LogP-optimal, and in-order variants),
//!   built from the closed forms in [`kary`], [`binomial`] and [`timed`].
//! * [`ring`]: the correction ring and the maximum gap.
//! * [`interleave`]: a brute-force check of Definition 1.

pub mod binomial;
pub mod interleave;
pub mod kary;
pub mod ring;
mod spec;
pub mod timed;
mod tree;

pub use spec::{Numbering, Shape, TreeSpec};
pub use tree::{interleaved_children, interleaved_parent, Tree, MAX_PROCS};
