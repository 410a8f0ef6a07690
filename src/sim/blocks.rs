//! The large allreduce by blocks ([`crate::protocol::scatter`], what the
//! MPI engine runs from [`BLOCKS_MIN_BYTES`](crate::protocol::scatter::BLOCKS_MIN_BYTES))
//! in the LogGP simulator: its data phase, the same core, with every
//! message as large as what it carries. Each rank sends block j of its
//! N-byte input (N/P bytes) to rank j, rank j folds the P blocks j and
//! sends the result to every other rank; a block that cannot be computed
//! travels as *none* (one byte). A send of b bytes occupies its process
//! o + (b - 1) G (Alexandrov et al.'s LogGP), so the phase costs about
//! 2(P - 1) sends of N/P bytes per rank, where an eager allreduce sends
//! the whole N bytes up and down a tree.
//!
//! What is simulated: the data phase, to the moment every live rank has
//! its blocks or knows one is missing ([`CollectiveRun::latency`]). The
//! engine's verdict after it (an allreduce of a few words) and, if some
//! live rank lacks a block, the fall-back to the eager allreduce are
//! further operations, simulated on their own by `corrected sim --op
//! allreduce` (with `--bytes` for the eager one): a run that must fall
//! back is counted with [`CollectiveRun::rounds`] = 2.
//!
//! Checked in every run: every live rank ends the phase; a rank with
//! every block holds in block j the reduction over all P inputs' blocks j,
//! exactly once each (a rank that failed after sending its blocks is in
//! every block); a run with every live rank complete delivers the blocks,
//! any other falls back (the verdict's rule), so every live rank's result
//! is the reduction over one and the same set of inputs.

use crate::check::input_of;
use crate::error::ConfigError;
use crate::protocol::scatter::{ScatterAllreduce, ScatterOutput};
use crate::sim::engine::NEVER;
use crate::sim::faults::FaultPlan;
use crate::sim::runner::{CollectiveRun, Runner};
use crate::types::{LogP, MessageSize, Rank, Tick};

/// A block as the simulator carries it: the sum of its inputs' values
/// (each rank's block j is [`block_value`] of it, so a block missing an
/// input or holding one twice shows) and its size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimBlock {
    /// The wrapping sum of the blocks folded into this one.
    pub sum: u64,
    /// Its size on the wire.
    pub bytes: u64,
}

/// Rank `rank`'s block `j`: its input value mixed with the block's index.
pub fn block_value(rank: Rank, j: usize) -> u64 {
    input_of(rank).rotate_left((j % 64) as u32) ^ j as u64
}

fn fold(acc: &mut SimBlock, other: &SimBlock) {
    acc.sum = acc.sum.wrapping_add(other.sum);
}

/// A message's bytes: its block's, or one for *none*.
fn wire_bytes(block: &Option<SimBlock>) -> u64 {
    block.map_or(1, |b| b.bytes)
}

/// A simulated rank's core.
type BlocksCore = ScatterAllreduce<SimBlock, fn(&mut SimBlock, &SimBlock)>;

/// An allreduce by blocks experiment: P ranks, an input of `bytes` bytes
/// cut into P blocks, LogGP's G, the failure detector's delay, faults.
#[derive(Clone, Debug)]
pub struct BlocksScenario {
    procs: u32,
    logp: LogP,
    size: MessageSize,
    detector: Tick,
    faults: FaultPlan,
}

