//! Mailbox latency: one-way latency = round trip / 2 between two threads
//! pinned to core 0 and core 1 (see docs/mailbox.md for results).
//!
//! `cargo bench --bench mailbox` runs:
//!
//! * `side_by_side`: (a), (b), (c) below measured back to back in each of
//!   31 rounds, (b) and (c) with each doorbell fence (`DoorbellFence`:
//!   seqcst, then membarrier where the kernel offers it), printing medians
//!   and the median per-round ratios b/a, c/a (the fair comparison: see
//!   [`side_by_side`]).
//! * `message_sizes`: (b) with messages of 8, 56 and 120 bytes (a slot of
//!   one cache line, of one line with nothing to spare, and of two lines:
//!   the thread runtime's `Msg<Packet>`), and of 120 bytes sent in one
//!   line by a codec (as the runtime sends short values), back to back in
//!   each of 11 rounds, next to (a): what a message's second line costs a
//!   hop, and whether the one-line form saves it.
//! * `pingpong/a_raw_atomics`: two `AtomicU64`s on separate cache lines, each
//!   side spinning on its own: the physical floor of a cross-core hand-off.
//! * `pingpong/b_lanes_try_recv`: the same over two lanes, `Endpoint::send` /
//!   busy-polling `Endpoint::try_recv`. Target: at most 1.3x (a).
//! * `pingpong/c_lanes_wait`: the same, waiting with `Endpoint::wait(None)`
//!   between `try_recv`s (the doorbell path while the peer spins).
//! * `waiting/yield_now`: one `std::thread::yield_now` with nobody else
//!   runnable on the core.
//! * `waiting/spin_loop`: one `std::hint::spin_loop` (PAUSE on x86).
//! * `waiting/park_unpark_wakeup`: park/unpark ping-pong across the two cores
//!   (round trip / 2): what waking a parked thread costs end to end.
//! * `waiting/same_core_lanes_wait`: the mailbox ping-pong with both threads
//!   pinned to core 0, so every hop needs the waiter to give the core away
//!   (the 64-ranks-on-2-cores situation).
//! * `team/ring_64_ranks`: 64 ranks pinned round-robin to the 2 cores pass a
//!   token around a ring; time per hop. Every waiting rank spins, yields or
//!   parks while one works, so this shows what waiting costs the working ones.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use crossbeam_utils::CachePadded;

use corrected::mailbox::{Compact, DoorbellFence, Endpoint, Mailboxes, Whole};

/// The cores this process may use, read once before anything is pinned:
/// `core_affinity::get_core_ids` reads the calling thread's affinity mask,
/// which a thread spawned by a pinned thread inherits.
fn cores() -> &'static [core_affinity::CoreId] {
    static CORES: OnceLock<Vec<core_affinity::CoreId>> = OnceLock::new();
    CORES.get_or_init(|| core_affinity::get_core_ids().unwrap_or_default())
}

/// Pins the calling thread to the `i`-th core of [`cores`] (if there is one).
fn pin(i: usize) {
    if let Some(&core) = cores().get(i) {
        assert!(core_affinity::set_for_current(core), "pinning to {core:?}");
    }
}

const STOP: u64 = u64::MAX;

/// (a) Round trips over two padded atomics; returns the total / 2.
fn raw_pingpong(iters: u64) -> Duration {
    let ping = CachePadded::new(AtomicU64::new(0));
    let pong = CachePadded::new(AtomicU64::new(0));
    thread::scope(|s| {
        s.spawn(|| {
            pin(1);
            let mut expect = 1;
            loop {
                let v = loop {
                    let v = ping.load(Ordering::Acquire);
                    if v >= expect {
                        break v;
                    }
                    std::hint::spin_loop();
                };
                pong.store(v, Ordering::Release);
                if v == STOP {
                    return;
                }
                expect = v + 1;
            }
        });
        pin(0);
        let round = |i: u64| {
            ping.store(i, Ordering::Release);
            while pong.load(Ordering::Acquire) != i {
                std::hint::spin_loop();
            }
        };
        round(1); // the echo thread is up
        let t = Instant::now();
        for i in 2..iters + 2 {
            round(i);
        }
        let elapsed = t.elapsed();
        round(STOP);
        elapsed / 2
    })
}

