//! The LogP discrete-event simulator: drives the protocol cores at up to 64K
//! ranks in virtual time, injects faults, and measures what the papers
//! measure.
//!
//! * [`queue`]: the time-bucketed event queue (knows nothing of LogP);
//!   `window`, the ring of ticks and far map it keeps;
//! * [`engine`]: the LogP model of Section 2.2, generic over [`crate::protocol::Protocol`];
//! * [`faults`]: dead sets, fault rates and deaths during the operation;
//! * [`bcast`]: the broadcast experiment and its metrics;
//! * [`gossip`], [`big`]: corrected gossip and the binomial graph baseline
//!   (BIG), with the Corrected Gossip paper's metrics;
//! * [`ack_tree`], [`ftco`]: the timeout/ACK baselines (the acknowledged
//!   tree of Corrected Trees Section 5, and FTCO), with the same metrics
//!   plus timeouts fired and false suspicions;
//! * [`ftco_reduce`]: FTCO reduce and allreduce, with the same metrics as
//!   up-correction's plus timeouts fired and false suspicions;
//! * [`reduce`]: the up-correction reduce experiment and its checks;
//! * [`allreduce`]: allreduce (reduce + corrected broadcast + root retry);
//! * [`blocks`]: the large allreduce by blocks (the MPI engine's), its data
//!   phase in LogGP with messages of the sizes they carry;
//! * `runner`: the engine, buffers and base metrics every experiment shares
//!   ([`CollectiveRun`]);
//! * [`stats`], [`montecarlo`]: summaries over many seeded runs.

pub mod ack_tree;
pub mod allreduce;
pub mod bcast;
pub mod big;
pub mod blocks;
pub mod domain;
pub mod engine;
pub mod faults;
pub mod ftco;
pub mod ftco_reduce;
pub mod gossip;
pub mod montecarlo;
pub mod queue;
pub mod reduce;
mod runner;
pub mod stats;
mod window;

pub use ack_tree::{AckTreeScenario, AckTreeSim};
pub use allreduce::{AllreduceRun, AllreduceScenario, AllreduceSim};
pub use bcast::{BcastRun, BcastScenario, BcastSim, BcastSummary};
pub use big::{BigScenario, BigSim};
pub use blocks::{BlocksScenario, BlocksSim};
pub use engine::{Engine, Trace, NEVER};
pub use faults::{Dying, FaultPlan};
pub use ftco::{FtcoScenario, FtcoSim};
pub use ftco_reduce::{FtcoReduceScenario, FtcoReduceSim, Tally};
pub use gossip::{ColoringCurve, GossipRun, GossipScenario, GossipSim};
pub use montecarlo::MonteCarlo;
pub use reduce::{ReduceConfig, ReduceRun, ReduceScenario, ReduceSim};
pub use runner::CollectiveRun;
pub use stats::Stats;
