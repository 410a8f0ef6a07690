//! Simulates a corrected-tree broadcast among 64K processes with 1 % of them
//! dead, and prints what the paper measures.
//!
//! `cargo run --release --example simulate`

use corrected::protocol::bcast::Correction;
use corrected::sim::{BcastScenario, BcastSim, FaultPlan};
use corrected::topology::TreeSpec;
use corrected::types::LogP;

fn main() -> Result<(), corrected::Error> {
    let scenario = BcastScenario::new(
        TreeSpec::lame(2),
        65536,
        Correction::CheckedSync,
        LogP::PAPER,
        FaultPlan::rate(0.01),
    )?;
    let mut sim = BcastSim::new(&scenario);
    println!(
        "fault-free dissemination time: {}",
        scenario.dissemination_time()
    );
    for seed in 0..5 {
        let run = sim.run(seed);
        println!(
            "seed {seed}: {} dead, max gap {}, correction latency {}, {:.2} messages/process, {} live ranks uncolored",
            run.dead, run.max_gap, run.correction_latency, run.messages_per_process, run.uncolored_live
        );
    }
    Ok(())
}
