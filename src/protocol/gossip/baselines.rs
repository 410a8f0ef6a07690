//! The analytic models of the Corrected Gossip paper's baselines (Hoefler
//! et al., IPDPS 2017, Section IV-B and IV-D), as the paper evaluates them
//! in the table of Figure 7 and in Figures 7a and 7b ("the results for BIG
//! and BFB are modeled analytically"): latency, work and consistency in
//! LogP, N nodes, of
//!
//! * **BFB**, Buntinas' fault-tolerant broadcast (Section IV-B.2): a
//!   dynamic tree whose messages name the next levels' children,
//!   acknowledged back to the root; a failure detector reports a dead
//!   child, a NACK goes to the root, and the root restarts with a modified
//!   tree. Strongly consistent for any number of failures; minimal latency
//!   (no failure during the operation) (2O + L) log2 N.
//! * **BIG**, the binomial graph (Section IV-B.3, simulated by
//!   [`Big`](super::Big)): (2O + L) log2 P + O log2 P without faults,
//!   N ⌈log2 N⌉ messages, consistent while fewer than log2 N nodes fail.
//!
//! log2 N is taken as ⌈log2 N⌉, the depth of a binomial tree (the paper
//! only uses powers of two).

use crate::error::ConfigError;
use crate::protocol::gossip::big::ceil_log2;
use crate::types::{LogP, Tick};

fn depth(procs: u32) -> Result<Tick, ConfigError> {
    if procs < 2 {
        return Err(ConfigError::BadGossip {
            why: format!("a broadcast model needs at least 2 nodes, not {procs}"),
        });
    }
    Ok(Tick::from(ceil_log2(procs)))
}

/// BFB's minimal latency (Section IV-B.2), with no failure during the
/// operation: T_BFB = (2O + L) ⌈log2 N⌉, a binomial tree's depth in LogP.
pub fn bfb_latency(procs: u32, logp: LogP) -> Result<Tick, ConfigError> {
    Ok((2 * logp.overhead + logp.latency) * depth(procs)?)
}

/// BFB's expected latency when `online` failures (a mean, possibly
/// fractional) happen during the operation (Section IV-D: "we assume that
/// 20 % of the failures happen during the operation"): every such failure
/// restarts the operation, which we charge as one more full T_BFB, so
/// T_BFB (1 + online). A lower estimate: detection and the NACK's way to
/// the root are not charged (the paper does not give its model).
pub fn bfb_expected_latency(procs: u32, logp: LogP, online: f64) -> Result<f64, ConfigError> {
    Ok(bfb_latency(procs, logp)? as f64 * attempts(online)?)
}

/// 1 + `online`: the expected number of BFB attempts.
fn attempts(online: f64) -> Result<f64, ConfigError> {
    if !(online >= 0.0 && online.is_finite()) {
        return Err(ConfigError::BadGossip {
            why: format!("the number of online failures must be at least 0, not {online}"),
        });
    }
    Ok(1.0 + online)
}

/// BFB's work (Section IV-B.2): one tree message to each of the N - 1
/// other nodes and one acknowledgement back from each, 2 (N - 1) messages
/// per attempt, times (1 + `online`) attempts (see
/// [`bfb_expected_latency`]).
pub fn bfb_messages(procs: u32, online: f64) -> Result<f64, ConfigError> {
    depth(procs)?;
    Ok(2.0 * f64::from(procs - 1) * attempts(online)?)
}

/// BIG's fault-free latency as the paper models it (Section IV-B.3):
/// T_BIG = (2O + L) ⌈log2 P⌉ + O ⌈log2 P⌉, a binomial tree's depth plus
/// one receive overhead for each of the ⌈log2 P⌉ messages the last node
/// receives.
pub fn big_latency(procs: u32, logp: LogP) -> Result<Tick, ConfigError> {
    Ok(bfb_latency(procs, logp)? + logp.overhead * depth(procs)?)
}

/// BIG's work (Section IV-B.3): every reached node sends to its ⌈log2 N⌉
/// neighbours, N ⌈log2 N⌉ messages when every node is reached.
pub fn big_messages(procs: u32) -> Result<u64, ConfigError> {
    Ok(u64::from(procs) * depth(procs)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table of Figure 7's case, N = 4096, L = 2, O = 1 (LogP::PAPER):
    /// BFB 4 · 12 = 48, BIG 48 + 12 = 60, BIG's work 4096 · 12.
    #[test]
    fn the_papers_case() {
        assert_eq!(bfb_latency(4096, LogP::PAPER).unwrap(), 48);
        assert_eq!(big_latency(4096, LogP::PAPER).unwrap(), 60);
        assert_eq!(big_messages(4096).unwrap(), 49_152);
        assert_eq!(bfb_messages(4096, 0.0).unwrap(), 8190.0);
        // f = 3, 20 % of them during the operation: 0.6 restarts.
        let t = bfb_expected_latency(4096, LogP::PAPER, 0.6).unwrap();
        assert!((t - 76.8).abs() < 1e-9, "{t}");
        // Not a power of two: the binomial tree's depth, ⌈log2 1000⌉ = 10.
        assert_eq!(bfb_latency(1000, LogP::PAPER).unwrap(), 40);
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        assert!(bfb_latency(1, LogP::PAPER).is_err());
        assert!(big_latency(0, LogP::PAPER).is_err());
        assert!(big_messages(1).is_err());
        assert!(bfb_expected_latency(16, LogP::PAPER, -1.0).is_err());
        assert!(bfb_expected_latency(16, LogP::PAPER, f64::NAN).is_err());
        assert!(bfb_messages(16, f64::INFINITY).is_err());
    }
}
