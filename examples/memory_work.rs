//! What a chunked allreduce of P inputs of N bytes asks of one core's
//! memory, next to what the `allreduce/floor` of `benches/data.rs` asks:
//! `cargo run --release --example memory_work -- [P] [BYTES]` (default 8
//! and 1 MiB) prints, for one thread on one core, the time to
//! * copy P inputs into P outputs (the floor's work, all ranks together);
//! * reduce the P inputs into one buffer, 64 KiB chunk by chunk, inputs
//!   folded in order (the reduction's reads, `runtime/lazy.rs`);
//! * copy that buffer into P outputs (the pushes of each chunk's result).
//!
//! An allreduce does the last two, the floor the first: their ratio is
//! what the chunked allreduce costs against the floor even with the work
//! split perfectly over the cores (docs/benchmarks.md, *Data of any size*).

use std::hint::black_box;
use std::time::Instant;

fn per_call(iters: u32, mut f: impl FnMut()) -> f64 {
    f();
    let started = Instant::now();
    for _ in 0..iters {
        f();
    }
    started.elapsed().as_secs_f64() * 1e6 / f64::from(iters)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let p: usize = args.next().map_or(8, |s| s.parse().expect("P"));
    let bytes: usize = args.next().map_or(1 << 20, |s| s.parse().expect("BYTES"));
    if p < 2 || bytes < 8 {
        eprintln!("memory_work: P must be at least 2 and BYTES at least 8");
        std::process::exit(2);
    }
    let n = bytes / 8;
    let chunk = (64 << 10) / 8;
    let inputs: Vec<Vec<f64>> = (0..p)
        .map(|k| (0..n).map(|i| (i + k) as f64).collect())
        .collect();
    let mut outputs: Vec<Vec<f64>> = (0..p).map(|_| vec![0.0; n]).collect();
    let mut sum = vec![0.0f64; n];
    let iters = (200 * (1 << 20) / bytes.max(1)).clamp(5, 10_000) as u32;
    let copy = per_call(iters, || {
        for (out, input) in outputs.iter_mut().zip(&inputs) {
            out.copy_from_slice(black_box(input));
        }
    });
    let reduce = per_call(iters, || {
        for c in (0..n).step_by(chunk) {
            let r = c..(c + chunk).min(n);
            let acc = &mut sum[r.clone()];
            for ((a, x), y) in acc
                .iter_mut()
                .zip(&inputs[0][r.clone()])
                .zip(&inputs[1][r.clone()])
            {
                *a = x + y;
            }
            for input in &inputs[2..] {
                for (a, x) in acc.iter_mut().zip(&input[r.clone()]) {
                    *a += x;
                }
            }
        }
        black_box(&sum);
    });
    let push = per_call(iters, || {
        for out in outputs.iter_mut() {
            out.copy_from_slice(black_box(&sum));
        }
    });
    println!(
        "P = {p}, {bytes} bytes, one core: copy P inputs to P outputs {copy:.1} us; \
         reduce P inputs {reduce:.1} us; push the result to P outputs {push:.1} us; \
         (reduce + push) / copy = {:.2}",
        (reduce + push) / copy
    );
}
