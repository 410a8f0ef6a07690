//! Collectives on data of any size, next to the physical floor
//! measured by the same bench in the same run.
//!
//! `cargo bench --bench data` (filters: `-- bcast/`, `-- allreduce/`,
//! `-- '/1048576'`, ...). Sizes 8 B, 1 KiB, 64 KiB, 1 MiB, 16 MiB of `f64`;
//! P = 2 (one rank per core) and P = 8 (four per core on this machine).
//!
//! Timing: the default team (packed pinning, helping when ranks outnumber
//! cores, no records). Each sample is one team run: every rank allocates and
//! touches its buffers, makes [`WARM`] untimed calls (so that lanes exist
//! and the segment pool has its steady size), lines up on a yielding barrier, and times its loop of `iters`
//! calls back to back; the sample is the slowest rank's loop. Results are
//! checked outside the loop. Groups, each `name/P/bytes`:
//! - `bcast/checked`: `broadcast_into(0, &mut buf[..])`, checked correction.
//! - `bcast/fresh`: the same broadcast of a new value at every call (the
//!   root copies one of two values into its buffer first): the receivers'
//!   copies then read lines the root's core has just written, as in a
//!   program that broadcasts what it computed. Like with like for
//!   `bcast/handoff`, whose root writes its shared buffer at every call;
//!   `bcast/checked`'s value stays put, as the floor's source does, and
//!   stays in every core's cache.
//! - `bcast/floor`: the same team's threads, P - 1 of them each copying the
//!   root's N bytes from one shared buffer into their own, in parallel: what
//!   any broadcast among threads must at least do.
//! - `bcast/floor-synced`: the same, every rank first waiting at each call
//!   for all to enter it (see `allreduce/floor-synced`).
//! - `bcast/handoff`: a minimal broadcast through shared memory, with no
//!   fault tolerance and no protocol: the root copies its buffer into one
//!   of two shared buffers and publishes a counter, the others wait for it
//!   and copy out (the root reuses a buffer once its readers of two calls
//!   ago are done). Unlike `bcast/floor`, whose source never changes and so
//!   stays in every core's cache, the value is written anew at every call,
//!   as a broadcast's is: what the copies cost when they must move between
//!   cores.
//! - `allreduce/f=0`, `allreduce/f=1`: `all_reduce_into(&x[..], &mut y[..],
//!   sum)`.
//! - `allreduce/fresh`: the same allreduce, every rank first writing a new
//!   input (one of two values in turn): the ranks that reduce a chunk
//!   read inputs other cores have just written, as in a program whose
//!   ranks reduce what they computed. Like with like for
//!   `allreduce/handoff-fresh`.
//! - `allreduce/floor`: every rank copying its own N-byte input into its own
//!   output, in parallel: reading the P inputs and writing the P outputs at
//!   the machine's copy bandwidth, what any allreduce must at least do.
//! - `allreduce/floor-synced`: the floor with every rank waiting, at each
//!   call, for all to enter it, as any synchronous allreduce must (its
//!   result depends on every input): where ranks share cores, each thread
//!   then runs once per call, between its core mates' copies, instead of
//!   copying its own megabyte over and over in one time slice.
//! - `allreduce/handoff`: the chunked reduction of `allreduce/f=*` with no
//!   protocol and no fault tolerance: every rank waits for all to enter
//!   the call, reduces its share of the 64 KiB chunks of all the inputs
//!   (rank r of P: chunks r*c/P to (r+1)*c/P, the same at every call) into
//!   its own output, copies each into every other rank's output, and waits
//!   for all chunks. Unlike the floor it moves inputs and results between
//!   cores, as any allreduce must. (Its outputs are shared buffers standing
//!   for the ranks' own, which the library lends instead.)
//! - `allreduce/handoff-fresh`: `allreduce/handoff` with every rank first
//!   writing a new input, as `allreduce/fresh`.
//! - `reduce/f=1`: `reduce_into(0, &x[..], &mut y[..], sum)`, next to the
//!   allreduce: ranks that are not the root return once they sent, so a
//!   loop of reduces is paced by the root (from 256 KiB it reduces the
//!   inputs alone, chunk by chunk).
//!
//! Bandwidth (printed by criterion as throughput) is N bytes per call.

#[path = "common/lineup.rs"]
mod lineup;
use corrected::Collectives;
use lineup::YieldBarrier;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput};

use corrected::runtime::{Comm, SystemOperation, Team};

const SIZES: [usize; 5] = [8, 1 << 10, 64 << 10, 1 << 20, 16 << 20];
const RANKS: [u32; 2] = [2, 8];

