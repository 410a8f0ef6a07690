//! The `corrected` command line: `corrected sim` runs the LogP simulator.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod sim;

/// Fault-tolerant collectives: corrected trees, simulated and (later) on threads.
#[derive(Parser)]
#[command(name = "corrected", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate corrected-tree broadcast in the LogP model (Monte Carlo over seeds).
    Sim(sim::SimArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sim(args) => sim::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
