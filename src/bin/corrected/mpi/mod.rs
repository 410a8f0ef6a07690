//! `corrected mpi`: a loop of collectives between MPI processes, every
//! result checked, one JSON line per process. Launched by `mpirun`, one
//! rank per process (docs/mpi.md has the command lines, also for surviving
//! a SIGKILLed process).

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use corrected::mpi::{MpiComm, NodeTeam, ProcessLevel};
use corrected::prelude::*;
use corrected::runtime::Fault;
use corrected::sim::Stats;
use corrected::types::{OpId, Rank};

use crate::bcast::BcastArgs;
use crate::error::CliError;
use crate::op::Op;

mod checked;
mod immediate;
use checked::checked_loop;

/// Options of `corrected mpi`.
#[derive(Args, Debug)]
pub struct MpiArgs {
    /// The collective: bcast (from rank 0), allreduce (u64 sum), reduce
    /// (u64 sum to a root that rotates over the ranks; the others' output
    /// must stay untouched), agree (every iteration an agreement on the
    /// failed ranks, which must list only ranks that failed, alike on
    /// every survivor), or shrink (every iteration a shrink, which agrees
    /// on the failed ranks, then an allreduce of 1 over the survivors,
    /// which must sum to their number), barrier, allgather (each rank's
    /// block of --len elements, every block checked against the
    /// contributors: its rank's, or zeros where that rank is left out), or
    /// reducescatter (--len elements of the sum per rank, over exactly the
    /// contributors), or split (a split by parity, then allreduces in
    /// each sub-team).
    #[arg(long, default_value = "bcast")]
    op: String,
    /// Operations to run.
    #[arg(long, default_value_t = 1000)]
    iters: u32,
    /// Elements (u64) per value.
    #[arg(long, default_value_t = 1)]
    len: usize,
    /// RANK:ITER: that process SIGKILLs itself when it reaches iteration
    /// ITER (a real death: nobody is told). Needs mpirun's
    /// `--mca orte_enable_recovery 1` for the others to go on.
    #[arg(long, value_parser = crate::parse_rank_pair::<u32>)]
    sigkill: Option<(Rank, u32)>,
    /// RANK:ITER: that rank fails before iteration ITER, emulated and
    /// announced to the others (as a failure detector would); repeatable.
    #[arg(long, value_parser = crate::parse_rank_pair::<u32>)]
    die_at: Vec<(Rank, u32)>,
    /// RANK:ITER:SENDS: that rank (one rank per process only) dies right
    /// after its SENDS-th send of iteration ITER (at its end if it sends
    /// fewer), emulated and announced; repeatable. Kill points inside an
    /// operation: a large allreduce's first SENDS sends are its blocks
    /// (docs/mpi.md).
    #[arg(long, value_parser = parse_kill_point)]
    die_after_sends: Vec<(Rank, u32, u32)>,
    /// RANK:ITER:SENDS: that process (one rank per process only) SIGKILLs
    /// itself right after its SENDS-th send of iteration ITER (at its end
    /// if it sends fewer; 0: as it enters it): a real death at a point
    /// inside an operation, nobody told (`Fault::SigkillAfterSends`).
    /// Needs mpirun's `--mca orte_enable_recovery 1`.
    #[arg(long, value_parser = parse_kill_point)]
    sigkill_after_sends: Option<(Rank, u32, u32)>,
    /// RANK:ITER:MS: that rank (a thread with --threads) sleeps MS
    /// milliseconds as it enters iteration ITER, alive (a descheduled or
    /// slow rank; nothing may take it for failed); repeatable.
    #[arg(long, value_parser = parse_kill_point)]
    stall_at: Vec<(Rank, u32, u32)>,
    /// RANK:LEN: that rank's values have LEN elements instead of --len
    /// (a length mismatch, which every rank must report, not hang on).
    #[arg(long, value_parser = crate::parse_rank_pair::<usize>)]
    len_at: Option<(Rank, usize)>,
    /// RANK:ITER:OP: at iteration ITER that rank calls OP (bcast, reduce,
    /// allreduce or barrier) instead of --op: a mismatch, which every rank
    /// must report or survive, never hang on.
    #[arg(long, value_parser = parse_call_point)]
    call_at: Option<(Rank, u32, String)>,
    /// With bcast, reduce, allreduce or barrier: run them as immediate
    /// (non-blocking) calls, this many requests in flight, each batch
    /// waited newest first (one rank per process only); 0: blocking calls.
    #[arg(long, default_value_t = 0)]
    in_flight: u16,
    /// Fault budget f of allreduce.
    #[arg(long)]
    f: Option<u32>,
    /// Threads per process: with more than 1, a node team (threads below
    /// MPI, one proxy thread per process over MPI); ranks are then
    /// `process × threads + thread`, --sigkill names a process and
    /// --die-at a thread.
    #[arg(long, default_value_t = 1)]
    threads: u8,
    /// With --threads: Open MPI's own collectives between the processes
    /// (a process death then ends the job) instead of ours.
    #[arg(long)]
    native: bool,
    /// Reduce with a closure instead of the built-in sum (the native
    /// process level then gathers and folds instead of MPI_Allreduce).
    #[arg(long)]
    closure: bool,
    /// Bytes of each of a process's two slots of shared memory, through
    /// which allreduces from 64 KiB up to this size go when every process
    /// runs on this node (`TeamBuilder::mpi_shared_memory`; the frames of
    /// up to 4 KiB go through rings there too); 0: none, every frame goes
    /// through MPI and large allreduces by blocks.
    #[arg(long, default_value_t = corrected::mpi::DEFAULT_SLOT_BYTES)]
    shared_memory: usize,
    /// Operation timeout, seconds.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// The broadcast algorithm, spelled as in `corrected run` (--op bcast;
    /// with --threads, between the processes' proxies; --algorithm ftco
    /// with --op reduce or allreduce: FTCO's reduction, one rank per
    /// process only).
    #[command(flatten)]
    bcast: BcastArgs,
}

