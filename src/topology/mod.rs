//! Topology: pure functions of (rank, P, parameters).
//!
//! * [`Tree`]: the dissemination trees of Corrected Trees Section 3.2
//!   (interleaved k-ary, binomial, Lamé, LogP-optimal, and in-order variants),
//!   built from the closed forms in [`kary`], [`binomial`] and [`timed`];
//!   and FTCO's k-nomial tree ([`knomial`]) and multi-root k-nomial tree
//!   ([`multiroot`], Section 5.2.1).
//! * [`ring`]: the correction ring and the maximum gap.
//! * [`interleave`]: a brute-force check of Definition 1.
//! * [`Groups`], [`IfTree`]: up-correction groups and the I(f)-tree of the
//!   up-correction reduce.

pub mod binomial;
mod groups;
pub mod interleave;
mod itree;
pub mod kary;
pub mod knomial;
pub mod multiroot;
pub mod ring;
mod spec;
pub mod timed;
mod tree;

pub use groups::Groups;
pub use itree::IfTree;
pub use spec::{Numbering, Shape, TreeSpec};
pub use tree::{interleaved_children, interleaved_parent, Tree, MAX_PROCS};
