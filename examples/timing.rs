//! Times one collective the way `scripts/mpi/timing.c` times Open MPI's, for
//! `scripts/vs-openmpi.sh`: like timed with like, in one run.
//!
//! `cargo run --release --example timing -- OP RANKS F MODE ITERS` prints the
//! slowest rank's mean time per call in microseconds. OP is `allreduce` (an
//! f64 sum), `bcast` (an f64 from rank 0, checked correction), `allgather` or
//! `reducescatter` (a block of f64 per rank, `BYTES=N` bytes of it, default 8;
//! for `allreduce`, and for `rsag`, a reduce-scatter then an allgather of
//! the same vector, `BYTES` is the whole vector's);
//! `MPI_Allgather` and `MPI_Reduce_scatter_block` in `scripts/mpi/timing.c`); F the fault
//! budget; MODE `b2b` (ITERS calls back to back after one barrier, each rank
//! timing the whole loop) or `lone` (ITERS times a barrier then the call,
//! minus ITERS barriers alone, each loop timed whole by each rank: the cost
//! a call adds to a barrier-separated step, whatever the barrier's skew) or
//! `step` (ITERS times a barrier then the call, the step timed whole) or
//! `fenced` (as `lone`, with a fence outside the library instead of its
//! barrier, the same code as Open MPI's side uses: `common/fence.rs`).
//! `... -- pingpong` prints the raw
//! two-thread ping-pong (one way, ns): two atomics on separate cache lines,
//! each side spinning on its own, the floor two-rank numbers follow.
//! `... -- handoff N` prints the cost of one hand-off between N threads
//! pinned to one core (ns): a token passed round, each thread yielding until
//! it holds it. With N ranks per core, an operation in which every rank
//! must run at least once costs at least N such hand-offs per core, the
//! floor of an oversubscribed collective (docs/benchmarks.md).
//! `... -- handoff-park N` the same with a directed hand-off: each thread
//! parks, and the token's holder unparks the next one.
//! `... -- yield PER_CORE [KIB]` prints the floor a yield sets: PER_CORE
//! threads pinned to each core, each touching KIB KiB of its own memory
//! (default 0) then yielding, 100 000 times; the ns per time slice of each
//! core, the same work without the yields, and their difference, the cost
//! of one switch (a collective in which every rank must run once per call
//! costs at least PER_CORE - 1 of those per core and call, docs/benchmarks.md).
//! `... -- bare RANKS ITERS` prints what an 8-byte allreduce with
//! blocking calls costs here with next to no work (µs per call): RANKS
//! threads pinned as the team pins them (packed), each call a store of the
//! rank's value into its own line and an increment of one shared counter;
//! the last to arrive sums the values and publishes the result, the others
//! yield until it is there. No fault tolerance, no protocol, no helping
//! (its waiting threads yield blindly, so it switches more often than the
//! library: docs/benchmarks.md).
//! `... -- halves ITERS [RANKS]` prints the bare minimum of an allreduce
//! of RANKS (default 2, even) inputs of 1 MiB of f64 by two threads, one
//! per core, outside the library (µs per call): each thread sums its half
//! of the chunks of all inputs, 64 KiB at a time, into the output of the
//! first rank of its half and copies each chunk into every other output,
//! a barrier per call, as the library does when one rank per core
//! computes its core's chunks; `same` with the same half at every call,
//! `swapped` with the halves swapped at every call, and `floor`, each
//! thread copying the inputs of its half of the ranks into their outputs
//! (at RANKS = 2, `cargo bench --bench data`'s allreduce floor; above, the
//! same data as the allreduce moves, where the bench's floor has each of
//! the RANKS threads copy its own input over and over in its time slice),
//! and `spread`, each thread copying rank 0's input into the outputs of
//! its half of the other ranks: the data a broadcast of RANKS ranks moves
//! (the bench's broadcast floor has each of its RANKS - 1 threads copy the
//! root's value over and over in its time slice).
//!
//! For same-run comparisons of our own settings: `HELP=0` (or `1`) turns
//! [helping](corrected::helping) off (on) instead of the default (on when
//! pinned ranks outnumber cores); `PIN=rr` pins round-robin instead of packed,
//! `PIN=none` leaves the threads to the OS (as Open MPI's `--bind-to none`);
//! `FENCE=seqcst` (or `membarrier`) chooses the mailbox's doorbell fence
//! (`TeamBuilder::doorbell_fence`) instead of the default;
//! `TRACE=N` (with the library built `--features trace`) prints N records
//! of the ranks' timeline from the middle of the run (all of it if N is
//! larger) to stderr
//! (`corrected::trace`: calls, waits, yields, spins, helping), and
//! `TRACE=phases` the median of each phase of a call, from the whole
//! timeline;
//! `PARTS=1` prints rank 0's two lone loops (barrier + call, barrier alone),
//! or its back-to-back loop, to stderr, with the process's context switches
//! per step; `CORRECTION=delayed:10000` (any `--correction` spelling) for
//! another correction than checked; `TREE=kary:4` (any `--tree` spelling)
//! for another broadcast tree than the team's default; `PACE_NS=300` for a
//! correction pace (`TeamBuilder::correction_pace`); `ALLREDUCE=tree` (or `star`) for that
//! allreduce and barrier algorithm instead of the team's default (`auto`).