/// Receives with busy polling (`wait == false`) or through `wait(None)`.
#[inline(always)]
fn recv<T: Send, C: Compact<T>>(ep: &mut Endpoint<'_, T, C>, wait: bool) -> (u32, T) {
    loop {
        if let Some(got) = ep.try_recv() {
            return got;
        }
        if wait {
            ep.wait(None);
        } else {
            std::hint::spin_loop();
        }
    }
}

/// (b), (c) and the same-core variant: round trips over two lanes, with
/// `T` messages (`u64` but for `message_sizes`) through lanes with codec `C`.
fn lane_pingpong<T: Token, C: Compact<T>>(
    iters: u64,
    wait: bool,
    echo_core: usize,
    fence: DoorbellFence,
) -> Duration
where
    C::Small: Send,
{
    let boxes = Mailboxes::<T, C>::with_codec(2, 64).with_doorbell_fence(fence);
    let mut a = boxes.endpoint(0).unwrap();
    let mut b = boxes.endpoint(1).unwrap();
    thread::scope(|s| {
        s.spawn(move || {
            pin(echo_core);
            loop {
                let (from, v) = recv(&mut b, wait);
                b.send(from, v).unwrap();
                if v.round() == STOP {
                    return;
                }
            }
        });
        pin(0);
        let mut round = |i: u64| {
            a.send(1, T::make(i)).unwrap();
            let (from, got) = recv(&mut a, wait);
            debug_assert_eq!((from, got.round()), (1, i));
            black_box(got.round());
        };
        round(0);
        let t = Instant::now();
        for i in 1..=iters {
            round(i);
        }
        let elapsed = t.elapsed();
        round(STOP);
        elapsed / 2
    })
}

/// Park/unpark ping-pong across cores: each hop wakes a parked thread.
fn park_pingpong(iters: u64) -> Duration {
    let ping = CachePadded::new(AtomicU64::new(0));
    let pong = CachePadded::new(AtomicU64::new(0));
    let ready = AtomicBool::new(false);
    let main = thread::current();
    thread::scope(|s| {
        let echo = s.spawn(|| {
            pin(1);
            ready.store(true, Ordering::Release);
            let mut expect = 1;
            loop {
                let v = loop {
                    let v = ping.load(Ordering::Acquire);
                    if v >= expect {
                        break v;
                    }
                    thread::park();
                };
                pong.store(v, Ordering::Release);
                main.unpark();
                if v == STOP {
                    return;
                }
                expect = v + 1;
            }
        });
        pin(0);
        while !ready.load(Ordering::Acquire) {
            thread::yield_now();
        }
        let round = |i: u64| {
            ping.store(i, Ordering::Release);
            echo.thread().unpark();
            while pong.load(Ordering::Acquire) != i {
                thread::park();
            }
        };
        round(1);
        let t = Instant::now();
        for i in 2..iters + 2 {
            round(i);
        }
        let elapsed = t.elapsed();
        round(STOP);
        elapsed / 2
    })
}

/// A token passed around a ring of `ranks` threads pinned round-robin to the
/// cores (as the runtime places ranks); time per hop.
fn ring(iters: u64, ranks: u32) -> Duration {
    let boxes = Mailboxes::<u64>::new(ranks, 4);
    let mut eps: Vec<_> = (0..ranks).map(|r| boxes.endpoint(r).unwrap()).collect();
    let mut first = eps.remove(0);
    thread::scope(|s| {
        for mut ep in eps {
            s.spawn(move || {
                pin(ep.rank() as usize % cores().len().max(1));
                let next = (ep.rank() + 1) % ranks;
                loop {
                    let (_, v) = recv(&mut ep, true);
                    ep.send(next, v).unwrap();
                    if v == STOP {
                        return;
                    }
                }
            });
        }
        pin(0);
        let mut lap = |i: u64| {
            first.send(1, i).unwrap();
            black_box(recv(&mut first, true));
        };
        lap(0);
        let t = Instant::now();
        for i in 1..=iters {
            lap(i);
        }
        let elapsed = t.elapsed();
        lap(STOP);
        elapsed / ranks
    })
}