/// What one rank saw.
#[derive(Clone, serde::Serialize)]
struct Outcome {
    /// `"mpi"`: which command's JSON this is (docs/cli.md, *JSON output*).
    command: &'static str,
    rank: Rank,
    /// The ranks of the team: processes times `--threads`.
    ranks: u32,
    op: String,
    iters: u32,
    /// Operations that returned the expected value.
    delivered: u32,
    /// Operations that returned a value other than every allowed one.
    wrong: u32,
    /// The first wrong value, as text.
    first_wrong: Option<String>,
    /// Errors by kind.
    missing_by_error: BTreeMap<String, u32>,
    first_error: Option<String>,
    /// This rank's time inside each call, nanoseconds, over the calls.
    latency_ns: Stats,
    /// The iteration of the slowest call.
    slowest_iter: u32,
    /// Each call's time (nanoseconds), summarized into `latency_ns`.
    #[serde(skip)]
    took_ns: Vec<f64>,
    /// Frames that could not be read or written (must be 0).
    bad_frames: (u64, u64),
    /// The first element of each allreduce's result, by iteration (the
    /// first 100; 0 where the call failed): every live rank's must agree.
    firsts: Vec<u64>,
    /// The outcomes of the first 100 iterations, as runs of equal ones
    /// (`ok`, `wrong` or the error's kind, and how many in a row; every
    /// survivor must list the same). Runs keep the line short: a launcher
    /// may interleave long lines of several processes.
    results: Vec<(String, u32)>,
    /// Large allreduces that fell back from blocks to the eager algorithm
    /// (one rank per process only; docs/mpi.md).
    fallbacks: u64,
    /// Reductions whose contributors named exactly the ranks whose inputs
    /// the result holds (`all_reduce_into_contributors`, and
    /// `reduce_into_contributors` at the root; one rank per process: a node
    /// team does not report them).
    contributors_checked: u32,
    /// Whether the processes shared memory: frames through rings, large
    /// allreduces through the regions (one rank per process only).
    shared_memory: bool,
    /// `--algorithm` as given.
    algorithm: String,
    /// The broadcast as it ran (the algorithm and its correction).
    broadcast: String,
    /// Gossip broadcasts in which this process was a g-node (one rank per
    /// process only).
    g_node_ops: u64,
    /// Timeouts FTCO's broadcasts fired on this process (one rank per
    /// process only).
    timeouts: u64,
    /// Broadcasts this process rooted through the node's shared memory,
    /// and those it sent as bytes because a process still held the slot
    /// (one rank per process only).
    shared_broadcasts: (u64, u64),
    /// The cpus this rank's thread may run on at the end of its loop (a
    /// node team's thread: the one it is pinned to).
    cpus: Vec<usize>,
    /// The fault budget f at the end of the loop (after `--op shrink`'s
    /// shrinks: the configured f, at most the survivors less one).
    f: u32,
}