use corrected::Collectives;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[path = "common/timed.rs"]
mod timed;

/// The collective timed.
#[derive(Clone, Copy)]
enum Op {
    Allreduce,
    Bcast,
    Allgather,
    ReduceScatter,
    /// A reduce-scatter then an allgather: an allreduce composed.
    RsAg,
}

use corrected::runtime::{Pinning, SystemOperation, Team};
use crossbeam_utils::CachePadded;

fn pingpong() -> f64 {
    let rounds = 2_000_000u64;
    let (a, b) = (
        CachePadded::new(AtomicU64::new(0)),
        CachePadded::new(AtomicU64::new(0)),
    );
    let started = std::thread::scope(|s| {
        s.spawn(|| {
            for i in 1..=rounds {
                while a.load(Ordering::Acquire) != i {
                    std::hint::spin_loop();
                }
                b.store(i, Ordering::Release);
            }
        });
        let t = Instant::now();
        for i in 1..=rounds {
            a.store(i, Ordering::Release);
            while b.load(Ordering::Acquire) != i {
                std::hint::spin_loop();
            }
        }
        t.elapsed()
    });
    started.as_nanos() as f64 / (2 * rounds) as f64
}

/// One hand-off among `n` threads pinned to the first core, in ns: thread
/// i waits for the token to be i, then passes it to i + 1. Waiting yields,
/// or with `park` parks, and the holder then wakes the next thread: a
/// hand-off directed at the thread that has to run.
fn handoff(n: usize, park: bool) -> f64 {
    let rounds = 20_000u64;
    let token = CachePadded::new(AtomicU64::new(0));
    let core = core_affinity::get_core_ids().and_then(|c| c.first().copied());
    let threads: Vec<std::sync::OnceLock<std::thread::Thread>> =
        (0..n).map(|_| std::sync::OnceLock::new()).collect();
    let started = Instant::now();
    std::thread::scope(|s| {
        for i in 0..n {
            let (token, threads) = (&token, &threads);
            s.spawn(move || {
                if let Some(core) = core {
                    core_affinity::set_for_current(core);
                }
                threads[i].set(std::thread::current()).unwrap();
                let next = loop {
                    if let Some(t) = threads[(i + 1) % n].get() {
                        break t.clone();
                    }
                    std::thread::yield_now();
                };
                for round in 0..rounds {
                    let mine = round * n as u64 + i as u64;
                    while token.load(Ordering::Acquire) != mine {
                        if park {
                            std::thread::park();
                        } else {
                            std::thread::yield_now();
                        }
                    }
                    token.store(mine + 1, Ordering::Release);
                    if park {
                        next.unpark();
                    }
                }
            });
        }
    });
    started.elapsed().as_nanos() as f64 / (rounds * n as u64) as f64
}