fn pingpong(c: &mut Criterion) {
    let mut g = c.benchmark_group("pingpong");
    g.measurement_time(Duration::from_secs(4));
    g.bench_function("a_raw_atomics", |b| b.iter_custom(raw_pingpong));
    g.bench_function("b_lanes_try_recv", |b| {
        b.iter_custom(|iters| lane_pingpong::<u64, Whole>(iters, false, 1, DoorbellFence::SeqCst))
    });
    g.bench_function("c_lanes_wait", |b| {
        b.iter_custom(|iters| lane_pingpong::<u64, Whole>(iters, true, 1, DoorbellFence::SeqCst))
    });
    g.finish();
}

fn waiting(c: &mut Criterion) {
    let mut g = c.benchmark_group("waiting");
    g.measurement_time(Duration::from_secs(4));
    g.bench_function("yield_now", |b| {
        pin(0);
        b.iter(thread::yield_now)
    });
    g.bench_function("spin_loop", |b| b.iter(std::hint::spin_loop));
    g.sample_size(20);
    g.bench_function("park_unpark_wakeup", |b| b.iter_custom(park_pingpong));
    g.bench_function("same_core_lanes_wait", |b| {
        b.iter_custom(|iters| lane_pingpong::<u64, Whole>(iters, true, 0, DoorbellFence::SeqCst))
    });
    g.finish();
}

fn team(c: &mut Criterion) {
    let mut g = c.benchmark_group("team");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(5));
    g.bench_function("ring_64_ranks", |b| b.iter_custom(|iters| ring(iters, 64)));
    g.finish();
}

/// (a), (b) and (c) interleaved, (b) and (c) with each doorbell fence: the
/// two vCPUs' placement on the host can change over a run (one-way ~60 ns
/// when they share a cache cluster, ~250 ns when not), so comparing
/// criterion's separate 4-second runs can mix placements. Here each round
/// measures all five back to back, and the ratios are taken per round.
fn side_by_side(rounds: usize, round_trips: u64) {
    let membarrier = DoorbellFence::Membarrier;
    let seqcst = DoorbellFence::SeqCst;
    let rows: Vec<[f64; 5]> = (0..rounds)
        .map(|_| {
            let ns = |d: Duration| d.as_nanos() as f64 / round_trips as f64;
            [
                ns(raw_pingpong(round_trips)),
                ns(lane_pingpong::<u64, Whole>(round_trips, false, 1, seqcst)),
                ns(lane_pingpong::<u64, Whole>(round_trips, true, 1, seqcst)),
                ns(lane_pingpong::<u64, Whole>(
                    round_trips,
                    false,
                    1,
                    membarrier,
                )),
                ns(lane_pingpong::<u64, Whole>(
                    round_trips,
                    true,
                    1,
                    membarrier,
                )),
            ]
        })
        .collect();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let col = |i: usize| median(rows.iter().map(|r| r[i]).collect());
    let ratio = |i: usize| median(rows.iter().map(|r| r[i] / r[0]).collect());
    println!(
        "side_by_side ({rounds} rounds of {round_trips} round trips, one-way ns, medians; \
         fences: seqcst, {}): a_raw {:.1}  b_lanes_try_recv {:.1}  c_lanes_wait {:.1}  \
         b/a {:.2}  c/a {:.2}  membarrier: b {:.1}  c {:.1}  b/a {:.2}  c/a {:.2}",
        Mailboxes::<u64>::new(2, 2)
            .with_doorbell_fence(membarrier)
            .doorbell_fence()
            .name(),
        col(0),
        col(1),
        col(2),
        ratio(1),
        ratio(2),
        col(3),
        col(4),
        ratio(3),
        ratio(4),
    );
    let fastest = rows
        .iter()
        .min_by(|x, y| x[0].total_cmp(&y[0]))
        .expect("at least one round");
    println!(
        "side_by_side round with the fastest (a): a_raw {:.1}  b {:.1}  b/a {:.2}  \
         membarrier b {:.1}  b/a {:.2}",
        fastest[0],
        fastest[1],
        fastest[1] / fastest[0],
        fastest[3],
        fastest[3] / fastest[0]
    );
}

