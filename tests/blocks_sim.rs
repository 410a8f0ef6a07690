//! The large allreduce by blocks (`protocol::scatter`, the MPI engine's
//! from 512 KiB) in the LogGP simulator (`sim::blocks`): its data phase
//! with every message as large as its block. LogGP's cost of a send of b
//! bytes is o + (b - 1) G; the phase is two sends of N/P bytes per peer.

use corrected::sim::blocks::{block_value, BlocksScenario, BlocksSim};
use corrected::sim::{FaultPlan, NEVER};
use corrected::types::{LogP, MessageSize, Tick};

fn scenario(procs: u32, bytes: u64, g: Tick, logp: LogP, faults: FaultPlan) -> BlocksScenario {
    let size = MessageSize::new(bytes, g).expect("a size");
    BlocksScenario::new(procs, logp, size, 8, faults).expect("a scenario")
}

/// Two ranks: each sends its half and receives the other's, in
/// o + (N/2 - 1) G, then L, then o; folds; sends the reduced half back and
/// receives the other reduced half: exactly 2 (o + (N/2 - 1) G) plus
/// 2 L plus 2 o, for any N, G, L and o. More ranks: every rank ends with
/// every block, each the reduction over all P inputs, 2 P (P - 1)
/// messages, one round.
#[test]
fn fault_free_two_ranks_take_two_block_sends_and_every_block_is_exact() {
    for (bytes, g, l, o) in [(1024u64, 1, 2, 1), (1 << 20, 3, 10, 1), (64, 0, 2, 1)] {
        let logp = LogP {
            latency: l,
            overhead: o,
        };
        let sc = scenario(2, bytes, g, logp, FaultPlan::none());
        let run = BlocksSim::new(&sc).run(1);
        let send = o + (bytes / 2 - 1) * g;
        assert_eq!(run.latency, 2 * send + 2 * l + 2 * o, "N={bytes} G={g}");
        assert_eq!((run.messages, run.rounds, run.violations), (4, 1, 0));
        assert!(run.result_consistent);
    }
    for procs in 3..=9u32 {
        let sc = scenario(
            procs,
            1000 + u64::from(procs),
            1,
            LogP::PAPER,
            FaultPlan::none(),
        );
        let run = BlocksSim::new(&sc).run(1);
        let p = u64::from(procs);
        assert_eq!(run.messages, 2 * p * (p - 1), "P={procs}");
        assert_eq!((run.rounds, run.violations), (1, 0), "P={procs}");
        assert!(run.result_consistent, "P={procs}");
    }
}

/// A large vector: each rank sends and receives 2 (P - 1) blocks of N/P
/// bytes, so the phase takes at least 2 (P - 1) (N/P - 1) G (its sends
/// alone) and not much more (the hops and overheads of one exchange per
/// peer); an eager allreduce sends the whole N bytes at least once per
/// tree level.
#[test]
fn a_large_vector_costs_two_block_sends_per_peer() {
    let (bytes, g) = (1u64 << 20, 1);
    for procs in [4u32, 8, 16, 64] {
        let sc = scenario(procs, bytes, g, LogP::PAPER, FaultPlan::none());
        let run = BlocksSim::new(&sc).run(1);
        let p = u64::from(procs);
        let sends = 2 * (p - 1) * (bytes / p - 1) * g;
        assert!(run.latency >= sends, "P={procs}: {} < {sends}", run.latency);
        let slack = 2 * (p - 1) * 4 * (LogP::PAPER.latency + 2 * LogP::PAPER.overhead);
        assert!(run.latency <= sends + slack, "P={procs}: {}", run.latency);
        assert!(
            run.latency < 2 * bytes * g,
            "P={procs}: under two whole-vector sends"
        );
    }
}

/// The block values the check relies on differ between ranks and blocks,
/// so a block missing an input or holding one twice shows.
#[test]
fn block_values_tell_ranks_and_blocks_apart() {
    let mut seen = std::collections::HashSet::new();
    for r in 0..64 {
        for j in 0..64 {
            assert!(seen.insert(block_value(r, j)), "rank {r} block {j}");
        }
    }
}

/// Every death time of one rank (each of P = 4 in turn, at every tick from
/// before the start to after the end): every live rank ends the phase, no
/// block is wrong, and the run delivers (one round) exactly when every
/// live rank has every block, else falls back (two). A rank dead from the
/// start always makes the run fall back; one that dies after its last send
/// never does: its input is in every block.
#[test]
fn a_death_at_any_tick_delivers_exact_blocks_or_falls_back_everywhere() {
    let procs = 4u32;
    let sc = scenario(procs, 4096, 1, LogP::PAPER, FaultPlan::none());
    let mut sim = BlocksSim::new(&sc);
    let fault_free = sim.run_with(&[NEVER; 4]);
    let end = fault_free.quiescence_latency;
    let (mut delivered, mut fell_back) = (0, 0);
    for victim in 0..procs as usize {
        for t in 0..=end + 1 {
            let mut death = [NEVER; 4];
            death[victim] = t;
            let run = sim.run_with(&death);
            let case = format!("rank {victim} dies at {t}");
            assert_eq!(run.violations, 0, "{case}: {run:?}");
            assert!(run.result_consistent, "{case}");
            if t == 0 {
                assert_eq!(run.rounds, 2, "{case}: dead from the start");
            }
            if t > end {
                assert_eq!(run.rounds, 1, "{case}: after its last send");
            }
            match run.rounds {
                1 => delivered += 1,
                _ => fell_back += 1,
            }
        }
    }
    assert!(delivered > 0 && fell_back > 0, "{delivered} {fell_back}");
}

/// Scenarios the algorithm cannot run are typed errors: one rank, fewer
/// bytes than ranks, a fault on a rank outside the team.
#[test]
fn bad_scenarios_are_typed_errors() {
    let size = |b| MessageSize::new(b, 1).unwrap();
    assert!(BlocksScenario::new(1, LogP::PAPER, size(64), 8, FaultPlan::none()).is_err());
    assert!(BlocksScenario::new(8, LogP::PAPER, size(7), 8, FaultPlan::none()).is_err());
    assert!(BlocksScenario::new(4, LogP::PAPER, size(64), 8, FaultPlan::dead([9])).is_err());
}
