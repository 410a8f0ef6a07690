//! Collectives on data of any size (issue 14), next to the physical floor
//! measured by the same bench in the same run.
//!
//! `cargo bench --bench data` (filters: `-- bcast/`, `-- allreduce/`,
//! `-- '/1048576'`, ...). Sizes 8 B, 1 KiB, 64 KiB, 1 MiB, 16 MiB of `f64`;
//! P = 2 (one rank per core) and P = 8 (four per core on this machine).
//!
//! Timing: the default team (packed pinning, helping when ranks outnumber
//! cores, no records). Each sample is one team run: every rank allocates and
//! touches its buffers, makes [`WARM`] untimed calls (so that lanes exist
//! and the segment pool has its steady size), lines up on a yielding barrier, and times its loop of `iters`
//! calls back to back; the sample is the slowest rank's loop. Results are
//! checked outside the loop. Groups, each `name/P/bytes`:
//! - `bcast/checked`: `broadcast_into(0, &mut buf[..])`, checked correction.
//! - `bcast/floor`: the same team's threads, P - 1 of them each copying the
//!   root's N bytes from one shared buffer into their own, in parallel: what
//!   any broadcast among threads must at least do.
//! - `allreduce/f=0`, `allreduce/f=1`: `all_reduce_into(&x[..], &mut y[..],
//!   sum)`.
//! - `allreduce/floor`: every rank copying its own N-byte input into its own
//!   output, in parallel: reading the P inputs and writing the P outputs at
//!   the machine's copy bandwidth, what any allreduce must at least do.
//!
//! Bandwidth (printed by criterion as throughput) is N bytes per call.

#[path = "common/lineup.rs"]
mod lineup;
use lineup::YieldBarrier;

use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput};

use corrected::runtime::{Comm, SystemOperation, Team};

const SIZES: [usize; 5] = [8, 1 << 10, 64 << 10, 1 << 20, 16 << 20];
const RANKS: [u32; 2] = [2, 8];

/// Untimed calls before each sample's timed loop.
const WARM: usize = 4;

/// What a rank does in one timed call, given its rank, its input and its
/// output (both `n` values), and the shared root buffer for the floors.
type Call = dyn Fn(&mut Comm<'_>, &[f64], &mut [f64], &[f64]) + Sync;

/// One sample: the slowest rank's loop of `iters` calls of `call`.
fn sample(team: &Team, n: usize, iters: u64, call: &Call) -> Duration {
    let root: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let barrier = YieldBarrier::new(team.ranks() as usize);
    let report = team.run(|comm| {
        let input: Vec<f64> = vec![comm.rank() as f64 + 1.0; n];
        let mut output = vec![0.0f64; n];
        // Warm: lanes made, and the segment pool at its steady size (a
        // value is held until later operations retire the cores that keep
        // it, so the pool fills over a few calls).
        for _ in 0..WARM {
            call(comm, &input, &mut output, &root);
        }
        barrier.wait();
        let started = Instant::now();
        for _ in 0..iters {
            call(comm, &input, &mut output, &root);
        }
        let took = started.elapsed();
        (took, output.first().copied())
    });
    assert_eq!(
        report.returned().count(),
        report.outcomes.len(),
        "no rank failed"
    );
    report
        .returned()
        .map(|(_, (t, _))| *t)
        .max()
        .unwrap_or_default()
}

fn bench(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    team: &Team,
    bytes: usize,
    call: &Call,
) {
    let n = bytes / 8;
    let id = BenchmarkId::new(name, format!("{}/{bytes}", team.ranks()));
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function(id, |b| b.iter_custom(|iters| sample(team, n, iters, call)));
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    for ranks in RANKS {
        let teams: Vec<Team> = [0, 1]
            .map(|f| {
                Team::builder()
                    .ranks(ranks)
                    .fault_budget(f)
                    .build()
                    .unwrap()
            })
            .into();
        let sum: f64 = (1..=ranks).map(f64::from).sum();
        for bytes in SIZES {
            let mut group = c.benchmark_group(format!("data/{bytes}"));
            group
                .sample_size(10)
                .warm_up_time(Duration::from_millis(500))
                .measurement_time(Duration::from_secs(2));
            bench(
                &mut group,
                "bcast/checked",
                &teams[1],
                bytes,
                &|comm, _, out, root| {
                    // The root's buffer holds the root's data from the
                    // untimed first call on (a broadcast leaves it alone).
                    if comm.rank() == 0 && out.last() != root.last() {
                        out.copy_from_slice(root);
                    }
                    comm.broadcast_into(0, out).unwrap();
                    assert_eq!(out.last(), root.last());
                },
            );
            bench(
                &mut group,
                "bcast/floor",
                &teams[1],
                bytes,
                &|comm, _, out, root| {
                    if comm.rank() != 0 {
                        out.copy_from_slice(std::hint::black_box(root));
                    }
                },
            );
            for (f, team) in teams.iter().enumerate() {
                let name = format!("allreduce/f={f}");
                bench(
                    &mut group,
                    &name,
                    team,
                    bytes,
                    &move |comm, input, out, _| {
                        comm.all_reduce_into(input, out, SystemOperation::sum())
                            .unwrap();
                        assert_eq!(out.first().copied().unwrap_or(sum), sum);
                    },
                );
            }
            bench(
                &mut group,
                "allreduce/floor",
                &teams[1],
                bytes,
                &|_, input, out, _| {
                    out.copy_from_slice(std::hint::black_box(input));
                },
            );
            group.finish();
        }
    }
    c.final_summary();
}
