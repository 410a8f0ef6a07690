//! A minimal broadcast among 8 threads.
//!
//! `cargo run --release --example broadcast`

use corrected::runtime::Team;
use corrected::Collectives;

fn main() -> Result<(), corrected::Error> {
    // Records give the report's per-operation message counts.
    let team = Team::builder().ranks(8).op_records(true).build()?;
    let report = team.run(|comm| {
        let mut value = if comm.rank() == 0 { 3.25f64 } else { 0.0 };
        comm.broadcast_into(0, &mut value).map(|()| value)
    });
    for (rank, got) in report.returned() {
        println!("rank {rank}: {got:?}");
    }
    println!("messages: {}", report.ops[0].messages);
    Ok(())
}