impl BlocksScenario {
    /// `procs` ranks (at least 2) with inputs of `size.bytes` bytes each
    /// (at least one per rank: every rank owns a block), a send of b bytes
    /// costing o + (b - 1) `size.gap_per_byte`; every live rank learns of a
    /// death `detector` ticks after it (the core gives up a block only on
    /// a failure notice); ranks dead or dying by `faults` (any rank: the
    /// algorithm has no root).
    pub fn new(
        procs: u32,
        logp: LogP,
        size: MessageSize,
        detector: Tick,
        faults: FaultPlan,
    ) -> Result<Self, ConfigError> {
        if procs < 2 {
            return Err(ConfigError::Unsupported {
                what: "an allreduce by blocks of one rank",
                why: "it exchanges blocks between ranks: two or more",
            });
        }
        if size.bytes < u64::from(procs) {
            return Err(ConfigError::Unsupported {
                what: "an allreduce by blocks of fewer bytes than ranks",
                why: "every rank owns a block of at least one byte",
            });
        }
        // No root: `procs` names none.
        faults.validate(procs, procs)?;
        Ok(BlocksScenario {
            procs,
            logp,
            size,
            detector,
            faults,
        })
    }

    /// Block `j`'s bytes: the input cut as evenly as it goes, the first
    /// blocks a byte longer.
    pub fn block_bytes(&self, j: usize) -> u64 {
        let p = u64::from(self.procs);
        self.size.bytes / p + u64::from((j as u64) < self.size.bytes % p)
    }
}

/// Reusable state to simulate allreduces by blocks of one scenario.
#[derive(Debug)]
pub struct BlocksSim<'s> {
    scenario: &'s BlocksScenario,
    runner: Runner<BlocksCore>,
    /// Block j's reduction over every rank: what a complete block holds.
    expected: Vec<u64>,
}

impl<'s> BlocksSim<'s> {
    /// A simulator for `scenario`.
    pub fn new(scenario: &'s BlocksScenario) -> Self {
        let mut runner = Runner::new(scenario.logp, Some(scenario.detector), MessageSize::SMALL);
        runner.set_message_bytes(wire_bytes, scenario.size.gap_per_byte);
        let procs = scenario.procs;
        let expected = (0..procs as usize)
            .map(|j| (0..procs).fold(0u64, |s, r| s.wrapping_add(block_value(r, j))))
            .collect();
        BlocksSim {
            scenario,
            runner,
            expected,
        }
    }

    /// One run, the dead set and deaths drawn from `seed`.
    pub fn run(&mut self, seed: u64) -> CollectiveRun {
        let procs = self.scenario.procs;
        // No rank is exempt: the algorithm has no root.
        let death = Runner::<BlocksCore>::draw(&self.scenario.faults, procs, procs, seed);
        self.run_with(&death)
    }

    /// One run with rank `r` failing at `death[r]` ([`NEVER`]: live).
    pub fn run_with(&mut self, death: &[Tick]) -> CollectiveRun {
        let sc = self.scenario;
        let procs = sc.procs;
        let members: Vec<Rank> = (0..procs).collect();
        let cores = (0..procs).map(|r| {
            let blocks = (0..procs as usize)
                .map(|j| SimBlock {
                    sum: block_value(r, j),
                    bytes: sc.block_bytes(j),
                })
                .collect();
            ScatterAllreduce::new(r, 0, members.clone(), blocks, fold as fn(&mut _, &_))
                .expect("one block per member")
        });
        let (trace, mut run) = self.runner.simulate(cores, death, &[]);
        let (mut complete, mut incomplete) = (0u32, 0u32);
        for (r, out) in trace.outputs.iter().enumerate() {
            if death[r] != NEVER {
                continue;
            }
            match out {
                Some((at, ScatterOutput::Complete(blocks))) => {
                    complete += 1;
                    run.latency = run.latency.max(*at);
                    let exact = blocks.len() == self.expected.len()
                        && blocks.iter().zip(&self.expected).all(|(b, e)| b.sum == *e);
                    if !exact {
                        run.violations += 1;
                    }
                }
                Some((at, ScatterOutput::Incomplete)) => {
                    incomplete += 1;
                    run.latency = run.latency.max(*at);
                }
                // A live rank that never ends the phase.
                None => run.violations += 1,
            }
        }
        // The verdict: blocks delivered if every live rank has them all,
        // else every live rank falls back (a second operation).
        run.rounds = if incomplete == 0 { 1 } else { 2 };
        run.result_consistent = run.violations == 0 && complete + incomplete > 0;
        run
    }
}
