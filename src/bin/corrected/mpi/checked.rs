//! `corrected mpi`'s loop of broadcasts, reduces, allreduces, barriers,
//! allgathers or reduce-scatters, every result checked: a reduction of
//! each rank's bit holds every live rank's and a failed rank's or not, the
//! same in every element, and where the communicator reports contributors
//! (unless its failure scheme is the bit) they are exactly the ranks whose
//! bits the result holds; an allgather's blocks are their ranks' where the
//! contributors name them and zeros elsewhere.

use std::time::Instant;

use corrected::prelude::*;
use corrected::types::Rank;

use super::{new_outcome, planned_dead, sigkill_if_due, MpiArgs, Outcome};

/// The loop of `args.op` on one rank of any engine, every result checked.
pub(super) fn checked_loop(comm: &mut impl Collectives, args: &MpiArgs) -> Outcome {
    let (me, size) = (comm.rank(), comm.size());
    let threads = u32::from(args.threads);
    let mut outcome = new_outcome(me, size, args);
    // The ranks failed by `iter`: --die-at's, and every thread of the
    // process --sigkill names.
    let dead = |iter: u32| planned_dead(args, iter);
    let len = match args.len_at {
        Some((rank, len)) if rank == me => len,
        _ => args.len,
    };
    let mut buf = vec![0u64; len];
    let sum = SystemOperation::sum();
    let closure_sum = |a: &u64, b: &u64| a + b;
    let mut asks_contributors = true;
    let mut named_ok = 0;
    for iter in 0..args.iters {
        sigkill_if_due(args, me / threads, iter);
        let op_started = Instant::now();
        let op = match &args.call_at {
            Some((rank, at, op)) if (*rank, *at) == (me, iter) => op.as_str(),
            _ => args.op.as_str(),
        };
        let result = if op == "bcast" {
            let value = u64::from(iter) + 1;
            buf.fill(if me == 0 { value } else { 0 });
            comm.broadcast_into(0, &mut buf[..])
                .map(|()| buf.iter().all(|&x| x == value))
        } else if op == "barrier" {
            comm.barrier().map(|()| true)
        } else if op == "allgather" || op == "reducescatter" {
            let gone = dead(iter);
            let got = blocks(comm, op, iter, len, &mut buf);
            got.map(|who| {
                let ok = gathered_right(&buf, &who, op, iter, len, size, &gone);
                named_ok += u32::from(ok);
                ok
            })
        } else {
            let mine = vec![1u64 << me.min(63); len];
            // Every live rank's bit, and a failed rank's or not.
            let holds_every_live_rank = |buf: &[u64]| {
                let all: u64 = (0..size.min(64)).map(|r| 1u64 << r).sum();
                // Or-ed: a rank may be planned dead twice (a --die-at
                // thread of a --sigkill process).
                let gone: u64 = dead(iter).iter().fold(0, |m, &r| m | 1u64 << r.min(63));
                let first = buf[0];
                buf.iter().all(|&x| x == first) && first & !gone == all & !gone
            };
            if op == "reduce" {
                let root = rotating_root(iter, size, &dead(iter));
                const UNTOUCHED: u64 = 0xdead_beef;
                buf.fill(UNTOUCHED);
                let mut reduced = None;
                if asks_contributors {
                    let got = if args.closure {
                        comm.reduce_into_contributors(root, &mine[..], &mut buf[..], closure_sum)
                    } else {
                        comm.reduce_into_contributors(root, &mine[..], &mut buf[..], sum)
                    };
                    asks_contributors = !unsupported(&got);
                    reduced = asks_contributors.then_some(got);
                }
                let reduced = reduced.unwrap_or_else(|| {
                    if args.closure {
                        comm.reduce_into(root, &mine[..], &mut buf[..], closure_sum)
                    } else {
                        comm.reduce_into(root, &mine[..], &mut buf[..], sum)
                    }
                    .map(|()| None)
                });
                reduced.map(|who| {
                    if me == root {
                        holds_every_live_rank(&buf)
                            && named(&buf, who, asks_contributors, &mut named_ok)
                    } else {
                        buf.iter().all(|&x| x == UNTOUCHED)
                    }
                })
            } else {
                let mut reduced = None;
                if asks_contributors {
                    let got = if args.closure {
                        comm.all_reduce_into_contributors(&mine[..], &mut buf[..], closure_sum)
                    } else {
                        comm.all_reduce_into_contributors(&mine[..], &mut buf[..], sum)
                    };
                    asks_contributors = !unsupported(&got);
                    reduced = asks_contributors.then_some(got.map(Some));
                }
                let reduced = reduced.unwrap_or_else(|| {
                    if args.closure {
                        comm.all_reduce_into(&mine[..], &mut buf[..], closure_sum)
                    } else {
                        comm.all_reduce_into(&mine[..], &mut buf[..], sum)
                    }
                    .map(|()| None)
                });
                reduced.map(|who| {
                    holds_every_live_rank(&buf)
                        && named(&buf, who, asks_contributors, &mut named_ok)
                })
            }
        };
        outcome.timed(op_started);
        if args.op == "allreduce" && iter < 100 {
            let first = match result {
                Ok(_) if op == "allreduce" => buf.first().copied().unwrap_or(0),
                _ => 0,
            };
            outcome.firsts.push(first);
        }
        let wrong = || format!("{:?}", &buf[..buf.len().min(4)]);
        if !outcome.count(iter, result, dead(iter).contains(&me), wrong) {
            break;
        }
    }
    outcome.contributors_checked = named_ok;
    outcome.finish();
    outcome.f = comm.fault_budget();
    outcome.cpus = corrected::runtime::pin::available_cores()
        .iter()
        .map(|c| c.id)
        .collect();
    outcome
}

