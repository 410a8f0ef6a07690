//! Data of any size, as a team of worker threads uses it: 8 workers average
//! a gradient of 10^6 `f64` for 20 steps while one of them dies in the
//! middle of step 5 (the allreduce's contributors say how many gradients
//! each sum holds), merge a histogram of a user's `#[repr(C)]` buckets, and
//! share a configuration that is not plain data (`broadcast_value`).
//!
//! `cargo run --release --example vectors`

use std::time::Instant;

use corrected::prelude::*;
use corrected::runtime::Fault;

const LEN: usize = 1_000_000;
const STEPS: usize = 20;

/// One histogram bucket: how many samples fell in it, and their range.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
struct Bucket {
    count: u64,
    low: f64,
    high: f64,
}

/// Buckets travel as elements of a collective's buffer.
impl Element for Bucket {}

fn merge(a: &Bucket, b: &Bucket) -> Bucket {
    Bucket {
        count: a.count + b.count,
        low: a.low.min(b.low),
        high: a.high.max(b.high),
    }
}

#[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Config {
    model: String,
    layers: Vec<u32>,
    learning_rate: f64,
}

fn main() -> Result<(), Error> {
    let team = Team::builder()
        .ranks(8)
        .fault_budget(1)
        // Faults are placed by the rank's own calls: call 0 shares the
        // configuration, step s is call 1 + s.
        .faults(FaultSchedule::none().at(6, 1 + 5, Fault::DieAfterSends(2)))
        .build()?;
    let started = Instant::now();
    let report = team.run(|comm| {
        let me = comm.rank();
        let mut config = Config::default();
        if me == 0 {
            config = Config {
                model: "mlp".into(),
                layers: vec![784, 256, 10],
                learning_rate: 0.01,
            };
        }
        comm.broadcast_value(0, &mut config)?;

        // Each step: every live worker's gradient summed, the same vector
        // everywhere (the dying worker's in every element or in none).
        let mut grad = vec![0.0f64; LEN];
        let mut sum = vec![0.0f64; LEN];
        let mut workers = Vec::new();
        for step in 0..STEPS {
            grad.iter_mut()
                .enumerate()
                .for_each(|(i, g)| *g = ((i + step) % 7) as f64 + 1.0);
            let who = comm.all_reduce_into_contributors(&grad, &mut sum, SystemOperation::sum())?;
            // The mean gradient divides by the number of inputs summed.
            let mean = sum[0] / f64::from(who.len());
            assert_eq!(mean, grad[0], "every worker's gradient is the same");
            workers.push(who.len());
        }

        let buckets: Vec<Bucket> = (0..64)
            .map(|b| Bucket {
                count: (b + me as u64) % 3,
                low: b as f64 - me as f64,
                high: b as f64 + me as f64,
            })
            .collect();
        let mut merged = vec![Bucket::zeroed(); 64];
        comm.all_reduce_into(&buckets, &mut merged, merge)?;
        Ok::<_, Error>((config, workers, merged[10]))
    });
    let took = started.elapsed();
    let mut first = None;
    for (rank, got) in report.returned() {
        match got {
            Ok(got) => {
                assert_eq!(got.0.layers, [784, 256, 10], "rank {rank}");
                assert!(*first.get_or_insert(got) == got, "rank {rank} disagrees");
            }
            Err(e) => println!("rank {rank}: {e}"),
        }
    }
    let (config, workers, bucket) = first.expect("live ranks");
    println!(
        "config {:?} reached every live rank; {} steps of a {} MB gradient in {:.2} s",
        config.model,
        STEPS,
        LEN * 8 / 1_000_000,
        took.as_secs_f64()
    );
    println!("contributors per step: {workers:?}");
    println!(
        "bucket 10 merged: {bucket:?}; failed ranks: {:?}",
        report.failed
    );
    assert!(workers[..5].iter().all(|&w| w == 8));
    assert!(workers[6..].iter().all(|&w| w == 7));
    assert!(workers[5] == 7 || workers[5] == 8);
    Ok(())
}