/// `yield`: ns per time slice and core of `per_core` threads pinned to each
/// core, each touching `kib` KiB of its own memory then yielding (or, with
/// `yields` false, not yielding: the work alone).
fn slices(per_core: usize, kib: usize, yields: bool) -> f64 {
    const ROUNDS: usize = 100_000;
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    let n = cores.len().max(1);
    let started = Instant::now();
    std::thread::scope(|s| {
        for i in 0..per_core * n {
            let core = cores.get(i % n).copied();
            s.spawn(move || {
                if let Some(core) = core {
                    core_affinity::set_for_current(core);
                }
                let mut own = vec![0u8; kib * 1024];
                for _ in 0..ROUNDS {
                    for line in own.iter_mut().step_by(64) {
                        *line = line.wrapping_add(1);
                    }
                    std::hint::black_box(&mut own);
                    if yields {
                        std::thread::yield_now();
                    }
                }
            });
        }
    });
    started.elapsed().as_nanos() as f64 / (ROUNDS * per_core) as f64
}

/// The longest time any of the threads `handles` timed.
fn slowest_of(handles: Vec<std::thread::ScopedJoinHandle<'_, Duration>>) -> Duration {
    handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .max()
        .unwrap_or_default()
}

/// `bare`: µs per call of the bare allreduce of `ranks` threads (see the
/// module), the slowest thread's mean.
fn bare(ranks: usize, iters: u64) -> f64 {
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    let values: Vec<CachePadded<AtomicU64>> = (0..ranks)
        .map(|_| CachePadded::new(AtomicU64::new(0)))
        .collect();
    let arrived = CachePadded::new(AtomicU64::new(0));
    let done = CachePadded::new(AtomicU64::new(0));
    let result = CachePadded::new(AtomicU64::new(0));
    let warm = 100;
    let want = (0..ranks).map(|r| r as f64).sum::<f64>();
    let slowest = std::thread::scope(|s| {
        let handles: Vec<_> = (0..ranks)
            .map(|r| {
                let (values, arrived, done, result) = (&values, &arrived, &done, &result);
                // Packed, as `Pinning::Packed`: consecutive ranks share a core.
                let core = (!cores.is_empty()).then(|| cores[r * cores.len() / ranks]);
                s.spawn(move || {
                    if let Some(core) = core {
                        core_affinity::set_for_current(core);
                    }
                    let mut started = Instant::now();
                    for call in 0..warm + iters {
                        if call == warm {
                            started = Instant::now();
                        }
                        values[r].store((r as f64).to_bits(), Ordering::Relaxed);
                        // AcqRel: the last to arrive sees every value stored
                        // before an increment.
                        if arrived.fetch_add(1, Ordering::AcqRel) % ranks as u64 == ranks as u64 - 1
                        {
                            let sum: f64 = values
                                .iter()
                                .map(|v| f64::from_bits(v.load(Ordering::Relaxed)))
                                .sum();
                            result.store(sum.to_bits(), Ordering::Relaxed);
                            done.store(call + 1, Ordering::Release);
                        } else {
                            while done.load(Ordering::Acquire) != call + 1 {
                                std::thread::yield_now();
                            }
                        }
                        // Not overwritten before every rank has read it:
                        // the next result needs every rank's next arrival.
                        assert_eq!(f64::from_bits(result.load(Ordering::Relaxed)), want);
                    }
                    started.elapsed()
                })
            })
            .collect();
        slowest_of(handles)
    });
    slowest.as_secs_f64() * 1e6 / iters as f64
}