/// The root of reduce number `iter`: the ranks in turn, skipping the failed
/// ones (a reduce to a failed root delivers nowhere, by the paper).
fn rotating_root(iter: u32, size: u32, dead: &[Rank]) -> Rank {
    (0..size)
        .map(|k| (iter + k) % size)
        .find(|r| !dead.contains(r))
        .unwrap_or(0)
}

/// Where contributors are known (`known`), they are exactly the ranks
/// whose bits the result `buf` holds (tried once per loop: a team whose
/// failure scheme is the bit refuses them).
/// Counts in `checked` the contributors found right.
fn named(buf: &[u64], who: Option<Contributors>, known: bool, checked: &mut u32) -> bool {
    let Some(ranks) = who.and_then(|w| w.ranks()) else {
        return !known;
    };
    let bits = ranks.iter().fold(0u64, |m, &r| m | 1u64 << r.min(63));
    *checked += u32::from(buf[0] == bits);
    buf[0] == bits
}

/// The communicator does not know a reduction's contributors (it said so
/// before the call).
fn unsupported<T>(result: &Result<T, Error>) -> bool {
    matches!(result, Err(Error::Config(ConfigError::Unsupported { .. })))
}

/// Rank `r`'s allgather block at iteration `iter`: never zero.
fn block_value(r: Rank, iter: u32) -> u64 {
    (u64::from(r) + 1) << 32 | u64::from(iter)
}

/// One allgather or reduce-scatter of `len` elements per block into `buf`
/// (resized to the result).
fn blocks(
    comm: &mut impl Collectives,
    op: &str,
    iter: u32,
    len: usize,
    buf: &mut Vec<u64>,
) -> Result<Contributors, Error> {
    let (me, size) = (comm.rank(), comm.size() as usize);
    if op == "allgather" {
        buf.resize(len * size, 0);
        comm.all_gather_into(&vec![block_value(me, iter); len][..], &mut buf[..])
    } else {
        buf.resize(len, 0);
        let mine = vec![1u64 << me.min(63); len * size];
        comm.reduce_scatter_block_into(&mine[..], &mut buf[..], SystemOperation::sum())
    }
}

/// The result of [`blocks`] is right: every live rank among the
/// contributors (none of `gone` needs to be), and each block its rank's
/// (allgather, zeros for a rank left out) or every element the
/// contributors' bits (reduce-scatter).
fn gathered_right(
    buf: &[u64],
    who: &Contributors,
    op: &str,
    iter: u32,
    len: usize,
    size: u32,
    gone: &[Rank],
) -> bool {
    let Some(ranks) = who.ranks() else {
        return false;
    };
    if !(0..size).all(|r| gone.contains(&r) || ranks.contains(&r)) {
        return false;
    }
    if op == "allgather" {
        (0..size).all(|r| {
            let want = if ranks.contains(&r) {
                block_value(r, iter)
            } else {
                0
            };
            buf[r as usize * len..(r as usize + 1) * len]
                .iter()
                .all(|&x| x == want)
        })
    } else {
        let bits = ranks.iter().fold(0u64, |m, &r| m | 1u64 << r.min(63));
        buf.iter().all(|&x| x == bits)
    }
}
