//! `corrected mpi --in-flight K`: the loop of broadcasts, reduces,
//! allreduces or barriers as immediate calls, K requests in flight at a
//! time and waited newest first (completed out of order), every result
//! checked as the blocking loop checks it (`checked.rs`).

use std::collections::VecDeque;
use std::time::Instant;

use corrected::prelude::*;
use corrected::types::Rank;

use super::{new_outcome, planned_dead, sigkill_if_due, MpiArgs, Outcome};

/// One request in flight and what its result must be.
enum Flying {
    /// A broadcast from rank 0 of this value.
    Bcast(Request<Vec<u64>>, u64),
    /// An allreduce of each rank's bit.
    Allreduce(Request<Vec<u64>>),
    /// A reduce of each rank's bit to this root.
    Reduce(Request<Option<Vec<u64>>>, Rank),
    /// A barrier.
    Barrier(Request<()>),
}

/// The loop of `args.op` with `args.in_flight` immediate requests in
/// flight, every result checked.
pub(super) fn immediate_loop(comm: &mut impl Collectives, args: &MpiArgs) -> Outcome {
    let (me, size) = (comm.rank(), comm.size());
    let threads = u32::from(args.threads);
    let mut outcome = new_outcome(me, size, args);
    let depth = usize::from(args.in_flight.max(1));
    let mut flight: VecDeque<(u32, Instant, Flying)> = VecDeque::with_capacity(depth);
    // Results of a batch, counted in iteration order once all are in.
    let mut batch: Vec<(u32, Result<bool, Error>, u64)> = Vec::with_capacity(depth);
    let mut going = true;
    for iter in 0..args.iters {
        sigkill_if_due(args, me / threads, iter);
        let started = Instant::now();
        let mine = vec![1u64 << me.min(63); args.len];
        let begun = match args.op.as_str() {
            "bcast" => {
                let value = u64::from(iter) + 1;
                let buf = vec![if me == 0 { value } else { 0 }; args.len];
                comm.immediate_broadcast(0, buf)
                    .map(|r| Flying::Bcast(r, value))
            }
            "reduce" => {
                let root = iter % size;
                comm.immediate_reduce(root, mine, SystemOperation::sum())
                    .map(|r| Flying::Reduce(r, root))
            }
            "barrier" => comm.immediate_barrier().map(Flying::Barrier),
            _ => comm
                .immediate_all_reduce(mine, SystemOperation::sum())
                .map(Flying::Allreduce),
        };
        match begun {
            Ok(req) => flight.push_back((iter, started, req)),
            Err(e) => batch.push((iter, Err(e), 0)),
        }
        if flight.len() == depth || iter + 1 == args.iters {
            // Newest first: requests complete in any order.
            while let Some((at, started, req)) = flight.pop_back() {
                let (result, first) = complete(comm, req, at, size, &planned_dead(args, at));
                outcome.timed(started);
                batch.push((at, result, first));
            }
            batch.sort_by_key(|&(at, _, _)| at);
            for (at, result, first) in batch.drain(..) {
                if args.op == "allreduce" && at < 100 {
                    outcome.firsts.push(if result.is_ok() { first } else { 0 });
                }
                let dead_here = planned_dead(args, at).contains(&me);
                going &= outcome.count(at, result, dead_here, || format!("first {first}"));
            }
            if !going {
                break;
            }
        }
    }
    outcome.finish();
    outcome.f = comm.fault_budget();
    outcome
}

/// Waits `req` (of iteration `iter`) and checks its result as the
/// blocking loop does: a broadcast's value everywhere, a reduction's every
/// live rank's bit (and a failed rank's or not) in every element; the
/// result's first element.
fn complete(
    comm: &mut impl Collectives,
    req: Flying,
    iter: u32,
    size: u32,
    dead: &[Rank],
) -> (Result<bool, Error>, u64) {
    let all: u64 = (0..size.min(64)).map(|r| 1u64 << r).sum();
    let gone: u64 = dead.iter().fold(0, |m, &r| m | 1u64 << r.min(63));
    let every_live = |buf: &[u64]| {
        let first = buf.first().copied().unwrap_or(all);
        buf.iter().all(|&x| x == first) && first & !gone == all & !gone
    };
    match req {
        Flying::Bcast(req, value) => match comm.wait(req) {
            Ok(buf) => (Ok(buf.iter().all(|&x| x == value)), value),
            Err(e) => (Err(e), 0),
        },
        Flying::Allreduce(req) => match comm.wait(req) {
            Ok(buf) => (Ok(every_live(&buf)), buf.first().copied().unwrap_or(0)),
            Err(e) => (Err(e), 0),
        },
        Flying::Reduce(req, root) => match comm.wait(req) {
            // A reduce to a root planned dead delivers nowhere, by the paper.
            Err(Error::RootFailed { .. }) if dead.contains(&root) => (Ok(true), 0),
            Ok(Some(buf)) => (Ok(every_live(&buf)), 0),
            Ok(None) => (Ok(comm.rank() != root), 0),
            Err(e) => (Err(e), 0),
        },
        Flying::Barrier(req) => (comm.wait(req).map(|()| true), u64::from(iter)),
    }
}