/// `halves`: µs per call of an allreduce of `ranks` inputs of 1 MiB of f64
/// by two threads, one pinned to each of the first two cores (if there are
/// two), each taking half the chunks, or of the floors (`floor`, `spread`:
/// see the module).
/// Chunks are behind locks (never contended: one writer at a time, the
/// barrier between calls), for safe sharing.
fn halves(kind: &str, ranks: usize, iters: usize) -> f64 {
    use std::sync::{Barrier, RwLock};
    const CHUNK: usize = 8192;
    const CHUNKS: usize = 16;
    let inputs: Vec<Vec<f64>> = (0..ranks)
        .map(|r| vec![r as f64 + 1.0; CHUNK * CHUNKS])
        .collect();
    let outputs: Vec<Vec<RwLock<Vec<f64>>>> = (0..ranks)
        .map(|_| (0..CHUNKS).map(|_| RwLock::new(vec![0.0; CHUNK])).collect())
        .collect();
    let barrier = Barrier::new(2);
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    let warm = 100;
    let elapsed = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|me| {
                let (inputs, outputs, barrier) = (&inputs, &outputs, &barrier);
                let core = (cores.len() >= 2).then(|| cores[me]);
                s.spawn(move || {
                    if let Some(core) = core {
                        core_affinity::set_for_current(core);
                    }
                    // The thread's ranks: the first half or the second.
                    let own = me * ranks / 2..(me + 1) * ranks / 2;
                    let mut started = Instant::now();
                    for call in 0..warm + iters {
                        if call == warm {
                            barrier.wait();
                            started = Instant::now();
                        }
                        for c in 0..CHUNKS {
                            let range = c * CHUNK..(c + 1) * CHUNK;
                            if kind == "floor" || kind == "spread" {
                                // `floor` copies each rank's own input,
                                // `spread` rank 0's (the root's value) into
                                // every other rank's output.
                                let spread = kind == "spread";
                                for r in own.clone().filter(|&r| !(spread && r == 0)) {
                                    let from = if spread { 0 } else { r };
                                    let mut out = outputs[r][c].write().unwrap();
                                    out.copy_from_slice(&inputs[from][range.clone()]);
                                }
                                continue;
                            }
                            let half = (c * 2 / CHUNKS + usize::from(kind == "swapped") * call) % 2;
                            if half != me {
                                continue;
                            }
                            let mut out = outputs[own.start][c].write().unwrap();
                            let (a, b) = (&inputs[0][range.clone()], &inputs[1][range.clone()]);
                            for ((o, a), b) in out.iter_mut().zip(a).zip(b) {
                                *o = a + b;
                            }
                            for input in &inputs[2..] {
                                for (o, x) in out.iter_mut().zip(&input[range.clone()]) {
                                    *o += x;
                                }
                            }
                            for (r, output) in outputs.iter().enumerate() {
                                if r != own.start {
                                    output[c].write().unwrap().copy_from_slice(&out);
                                }
                            }
                        }
                        barrier.wait();
                    }
                    started.elapsed()
                })
            })
            .collect();
        slowest_of(handles)
    });
    let sum = (ranks * (ranks + 1) / 2) as f64;
    for (r, out) in outputs.iter().enumerate() {
        let want = match kind {
            "floor" => r as f64 + 1.0,
            "spread" if r == 0 => 0.0,
            "spread" => 1.0,
            _ => sum,
        };
        assert!(out
            .iter()
            .all(|c| c.read().unwrap().iter().all(|&x| x == want)));
    }
    elapsed.as_secs_f64() * 1e6 / iters as f64
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("pingpong") {
        println!("{:.1}", pingpong());
        return Ok(());
    }
    if let Some(kind @ ("handoff" | "handoff-park")) = args.first().map(String::as_str) {
        let n = args.get(1).map_or(Ok(4), |n| n.parse())?;
        println!("{:.1}", handoff(n, kind == "handoff-park"));
        return Ok(());
    }
    if args.first().map(String::as_str) == Some("yield") {
        let per_core: usize = args.get(1).map_or(Ok(4), |n| n.parse())?;
        let kib: usize = args.get(2).map_or(Ok(0), |n| n.parse())?;
        if per_core == 0 {
            return Err("yield: PER_CORE must be at least 1".into());
        }
        let (with, alone) = (slices(per_core, kib, true), slices(per_core, kib, false));
        println!("slice {with:.1} work {alone:.1} switch {:.1}", with - alone);
        return Ok(());
    }
    if args.first().map(String::as_str) == Some("bare") {
        let ranks: usize = args.get(1).map_or(Ok(8), |n| n.parse())?;
        let iters: u64 = args.get(2).map_or(Ok(100_000), |n| n.parse())?;
        if ranks < 2 {
            return Err("bare: RANKS must be at least 2".into());
        }
        println!("{:.3}", bare(ranks, iters));
        return Ok(());
    }
    if args.first().map(String::as_str) == Some("halves") {
        let iters = args.get(1).map_or(Ok(2000), |n| n.parse())?;
        let ranks: usize = args.get(2).map_or(Ok(2), |n| n.parse())?;
        if ranks < 2 || ranks % 2 != 0 {
            return Err("halves: RANKS must be even, at least 2".into());
        }
        for kind in ["same", "swapped", "floor", "spread"] {
            println!("{kind} {:.1}", halves(kind, ranks, iters));
        }
        return Ok(());
    }
    let [op, ranks, f, mode, iters] = args.as_slice() else {
        return Err(
            "usage: timing OP RANKS F MODE ITERS | timing pingpong | timing handoff[-park] N \
             | timing yield PER_CORE [KIB] | timing bare RANKS ITERS \
             | timing halves ITERS [RANKS]"
                .into(),
        );
    };
    let (ranks, f, iters): (u32, u32, u32) = (ranks.parse()?, f.parse()?, iters.parse()?);
    let op = match op.as_str() {
        "allreduce" => Op::Allreduce,
        "bcast" => Op::Bcast,
        "allgather" => Op::Allgather,
        "reducescatter" => Op::ReduceScatter,
        "rsag" => Op::RsAg,
        other => return Err(format!("unknown OP {other}").into()),
    };
    // Elements per block of an allgather or a reduce-scatter.
    let block = match std::env::var("BYTES") {
        Ok(b) => (b.parse::<usize>()? / 8).max(1),
        Err(_) => 1,
    };
    let fence = timed::fence::Fence::new(ranks);
    let mode = timed::Mode::parse(mode, Some(&fence))?;
    let mut team = Team::builder()
        .ranks(ranks)
        .fault_budget(f)
        .correction(
            std::env::var("CORRECTION")
                .unwrap_or_else(|_| "checked".into())
                .parse()?,
        )
        .allreduce(
            std::env::var("ALLREDUCE")
                .unwrap_or_else(|_| "auto".into())
                .parse()?,
        );
    if let Ok(pace) = std::env::var("PACE_NS") {
        team = team.correction_pace(std::time::Duration::from_nanos(pace.parse()?));
    }
    if let Ok(tree) = std::env::var("TREE") {
        team = team.tree(tree.parse()?);
    }
    match std::env::var("HELP").ok().as_deref() {
        Some("0") => team = team.helping(false),
        Some("1") => team = team.helping(true),
        _ => {}
    }
    if let Ok(fence) = std::env::var("FENCE") {
        team = team.doorbell_fence(fence.parse()?);
    }
    match std::env::var("PIN").ok().as_deref() {
        Some("rr") => team = team.pinning(Pinning::RoundRobin),
        Some("none") => team = team.pinning(Pinning::None),
        _ => {}
    }
    let team = team.build()?;
    let report = team.run(|comm| -> Result<Duration, corrected::Error> {
        let me = comm.rank() as f64;
        let whole = block * ranks as usize;
        // `allreduce` and `rsag` reduce a vector of BYTES in all, which
        // `rsag` cuts into one block per rank.
        let vector = (block / ranks as usize).max(1) * ranks as usize;
        let (send, mut recv) = match op {
            Op::Allgather => (vec![me; block], vec![0.0; whole]),
            Op::ReduceScatter => (vec![me; whole], vec![0.0; block]),
            Op::Allreduce => (vec![me; block], vec![me; block]),
            Op::RsAg => (vec![me; vector], vec![me; vector]),
            Op::Bcast => (vec![me], vec![me]),
        };
        let mut part = vec![0.0; vector / ranks as usize];
        let mut call = |comm: &mut corrected::runtime::Comm<'_>| match op {
            Op::Bcast => comm.broadcast_into(0, &mut recv[0]),
            Op::Allreduce => comm.all_reduce_into(&send[..], &mut recv[..], SystemOperation::sum()),
            Op::RsAg => comm
                .reduce_scatter_block_into(&send[..], &mut part[..], SystemOperation::sum())
                .and_then(|_| comm.all_gather_into(&part[..], &mut recv[..]))
                .map(drop),
            Op::Allgather => comm.all_gather_into(&send[..], &mut recv[..]).map(drop),
            Op::ReduceScatter => comm
                .reduce_scatter_block_into(&send[..], &mut recv[..], SystemOperation::sum())
                .map(drop),
        };
        timed::mean_per_call(comm, iters, mode, |comm| call(comm))
    });
    let mut slowest = Duration::ZERO;
    for (rank, got) in report.returned() {
        let mean = got.clone().map_err(|e| format!("rank {rank}: {e}"))?;
        slowest = slowest.max(mean);
    }
    println!("{:.3}", slowest.as_secs_f64() * 1e6);
    match std::env::var("TRACE").ok().as_deref() {
        Some("phases") => print_phases(ranks)?,
        Some(n) => print_timeline(n.parse()?)?,
        None => {}
    }
    Ok(())
}

