//! The `corrected` command line: `corrected sim` runs the LogP simulator,
//! `corrected run` runs collectives on threads, `corrected topo` shows the
//! machine's failure domains and placements.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `println!` that stops quietly when stdout is closed (`corrected ... | head`).
#[macro_export]
macro_rules! out {
    () => {
        $crate::out!("")
    };
    ($($arg:tt)*) => {{
        use std::io::Write;
        // One write per line: stdout's line buffer (1 KiB) would write a
        // longer line in pieces, which a launcher that merges processes'
        // output (mpirun) may interleave with another process's line.
        let mut line = format!($($arg)*);
        line.push('\n');
        let _ = std::io::stdout().lock().write_all(line.as_bytes());
    }};
}

/// Parses `RANK:N` (as in `--die-at 5:12` or `--kill-after-sends 3:2`).
fn parse_rank_pair<N: std::str::FromStr>(
    text: &str,
) -> Result<(corrected::types::Rank, N), String> {
    let (r, n) = text
        .split_once(':')
        .ok_or(format!("expected RANK:N, e.g. 3:2; got '{text}'"))?;
    Ok((
        r.trim()
            .parse()
            .map_err(|_| format!("bad rank in '{text}'"))?,
        n.trim()
            .parse()
            .map_err(|_| format!("bad number in '{text}'"))?,
    ))
}

mod args_error;
mod bcast;
mod error;
mod limits;
mod model;
#[cfg(feature = "mpi")]
mod mpi;
mod op;
mod progress;
mod run;
mod sim;
mod soak;
mod stalls;
mod topo;

/// Fault-tolerant collectives: corrected trees, simulated and (later) on threads.
#[derive(Parser)]
#[command(name = "corrected", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a collective (broadcast, reduce, allreduce; corrected trees, gossip, FTCO) in the LogP/LogGP model, Monte Carlo over seeds.
    Sim(sim::SimArgs),
    /// Run a collective on threads, one pinned thread per rank, with emulated faults; every result checked.
    Run(run::RunArgs),
    /// A long random mix of collectives with random faults on threads, every result checked.
    Soak(soak::SoakArgs),
    /// Show the machine's failure domains, a placement of ranks, and what killing a domain costs.
    Topo(topo::TopoArgs),
    /// Run collectives between MPI processes, one rank each, every result checked (feature `mpi`; launch with mpirun).
    #[cfg(feature = "mpi")]
    Mpi(mpi::MpiArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return ExitCode::from(args_error::report(&e)),
    };
    let (result, cmd) = match cli.command {
        Command::Sim(args) => (sim::run(args), error::Subcommand::Sim),
        Command::Run(args) => (run::run(args), error::Subcommand::Run),
        Command::Topo(args) => (topo::run(args), error::Subcommand::Topo),
        Command::Soak(args) => (soak::run(args), error::Subcommand::Soak),
        #[cfg(feature = "mpi")]
        Command::Mpi(args) => (mpi::run(args), error::Subcommand::Run),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!("hint: {}", e.hint(cmd));
            ExitCode::from(2)
        }
    }
}