/// Parses `RANK:ITER:SENDS`.
fn parse_kill_point(text: &str) -> Result<(Rank, u32, u32), String> {
    let (point, sends) = text.rsplit_once(':').ok_or(format!(
        "expected RANK:ITER:SENDS, e.g. 2:1:3; got '{text}'"
    ))?;
    let (rank, iter) = crate::parse_rank_pair::<u32>(point)?;
    let sends = sends
        .trim()
        .parse()
        .map_err(|_| format!("bad number of sends in '{text}'"))?;
    Ok((rank, iter, sends))
}

/// `RANK:ITER:OP` of `--call-at`.
fn parse_call_point(text: &str) -> Result<(Rank, u32, String), String> {
    let (point, op) = text.rsplit_once(':').ok_or(format!(
        "expected RANK:ITER:OP, e.g. 1:3:bcast; got '{text}'"
    ))?;
    let (rank, iter) = crate::parse_rank_pair::<u32>(point)?;
    match op.trim() {
        op @ ("bcast" | "reduce" | "allreduce" | "barrier") => Ok((rank, iter, op.to_string())),
        other => Err(format!(
            "'{other}' in '{text}' is not one of bcast, reduce, allreduce, barrier"
        )),
    }
}

/// Runs the loop on this process (on each of its threads with
/// `--threads`) and prints the outcomes.
pub fn run(mut args: MpiArgs) -> Result<ExitCode, CliError> {
    if !(args.timeout > 0.0 && args.timeout <= 3600.0) {
        return Err(CliError::OutOfRange {
            option: "--timeout",
            value: args.timeout.to_string(),
            why: "must be more than 0 and at most 3600 seconds".into(),
            hint: "pass --timeout 10".into(),
        });
    }
    let shrink = args.op == "shrink";
    let agree = args.op == "agree";
    let split = args.op == "split";
    let gather = matches!(args.op.as_str(), "allgather" | "reducescatter");
    let op = match shrink || agree || split || gather {
        // An agreement (and a shrink's allreduce), an allgather and a
        // reduce-scatter run with the allreduce's settings.
        true => Op::Allreduce,
        false => Op::parse(
            &args.op,
            &[Op::Bcast, Op::Reduce, Op::Allreduce, Op::Barrier],
            "bcast, reduce, allreduce, barrier, allgather, reducescatter, agree, shrink or split",
        )?,
    };
    // The loops below tell collectives apart by their `--op` name.
    if !(shrink || agree || split || gather) {
        args.op = op.name().to_string();
    }
    let chosen = args.bcast.choose(op, args.timeout)?;
    if args.threads == 0 || args.threads > 64 {
        return Err(CliError::OutOfRange {
            option: "--threads",
            value: args.threads.to_string(),
            why: "a process runs 1 to 64 threads".into(),
            hint: "pass --threads 4".into(),
        });
    }
    if args.in_flight > 0 && (args.threads > 1 || shrink || agree || split || gather) {
        return Err(CliError::OutOfRange {
            option: "--in-flight",
            value: args.in_flight.to_string(),
            why: "immediate calls run bcast, reduce, allreduce and barrier, one rank per process"
                .into(),
            hint: "drop --in-flight, or --threads".into(),
        });
    }
    if args.threads > 1 && args.sigkill_after_sends.is_some() {
        return Err(CliError::OutOfRange {
            option: "--sigkill-after-sends",
            value: format!("{:?}", args.sigkill_after_sends),
            why: "kill points inside an operation are for one rank per process".into(),
            hint: "drop --threads, or use --sigkill".into(),
        });
    }
    if args.threads > 1 && !args.die_after_sends.is_empty() {
        return Err(CliError::OutOfRange {
            option: "--die-after-sends",
            value: format!("{:?}", args.die_after_sends),
            why: "kill points inside an operation are for one rank per process".into(),
            hint: "drop --threads, or use --die-at".into(),
        });
    }
    let threading = if args.threads > 1 {
        mpi::environment::Threading::Serialized
    } else {
        mpi::environment::Threading::Single
    };
    let (universe, _) = mpi::initialize_with_threading(threading).ok_or(CliError::Corrected(
        Error::Config(corrected::ConfigError::Unsupported {
            what: "a second MPI initialization",
            why: "MPI was initialized already",
        }),
    ))?;
    let timeout = Duration::from_secs_f64(args.timeout);
    let outcomes = if args.threads == 1 {
        // Faults between processes are numbered by call: a shrink
        // iteration makes two (the shrink, the allreduce).
        let per_iter: OpId = if shrink { 2 } else { 1 };
        let call = |iter: u32| iter as OpId * per_iter;
        let mut faults = FaultSchedule::none();
        for &(rank, iter) in &args.die_at {
            faults = faults.kill(rank, call(iter));
        }
        for &(rank, iter, sends) in &args.die_after_sends {
            faults = faults.at(rank, call(iter), Fault::DieAfterSends(sends));
        }
        if let Some((rank, iter, sends)) = args.sigkill_after_sends {
            faults = faults.at(rank, call(iter), Fault::SigkillAfterSends(sends));
        }
        for &(rank, iter, ms) in &args.stall_at {
            let pause = Duration::from_millis(u64::from(ms));
            faults = faults.at(rank, call(iter), Fault::Stall(pause));
        }
        let mut builder = chosen
            .apply(Team::builder())
            .op_timeout(timeout)
            .mpi_shared_memory(args.shared_memory)
            .faults(faults);
        if let Some(f) = args.f {
            builder = builder.fault_budget(f);
        }
        let mut comm = MpiComm::new(&universe.world(), &builder).map_err(Error::from)?;
        let mut outcome = if shrink {
            shrink_loop(&mut comm, &args)
        } else if split {
            split_loop(&mut comm, &args)
        } else if agree {
            agree_loop(&mut comm, &args)
        } else if args.in_flight > 0 {
            immediate::immediate_loop(&mut comm, &args)
        } else {
            checked_loop(&mut comm, &args)
        };
        outcome.bad_frames = comm.bad_frames();
        outcome.fallbacks = comm.fallbacks();
        outcome.shared_memory = comm.shares_memory();
        outcome.broadcast = chosen.name.clone();
        let counts = comm.broadcast_counts();
        outcome.g_node_ops = counts.gossip_colored;
        outcome.timeouts = counts.ftco_timeouts;
        outcome.shared_broadcasts = (counts.shared, counts.held_slot);
        // Serve late messages until the others are done (or the wait passes).
        drop(comm);
        vec![outcome]
    } else {
        // The process level's fault budget is --f; each process's threads
        // have the default one, and --die-at names a global thread.
        let threads = u32::from(args.threads);
        let world_rank = mpi::topology::Communicator::rank(&universe.world()) as u32;
        // A node allreduce or reduce is two thread operations (reduce,
        // broadcast), a node broadcast from rank 0 one: the thread team's
        // numbering (until a proxy fails over, after which operations
        // repeat and broadcasts from rank 0 take two).
        // A node agreement is the threads' agreement (a round per thread)
        // and the spread of the union; a shrink adds the allreduce's two
        // (a local reduce and a spread). While no thread is left out: a
        // shrink that leaves one out makes the later agreements shorter.
        let per_iter = match args.op.as_str() {
            "bcast" => 1,
            "agree" => threads + 1,
            "shrink" => threads + 3,
            _ => 2,
        };
        let mut faults = FaultSchedule::none();
        for &(rank, iter) in &args.die_at {
            if rank / threads == world_rank {
                faults = faults.kill_at_op(rank % threads, (iter * per_iter) as OpId);
            }
        }
        for &(rank, iter, ms) in &args.stall_at {
            if rank / threads == world_rank {
                let pause = Duration::from_millis(u64::from(ms));
                let at = (iter * per_iter) as OpId;
                faults = faults.at_op(rank % threads, at, Fault::Stall(pause));
            }
        }
        let local = Team::builder()
            .ranks(threads)
            .op_timeout(timeout)
            .faults(faults);
        let mut upper = chosen
            .apply(Team::builder())
            .op_timeout(timeout)
            .mpi_shared_memory(args.shared_memory);
        if let Some(f) = args.f {
            upper = upper.fault_budget(f);
        }
        let level = if args.native {
            ProcessLevel::Native
        } else {
            ProcessLevel::Corrected(upper)
        };
        let node = NodeTeam::new(local, level).map_err(Error::from)?;
        let report = node.run(|comm| match (agree, shrink) {
            (true, _) => agree_loop(comm, &args),
            (_, true) => shrink_loop(comm, &args),
            _ if split => split_loop(comm, &args),
            _ => checked_loop(comm, &args),
        });
        report
            .returned()
            .map(|(_, o)| Outcome {
                broadcast: chosen.name.clone(),
                ..o.clone()
            })
            .collect()
    };
    let mut clean = true;
    for outcome in &outcomes {
        clean &= outcome.wrong == 0 && outcome.bad_frames == (0, 0);
        crate::out!(
            "{}",
            serde_json::to_string(outcome).expect("the outcome serializes")
        );
    }
    let code = if clean { 0 } else { 1 };
    corrected::mpi::finalize_within(universe, Duration::from_secs(5), code);
    Ok(ExitCode::from(code as u8))
}