/// The run's timeline, or an error if the library was built without the
/// feature `trace`.
fn timeline() -> Result<Vec<corrected::trace::Record>, Box<dyn std::error::Error>> {
    if !corrected::trace::ENABLED {
        return Err("TRACE needs the library built with --features trace".into());
    }
    Ok(corrected::trace::take())
}

/// `TRACE=phases`: where a call's time goes, from the whole timeline, to
/// stderr: the median of each phase of a rank's call (traced, so each a
/// little longer than untraced) and how often it comes per call of one
/// rank, and the share of the cores' time spent polling while every core
/// mate waits.
fn print_phases(ranks: u32) -> Result<(), Box<dyn std::error::Error>> {
    use corrected::trace::Event;
    let records = timeline()?;
    let (Some(first), Some(last)) = (records.first(), records.last()) else {
        return Ok(());
    };
    let names = [
        "entering a call until its first wait",
        "leaving, from the wake-up to the return",
        "a yield until the rank runs again",
        "advancing a core mate's call (a helper's pump)",
    ];
    let mut phases: [Vec<u64>; 4] = Default::default();
    let (mut calls, mut spinning) = (0u64, 0u64);
    // Each rank's previous record, and when it began to spin.
    let mut previous: Vec<Option<(u64, Event)>> = vec![None; ranks as usize];
    let mut spin_start: Vec<Option<u64>> = vec![None; ranks as usize];
    for r in &records {
        let i = r.rank as usize;
        if let Some((at, before)) = previous[i] {
            let took = r.at - at;
            match (before, r.event) {
                (Event::Enter(..), Event::Wait) => phases[0].push(took),
                (Event::Woke(_) | Event::Unpark, Event::Exit(_)) => phases[1].push(took),
                (Event::Yield, Event::Resumed) => phases[2].push(took),
                (_, Event::Helped(_)) => phases[3].push(took),
                _ => {}
            }
        }
        match r.event {
            Event::Exit(_) => calls += 1,
            Event::SpinStart => spin_start[i] = Some(r.at),
            Event::SpinEnd => spinning += spin_start[i].take().map_or(0, |s| r.at - s),
            _ => {}
        }
        previous[i] = Some((r.at, r.event));
    }
    let calls_per_rank = calls as f64 / f64::from(ranks);
    eprintln!("phase | median (µs, traced) | per call of a rank");
    for (name, mut took) in names.into_iter().zip(phases) {
        took.sort_unstable();
        let median = took.get(took.len() / 2).map_or(0.0, |&t| t as f64 / 1e3);
        let per_call = took.len() as f64 / calls.max(1) as f64;
        eprintln!("{name} | {median:.2} | {per_call:.2}");
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let span = (last.at - first.at) as f64;
    eprintln!(
        "{calls_per_rank:.0} calls per rank, {:.2} µs per call (traced); polling while every \
         core mate waits: {:.1} % of the cores' time",
        span / 1e3 / calls_per_rank.max(1.0),
        100.0 * spinning as f64 / (span * cores).max(1.0),
    );
    Ok(())
}

/// `TRACE=N`: N records of the run's timeline from its middle, to stderr,
/// one line per record, each rank's in a column of its own
/// ([`corrected::trace`]; the library must be built with `--features
/// trace`).
fn print_timeline(n: usize) -> Result<(), Box<dyn std::error::Error>> {
    let records = timeline()?;
    let from = records.len().saturating_sub(n) / 2;
    let Some(first) = records.get(from) else {
        return Ok(());
    };
    for r in &records[from..(from + n).min(records.len())] {
        let us = (r.at - first.at) as f64 / 1e3;
        let column = " ".repeat(r.rank as usize * 18);
        eprintln!("{us:9.2} {column}r{}: {:?}", r.rank, r.event);
    }
    Ok(())
}
