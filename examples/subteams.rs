//! Rows of a grid as sub-teams, with a failure in one of them: 6 threads
//! form a 2 × 3 grid; each gathers every rank's coordinates
//! (`all_gather_into`), splits into its row (`split`, numbered by column),
//! and sums along the row in a loop. Rank 4 dies in its third row sum:
//! its row goes on without it (within the row's own fault budget), the
//! other row never notices. Every result is checked; the program fails
//! if one is wrong.
//!
//! `cargo run --release --example subteams`

use corrected::runtime::{Fault, FaultSchedule, SystemOperation, Team};
use corrected::{Collectives, Error};

const COLUMNS: u32 = 3;

fn main() -> Result<(), Error> {
    // Call 0 is the allgather, call 1 the split: rank 4 dies in call 4,
    // its third row sum.
    let faults = FaultSchedule::none().at(4, 4, Fault::DieAfterSends(0));
    let team = Team::builder()
        .ranks(2 * COLUMNS)
        .fault_budget(1)
        .faults(faults)
        .build()?;
    let report = team.run(|comm| -> Result<String, Error> {
        let me = comm.rank();
        let (row, column) = (me / COLUMNS, me % COLUMNS);
        // Everyone's coordinates, and whose they are.
        let mut grid = vec![[0u32; 2]; comm.size() as usize];
        let who = comm.all_gather_into(&[row, column], &mut grid[..])?;
        assert!(who.is_everyone(), "nobody has failed yet");
        assert!((0..comm.size()).all(|r| grid[r as usize] == [r / COLUMNS, r % COLUMNS]));
        // The row's team, numbered by column.
        let members = comm.split(row, column)?;
        assert_eq!(comm.rank(), column);
        let mut sums = Vec::new();
        for _ in 0..5 {
            let mut sum = 0u64;
            let who = comm.all_reduce_into_contributors(
                &u64::from(me),
                &mut sum,
                SystemOperation::sum(),
            )?;
            // The sum of exactly the row members it names.
            let named: u64 = (who.ranks().expect("listed").iter())
                .map(|&r| u64::from(members[r as usize]))
                .sum();
            assert_eq!(sum, named);
            sums.push(sum);
        }
        Ok(format!("row {row} {members:?}: sums {sums:?}"))
    });
    for (rank, outcome) in report.returned() {
        match outcome {
            Ok(line) => println!("rank {rank}: {line}"),
            Err(e) => println!("rank {rank}: {e}"),
        }
    }
    // Row 0 sums 0 + 1 + 2 every time; row 1 sums 3 + 4 + 5, then 3 + 5.
    for (rank, outcome) in report.returned().filter(|(r, _)| *r != 4) {
        let line = outcome.as_ref().map_err(Clone::clone)?;
        let want = if rank < COLUMNS {
            "sums [3, 3, 3, 3, 3]"
        } else {
            "sums [12, 12, 8, 8, 8]"
        };
        assert!(line.ends_with(want), "rank {rank}: {line}");
    }
    println!("failed: {:?}", report.failed);
    Ok(())
}
