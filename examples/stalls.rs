//! How long a busy thread of a team goes without running on this machine:
//! the floor under a failure timeout (`corrected::runtime::stalls`).
//!
//! `cargo run --release --example stalls -- 8 16 32 128` prints, for each
//! team size, the longest gap one of that many busy threads saw over one
//! second, three times.

use std::time::Duration;

use corrected::runtime::stalls;

fn main() {
    let sizes: Vec<u32> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![8, 16, 32]
    } else {
        sizes
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("busy threads on {cores} cores: the longest time one went without running, over 1 s");
    for threads in sizes {
        let runs: Vec<String> = (0..3)
            .map(|_| {
                let s = stalls::measure(threads, Duration::from_secs(1));
                format!("{:.1} ms", s.longest.as_secs_f64() * 1e3)
            })
            .collect();
        println!("{threads:>5} threads: {}", runs.join(", "));
    }
}
