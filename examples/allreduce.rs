//! Allreduce through failures: 12 threads sum an `[f64; 8]` per rank, 100
//! times. Rank 0, the first root, is dead from the start (every allreduce
//! retries on root 1); rank 5 dies right after its first send in operation
//! 10, in the middle of it. Every live rank gets the same sums, with rank 5's
//! input either in or out of operation 10 — never half of it.
//!
//! `cargo run --release --example allreduce`

use corrected::runtime::{Fault, FaultSchedule, SystemOperation, Team};
use corrected::Collectives;

fn main() -> Result<(), corrected::Error> {
    let team = Team::builder()
        .ranks(12)
        .fault_budget(2)
        .op_records(true)
        .faults(
            FaultSchedule::none()
                .kill(0, 0)
                .at(5, 10, Fault::DieAfterSends(1)),
        )
        .build()?;
    let report = team.run(|comm| {
        let mut sums = Vec::new();
        for _ in 0..100 {
            let mine = [comm.rank() as f64; 8];
            let mut sum = [0.0; 8];
            comm.all_reduce_into(&mine, &mut sum, SystemOperation::sum())?;
            sums.push(sum[0]);
        }
        Ok::<_, corrected::Error>(sums)
    });
    let live: Vec<_> = report
        .returned()
        .filter_map(|(r, got)| got.as_ref().ok().map(|s| (r, s)))
        .collect();
    let (_, first) = live[0];
    for (rank, sums) in &live {
        assert_eq!(sums, &first, "rank {rank} disagrees");
    }
    let all: f64 = (1..12).map(f64::from).sum();
    println!(
        "{} live ranks agree; op 0: {} (all but rank 0: {all}), op 10: {} (with or without rank 5), op 99: {} (without 0 and 5: {})",
        live.len(),
        first[0],
        first[10],
        first[99],
        all - 5.0
    );
    println!(
        "failed: {:?}; messages per op: first {}, last {}",
        report.failed, report.ops[0].messages, report.ops[99].messages
    );
    Ok(())
}