/// A message for [`lane_pingpong`]: made from a round's number, which it
/// carries in its first word.
trait Token: Copy + Send + std::fmt::Debug + 'static {
    fn make(i: u64) -> Self;
    fn round(&self) -> u64;
}

impl Token for u64 {
    fn make(i: u64) -> Self {
        i
    }
    fn round(&self) -> u64 {
        *self
    }
}

impl<const N: usize> Token for [u64; N] {
    fn make(i: u64) -> Self {
        [i; N]
    }
    fn round(&self) -> u64 {
        self[0]
    }
}

/// A codec that sends a 120-byte message whose words are all the same in
/// seven words, as the runtime's `OneLine` sends a short value's message
/// in 56 bytes and expands it back to 120.
struct SevenWords;

impl Compact<[u64; 15]> for SevenWords {
    type Small = [u64; 7];
    fn compact(value: &[u64; 15]) -> Option<[u64; 7]> {
        value.iter().all(|&w| w == value[0]).then(|| [value[0]; 7])
    }
    fn expand(small: [u64; 7]) -> [u64; 15] {
        [small[0]; 15]
    }
}

/// `message_sizes`: one-way latency over lanes by message size, each
/// round measuring all sizes and the raw floor back to back.
fn message_sizes(rounds: usize, round_trips: u64) {
    let ns = |d: Duration| d.as_nanos() as f64 / round_trips as f64;
    let mut rows: Vec<[f64; 5]> = (0..rounds)
        .map(|_| {
            [
                ns(raw_pingpong(round_trips)),
                ns(lane_pingpong::<u64, Whole>(
                    round_trips,
                    false,
                    1,
                    DoorbellFence::SeqCst,
                )),
                ns(lane_pingpong::<[u64; 7], Whole>(
                    round_trips,
                    false,
                    1,
                    DoorbellFence::SeqCst,
                )),
                ns(lane_pingpong::<[u64; 15], Whole>(
                    round_trips,
                    false,
                    1,
                    DoorbellFence::SeqCst,
                )),
                ns(lane_pingpong::<[u64; 15], SevenWords>(
                    round_trips,
                    false,
                    1,
                    DoorbellFence::SeqCst,
                )),
            ]
        })
        .collect();
    let mut median = |i: usize| {
        rows.sort_by(|x, y| x[i].total_cmp(&y[i]));
        rows[rows.len() / 2][i]
    };
    println!(
        "message_sizes ({rounds} rounds of {round_trips} round trips, one-way ns, medians): \
         a_raw {:.1}  8 B {:.1}  56 B {:.1}  120 B {:.1}  120 B in one line {:.1}",
        median(0),
        median(1),
        median(2),
        median(3),
        median(4),
    );
}

criterion_group!(benches, pingpong, waiting, team);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let test_mode = args.iter().any(|a| a == "--test");
    // Runs unless a filter is given that does not name it.
    let filter = args.iter().skip(1).find(|a| !a.starts_with('-'));
    if filter.map_or(true, |f| "side_by_side".contains(f.as_str())) {
        if test_mode {
            side_by_side(1, 100);
        } else {
            side_by_side(31, 20_000);
        }
    }
    if filter.map_or(true, |f| "message_sizes".contains(f.as_str())) {
        if test_mode {
            message_sizes(1, 100);
        } else {
            message_sizes(11, 20_000);
        }
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
