//! The simulator's speed: one 64K-rank broadcast per iteration.
//!
//! `cargo bench --bench sim`. The target: at least 50 simulated
//! broadcasts per second on one core for binomial + checked correction at
//! 1 % faults (time per iteration at most 20 ms).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

use corrected::protocol::bcast::Correction;
use corrected::sim::{BcastScenario, BcastSim, FaultPlan};
use corrected::types::LogP;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("sim_64k");
    group.sample_size(20);
    for (name, correction, rate) in [
        ("binomial_checked-sync_1pct", Correction::CheckedSync, 0.01),
        ("binomial_checked_1pct", Correction::Checked, 0.01),
        (
            "binomial_optimized4_1pct",
            Correction::Optimized { distance: 4 },
            0.01,
        ),
        ("binomial_none_fault_free", Correction::None, 0.0),
    ] {
        let sc = BcastScenario::new(
            "binomial".parse().unwrap(),
            65536,
            correction,
            LogP::PAPER,
            FaultPlan::rate(rate),
        )
        .unwrap();
        let mut sim = BcastSim::new(&sc);
        let mut seed = 0;
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    seed += 1;
                    seed
                },
                |s| sim.run(s),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
