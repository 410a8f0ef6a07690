//! A long-running loop that survives losing more ranks than its fault
//! budget: 12 threads sum their inputs with f = 1; two ranks die before
//! operation 0 and a third later. When an allreduce reports
//! `TooManyFailures`, the survivors shrink the communicator (they agree on
//! the failed ranks, renumber densely, and get a fresh budget) and go on.
//!
//! `cargo run --release --example shrink`

use corrected::runtime::{Fault, FaultSchedule, SystemOperation, Team};
use corrected::Collectives;
use corrected::Error;

fn main() -> Result<(), corrected::Error> {
    // Ranks 4 and 5 share an up-correction group's worth of failures:
    // beyond f = 1. Rank 9 dies after its 2nd send of operation 30.
    let faults = FaultSchedule::none()
        .kill(4, 0)
        .kill(5, 0)
        .at(9, 30, Fault::DieAfterSends(2));
    let team = Team::builder()
        .ranks(12)
        .fault_budget(1)
        .faults(faults)
        .build()?;
    let report = team.run(|comm| {
        let team_rank = comm.rank();
        let mut log = Vec::new();
        let mut done = 0;
        while done < 20 {
            let mut sum = 0u64;
            match comm.all_reduce_into(&(team_rank as u64), &mut sum, SystemOperation::sum()) {
                Ok(()) => done += 1,
                Err(Error::TooManyFailures { failed, .. }) => {
                    let left_out = comm.shrink()?;
                    log.push(format!(
                        "too many failures ({failed:?}): shrunk without {left_out:?}, now rank {} of {}",
                        comm.rank(),
                        comm.size()
                    ));
                }
                Err(e) => return Err(e),
            }
            if done == 20 {
                log.push(format!("last sum {sum}"));
            }
        }
        Ok(log)
    });
    for (rank, outcome) in report.returned() {
        match outcome {
            Ok(log) => println!("team rank {rank:2}: {}", log.join("; ")),
            Err(e) => println!("team rank {rank:2}: {e}"),
        }
    }
    println!("failed: {:?}", report.failed);
    Ok(())
}
