//! The MPI engine between real processes: `corrected mpi` launched by
//! `mpirun` (Open MPI from Debian's packages; `.ci/run` installs it), every
//! process's outcome read back from its JSON line. Feature `mpi` only.
#![cfg(feature = "mpi")]

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{json, Value};

mod schema;

/// Runs `corrected mpi` with the arguments of `args` (split at white
/// space) on `procs` processes on shared memory, with failed processes
/// tolerated by the launcher; returns each process's outcome, by rank,
/// each checked against `docs/cli.md`'s JSON vocabulary.
fn mpirun(procs: u32, args: &str) -> Vec<Value> {
    // Each launch its own session directory: tests run in parallel, and
    // Open MPI's launchers race on creating and removing a shared one
    // ("A call to mkdir was unable to create the desired directory").
    static LAUNCHES: AtomicU32 = AtomicU32::new(0);
    let n = LAUNCHES.fetch_add(1, Ordering::Relaxed);
    let session = std::env::temp_dir().join(format!("corrected-mpi-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&session).expect("a session directory");
    // A hang is a failure (exit status 124), not a stuck CI.
    let out = Command::new("timeout")
        .args(["--kill-after=5", "120", "mpirun"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_orte_tmpdir_base", &session)
        .args(["--oversubscribe", "--bind-to", "none"])
        .args(["--mca", "pml", "ob1", "--mca", "btl", "self,vader"])
        .args(["--mca", "orte_enable_recovery", "1"])
        .args(["-n", &procs.to_string()])
        .arg(env!("CARGO_BIN_EXE_corrected"))
        .arg("mpi")
        .args(args.split_whitespace())
        .output()
        .expect("mpirun runs (apt-get install openmpi-bin libopenmpi-dev)");
    let _ = std::fs::remove_dir_all(&session);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut outcomes: Vec<Value> = stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).expect("one JSON outcome per line"))
        .collect();
    // Every line in the vocabulary of docs/cli.md (*JSON output*).
    outcomes.iter().for_each(schema::check);
    outcomes.sort_by_key(|o| o["rank"].as_u64());
    assert!(
        out.status.success(),
        "mpirun failed: {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    outcomes
}

/// [`mpirun`] of `args` on `procs` processes, of which `reporting` report
/// (each thread of a node team apart): each delivers `iters` results, every
/// one right, but the ranks of `died` (rank, results), which deliver their
/// own count. Returns the outcomes.
fn delivering(
    procs: u32,
    args: &str,
    reporting: usize,
    iters: u64,
    died: &[(u64, u64)],
) -> Vec<Value> {
    let outcomes = mpirun(procs, args);
    assert_eq!(outcomes.len(), reporting, "{args}: {outcomes:?}");
    for o in &outcomes {
        let rank = field(o, "rank");
        let expected = died.iter().find(|d| d.0 == rank).map_or(iters, |d| d.1);
        delivered_all(o, expected, args);
    }
    outcomes
}

/// [`delivering`] of `args` (no announced death), and every survivor got
/// the same results. Returns the outcomes.
fn survivors_agree(procs: u32, args: &str, reporting: usize, iters: u64) -> Vec<Value> {
    let outcomes = delivering(procs, args, reporting, iters, &[]);
    assert_same_results(&outcomes, args);
    outcomes
}

fn field(o: &Value, name: &str) -> u64 {
    o[name].as_u64().unwrap_or_else(|| panic!("{name} in {o}"))
}

/// Every live process's results, iteration by iteration, are the same
/// (`firsts`: each allreduce's first element; 0 for a failed call).
fn assert_same_results(outcomes: &[Value], context: &str) {
    let firsts = |o: &Value| o["firsts"].as_array().cloned().unwrap_or_default();
    let Some(first) = outcomes.first() else {
        return;
    };
    for o in outcomes {
        assert_eq!(firsts(o), firsts(first), "{context}: {o} against {first}");
    }
}

/// The two ways frames go between processes of one node: through the
/// node's shared memory (frame rings, the default), and through MPI alone
/// (`--shared-memory 0`, as between nodes).
const CHANNELS: [&str; 2] = ["", "--shared-memory 0"];

/// The outcomes of the first 100 iterations (`results`, runs expanded).
fn results(o: &Value) -> Vec<String> {
    let runs = o["results"].as_array().expect("results");
    runs.iter()
        .flat_map(|run| {
            let kind = run[0].as_str().expect("a kind").to_string();
            std::iter::repeat(kind).take(run[1].as_u64().expect("a count") as usize)
        })
        .collect()
}

/// `o` delivered `iters` results, every one right: no wrong value, no
/// error (`context` heads the message otherwise).
fn delivered_all(o: &Value, iters: u64, context: &str) {
    assert_eq!(
        (field(o, "delivered"), field(o, "wrong"), errors(o)),
        (iters, 0, 0),
        "{context}: {o}"
    );
}

fn errors(o: &Value) -> u64 {
    o["missing_by_error"]
        .as_object()
        .map_or(0, |m| m.values().filter_map(Value::as_u64).sum())
}

#[test]
fn broadcasts_and_allreduces_between_processes_give_every_rank_the_value() {
    // Values of 128 KiB and more travel detached from their frames
    // (`wire::DETACH_MIN_BYTES`): 20 000 and 40 000 words. Between
    // processes of one node, frames of up to 4 KiB go through the rings
    // (100 words), larger ones through MPI, announced in the ring (1000
    // words: framed; 20 000: detached).
    for (op, procs, len) in [
        ("bcast", 4, "1"),
        ("bcast", 3, "100"),
        ("bcast", 3, "1000"),
        ("allreduce", 4, "1000"),
        ("allreduce", 5, "9"),
        ("bcast", 4, "20000"),
        ("allreduce", 3, "20000"),
        ("allreduce", 2, "40000"),
        ("allreduce", 3, "70000"),
        ("reduce", 4, "20000"),
    ] {
        for channel in CHANNELS {
            let args = format!("--op {op} --iters 300 --len {len} {channel}");
            for o in &delivering(procs, &args, procs as usize, 300, &[]) {
                assert_eq!(o["bad_frames"], json!([0, 0]), "{o}");
            }
        }
    }
}

/// The headline: a process SIGKILLed in the middle of a loop of
/// broadcasts, with nothing telling the others, leaves every other process
/// delivering every broadcast, the later ones included.
#[test]
fn a_sigkilled_process_does_not_stop_the_others_broadcasts() {
    // Small values, and 160 KB ones (detached, received by rendezvous: a
    // receive from the killed process must not wait for it).
    // And 4 KB ones: the largest that go through the rings between
    // processes of one node, several slots each, so a process may die with
    // one half written.
    let cases = [
        (6, 1500, "1", "4:500"),
        (4, 300, "20000", "2:100"),
        (5, 600, "500", "1:200"),
    ];
    for ((procs, iters, len, kill), channel) in
        cases.into_iter().flat_map(|c| CHANNELS.map(|ch| (c, ch)))
    {
        let args = format!("--op bcast --iters {iters} --len {len} --sigkill {kill} {channel}");
        // The survivors report.
        for o in &delivering(procs, &args, procs as usize - 1, iters, &[]) {
            assert_ne!(o["rank"].as_u64(), kill[..1].parse().ok());
        }
    }
}

/// Every broadcast algorithm of the thread runtime, as `corrected mpi`
/// spells it (the tree's, the default, is tested above).
const ALGORITHMS: [&str; 7] = [
    "--algorithm gossip --correction none",
    "--algorithm gossip --correction ocg",
    "--algorithm gossip --correction ccg",
    "--algorithm gossip --correction fcg:1",
    "--algorithm big",
    "--algorithm ftco --timeout-ms 5",
    "--algorithm ack-tree",
];

/// Gossip (GOS, OCG, CCG, FCG), BIG, FTCO and the ack tree between 3-5
/// processes, fault-free: every process delivers every broadcast, small
/// values (in the frames) and 20 000 words (160 KB, detached). GOS and OCG
/// reach everyone with probability 1 - δ per operation (T and C chosen for
/// δ = 6.93e-7, Lemma 1 and Claim 2), so a miss here is a bug, not luck.
#[test]
fn every_broadcast_algorithm_delivers_between_processes() {
    for (i, algorithm) in ALGORITHMS.iter().enumerate() {
        let procs = 3 + (i as u32 % 3);
        for (len, iters) in [("1", 100u64), ("20000", 10)] {
            let args = format!("--op bcast --iters {iters} --len {len} {algorithm}");
            let outcomes = delivering(procs, &args, procs as usize, iters, &[]);
            for o in &outcomes {
                assert_eq!(o["bad_frames"], json!([0, 0]), "{o}");
            }
            if algorithm.starts_with("--algorithm gossip") {
                // The root is a g-node of every operation.
                assert_eq!(field(&outcomes[0], "g_node_ops"), iters, "{algorithm}");
            }
        }
    }
}

/// A process dies between two broadcasts (emulated and announced,
/// `--die-at 2:20` of 60), under every algorithm: each survivor gets what
/// the algorithm promises. The corrected tree, CCG, FCG, BIG (fewer than
/// ⌈log2 P⌉ failures) and FTCO (a live root): every later broadcast on
/// every survivor; GOS and OCG reach a live rank with probability 1 - δ
/// for a dead set fixed before the operation, GOS here with a longer T
/// than its automatic one, which Lemma 1 counts for no dead rank. The ack
/// tree has no fault tolerance of its own, but it routes around a failure
/// the team reports (as this one is): every later broadcast on every
/// survivor too, none waiting for the dead rank's ACK.
#[test]
fn every_broadcast_algorithm_meets_an_announced_death_as_it_promises() {
    let tree = "--algorithm tree";
    let gos = "--algorithm gossip --correction none --gossip-time 40";
    let algorithms = [tree, gos]
        .into_iter()
        .chain(ALGORITHMS.into_iter().skip(1));
    for algorithm in algorithms {
        let args = format!("--op bcast --iters 60 --len 3 --die-at 2:20 --timeout 10 {algorithm}");
        delivering(4, &args, 4, 60, &[(2, 20)]);
    }
}

/// FCG and FTCO survive a death inside a broadcast too (FCG: f = 1 during
/// the correction, Claim 4; FTCO: anything with the root alive): a process
/// dying right after its first or third send of broadcast 20 leaves every
/// survivor delivering every broadcast.
#[test]
fn fcg_and_ftco_survive_a_death_inside_a_broadcast() {
    for algorithm in [ALGORITHMS[3], ALGORITHMS[5]] {
        for kill in ["1:20:1", "3:20:3"] {
            let args =
                format!("--op bcast --iters 40 --len 3 --die-after-sends {kill} {algorithm}");
            let outcomes = mpirun(4, &args);
            assert_eq!(outcomes.len(), 4, "{algorithm}: {outcomes:?}");
            let victim = u64::from(kill.as_bytes()[0] - b'0');
            for o in outcomes.iter().filter(|o| field(o, "rank") != victim) {
                delivered_all(o, 40, &args);
            }
        }
    }
}

/// FTCO's reduce and allreduce between processes (`ReduceAlgorithm::Ftco`):
/// fault-free every process's input is in every result; and, since FTCO
/// detects failures by its own timeouts, a process SIGKILLed in the middle
/// of a loop of allreduces, with nothing telling the others, leaves every
/// survivor with every later result, the same on all, every survivor's
/// input in. (Before the driver's outbox kept each peer's messages apart,
/// the killed process's full channel held back the root's messages to the
/// live ones for a failure timeout, and the root left them out of the
/// next results as suspected.)
#[test]
fn ftco_reduce_and_allreduce_between_processes_survive_a_sigkill() {
    let ftco = "--algorithm ftco --timeout-ms 20";
    for (op, procs) in [("reduce", 4u32), ("allreduce", 5)] {
        let args = format!("--op {op} --iters 200 --len 3 {ftco}");
        delivering(procs, &args, procs as usize, 200, &[]);
    }
    let args = format!("--op allreduce --iters 250 --len 3 --sigkill 2:50 {ftco}");
    // The survivors report.
    let outcomes = survivors_agree(4, &args, 3, 250);
    // The killed process's parent (the root) found it by timeouts.
    assert!(field(&outcomes[0], "timeouts") > 0, "{}", outcomes[0]);
    for o in &outcomes {
        // Every result's contributors, the dead process's absence included,
        // name exactly the ranks whose bits it holds.
        assert_eq!(field(o, "contributors_checked"), 250, "{o}");
    }
}

/// FCG between processes needs no failure notice: a process SIGKILLed in
/// the middle of a loop of FCG broadcasts (f = 1: its death, whenever it
/// falls, is at most one failure during a correction) leaves every other
/// process delivering every broadcast, the later ones included.
#[test]
fn a_sigkilled_process_does_not_stop_fcg_broadcasts() {
    let args = format!("--op bcast --iters 600 --sigkill 3:200 {}", ALGORITHMS[3]);
    // The survivors report.
    for o in &delivering(5, &args, 4, 600, &[]) {
        assert_ne!(field(o, "rank"), 3);
    }
}

/// A process SIGKILLed between two calls (nobody told, and it was outside
/// the library, where silence is no evidence) is found exited by the first
/// rank that waits on it (its process is gone from this node: a certain
/// failure, `mpi/transport/exited.rs`), announced, and every survivor gets
/// the same outcome of every operation, the one that meets the death
/// included: the value, never a timeout (which the waiting ranks got before
/// the operation timeout, 10 s here, while the rank that found the absence
/// went on). Reduce, allreduce and a broadcast from a live root, a process
/// killed at sampled iterations, both channels.
#[test]
fn every_survivor_of_a_sigkill_gets_the_same_outcome_of_every_operation() {
    for op in ["allreduce", "reduce", "bcast"] {
        for kill in ["3:150", "1:277"] {
            for channel in CHANNELS {
                let args = format!("--op {op} --iters 400 --sigkill {kill} {channel}");
                survivors_agree(4, &args, 3, 400);
            }
        }
    }
}

/// Immediate collectives between processes (`corrected mpi --in-flight 3`:
/// three requests in flight, each batch waited newest first): every
/// result checked, through the rings and MPI alone; a process SIGKILLed
/// with a request in flight, and one SIGKILLed inside the start of one,
/// leave every survivor every result, the same on each.
#[test]
fn immediate_collectives_between_processes_survive_a_sigkill() {
    for op in ["allreduce", "bcast", "reduce", "barrier"] {
        for channel in CHANNELS {
            let args = format!("--op {op} --iters 90 --in-flight 3 {channel}");
            survivors_agree(4, &args, 4, 90);
        }
        let args = format!("--op {op} --iters 90 --in-flight 3 --sigkill 2:40");
        survivors_agree(4, &args, 3, 90);
    }
    let args =
        "--op allreduce --iters 12 --in-flight 3 --f 1 --sigkill-after-sends 1:4:1 --timeout 5";
    survivors_agree(4, args, 3, 12);
}

/// Allgather and reduce-scatter between processes (written once over the
/// allreduce, `src/gather.rs`): through a SIGKILL between operations and
/// one inside an operation, through the rings, MPI alone and the node's
/// shared memory (large blocks), every survivor gets every result, each
/// checked block by block against its contributors (`corrected mpi`'s
/// checker: a block is its rank's, or zeros where the contributors leave
/// that rank out; a reduce-scatter block is over exactly them).
#[test]
fn allgather_and_reduce_scatter_between_processes_survive_a_sigkill() {
    for op in ["allgather", "reducescatter"] {
        for (len, channel) in [("1", ""), ("1", "--shared-memory 0"), ("20000", "")] {
            let args = format!("--op {op} --iters 60 --len {len} --sigkill 2:25 {channel}");
            for o in survivors_agree(4, &args, 3, 60) {
                assert_eq!(field(&o, "contributors_checked"), 60, "{args}: {o}");
            }
        }
        let args = format!("--op {op} --iters 6 --f 1 --sigkill-after-sends 1:2:2 --timeout 5");
        for o in survivors_agree(4, &args, 3, 6) {
            assert_eq!(field(&o, "contributors_checked"), 6, "{args}: {o}");
        }
    }
}

/// Split between processes: two sub-teams by parity, the odd one running
/// two allreduces per iteration so that their operation numbers drift
/// apart; through a SIGKILL in one sub-team, one inside the split, and
/// large values through the node's shared memory, every survivor gets
/// every result, each sum holding exactly its sub-team's live members
/// (`corrected mpi --op split`'s checker). No call waits out the
/// operation timeout: a sub-team's large allreduce waited for the other
/// sub-team's processes to finish an operation number they never reach,
/// for the whole timeout, then declared them failed.
#[test]
fn split_between_processes_keeps_each_sub_team_to_itself() {
    let cases = [
        "--iters 40",
        "--iters 40 --sigkill 2:20",
        "--iters 40 --len 40000 --timeout 30",
        "--iters 40 --len 40000 --sigkill 3:20 --timeout 30",
        "--iters 10 --sigkill-after-sends 1:0:2 --timeout 5 --shared-memory 0",
    ];
    for case in cases {
        let args = format!("--op split {case}");
        let reporting = if case.contains("sigkill") { 3 } else { 4 };
        let iters = if case.contains("--iters 10") { 10 } else { 40 };
        for o in delivering(4, &args, reporting, iters, &[]) {
            let slowest = o["latency_ns"]["max"].as_f64().expect("latency");
            assert!(slowest < 15e9, "{args}: a call waited out the timeout: {o}");
        }
    }
}

/// A process SIGKILLed right after its first, second or third send of one
/// operation (`--sigkill-after-sends`, `Fault::SigkillAfterSends`: a real
/// death inside the operation, nobody told): every survivor gets the same
/// outcome of every operation, the one of the death included. Within the
/// budget (f = 1) allreduce, reduce and barrier give every survivor every
/// result; a broadcast every value while its root lives. Small values, and
/// large ones through the node's shared memory (an allreduce's and a
/// broadcast's region, read after their owner died).
#[test]
fn every_survivor_of_a_sigkill_inside_an_operation_gets_the_same_outcome() {
    let cases = [
        ("allreduce", "1", 0u64),
        ("allreduce", "1", 2),
        ("reduce", "1", 0),
        ("reduce", "1", 3),
        ("barrier", "1", 0),
        ("barrier", "1", 2),
        ("bcast", "1", 2),
        ("allreduce", "70000", 1),
        ("reduce", "70000", 2),
        ("bcast", "20000", 3),
    ];
    for (op, len, victim) in cases {
        for sends in 1..=3 {
            let args = format!(
                "--op {op} --iters 6 --len {len} --f 1 --sigkill-after-sends {victim}:2:{sends} \
                 --timeout 5"
            );
            let outcomes = survivors_agree(4, &args, 3, 6);
            for o in &outcomes {
                assert_ne!(field(o, "rank"), victim, "{args}: {o}");
                assert_eq!(results(o), results(&outcomes[0]), "{args}: {o}");
            }
        }
    }
}

/// A broadcast's root SIGKILLed right after its first, second or third
/// send: no survivor gets a wrong value; the ranks it reached deliver, the
/// others end in `RootFailed`, and every later broadcast from it ends in
/// `RootFailed` on every survivor (docs/algorithms.md: a root that fails
/// while it sends), small values and large ones read from its region.
#[test]
fn a_broadcast_root_sigkilled_inside_the_operation_leaves_no_survivor_a_wrong_value() {
    for len in ["1", "20000"] {
        for sends in 1..=3 {
            let args = format!(
                "--op bcast --iters 5 --len {len} --sigkill-after-sends 0:2:{sends} --timeout 5"
            );
            let outcomes = mpirun(4, &args);
            assert_eq!(outcomes.len(), 3, "{args}: {outcomes:?}");
            for o in &outcomes {
                let results = results(o);
                assert_eq!(results[..2], ["ok", "ok"], "{args}: {o}");
                assert!(
                    results[2] == "ok" || results[2] == "RootFailed",
                    "{args}: {o}"
                );
                assert_eq!(results[3..], ["RootFailed", "RootFailed"], "{args}: {o}");
                assert_eq!(field(o, "wrong"), 0, "{args}: {o}");
            }
        }
    }
}

/// Reduce and allreduce need detection: the SIGKILLed process is found,
/// announced, and every later allreduce gives every survivor the sum of
/// the survivors' inputs (the dead one's in or out, never a wrong value);
/// with the operation timeout short (2 s), still no operation times out.
#[test]
fn allreduce_goes_on_after_a_sigkilled_process_is_detected() {
    for channel in CHANNELS {
        let args = format!("--op allreduce --iters 300 --sigkill 2:100 --timeout 2 {channel}");
        for o in survivors_agree(5, &args, 4, 300) {
            // Each result's contributors name exactly the ranks whose bits
            // it holds (the checker counts it wrong otherwise).
            assert_eq!(field(&o, "contributors_checked"), 300, "{o}");
        }
    }
}

/// Shrink between processes (agreement on the failed ranks, then the
/// survivors renumbered): a process dead before the shrink and one dying
/// inside the agreement (after each of its first sends in turn) are left
/// out by every survivor alike (by that shrink or the next), and nobody
/// else is; each allreduce after it
/// counts exactly the live members; a shrink to two processes clamps f = 2
/// to 1.
#[test]
fn shrink_between_processes_leaves_out_the_failed_alike() {
    for sends in ["1", "2", "4"] {
        let dying = format!("1:20:{sends}");
        let args = format!("--op shrink --iters 30 --f 2 --die-at 2:10 --die-after-sends {dying}");
        let outcomes = mpirun(4, &args);
        let survivors: Vec<&Value> = outcomes
            .iter()
            .filter(|o| matches!(o["rank"].as_u64(), Some(0 | 3)))
            .collect();
        assert_eq!(survivors.len(), 2, "{outcomes:?}");
        for o in &survivors {
            delivered_all(o, 30, &dying);
            assert_eq!(field(o, "f"), 1, "f clamped to the survivors: {o}");
            // A rank that fails as the others begin an agreement is left
            // out by it or by the next one, by every survivor alike.
            let sizes = o["firsts"].as_array().expect("sizes");
            assert_eq!(sizes[9], 4, "{o}");
            assert_eq!(sizes[11], 3, "rank 2 left out: {o}");
            assert_eq!(sizes[21], 2, "rank 1 left out: {o}");
            assert_eq!(sizes[29], 2, "{o}");
        }
        assert_same_results(&survivors.into_iter().cloned().collect::<Vec<_>>(), &dying);
    }
}

/// Shrink between processes survives a SIGKILLed process (nobody is told):
/// the survivors find it by its exit (one node), agree on it alike, and go
/// on without it, no call in error.
#[test]
fn shrink_between_processes_survives_a_sigkilled_process() {
    for channel in CHANNELS {
        let args = format!("--op shrink --iters 40 --sigkill 3:20 --timeout 5 {channel}");
        // Its exit is found by the first process that waits on it: no call
        // times out, not even the one of the death.
        for o in &survivors_agree(5, &args, 4, 40) {
            let sizes = o["firsts"].as_array().expect("sizes");
            assert_eq!(sizes[19], 5, "{o}");
            assert_eq!(sizes[39], 4, "{o}");
        }
    }
}

/// 20 iterations of `op` with `extra` on `procs` processes: the outcomes of
/// the ranks that ran every iteration (the survivors), of which there must
/// be `survivors`.
fn survivors_of(procs: u32, op: &str, extra: &str, survivors: usize) -> Vec<Value> {
    let live: Vec<Value> = mpirun(procs, &format!("--op {op} --iters 20 {extra}"))
        .into_iter()
        .filter(|o| field(o, "delivered") + errors(o) == 20)
        .collect();
    assert_eq!(live.len(), survivors, "{extra}: {live:?}");
    live
}

/// Shrink in node teams (threads below MPI): a thread dead before the
/// call (announced) and a SIGKILLed process (nobody told) are left out by
/// every survivor alike, the others renumbered densely across processes
/// that now have different numbers of threads, and an allreduce over the
/// survivors sums to their number (`firsts`: the size after each shrink).
#[test]
fn shrink_in_node_teams_leaves_out_threads_and_processes_alike() {
    // (processes, arguments, the survivors, the size before and after)
    let cases: [(u32, &str, usize, [u64; 2]); 2] = [
        (2, "--threads 3 --die-at 4:5", 5, [6, 5]),
        (
            3,
            "--threads 2 --die-at 1:3 --sigkill 2:10 --timeout 5",
            3,
            [6, 3],
        ),
    ];
    for (procs, extra, survivors, [before, after]) in cases {
        let live = survivors_of(procs, "shrink", extra, survivors);
        for o in &live {
            assert_eq!(field(o, "wrong"), 0, "{extra}: {o}");
            assert!(
                errors(o) <= 1,
                "at most the call of the death: {extra}: {o}"
            );
            let sizes = o["firsts"].as_array().expect("sizes");
            assert_eq!(sizes[0], before, "{extra}: {o}");
            assert_eq!(sizes[19], after, "{extra}: {o}");
        }
        assert_same_results(&live, extra);
    }
}

/// Agreement on the failed ranks between processes, one rank each and in
/// node teams (threads below MPI): a rank dead before the call (announced)
/// and a SIGKILLed process (nobody told) are listed by every survivor
/// alike, every iteration, and nothing else is (`firsts`: the list as a
/// bitmap; a sigkilled process's threads all listed).
#[test]
fn agreement_lists_the_failed_alike_between_processes_and_in_node_teams() {
    // (processes, arguments, the survivors, the last list)
    let cases: [(u32, &str, usize, u64); 3] = [
        (4, "--sigkill 1:10 --die-at 2:5 --timeout 5", 2, 0b0110),
        (2, "--threads 3 --die-at 4:5", 5, 1 << 4),
        (3, "--threads 2 --sigkill 1:10 --timeout 5", 4, 0b1100),
    ];
    for (procs, extra, survivors, last) in cases {
        let live = survivors_of(procs, "agree", extra, survivors);
        for o in &live {
            assert_eq!((field(o, "wrong"), errors(o)), (0, 0), "{extra}: {o}");
            let lists = o["firsts"].as_array().expect("lists");
            assert_eq!(lists[0], 0, "{extra}: {o}");
            assert_eq!(lists[19], last, "{extra}: {o}");
        }
        assert_same_results(&live, extra);
    }
}

/// An emulated, announced failure within the budget: no operation fails.
#[test]
fn allreduce_survives_an_announced_failure_within_the_budget() {
    let args = "--op allreduce --iters 200 --die-at 3:50";
    delivering(5, args, 5, 200, &[(3, 50)]);
}

/// A large allreduce goes by blocks (`protocol::scatter`): a rank dying
/// after each of its sends of the blocks' exchange (its input blocks, then
/// its reduced block; past the last, at the call's end) never leaves the
/// survivors with a result whose blocks disagree on whose inputs they hold
/// (`corrected mpi` checks that every element is the same sum of the
/// inputs' bits, holding every live rank's). Until the dying rank has sent
/// everything, some survivor lacks a block, and every survivor falls back
/// to the eager allreduce, once: the agreed verdict leaves the dead rank
/// out of the next allreduces.
#[test]
fn an_allreduce_by_blocks_survives_a_death_at_every_send() {
    // 70 000 words: 560 KB, above `BLOCKS_MIN_BYTES`. Victim 0 is the
    // root of the verdict's allreduce.
    for (procs, victim, sends) in [(4u32, 2u32, 1..=7), (5, 0, 1..=9)] {
        let blocks_sends = 2 * (procs - 1);
        for n in sends {
            let outcomes = large_allreduces_with_a_death(procs, victim, n, "0");
            for o in outcomes
                .iter()
                .filter(|o| field(o, "rank") != u64::from(victim))
            {
                let fallbacks = field(o, "fallbacks");
                if n < blocks_sends {
                    assert_eq!(fallbacks, 1, "{victim}:1:{n}: a block is missing: {o}");
                } else {
                    assert!(fallbacks <= 1, "{victim}:1:{n}: {o}");
                }
            }
        }
    }
}

/// Four large allreduces (70 000 words, 560 KB) on `procs` processes,
/// `victim` dying right after its `n`-th send of the second, with the
/// shared memory's slots at `shared_memory` bytes (0: by blocks): every
/// survivor delivers all four, none in error, all survivors the same
/// results; the victim delivers the first. Returns the outcomes.
fn large_allreduces_with_a_death(
    procs: u32,
    victim: u32,
    n: u32,
    shared_memory: &str,
) -> Vec<Value> {
    let kill = format!("{victim}:1:{n}");
    let args = format!(
        "--op allreduce --iters 4 --len 70000 --f 1 --die-after-sends {kill} \
         --shared-memory {shared_memory}"
    );
    let outcomes = mpirun(procs, &args);
    assert_eq!(outcomes.len(), procs as usize, "{kill}: {outcomes:?}");
    let survivors: Vec<Value> = outcomes
        .iter()
        .filter(|o| field(o, "rank") != u64::from(victim))
        .cloned()
        .collect();
    assert_same_results(&survivors, &kill);
    for o in &outcomes {
        assert_eq!(o["shared_memory"], shared_memory != "0", "{kill}: {o}");
        if field(o, "rank") == u64::from(victim) {
            assert_eq!(field(o, "delivered"), 1, "{kill}: {o}");
            continue;
        }
        delivered_all(o, 4, &kill);
    }
    outcomes
}

/// A process SIGKILLed in a loop of large allreduces: the heartbeat
/// detector finds it while the others wait for its blocks, and no survivor
/// ever gets a torn or wrong result.
#[test]
fn an_allreduce_by_blocks_survives_a_sigkilled_process() {
    for o in large_allreduces_with_a_sigkill("0") {
        assert!(field(&o, "fallbacks") <= 2, "{o}");
    }
}

/// Sixty large allreduces (70 000 words) on 4 processes, process 1
/// SIGKILLed at the twentieth, with the shared memory's slots at
/// `shared_memory` bytes (0: by blocks): no survivor gets a wrong result,
/// each at most one call in error (the one of the death), and those
/// without an error all the same results. Returns the survivors' outcomes.
fn large_allreduces_with_a_sigkill(shared_memory: &str) -> Vec<Value> {
    let args = format!(
        "--op allreduce --iters 60 --len 70000 --sigkill 1:20 --timeout 3 \
         --shared-memory {shared_memory}"
    );
    let outcomes = mpirun(4, &args);
    assert_eq!(outcomes.len(), 3, "{outcomes:?}");
    for o in &outcomes {
        assert_eq!(o["shared_memory"], shared_memory != "0", "{o}");
        assert_eq!(field(o, "wrong"), 0, "{o}");
        assert!(errors(o) <= 1, "at most the operation of the death: {o}");
        assert_eq!(field(o, "delivered") + errors(o), 60, "{o}");
        // Contributors on every path: by blocks, through the shared memory.
        assert_eq!(
            field(o, "contributors_checked"),
            field(o, "delivered"),
            "{o}"
        );
        if errors(o) == 0 {
            let others = outcomes.iter().filter(|p| errors(p) == 0);
            assert_same_results(&others.cloned().collect::<Vec<_>>(), "sigkill 1:20");
        }
    }
    outcomes
}

/// Inputs of different lengths are an error on every rank, every time, and
/// never a hang: both above `BLOCKS_MIN_BYTES` (the verdict's lengths
/// differ: `LengthMismatch`), and on both sides of it (one rank by blocks,
/// another eager: `Mismatch`, and the next calls still line up).
#[test]
fn an_allreduce_by_blocks_reports_lengths_that_differ() {
    lengths_that_differ(&[("1:70001", "LengthMismatch"), ("1:100", "Mismatch")], "0");
}

/// `--shared-memory` with the library's default slot (8 MiB).
const SLOT: &str = "8388608";

/// Three allreduces of 70 000 words on 3 processes, rank 1's of another
/// length (`len_at`), with the shared memory's slots at `shared_memory`
/// bytes: every rank gets the error `kind` every time, never a hang.
fn lengths_that_differ(cases: &[(&str, &str)], shared_memory: &str) {
    for &(len_at, kind) in cases {
        let args = format!(
            "--op allreduce --iters 3 --len 70000 --len-at {len_at} --timeout 5 \
             --shared-memory {shared_memory}"
        );
        let outcomes = mpirun(3, &args);
        assert_eq!(outcomes.len(), 3, "{outcomes:?}");
        for o in &outcomes {
            assert_eq!(o["missing_by_error"], json!({ kind: 3 }), "{len_at}: {o}");
        }
    }
}

/// A large allreduce through the node's shared memory (`src/mpi/shm.rs`),
/// a rank dying right after each of its sends of one call, the root of
/// the allreduce (rank 0) included: every survivor gets every result, all
/// the same (a victim's input, published before its first send, is in it
/// or not, alike everywhere), and the call after leaves the victim out.
#[test]
fn an_allreduce_through_shared_memory_survives_a_death_at_every_send() {
    // 70 000 words: 560 KB, from `SHARED_MIN_BYTES` up to a slot.
    for (procs, victim, sends) in [(2u32, 1u32, 1..=2), (4, 2, 1..=5), (5, 0, 1..=6)] {
        for n in sends {
            large_allreduces_with_a_death(procs, victim, n, SLOT);
        }
    }
}

/// A process SIGKILLed in a loop of large allreduces through shared
/// memory: its region stays mapped by the others, the detector finds it,
/// and no survivor ever gets a torn or wrong result.
#[test]
fn an_allreduce_through_shared_memory_survives_a_sigkilled_process() {
    large_allreduces_with_a_sigkill(SLOT);
}

/// Slots too large for half of `/dev/shm`'s free space are not reserved
/// (reserving writes them whole, and `/dev/shm` is memory): the processes
/// go on without shared memory, by blocks.
#[test]
fn slots_too_large_for_dev_shm_leave_the_shared_memory_off() {
    let huge = u64::MAX / 2;
    let args = format!("--op allreduce --iters 3 --len 70000 --shared-memory {huge}");
    for o in &delivering(2, &args, 2, 3, &[]) {
        assert_eq!(o["shared_memory"], false, "{o}");
    }
}

/// Lengths that differ in an allreduce through shared memory are
/// `LengthMismatch` on every rank, every time, when both go through it;
/// one rank's input too small for it (it goes eager) or too large for a
/// slot (by blocks) meets the others' as another collective: `Mismatch`
/// on every rank. Never a hang, and the calls after still line up.
#[test]
fn an_allreduce_through_shared_memory_reports_lengths_that_differ() {
    let cases = [
        ("1:70001", "LengthMismatch"),
        ("1:100", "Mismatch"),
        ("1:3000000", "Mismatch"),
    ];
    lengths_that_differ(&cases, SLOT);
}

/// Broadcasts this outcome's process rooted through the shared memory, and
/// those it sent as bytes because a process still held the slot.
fn shared_broadcasts(o: &Value) -> (u64, u64) {
    let pair = o["shared_broadcasts"].as_array().expect("a pair");
    (pair[0].as_u64().unwrap(), pair[1].as_u64().unwrap())
}

/// A large broadcast on one node goes through the root's region
/// (`src/mpi/shared_broadcast.rs`), and its root does not write a slot
/// again while a live receiver may still read it: rank 1 stops for 300
/// ms as it enters broadcast 100 (inside the library, below the failure
/// timeout), and the root, two broadcasts later, waits for it; had it
/// written the slot, rank 1 would find the value changed and end in
/// `Failed`. Stopped for 1.5 s (longer than the root waits, a failure
/// timeout), the root sends the values as bytes meanwhile and nobody
/// fails either.
#[test]
fn a_large_broadcast_through_shared_memory_waits_for_a_slow_receiver() {
    for (stall, held) in [("1:100:300", false), ("1:100:1500", true)] {
        let args = format!("--op bcast --iters 300 --len 20000 --stall-at {stall}");
        let outcomes = delivering(3, &args, 3, 300, &[]);
        for o in &outcomes {
            assert_eq!(o["shared_memory"], true, "{stall}: {o}");
        }
        let (shared, as_bytes) = shared_broadcasts(&outcomes[0]);
        assert_eq!(shared + as_bytes, 300, "{stall}: {}", outcomes[0]);
        assert_eq!(as_bytes > 0, held, "{stall}: {}", outcomes[0]);
    }
}

/// A large broadcast through shared memory to buffers of another length
/// is `LengthMismatch` on every receiver whose length differs, whichever
/// side of `SHARED_MIN_BYTES` it is on, every time, and the calls after
/// line up; the root delivers.
#[test]
fn a_large_broadcast_through_shared_memory_reports_lengths_that_differ() {
    for (len_at, failing) in [
        ("1:20001", &[1u64][..]),
        ("1:100", &[1]),
        ("0:100", &[1, 2]),
    ] {
        let args = format!("--op bcast --iters 5 --len 20000 --len-at {len_at}");
        let outcomes = mpirun(3, &args);
        assert_eq!(outcomes.len(), 3, "{len_at}: {outcomes:?}");
        for o in &outcomes {
            let expected = if failing.contains(&field(o, "rank")) {
                json!({ "LengthMismatch": 5 })
            } else {
                json!({})
            };
            assert_eq!(o["missing_by_error"], expected, "{len_at}: {o}");
            assert_eq!(field(o, "wrong"), 0, "{len_at}: {o}");
        }
    }
}

/// A large reduce through shared memory (`MpiComm::reduce_shared`) with
/// one rank's input of another length: the root of every call reports it
/// (`LengthMismatch` where both go through the shared memory, `Mismatch`
/// where the other rank's input is too small for it and goes as a value),
/// never a hang or a wrong result; a rank that only contributes may
/// return before anyone noticed.
#[test]
fn a_large_reduce_through_shared_memory_reports_lengths_that_differ_at_its_root() {
    for (len_at, kind) in [("1:70001", "LengthMismatch"), ("1:100", "Mismatch")] {
        let args = format!("--op reduce --iters 8 --len 70000 --len-at {len_at} --timeout 5");
        let outcomes = mpirun(4, &args);
        assert_eq!(outcomes.len(), 4, "{len_at}: {outcomes:?}");
        for o in &outcomes {
            let results = results(o);
            assert_eq!(field(o, "wrong"), 0, "{len_at}: {o}");
            // The root rotates: rank r is the root of iterations r and r + 4.
            let rank = field(o, "rank") as usize;
            for at in [rank, rank + 4] {
                assert_eq!(results[at], kind, "{len_at}: iteration {at}: {o}");
            }
        }
    }
}

/// One process calls another collective at one operation (`--call-at`):
/// every process reports `Mismatch` there or returns its own call's right
/// result, at least one reports it, none waits out the operation timeout,
/// and every operation before and after is right. Between processes a
/// waiting rank learns its awaited peer's call from its heartbeat
/// (`PeerView::call`) where no message shows the mismatch.
#[test]
fn a_call_of_another_collective_is_reported_between_processes() {
    for (op, call_at) in [
        ("allreduce", "1:2:bcast"),
        ("allreduce", "0:2:barrier"),
        ("allreduce", "3:2:reduce"),
        ("bcast", "2:2:allreduce"),
        ("barrier", "0:2:bcast"),
    ] {
        let context = format!("--op {op} --call-at {call_at}");
        let outcomes = mpirun(4, &format!("{context} --iters 5 --f 1 --timeout 30"));
        assert_eq!(outcomes.len(), 4, "{context}: {outcomes:?}");
        let mut reported = 0;
        for o in &outcomes {
            let results = results(o);
            assert_eq!(results.len(), 5, "{context}: {o}");
            assert_eq!(field(o, "wrong"), 0, "{context}: {o}");
            for (at, result) in results.iter().enumerate() {
                match (at, result.as_str()) {
                    (2, "Mismatch") => reported += 1,
                    (_, "ok") => {}
                    _ => panic!("{context}: iteration {at}: {result}: {o}"),
                }
            }
        }
        assert!(reported > 0, "{context}: nobody reported it: {outcomes:?}");
    }
}

/// A large broadcast through shared memory whose root, or a receiver,
/// dies right after each of its sends: no survivor ever gets a torn or
/// wrong value. A receiver's death costs nothing; after the root's, the
/// ranks it reached, directly or by correction, deliver (the region stays
/// readable) and the others, and every later broadcast, end in
/// `RootFailed`, as for a small value.
#[test]
fn a_large_broadcast_through_shared_memory_survives_a_death_at_every_send() {
    for (victim, sends) in [(0u64, 1..=3), (2, 1..=2)] {
        for n in sends {
            let kill = format!("{victim}:1:{n}");
            let args =
                format!("--op bcast --iters 4 --len 20000 --die-after-sends {kill} --timeout 5");
            let outcomes = mpirun(4, &args);
            assert_eq!(outcomes.len(), 4, "{kill}: {outcomes:?}");
            for o in outcomes.iter().filter(|o| field(o, "rank") != victim) {
                assert_eq!(field(o, "wrong"), 0, "{kill}: {o}");
                assert_eq!(field(o, "delivered") + errors(o), 4, "{kill}: {o}");
                if victim == 0 {
                    assert!(field(o, "delivered") >= 1, "{kill}: {o}");
                    assert_eq!(
                        o["missing_by_error"]["RootFailed"],
                        errors(o),
                        "{kill}: {o}"
                    );
                } else {
                    assert_eq!(errors(o), 0, "{kill}: {o}");
                }
            }
        }
    }
}

/// The hierarchy: threads below MPI (`--threads`), ranks numbered
/// `process × threads + thread`, every result checked on every thread,
/// every reduction's contributors too.
#[test]
fn a_node_team_gives_every_thread_of_every_process_the_result() {
    // A reduce's root rotates over every thread of every process; the
    // others' output must stay untouched (checked by the CLI). 70 000
    // words: the threads' lazy allreduce, then the processes' through
    // shared memory.
    for (op, procs, threads, len) in [
        ("allreduce", 2, 4, "3"),
        ("bcast", 3, 3, "3"),
        ("reduce", 2, 3, "3"),
        ("allreduce", 3, 2, "70000"),
    ] {
        let args = format!("--op {op} --iters 200 --threads {threads} --len {len}");
        // Every thread reports.
        let outcomes = delivering(procs, &args, procs as usize * threads, 200, &[]);
        for (r, o) in outcomes.iter().enumerate() {
            assert_eq!(field(o, "rank"), r as u64);
        }
        contributors_named(op, &outcomes);
    }
}

/// Every result of a reduction named its contributors, checked right by
/// the CLI (an allreduce's on every rank, a reduce's at its root).
fn contributors_named(op: &str, outcomes: &[Value]) {
    let checked = |o: &Value| field(o, "contributors_checked");
    match op {
        "allreduce" => {
            for o in outcomes {
                assert_eq!(checked(o), field(o, "delivered"), "{o}");
            }
        }
        "reduce" => {
            let roots: u64 = outcomes.iter().map(checked).sum();
            let iters = outcomes.iter().map(|o| field(o, "delivered")).max();
            assert_eq!(Some(roots), iters, "every reduce's root: {outcomes:?}");
        }
        _ => {}
    }
}

/// Unbound processes of one node may all run on the same cores: each node
/// team then takes its own share of them for its threads (process i of k
/// the i-th k-th), so that two teams do not pin their threads to the same
/// cores. With more processes than cores they share them all.
#[test]
fn a_node_teams_processes_share_out_the_cores_they_all_may_use() {
    let cores = core_affinity::get_core_ids().unwrap_or_default().len();
    let cpus = |o: &Value| -> Vec<u64> {
        o["cpus"]
            .as_array()
            .expect("cpus")
            .iter()
            .map(|c| c.as_u64().unwrap())
            .collect()
    };
    for procs in [2u32, 3] {
        let outcomes = mpirun(procs, "--op allreduce --iters 20 --threads 2");
        assert_eq!(outcomes.len(), 2 * procs as usize);
        let of = |p: usize| -> Vec<u64> {
            let mut all: Vec<u64> = outcomes[2 * p..2 * p + 2].iter().flat_map(cpus).collect();
            all.sort_unstable();
            all.dedup();
            all
        };
        for o in &outcomes {
            assert_eq!(field(o, "delivered"), 20, "{o}");
            assert_eq!(cpus(o).len(), 1, "a node team's thread is pinned: {o}");
        }
        if cores >= procs as usize {
            for (p, q) in
                (0..procs as usize).flat_map(|p| (p + 1..procs as usize).map(move |q| (p, q)))
            {
                let (a, b) = (of(p), of(q));
                assert!(
                    a.iter().all(|c| !b.contains(c)),
                    "{procs} processes on {cores} cores: {p} on {a:?}, {q} on {b:?}"
                );
            }
        } else {
            let mut used: Vec<u64> = (0..procs as usize).flat_map(of).collect();
            used.sort_unstable();
            used.dedup();
            assert_eq!(
                used.len(),
                cores,
                "{procs} processes share all {cores} cores"
            );
        }
    }
}

/// The native process level: MPI's own collectives between the proxies,
/// `MPI_Allreduce` for a built-in operation, gather and fold for a closure,
/// `MPI_Bcast` for a broadcast; every thread's result checked.
#[test]
fn a_node_team_with_mpi_own_collectives_between_processes() {
    for extra in [
        "--op allreduce",
        "--op allreduce --closure",
        "--op bcast",
        "--op reduce",
        "--op reduce --closure",
    ] {
        let args = format!("--iters 200 --threads 2 --native --len 5 {extra}");
        delivering(3, &args, 6, 200, &[]);
    }
}

/// Every broadcast algorithm between a node team's proxies (threads below
/// MPI, `--threads 2`): fault-free every thread of every process delivers
/// every broadcast; the algorithms that survive a failure during the
/// operation (FCG with f = 1, BIG, FTCO, and CCG for a death before its
/// correction) keep every live thread delivering when a proxy thread dies
/// (its process's next thread takes over); FCG and FTCO, which need no
/// failure notice, also when a whole process is SIGKILLed.
#[test]
fn a_node_team_runs_every_broadcast_algorithm_between_its_proxies() {
    for algorithm in ALGORITHMS {
        let args = format!("--op bcast --iters 60 --len 3 --threads 2 {algorithm}");
        delivering(3, &args, 6, 60, &[]);
    }
    // Ranks are process x 2 + thread: rank 2 is process 1's proxy.
    for algorithm in [ALGORITHMS[2], ALGORITHMS[3], ALGORITHMS[4], ALGORITHMS[5]] {
        let args = format!("--op bcast --iters 60 --len 3 --threads 2 --die-at 2:20 {algorithm}");
        delivering(4, &args, 8, 60, &[(2, 20)]);
    }
    for algorithm in [ALGORITHMS[3], ALGORITHMS[5]] {
        let args = format!("--op bcast --iters 100 --len 3 --threads 2 --sigkill 1:30 {algorithm}");
        // The survivors' threads report.
        delivering(4, &args, 6, 100, &[]);
    }
}

/// A slow thread is not a failed one: a process's proxy thread (rank 2,
/// process 1 of 2) or another thread (rank 3) stalled for 2.5 s, longer
/// than either level's failure timeout (1 s), as it enters broadcast or
/// allreduce 20 of 60: nobody is taken for failed, every thread of every
/// process gets every result right.
#[test]
fn a_node_team_waits_for_a_stalled_thread_without_suspecting_it() {
    for (op, stalled) in [("bcast", "2"), ("allreduce", "2"), ("allreduce", "3")] {
        let args = format!("--op {op} --iters 60 --threads 2 --stall-at {stalled}:20:2500");
        delivering(2, &args, 4, 60, &[]);
    }
}

/// Each level survives its own failures: a thread (not a proxy) dying in
/// its process, and a whole process SIGKILLed, in the same kind of run.
#[test]
fn a_node_team_survives_a_dead_thread_and_a_sigkilled_process() {
    let args = "--op allreduce --iters 200 --threads 4 --die-at 5:50";
    contributors_named("allreduce", &delivering(2, args, 8, 200, &[(5, 50)]));
    // The two surviving processes' threads report.
    let args = "--op bcast --iters 600 --threads 2 --sigkill 2:200";
    delivering(3, args, 4, 600, &[]);
    let args = "--op allreduce --iters 200 --threads 2 --sigkill 1:50 --timeout 2";
    contributors_named("allreduce", &survivors_agree(3, args, 4, 200));
}

/// A process stalled past the operation timeout (alive, silent, outside the
/// library as far as its last heartbeat says) is declared failed as absent
/// by the process waiting on it, for good, and told so: from its next
/// receive its calls end in `Error::Failed` (before, it went on waiting on
/// processes that no longer heard it, an operation timeout per call). The
/// others go on without it, alike: their sums from the next operation on
/// leave its input out.
#[test]
fn a_process_taken_for_failed_while_alive_is_told_and_fails_its_calls() {
    for channel in CHANNELS {
        let args = format!("--op allreduce --iters 60 --stall-at 1:50:3500 --timeout 2 {channel}");
        let outcomes = mpirun(3, &args);
        assert_eq!(outcomes.len(), 3, "{args}: {outcomes:?}");
        let stalled = outcomes
            .iter()
            .find(|o| field(o, "rank") == 1)
            .expect("rank 1");
        assert_eq!(field(stalled, "delivered"), 50, "{stalled}");
        assert_eq!(
            stalled["missing_by_error"]["Failed"].as_u64(),
            Some(10),
            "{stalled}"
        );
        let sums = |o: &Value| o["firsts"].as_array().cloned().unwrap_or_default();
        let first_sums = sums;
        let others: Vec<&Value> = outcomes.iter().filter(|o| field(o, "rank") != 1).collect();
        for o in &others {
            let sums = sums(o);
            assert_eq!(sums[49], 0b111, "{o}");
            // The operation of the absence: the same sum on both, rank 1's
            // input in it or not (a rank that waited on the other, not on
            // rank 1, waits for the declaration rather than time out).
            assert!(sums[50] == 0b101 || sums[50] == 0b111, "{o}");
            assert_eq!(sums[50], first_sums(others[0])[50], "{o}");
            for later in &sums[51..60] {
                assert_eq!(later, 0b101, "rank 1's input left out from then on: {o}");
            }
            assert_eq!(errors(o), 0, "{o}");
        }
    }
}

/// The CLI's checker counts a rank planned dead twice (a `--die-at`
/// thread of a process that `--sigkill` kills later) once: the survivors'
/// sums, which leave both out, are right, not "wrong".
#[test]
fn the_checker_counts_a_thread_of_a_killed_process_dead_once() {
    let args = "--op allreduce --iters 300 --threads 3 --die-at 7:100 --sigkill 2:200";
    // Rank 7 is thread 1 of process 2: the survivors are the threads of
    // processes 0, 1 and 3.
    delivering(4, args, 9, 300, &[]);
}

/// A proxy that dies is replaced by the next thread of its process: the
/// process stays in the process level, its other threads and every other
/// process deliver every operation (the one of the death included).
#[test]
fn a_node_team_survives_its_proxy_thread_dying() {
    // 600 words: spread in place, the outcome read from the kept ones.
    for (op, len) in [
        ("allreduce", "1"),
        ("reduce", "1"),
        ("bcast", "1"),
        ("allreduce", "600"),
        ("reduce", "600"),
        ("bcast", "600"),
    ] {
        // Rank 4 is process 1's local rank 0, its first proxy; every thread
        // reports.
        let args = format!("--op {op} --iters 200 --threads 4 --die-at 4:50 --len {len}");
        let outcomes = delivering(2, &args, 8, 200, &[(4, 50)]);
        if op == "allreduce" {
            contributors_named(op, &outcomes);
        }
    }
    // The proxies of two processes, at 3 processes of 3 threads.
    let args = "--op allreduce --iters 150 --threads 3 --die-at 3:40 --die-at 6:80";
    contributors_named(
        "allreduce",
        &delivering(3, args, 9, 150, &[(3, 40), (6, 80)]),
    );
}

// The wire format, through the public API (in this file so that CI builds
// one test binary for the feature).
mod wire {
    use corrected::mailbox::frames::FIRST_BYTES;
    use corrected::mpi::wire::{
        decode, decode_msg, decode_parts, encode, encode_parts, Decoded, Frame, SmallFrame,
    };
    use corrected::protocol::ftco::FtcoData;
    use corrected::protocol::gossip::{FcgPayload, Known, Stamped, KNOWN_CAPACITY};
    use corrected::protocol::reduce::{Contribution, FailureInfo, FailureScheme};
    use corrected::protocol::{Msg, Tag};
    use corrected::types::Collective;
    use corrected::value::data::Data;
    use corrected::value::segment::SegmentPool;
    use corrected::value::Packet;

    fn round_trip(frame: Frame) {
        let pool = SegmentPool::new();
        let mut bytes = Vec::new();
        encode(&frame, &mut bytes).expect("framed");
        assert_eq!(decode(&bytes, &pool), Some(frame.clone()));
        // A frame that fits one ring slot is encoded alike on the stack;
        // a longer one says it did not fit.
        let mut small = SmallFrame::<FIRST_BYTES>::new();
        encode_parts(&frame, &mut small, usize::MAX).expect("framed");
        let fits = bytes.len() <= FIRST_BYTES;
        assert_eq!(small.bytes(), fits.then_some(&bytes[..]), "{frame:?}");
        // A protocol message decodes alike on the ring's short path; any
        // other frame is left to the general one.
        let msg = match &frame {
            Frame::Msg(msg) => Some(msg.clone()),
            _ => None,
        };
        assert_eq!(decode_msg(&bytes, &pool), msg, "{frame:?}");
        // Every strict prefix and every extension is refused.
        for cut in 0..bytes.len() {
            assert_eq!(decode(&bytes[..cut], &pool), None, "prefix of {cut} bytes");
            assert_eq!(
                decode_msg(&bytes[..cut], &pool),
                None,
                "prefix of {cut} bytes"
            );
        }
        bytes.push(0);
        assert_eq!(decode(&bytes, &pool), None, "a trailing byte");
        assert_eq!(decode_msg(&bytes, &pool), None, "a trailing byte");
    }

    #[test]
    fn every_collective_kind_survives_the_round_trip() {
        let pool = SegmentPool::new();
        for kind in [
            Collective::Broadcast,
            Collective::Reduce,
            Collective::Allreduce,
            Collective::Barrier,
            Collective::SharedAllreduce,
        ] {
            round_trip(Frame::Msg(Msg {
                op: 3,
                kind,
                root: 1,
                tag: Tag::Tree,
                payload: Packet::Value(Data::encode(&[7u64, 8], &pool)),
            }));
        }
    }

    fn msg(tag: Tag, payload: Packet) -> Frame {
        Frame::Msg(Msg {
            op: 70_000,
            kind: Collective::Allreduce,
            root: 5,
            tag,
            payload,
        })
    }

    /// An FCG message: `items` as its value, its SOS flag, its known
    /// g-nodes.
    fn fcg(items: &[u8], sos: bool, known: &[u32], pool: &SegmentPool) -> Packet {
        Packet::Fcg(Stamped {
            sent: (1 << 33) + 5,
            value: FcgPayload {
                value: Data::encode(items, pool),
                sos,
                known: Known::from_slice(known).expect("distinct, at most the capacity"),
            },
        })
    }

    #[test]
    fn every_frame_survives_the_round_trip_and_no_prefix_decodes() {
        let pool = SegmentPool::new();
        round_trip(Frame::Failed(12));
        round_trip(Frame::Left);
        round_trip(Frame::ViaMpi);
        // A large broadcast's value named in the root's region of shared
        // memory, in a tree message and a gossip one.
        let named = Data::elsewhere([3, u64::MAX, 1 << 20]);
        round_trip(msg(Tag::Tree, Packet::Value(named.clone())));
        round_trip(msg(
            Tag::Tree,
            Packet::Stamped(Stamped {
                sent: 9,
                value: named,
            }),
        ));
        round_trip(Frame::Beat {
            entered: 9,
            returned: 8,
            beat: u64::MAX,
            call: u64::MAX - 1,
        });
        for len in [0usize, 1, 55, 56, 1000] {
            let items: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let value = Data::encode(&items, &pool);
            round_trip(msg(Tag::Tree, Packet::Value(value.clone())));
            let mut info = FailureInfo::default();
            info.note_failed(3, true, FailureScheme::List);
            info.note_failed(9, false, FailureScheme::List);
            round_trip(msg(
                Tag::Upward,
                Packet::Contribution(Contribution {
                    value: value.clone(),
                    info,
                    decided: true,
                }),
            ));
            round_trip(msg(
                Tag::Gossip,
                Packet::Stamped(Stamped {
                    sent: 1 << 40,
                    value: value.clone(),
                }),
            ));
            // FTCO reduce: a partial with its sender's input and the nodes
            // it misses (none, one, several), the result.
            for missing in [vec![], vec![7], vec![3, 9, 1 << 20]] {
                let own = Data::encode(&items[..len / 2], &pool);
                round_trip(msg(
                    Tag::Upward,
                    Packet::Ftco(Box::new(FtcoData::Part {
                        value: value.clone(),
                        own,
                        missing,
                    })),
                ));
            }
            round_trip(msg(
                Tag::Tree,
                Packet::Ftco(Box::new(FtcoData::Result {
                    value,
                    missing: vec![3, 1],
                })),
            ));
        }
        round_trip(msg(Tag::KeepAlive, Packet::Ftco(Box::new(FtcoData::Empty))));
        // FCG: every count of known g-nodes, SOS or not, every value form.
        for (len, known) in [(0usize, 0usize), (1, 1), (56, 3), (1000, KNOWN_CAPACITY)] {
            let items: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let ids: Vec<u32> = (0..known as u32).map(|i| 3 * i + 1).collect();
            for sos in [false, true] {
                round_trip(msg(Tag::Rightward, fcg(&items, sos, &ids, &pool)));
            }
        }
        round_trip(msg(Tag::Abort, Packet::Value(Data::mismatch([8, 16]))));
        round_trip(msg(Tag::Ack, Packet::Optional(None)));
        round_trip(msg(Tag::Tree, Packet::Optional(Some(Data::EMPTY))));
    }

    /// A large value travels detached: the frame says how long it is and
    /// awaits it; with its bytes the frame is whole again; bytes of another
    /// length, or bytes for a frame that awaits none, are refused.
    #[test]
    fn a_detached_value_makes_the_frame_whole_only_with_its_own_bytes() {
        let pool = SegmentPool::new();
        let items: Vec<u8> = (0..3000).map(|i| (i % 251) as u8).collect();
        let value = Data::encode(&items, &pool);
        for payload in [
            Packet::Value(value.clone()),
            Packet::Contribution(Contribution {
                value: value.clone(),
                info: FailureInfo::default(),
                decided: false,
            }),
            Packet::Optional(Some(value.clone())),
            fcg(&items, true, &[4, 2], &pool),
            // The partial alone is detached; the sender's input travels in
            // the frame.
            Packet::Ftco(Box::new(FtcoData::Part {
                value: value.clone(),
                own: Data::encode(&items[..5], &pool),
                missing: vec![2, 4],
            })),
            Packet::Ftco(Box::new(FtcoData::Result {
                value: value.clone(),
                missing: Vec::new(),
            })),
        ] {
            let frame = msg(Tag::UpCorrection, payload);
            let mut header = Vec::new();
            let detached = encode_parts(&frame, &mut header, 1000).expect("framed");
            assert_eq!(detached.as_ref(), Some(&value), "the value is detached");
            assert!(header.len() < 100, "the header carries no value bytes");
            assert_eq!(
                decode_parts(&header, &pool, None),
                Some(Decoded::Awaits(3000))
            );
            assert_eq!(decode(&header, &pool), None, "not whole without its value");
            let received = Data::filled(3000, &pool, |b| b.copy_from_slice(&items));
            assert_eq!(
                decode_parts(&header, &pool, Some(received)),
                Some(Decoded::Frame(frame.clone()))
            );
            let short = Data::encode(&items[..2999], &pool);
            assert_eq!(decode_parts(&header, &pool, Some(short)), None);
            // Below the threshold the value travels in the frame.
            let mut whole = Vec::new();
            assert_eq!(encode_parts(&frame, &mut whole, 3001), Ok(None));
            assert_eq!(
                decode_parts(&whole, &pool, Some(value.clone())),
                None,
                "bytes for a frame that awaits none"
            );
            assert_eq!(decode(&whole, &pool), Some(frame));
        }
    }

    #[test]
    fn bad_kinds_and_tags_are_refused() {
        let pool = SegmentPool::new();
        let mut bytes = Vec::new();
        encode(&msg(Tag::Tree, Packet::Value(Data::EMPTY)), &mut bytes).unwrap();
        let mut bad_kind = bytes.clone();
        bad_kind[5] = 9;
        assert_eq!(decode(&bad_kind, &pool), None);
        let mut bad_tag = bytes.clone();
        bad_tag[6] = Tag::COUNT as u8;
        assert_eq!(decode(&bad_tag, &pool), None);
        assert_eq!(decode(&[7], &pool), None, "an unknown frame kind");
    }

    /// An FCG frame with an SOS flag other than 0 or 1, more known g-nodes
    /// than an array holds, or one named twice is refused; and no change of
    /// any one byte of a frame makes the decoder panic: it refuses, or reads
    /// a frame that encodes back to exactly those bytes.
    #[test]
    fn bad_fcg_frames_are_refused_and_no_byte_makes_the_decoder_panic() {
        let pool = SegmentPool::new();
        let frame = msg(Tag::Leftward, fcg(&[9; 70], false, &[5, 6], &pool));
        let mut bytes = Vec::new();
        encode(&frame, &mut bytes).unwrap();
        // Header (11 bytes), packet kind, stamp (8): then the SOS flag,
        // the count of known g-nodes and the ids.
        let (sos, count, first_id) = (20, 21, 22);
        assert_eq!((bytes[11], bytes[sos], bytes[count]), (4, 0, 2));
        let mut bad_sos = bytes.clone();
        bad_sos[sos] = 2;
        assert_eq!(decode(&bad_sos, &pool), None, "an SOS flag of 2");
        let mut repeated = bytes.clone();
        repeated[first_id + 4..first_id + 8].copy_from_slice(&5u32.to_le_bytes());
        assert_eq!(decode(&repeated, &pool), None, "a g-node named twice");
        // More ids than an array holds, each one distinct and whole.
        let too_many = KNOWN_CAPACITY as u32 + 1;
        let mut over = bytes[..count].to_vec();
        over.push(too_many as u8);
        for id in 0..too_many {
            over.extend_from_slice(&id.to_le_bytes());
        }
        over.extend_from_slice(&bytes[first_id + 8..]);
        assert_eq!(decode(&over, &pool), None, "{too_many} known g-nodes");
        every_byte_changed_refuses_or_reads_back(&bytes, &pool);
    }

    /// An FTCO partial naming more missing nodes than its bytes hold is
    /// refused, and no change of one byte makes the decoder panic.
    #[test]
    fn bad_ftco_frames_are_refused_and_no_byte_makes_the_decoder_panic() {
        let pool = SegmentPool::new();
        let frame = msg(
            Tag::Upward,
            Packet::Ftco(Box::new(FtcoData::Part {
                value: Data::encode(&[3u8; 9], &pool),
                own: Data::encode(&[1u8; 9], &pool),
                missing: vec![6, 8],
            })),
        );
        let mut bytes = Vec::new();
        encode(&frame, &mut bytes).unwrap();
        // The count of missing nodes is the 4 bytes before the last 8.
        let count = bytes.len() - 12;
        assert_eq!(bytes[count..count + 4], 2u32.to_le_bytes());
        let mut over = bytes.clone();
        over[count..count + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode(&over, &pool), None, "2^32 - 1 missing nodes");
        every_byte_changed_refuses_or_reads_back(&bytes, &pool);
    }

    /// Every change of any one byte of `bytes` is refused, or reads a frame
    /// that encodes back to exactly the changed bytes.
    fn every_byte_changed_refuses_or_reads_back(bytes: &[u8], pool: &SegmentPool) {
        for i in 0..bytes.len() {
            for b in 0..=255u8 {
                let mut changed = bytes.to_vec();
                changed[i] = b;
                if let Some(read) = decode(&changed, pool) {
                    let mut again = Vec::new();
                    encode(&read, &mut again).unwrap();
                    assert_eq!(again, changed, "byte {i} set to {b}");
                }
            }
        }
    }
}
