//! Kills ranks and shows the team still delivering: 16 threads, 100
//! broadcasts from rotating roots, three ranks killed before the first one
//! (two of them children of rank 0 in the binomial tree) and one rank
//! panicking half-way.
//!
//! `cargo run --release --example kill_ranks`

use corrected::prelude::Correction;
use corrected::runtime::{FaultSchedule, RankOutcome, Team};
use corrected::Collectives;

fn main() -> Result<(), corrected::Error> {
    let dead = [1, 2, 9];
    let team = Team::builder()
        .ranks(16)
        .correction(Correction::Checked)
        .faults(FaultSchedule::none().kill_group(dead, 0))
        .build()?;
    let report = team.run(|comm| {
        let mut delivered = 0;
        for i in 0..100u64 {
            if comm.rank() == 7 && i == 50 {
                panic!("rank 7 gives up");
            }
            let root = [0, 4, 12][i as usize % 3];
            let mut value = if comm.rank() == root { 1000 + i } else { 0 };
            match comm.broadcast_into(root, &mut value) {
                Ok(()) if value == 1000 + i => delivered += 1,
                Ok(()) => panic!("wrong value {value} at rank {}", comm.rank()),
                Err(_) => {}
            }
        }
        delivered
    });
    for (rank, outcome) in report.outcomes.iter().enumerate() {
        match outcome {
            RankOutcome::Returned(n) => println!("rank {rank:2}: delivered {n}/100"),
            RankOutcome::Panicked(why) => println!("rank {rank:2}: panicked: {why}"),
        }
    }
    println!("failed ranks: {:?}", report.failed);
    Ok(())
}
