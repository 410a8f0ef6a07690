//! Broadcast latency on threads, fault-free: the corrected tree against the
//! plain tree, at P = 2 (pinned, one rank per core) and P = 8, 32, 64
//! (oversubscribed on this 2-core machine).
//!
//! `cargo bench --bench bcast`. One iteration is one broadcast from rank 0.
//! Three groups:
//! - `bcast`: ranks line up on a barrier before each broadcast (not timed),
//!   so a root cannot run ahead; the time is the slowest rank's time inside
//!   `broadcast_into`. The barrier's waiters yield rather than park
//!   (`benches/common/lineup.rs`); on 2 cores its release still reaches the
//!   ranks of a core one scheduling turn after another, a skew the slowest
//!   rank's time includes.
//! - `bcast_osu`: as OSU's `osu_bcast` times `MPI_Bcast`: each broadcast is
//!   followed by the team's own `barrier()` (not timed); the time is the
//!   slowest rank's time inside `broadcast_into`, averaged over the
//!   broadcasts (OSU prints the average over ranks; ours is the maximum).
//! - `bcast_back_to_back`: ranks line up once, then broadcast in a loop (as
//!   MPI benchmarks time a loop of collectives); the time is the slowest
//!   rank's total time inside its calls, divided by their number.

#[path = "common/lineup.rs"]
mod lineup;
use corrected::Collectives;
use lineup::YieldBarrier;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

use corrected::protocol::bcast::Correction;
use corrected::protocol::gossip::GossipSpec;
use corrected::runtime::{BroadcastAlgorithm, Team};

/// How ranks start their broadcasts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lineup {
    /// On a `YieldBarrier` before every broadcast.
    EveryCall,
    /// On the team's `barrier()` after every broadcast, as OSU does.
    TeamBarrier,
    /// On a `YieldBarrier` once, then back to back.
    Once,
}

fn bench(c: &mut Criterion) {
    for (name, lineup) in [
        ("bcast", Lineup::EveryCall),
        ("bcast_osu", Lineup::TeamBarrier),
        ("bcast_back_to_back", Lineup::Once),
    ] {
        bench_group(c, name, lineup);
    }
}

fn bench_group(c: &mut Criterion, name: &str, lineup: Lineup) {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for ranks in [2u32, 8, 32, 64] {
        // The corrected trees (binomial), checked correction on the tree
        // the team picks (`checked-auto`: flat where ranks outnumber
        // cores, `TeamBuilder::tree`), and corrected gossip (CCG, T from
        // Eq. 4) in the same run (issues 13 and 15).
        for correction in [
            "none",
            "optimized:4",
            "checked",
            "checked-auto",
            "gossip-ccg",
        ] {
            let builder = Team::builder().ranks(ranks).op_records(true);
            let binomial = builder.clone().tree("binomial".parse().unwrap());
            let builder = match correction {
                "gossip-ccg" if ranks < 8 => continue,
                "gossip-ccg" => {
                    binomial.broadcast(BroadcastAlgorithm::Gossip(GossipSpec::default()))
                }
                "checked-auto" => builder.correction(Correction::Checked),
                tree => binomial.correction(tree.parse().unwrap()),
            };
            let team = builder.build().unwrap();
            group.bench_with_input(BenchmarkId::new(correction, ranks), &team, |b, team| {
                b.iter_custom(|iters| {
                    let barrier = YieldBarrier::new(ranks as usize);
                    let report = team.run(|comm| {
                        for i in 0..iters {
                            if lineup == Lineup::EveryCall || i == 0 {
                                barrier.wait();
                            }
                            let mut v = if comm.rank() == 0 { i } else { 0 };
                            comm.broadcast_into(0, &mut v).unwrap();
                            assert_eq!(v, i);
                            if lineup == Lineup::TeamBarrier {
                                comm.barrier().unwrap();
                            }
                        }
                    });
                    let slowest = |o: &corrected::runtime::OpStats| {
                        o.latency_ns.iter().copied().max().unwrap_or(0)
                    };
                    let ns: u64 = match lineup {
                        Lineup::EveryCall => report.ops.iter().map(slowest).sum(),
                        // Even operations are the broadcasts.
                        Lineup::TeamBarrier => report.ops.iter().step_by(2).map(slowest).sum(),
                        Lineup::Once => (0..ranks as usize)
                            .map(|r| report.ops.iter().map(|o| o.latency_ns[r]).sum::<u64>())
                            .max()
                            .unwrap_or(0),
                    };
                    Duration::from_nanos(ns)
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