/// Untimed calls before each sample's timed loop.
const WARM: usize = 4;

/// What a rank does in one timed call, given its rank, its input and its
/// output (both `n` values), and what the floors share.
type Call = dyn Fn(&mut Comm<'_>, &mut [f64], &mut [f64], &Floors) + Sync;

/// What the floors of one sample share: the root buffer that
/// `bcast/floor` copies, and `bcast/handoff`'s state.
struct Floors {
    root: Vec<f64>,
    /// The `fresh` groups' two values, taken in turn.
    fresh: [Vec<f64>; 2],
    /// The `fresh` groups: each rank's calls so far (only that rank
    /// touches its own).
    fresh_calls: Vec<AtomicU64>,
    ranks: usize,
    /// Made by the first (untimed) call that needs them.
    handoff: std::sync::OnceLock<Handoff>,
    reduce: std::sync::OnceLock<ReduceHandoff>,
    /// The synchronized floors' entries (one group runs at a time).
    arrivals: Arrivals,
}

impl Floors {
    fn handoff(&self) -> &Handoff {
        self.handoff
            .get_or_init(|| Handoff::new(self.ranks, self.root.len()))
    }

    /// Rank `me`'s value for its next call of a `fresh` group: the two
    /// values in turn.
    fn next_fresh(&self, me: u32) -> &[f64] {
        let k = self.fresh_calls[me as usize].fetch_add(1, Ordering::Relaxed);
        &self.fresh[(k % 2) as usize]
    }

    fn reduce(&self) -> &ReduceHandoff {
        self.reduce
            .get_or_init(|| ReduceHandoff::new(self.ranks, self.root.len()))
    }
}

/// Every rank's entry into a call, counted: what a synchronous collective
/// waits for at least once per call.
struct Arrivals {
    /// Arrivals in calls, over all calls.
    arrived: AtomicU64,
    /// Each rank's calls so far.
    calls: Vec<AtomicU64>,
}

impl Arrivals {
    fn new(ranks: usize) -> Self {
        Arrivals {
            arrived: AtomicU64::new(0),
            calls: (0..ranks).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Rank `me` enters its next call and waits for every rank to have
    /// entered it; returns the call's number (from 1).
    fn enter(&self, me: usize) -> u64 {
        let k = self.calls[me].fetch_add(1, Ordering::Relaxed) + 1;
        self.arrived.fetch_add(1, Ordering::AcqRel);
        wait_until(|| self.arrived.load(Ordering::Acquire) >= k * self.calls.len() as u64);
        k
    }
}

/// `allreduce/handoff`: the chunked reduction of the library, with no
/// protocol and no fault tolerance.
struct ReduceHandoff {
    /// Each rank's input (rank r's is all r + 1, as in the bench's calls).
    inputs: Vec<RwLock<Vec<f64>>>,
    /// Each rank's output, by chunk: shared, so that others push into it
    /// (it stands for the rank's buffer, which the library lends instead).
    outputs: Vec<Vec<RwLock<Vec<f64>>>>,
    arrivals: Arrivals,
    /// Chunks reduced and pushed, over all calls.
    reduced: AtomicU64,
}

/// Elements per chunk of `allreduce/handoff` (64 KiB, as `value::lazy`).
const HANDOFF_CHUNK: usize = 8192;

impl ReduceHandoff {
    fn new(ranks: usize, n: usize) -> Self {
        let output = || {
            (0..n.div_ceil(HANDOFF_CHUNK))
                .map(|c| RwLock::new(vec![0.0; HANDOFF_CHUNK.min(n - c * HANDOFF_CHUNK)]))
                .collect()
        };
        ReduceHandoff {
            inputs: (0..ranks)
                .map(|r| RwLock::new(vec![r as f64 + 1.0; n]))
                .collect(),
            outputs: (0..ranks).map(|_| output()).collect(),
            arrivals: Arrivals::new(ranks),
            reduced: AtomicU64::new(0),
        }
    }

    /// One call of rank `me`, which first writes `fresh` into its input if
    /// given (no other rank reads it then: each one's last call ended with
    /// every chunk of it reduced); returns its output's first element.
    fn call(&self, me: usize, fresh: Option<&[f64]>) -> Option<f64> {
        if let Some(value) = fresh {
            self.inputs[me].write().unwrap().copy_from_slice(value);
        }
        let ranks = self.outputs.len();
        // Everyone in call k: nobody reads an output of call k - 1 again.
        let k = self.arrivals.enter(me);
        let chunks = self.outputs[me].len();
        for c in me * chunks / ranks..(me + 1) * chunks / ranks {
            let mut acc = self.outputs[me][c].write().unwrap();
            let start = c * HANDOFF_CHUNK;
            let range = start..start + acc.len();
            acc.copy_from_slice(&self.inputs[0].read().unwrap()[range.clone()]);
            for input in &self.inputs[1..] {
                let input = input.read().unwrap();
                acc.iter_mut()
                    .zip(&input[range.clone()])
                    .for_each(|(a, x)| *a += x);
            }
            for (r, output) in self.outputs.iter().enumerate() {
                if r != me {
                    output[c].write().unwrap().copy_from_slice(&acc);
                }
            }
            drop(acc);
            self.reduced.fetch_add(1, Ordering::AcqRel);
        }
        wait_until(|| self.reduced.load(Ordering::Acquire) >= k * chunks as u64);
        let first = self.outputs[me].first();
        first.map(|c| c.read().unwrap()[0])
    }
}

/// `bcast/handoff`: a broadcast from rank 0 through two shared buffers.
struct Handoff {
    buffers: [RwLock<Vec<f64>>; 2],
    /// Calls whose value the root has published.
    published: AtomicU64,
    /// Copies out the receivers have finished, over all calls.
    copied: AtomicU64,
    /// Each rank's calls so far (only that rank touches its own).
    calls: Vec<AtomicU64>,
}

impl Handoff {
    fn new(ranks: usize, n: usize) -> Self {
        Handoff {
            buffers: [RwLock::new(vec![0.0; n]), RwLock::new(vec![0.0; n])],
            published: AtomicU64::new(0),
            copied: AtomicU64::new(0),
            calls: (0..ranks).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn call(&self, me: usize, mine: &[f64], out: &mut [f64]) {
        let k = self.calls[me].fetch_add(1, Ordering::Relaxed) + 1;
        let buffer = &self.buffers[(k % 2) as usize];
        if me == 0 {
            // The buffer's readers are those of call k - 2 (the lock keeps
            // a straggler safe; the count keeps the root from racing ahead).
            let receivers = self.calls.len() as u64 - 1;
            wait_until(|| self.copied.load(Ordering::Acquire) >= k.saturating_sub(2) * receivers);
            buffer.write().unwrap().copy_from_slice(mine);
            self.published.store(k, Ordering::Release);
        } else {
            wait_until(|| self.published.load(Ordering::Acquire) >= k);
            out.copy_from_slice(&buffer.read().unwrap());
            self.copied.fetch_add(1, Ordering::AcqRel);
        }
    }
}

/// Spins briefly, then yields (ranks share cores), until `done`.
fn wait_until(done: impl Fn() -> bool) {
    let mut spins = 0u32;
    while !done() {
        if spins < 64 {
            std::hint::spin_loop();
            spins += 1;
        } else {
            std::thread::yield_now();
        }
    }
}

/// One sample: the slowest rank's loop of `iters` calls of `call`.
fn sample(team: &Team, n: usize, iters: u64, call: &Call) -> Duration {
    let floors = Floors {
        root: (0..n).map(|i| i as f64).collect(),
        fresh: [1.0, 2.0].map(|x| vec![x; n]),
        fresh_calls: (0..team.ranks()).map(|_| AtomicU64::new(0)).collect(),
        ranks: team.ranks() as usize,
        handoff: std::sync::OnceLock::new(),
        reduce: std::sync::OnceLock::new(),
        arrivals: Arrivals::new(team.ranks() as usize),
    };
    let barrier = YieldBarrier::new(team.ranks() as usize);
    let report = team.run(|comm| {
        let mut input: Vec<f64> = vec![comm.rank() as f64 + 1.0; n];
        let mut output = vec![0.0f64; n];
        // Warm: lanes made, and the segment pool at its steady size (a
        // value is held until later operations retire the cores that keep
        // it, so the pool fills over a few calls).
        for _ in 0..WARM {
            call(comm, &mut input, &mut output, &floors);
        }
        barrier.wait();
        let started = Instant::now();
        for _ in 0..iters {
            call(comm, &mut input, &mut output, &floors);
        }
        let took = started.elapsed();
        (took, output.first().copied())
    });
    assert_eq!(
        report.returned().count(),
        report.outcomes.len(),
        "no rank failed"
    );
    report
        .returned()
        .map(|(_, (t, _))| *t)
        .max()
        .unwrap_or_default()
}

fn bench(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    team: &Team,
    bytes: usize,
    call: &Call,
) {
    let n = bytes / 8;
    let id = BenchmarkId::new(name, format!("{}/{bytes}", team.ranks()));
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function(id, |b| b.iter_custom(|iters| sample(team, n, iters, call)));
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    for ranks in RANKS {
        let teams: Vec<Team> = [0, 1]
            .map(|f| {
                Team::builder()
                    .ranks(ranks)
                    .fault_budget(f)
                    .build()
                    .unwrap()
            })
            .into();
        let sum: f64 = (1..=ranks).map(f64::from).sum();
        for bytes in SIZES {
            let mut group = c.benchmark_group(format!("data/{bytes}"));
            group
                .sample_size(10)
                .warm_up_time(Duration::from_millis(500))
                .measurement_time(Duration::from_secs(2));
            bench(
                &mut group,
                "bcast/checked",
                &teams[1],
                bytes,
                &|comm, _, out, floors| {
                    let root = &floors.root;
                    // The root's buffer holds the root's data from the
                    // untimed first call on (a broadcast leaves it alone).
                    if comm.rank() == 0 && out.last() != root.last() {
                        out.copy_from_slice(root);
                    }
                    comm.broadcast_into(0, out).unwrap();
                    assert_eq!(out.last(), root.last());
                },
            );
            bench(
                &mut group,
                "bcast/fresh",
                &teams[1],
                bytes,
                &|comm, _, out, floors| {
                    let me = comm.rank() as usize;
                    let value = floors.next_fresh(comm.rank());
                    // A new value at every call, written by the root as
                    // `bcast/handoff`'s root writes its shared buffer.
                    if me == 0 {
                        out.copy_from_slice(value);
                    }
                    comm.broadcast_into(0, out).unwrap();
                    assert_eq!(out.last(), value.last());
                },
            );
            for (name, synced) in [("bcast/floor", false), ("bcast/floor-synced", true)] {
                bench(
                    &mut group,
                    name,
                    &teams[1],
                    bytes,
                    &move |comm, _, out, floors| {
                        if synced {
                            floors.arrivals.enter(comm.rank() as usize);
                        }
                        if comm.rank() != 0 {
                            out.copy_from_slice(std::hint::black_box(&floors.root));
                        }
                    },
                );
            }
            bench(
                &mut group,
                "bcast/handoff",
                &teams[1],
                bytes,
                &|comm, input, out, floors| {
                    floors.handoff().call(comm.rank() as usize, input, out);
                    // Rank 0's input is all ones.
                    assert!(comm.rank() == 0 || out.last().map_or(true, |&x| x == 1.0));
                },
            );
            for (f, team) in teams.iter().enumerate() {
                let name = format!("allreduce/f={f}");
                bench(
                    &mut group,
                    &name,
                    team,
                    bytes,
                    &move |comm, input, out, _| {
                        comm.all_reduce_into(&*input, out, SystemOperation::sum())
                            .unwrap();
                        assert_eq!(out.first().copied().unwrap_or(sum), sum);
                    },
                );
            }
            bench(
                &mut group,
                "allreduce/fresh",
                &teams[1],
                bytes,
                &move |comm, input, out, floors| {
                    let value = floors.next_fresh(comm.rank());
                    input.copy_from_slice(value);
                    comm.all_reduce_into(&*input, out, SystemOperation::sum())
                        .unwrap();
                    let sum = f64::from(ranks) * value[0];
                    assert_eq!(out.first().copied().unwrap_or(sum), sum);
                },
            );
            for (name, synced) in [("allreduce/floor", false), ("allreduce/floor-synced", true)] {
                bench(
                    &mut group,
                    name,
                    &teams[1],
                    bytes,
                    &move |comm, input, out, floors| {
                        if synced {
                            floors.arrivals.enter(comm.rank() as usize);
                        }
                        out.copy_from_slice(std::hint::black_box(&*input));
                    },
                );
            }
            for (name, fresh) in [
                ("allreduce/handoff", false),
                ("allreduce/handoff-fresh", true),
            ] {
                bench(
                    &mut group,
                    name,
                    &teams[1],
                    bytes,
                    &move |comm, _, _, floors| {
                        let value = fresh.then(|| floors.next_fresh(comm.rank()));
                        let first = floors.reduce().call(comm.rank() as usize, value);
                        let sum = value.map_or(sum, |v| f64::from(ranks) * v[0]);
                        assert_eq!(first.unwrap_or(sum), sum);
                    },
                );
            }
            bench(
                &mut group,
                "reduce/f=1",
                &teams[1],
                bytes,
                &move |comm, input, out, _| {
                    comm.reduce_into(0, &*input, out, SystemOperation::sum())
                        .unwrap();
                    if comm.rank() == 0 {
                        assert_eq!(out.first().copied().unwrap_or(sum), sum);
                    }
                },
            );
            group.finish();
        }
    }
    c.final_summary();
}