impl Outcome {
    /// Counts iteration `iter`'s `result` (`Ok(right)`; `wrong` describes
    /// a wrong one). False when the call failed because this rank's own
    /// planned failure (`dead_here`) came: its loop ends.
    fn count(
        &mut self,
        iter: u32,
        result: Result<bool, Error>,
        dead_here: bool,
        wrong: impl FnOnce() -> String,
    ) -> bool {
        let what = match result {
            Ok(true) => {
                self.delivered += 1;
                "ok".to_string()
            }
            Ok(false) => {
                self.wrong += 1;
                self.first_wrong
                    .get_or_insert_with(|| format!("operation {iter}: {}", wrong()));
                "wrong".to_string()
            }
            Err(Error::Failed(_)) if dead_here => return false,
            Err(e) => {
                let kind = format!("{e:?}");
                let kind = kind.split([' ', '(', '{']).next().unwrap_or("").to_string();
                *self.missing_by_error.entry(kind.clone()).or_default() += 1;
                self.first_error.get_or_insert_with(|| e.to_string());
                kind
            }
        };
        if iter < 100 {
            match self.results.last_mut() {
                Some((last, n)) if *last == what => *n += 1,
                _ => self.results.push((what, 1)),
            }
        }
        true
    }

    /// Notes the time of the next call (iteration `took_ns.len()`), begun
    /// at `started`.
    fn timed(&mut self, started: Instant) {
        self.took_ns.push(started.elapsed().as_nanos() as f64);
    }

