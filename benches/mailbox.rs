//! Mailbox latency: one-way latency = round trip / 2 between two threads
//! pinned to core 0 and core 1 (see docs/mailbox.md for results).
//!
//! `cargo bench --bench mailbox` runs:
//!
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
//! * `team/ring_64_ranks`: 64 unpinned ranks on the 2 cores pass a token
//!   around a ring; time per hop. Every waiting rank spins, yields or parks
//!   while one works, so this shows what waiting costs the working ones.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use crossbeam_utils::CachePadded;

use corrected::mailbox::{Endpoint, Mailboxes};

/// Pins the calling thread to the `i`-th core the OS reports (if any).
fn pin(i: usize) {
    if let Some(core) = core_affinity::get_core_ids().and_then(|ids| ids.get(i).copied()) {
        core_affinity::set_for_current(core);
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
fn recv(ep: &mut Endpoint<'_, u64>, wait: bool) -> (u32, u64) {
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

/// (b), (c) and the same-core variant: round trips over two lanes.
fn lane_pingpong(iters: u64, wait: bool, echo_core: usize) -> Duration {
    let boxes = Mailboxes::<u64>::new(2, 64);
    let mut a = boxes.endpoint(0).unwrap();
    let mut b = boxes.endpoint(1).unwrap();
    thread::scope(|s| {
        s.spawn(move || {
            pin(echo_core);
            loop {
                let (from, v) = recv(&mut b, wait);
                b.send(from, v).unwrap();
                if v == STOP {
                    return;
                }
            }
        });
        pin(0);
        let mut round = |i: u64| {
            a.send(1, i).unwrap();
            let got = recv(&mut a, wait);
            debug_assert_eq!(got, (1, i));
            black_box(got);
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

/// A token passed around a ring of `ranks` unpinned threads; time per hop.
fn ring(iters: u64, ranks: u32) -> Duration {
    let boxes = Mailboxes::<u64>::new(ranks, 4);
    let mut eps: Vec<_> = (0..ranks).map(|r| boxes.endpoint(r).unwrap()).collect();
    let mut first = eps.remove(0);
    thread::scope(|s| {
        for mut ep in eps {
            s.spawn(move || {
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
        b.iter_custom(|iters| lane_pingpong(iters, false, 1))
    });
    g.bench_function("c_lanes_wait", |b| {
        b.iter_custom(|iters| lane_pingpong(iters, true, 1))
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
        b.iter_custom(|iters| lane_pingpong(iters, true, 0))
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

criterion_group!(benches, pingpong, waiting, team);
criterion_main!(benches);