    /// Summarizes the calls' times; the slowest call's iteration.
    fn finish(&mut self) {
        let slowest = self
            .took_ns
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map_or(0, |(i, _)| i);
        self.slowest_iter = slowest as u32;
        self.latency_ns = Stats::of(std::mem::take(&mut self.took_ns));
    }
}

/// The ranks failed by iteration `iter` as the options plan it: `--die-at`'s
/// and `--die-after-sends`'s, and every thread of the process `--sigkill`
/// names.
fn planned_dead(args: &MpiArgs, iter: u32) -> Vec<Rank> {
    let threads = u32::from(args.threads);
    let mut gone: Vec<Rank> = args
        .die_at
        .iter()
        .filter(|&&(_, at)| at <= iter)
        .map(|&(r, _)| r)
        .chain(
            args.die_after_sends
                .iter()
                .filter(|&&(_, at, _)| at <= iter)
                .map(|&(r, _, _)| r),
        )
        .collect();
    if let Some((p, _)) = args.sigkill.filter(|&(_, at)| at <= iter) {
        gone.extend(p * threads..(p + 1) * threads);
    }
    if let Some((r, _, _)) = args.sigkill_after_sends.filter(|&(_, at, _)| at <= iter) {
        gone.push(r);
    }
    gone
}

/// This process SIGKILLs itself if `--sigkill` names it (`process`) at
/// `iter`: a real death, nobody told.
fn sigkill_if_due(args: &MpiArgs, process: u32, iter: u32) {
    if args.sigkill == Some((process, iter)) {
        let _ = std::process::Command::new("kill")
            .args(["-9", &std::process::id().to_string()])
            .status();
    }
}

/// An outcome of `args.op` on rank `me` of `size`, nothing counted yet.
fn new_outcome(me: Rank, size: u32, args: &MpiArgs) -> Outcome {
    Outcome {
        command: "mpi",
        rank: me,
        ranks: size,
        op: args.op.clone(),
        iters: args.iters,
        delivered: 0,
        wrong: 0,
        missing_by_error: BTreeMap::new(),
        first_wrong: None,
        first_error: None,
        latency_ns: Stats::default(),
        slowest_iter: 0,
        took_ns: Vec::with_capacity(args.iters.min(1 << 20) as usize),
        bad_frames: (0, 0),
        firsts: Vec::new(),
        results: Vec::new(),
        fallbacks: 0,
        contributors_checked: 0,
        shared_memory: false,
        algorithm: args.bcast.algorithm.clone(),
        broadcast: String::new(),
        g_node_ops: 0,
        timeouts: 0,
        shared_broadcasts: (0, 0),
        cpus: Vec::new(),
        f: 0,
    }
}

/// One iteration of an agreement loop: `Ok(right)` or the error, the
/// number `firsts` keeps of the first 100 iterations (which every survivor
/// must see alike), and what a wrong result held.
struct Step {
    result: Result<bool, Error>,
    first: u64,
    held: String,
}

/// The loop of `--op agree` or `--op shrink` on one rank of any engine:
/// each iteration a `step` with the ranks failed by then (planned), its
/// outcome counted. Ranks are those of the communicator as it began
/// (a shrink renumbers it).
fn agreement_loop<C: Collectives>(
    comm: &mut C,
    args: &MpiArgs,
    mut step: impl FnMut(&mut C, &dyn Fn(Rank) -> bool) -> Step,
) -> Outcome {
    let me = comm.rank();
    let threads = u32::from(args.threads);
    let mut outcome = new_outcome(me, comm.size(), args);
    for iter in 0..args.iters {
        sigkill_if_due(args, me / threads, iter);
        let dead = planned_dead(args, iter);
        let failed_by = |r: Rank| dead.contains(&r);
        let started = Instant::now();
        let Step {
            result,
            first,
            held,
        } = step(comm, &failed_by);
        outcome.timed(started);
        if iter < 100 {
            outcome.firsts.push(first);
        }
        if !outcome.count(iter, result, failed_by(me), || held) {
            break;
        }
    }
    outcome.finish();
    outcome.f = comm.fault_budget();
    outcome
}

/// `--op shrink`: every iteration a shrink (agreement on the failed ranks,
/// the survivors renumbered), then an allreduce of 1 over the survivors.
/// Right when every rank the shrink leaves out is one that failed
/// (`--sigkill`, `--die-at`) and the sum is the number of live members;
/// `firsts` holds the size after each shrink.
fn shrink_loop(comm: &mut impl Collectives, args: &MpiArgs) -> Outcome {
    // The original ranks of the communicator's members, in its order.
    let mut members: Vec<Rank> = (0..comm.size()).collect();
    agreement_loop(comm, args, |comm, failed_by| {
        let result = comm.shrink().and_then(|left_out| {
            let gone: Vec<Rank> = left_out.iter().map(|&r| members[r as usize]).collect();
            members.retain(|r| !gone.contains(r));
            let mut sum = 0u64;
            comm.all_reduce_into(&1u64, &mut sum, SystemOperation::sum())?;
            // A rank that died unannounced may be in the communicator
            // still (the detector had not found it): it adds nothing.
            let live = members.iter().filter(|&&r| !failed_by(r)).count() as u64;
            Ok(gone.iter().all(|&r| failed_by(r)) && sum == live)
        });
        let first = result.as_ref().map_or(0, |_| u64::from(comm.size()));
        let held = format!("members {members:?}");
        Step {
            result,
            first,
            held,
        }
    })
}

/// `--op split`: the first iteration a split by the parity of the rank,
/// keys reversing the order; every later one an allreduce of `--len`
/// elements of 2^rank (ranks as the communicator began) in the sub-team,
/// two in the odd ranks' (the sub-teams' operation numbers drift apart).
/// Right when the split's members are this parity's ranks, in descending
/// order, every live one among them, and each sum holds the bits of every
/// live member and of no rank outside the sub-team; `firsts` holds the
/// members as a bitmap, then the sums.
fn split_loop(comm: &mut impl Collectives, args: &MpiArgs) -> Outcome {
    let (me, size) = (comm.rank(), comm.size());
    let mut members: Option<Vec<Rank>> = None;
    agreement_loop(comm, args, |comm, failed_by| {
        let bits = |ranks: &[Rank]| ranks.iter().fold(0u64, |m, &r| m | 1u64 << r.min(63));
        let Some(team) = &members else {
            let result = comm.split(me % 2, u32::MAX - me);
            let (first, held) = match &result {
                Ok(m) => (bits(m), format!("members {m:?}")),
                Err(_) => (u64::MAX, String::new()),
            };
            let result = result.map(|m| {
                let right = m.iter().all(|r| r % 2 == me % 2)
                    && (0..size).all(|r| r % 2 != me % 2 || failed_by(r) || m.contains(&r))
                    && m.windows(2).all(|w| w[0] > w[1]);
                members = Some(m);
                right
            });
            return Step {
                result,
                first,
                held,
            };
        };
        let mine = vec![1u64 << me.min(63); args.len];
        let mut sum = vec![0u64; args.len];
        // The odd ranks' sub-team runs two allreduces per iteration, so the
        // sub-teams' operation numbers drift apart.
        let mut result = Ok(());
        for _ in 0..=me % 2 {
            result = result.and_then(|()| {
                comm.all_reduce_into(&mine[..], &mut sum[..], SystemOperation::sum())
            });
        }
        let live: Vec<Rank> = team.iter().copied().filter(|&r| !failed_by(r)).collect();
        let (all, live) = (bits(team), bits(&live));
        let first = sum.first().copied().unwrap_or(0);
        Step {
            result: result.map(|()| {
                sum.iter().all(|&x| x == first) && first & live == live && first & !all == 0
            }),
            first,
            held: format!("{:?}", &sum[..sum.len().min(4)]),
        }
    })
}

/// `--op agree`: every iteration an agreement on the failed ranks. Right
/// when it lists only ranks that failed (`--sigkill`: every thread of that
/// process; `--die-at`, `--die-after-sends`); `firsts` holds the list as a
/// bitmap of the first 64 ranks.
fn agree_loop(comm: &mut impl Collectives, args: &MpiArgs) -> Outcome {
    agreement_loop(comm, args, |comm, failed_by| {
        let (result, first, held) = match comm.agree_failed() {
            Ok(failed) => {
                let bits = failed.iter().filter(|&&r| r < 64).map(|&r| 1 << r).sum();
                let right = failed.iter().all(|&r| failed_by(r));
                (Ok(right), bits, format!("{failed:?}"))
            }
            Err(e) => (Err(e), u64::MAX, String::new()),
        };
        Step {
            result,
            first,
            held,
        }
    })
}
