//! Heap allocations of a steady loop of collectives, counted by a global
//! allocator (one test in this binary, so nothing else allocates while it
//! counts). docs/architecture.md, *Memory*, says what still allocates.

use corrected::Collectives;
use std::sync::atomic::{AtomicU64, Ordering};

use corrected::runtime::{AllreduceAlgorithm, Comm, SystemOperation, Team};

#[path = "../examples/common/counting.rs"]
mod counting;
use counting::thread_allocations;

/// Allocations of all ranks together in `calls` calls of `call`, after
/// `warm` calls, each rank counting its own thread's in its own loop (a
/// rank that runs ahead is in its next barrier while another still counts).
fn counted(team: &Team, warm: u32, calls: u32, call: &Call) -> u64 {
    let count = AtomicU64::new(0);
    let report = team.run(|comm| {
        for _ in 0..warm {
            call(comm);
        }
        comm.barrier().unwrap();
        let before = thread_allocations();
        for _ in 0..calls {
            call(comm);
        }
        let after = thread_allocations();
        comm.barrier().unwrap();
        count.fetch_add(after - before, Ordering::Relaxed);
    });
    assert_eq!(report.returned().count(), team.ranks() as usize);
    count.load(Ordering::Relaxed)
}

/// One collective call of a rank.
type Call = dyn Fn(&mut Comm<'_>) + Sync;

fn allreduce(comm: &mut Comm<'_>) {
    let mine = comm.rank() as f64;
    let mut sum = 0.0;
    comm.all_reduce_into(&mine, &mut sum, SystemOperation::sum())
        .unwrap();
}

fn reduce(comm: &mut Comm<'_>) {
    let mine = comm.rank() as f64;
    let mut sum = 0.0;
    comm.reduce_into(0, &mine, &mut sum, SystemOperation::sum())
        .unwrap();
}

fn broadcast(comm: &mut Comm<'_>) {
    let mut x = comm.rank() as f64;
    comm.broadcast_into(0, &mut x).unwrap();
}

#[test]
fn a_steady_loop_of_collectives_allocates_nothing_per_call() {
    let calls = 1000;
    // The pair exchange: nothing at all.
    let pair = Team::builder().ranks(2).fault_budget(1).build().unwrap();
    assert_eq!(counted(&pair, 200, calls, &allreduce), 0);
    assert_eq!(counted(&pair, 200, calls, &broadcast), 0);

    // The star and the tree allreduce and the reduce of 8 ranks: every
    // call keeps each rank's core after it returns (in the heap block of a
    // core retired), and its reduce lists (the root's of its children's
    // values, a tree rank's of its group peers and children) are the last
    // call's. What may still allocate, a few times in a thousand calls and
    // never per call: a tree rank that got the result before its own
    // reduce part ended (its peer's message still on the way) hands no
    // lists on, and the fence's lists for early messages are made as the
    // distance of ranks running ahead (at most `REDUCES_AHEAD_MAX` reduces)
    // first grows. Before the lists were handed on, 1 (star) or 16 (tree)
    // per allreduce; before reduces were paced, more than 1 per reduce.
    for algorithm in [AllreduceAlgorithm::Star, AllreduceAlgorithm::Tree] {
        let eight = Team::builder()
            .ranks(8)
            .fault_budget(1)
            .allreduce(algorithm)
            .build()
            .unwrap();
        for (what, call) in [("allreduces", &allreduce as &Call), ("reduces", &reduce)] {
            let n = counted(&eight, 1000, calls, call);
            assert!(
                n <= 32,
                "{algorithm}: {n} allocations in {calls} {what} of 8 ranks"
            );
        }
    }

    // A broadcast's core is kept too; the fence's lists of early messages
    // are made while the root first runs ahead, and kept.
    let four = Team::builder().ranks(4).fault_budget(1).build().unwrap();
    let n = counted(&four, 1000, calls, &broadcast);
    assert!(
        n <= u64::from(calls) / 4,
        "{n} allocations in {calls} broadcasts of 4 ranks"
    );

    // Eight ranks on this machine's cores: the flat tree, no correction, so
    // the root runs ahead of its receivers by up to a lane's capacity of
    // operations, whose messages a receiver's fence holds: it was made with
    // room for that many operations' lists. Before, it made a list the
    // first time a new distance was reached: 125-1159 allocations in
    // 16 000 broadcasts; then none in most runs, 62-187 in about one of
    // 8, when helpers drained a descheduled rank's lanes past its fence's
    // room (docs/architecture.md, *Helping*, *How far*); since helpers stop
    // there, none in 30 runs.
    let eight = Team::builder().ranks(8).fault_budget(1).build().unwrap();
    let n = counted(&eight, 1000, 16 * calls, &broadcast);
    assert!(
        n <= 160,
        "{n} allocations in {} broadcasts of 8 ranks",
        16 * calls
    );

    // Cores of two sizes kept in turn (a barrier's and a broadcast's).
    let n = counted(&four, 1000, calls, &|comm| {
        comm.barrier().unwrap();
        broadcast(comm);
    });
    assert!(
        n <= u64::from(calls) / 4,
        "{n} allocations in {calls} barriers and broadcasts of 4 ranks"
    );

    // Large values (1 MiB): the segments, and the objects each large
    // operation is made of (its ranks' loans, lazy sums, chunk boards and
    // lent outputs), are all reused once free (`value::recycle`): no
    // allocation per call. What remains is a pool growing when more
    // operations' objects are held at once than ever before (ranks running
    // ahead of a reduce's root, cores lingering, a reduce's loans copied
    // when their ranks leave before the root reduced), which flow control
    // bounds: mostly 0-4 in 200 calls of all ranks, once 26 (8 reduces of
    // a descheduled root's ranks running ahead). Before they were recycled:
    // 9 (P = 2) and 8 (P = 8) per rank and allreduce, 3600 and 12 800 in
    // 200 calls, and 1 per broadcast.
    let large: [(&str, &Call); 3] = [
        ("allreduces", &large_allreduce),
        ("reduces", &large_reduce),
        ("broadcasts", &large_broadcast),
    ];
    for ranks in [2, 8] {
        let team = Team::builder()
            .ranks(ranks)
            .fault_budget(1)
            .build()
            .unwrap();
        for (what, call) in large {
            let n = counted(&team, 500, 200, call);
            assert!(
                n <= 64,
                "{n} allocations in 200 {what} of 1 MiB, {ranks} ranks"
            );
        }
    }
}

/// Elements of a 1 MiB vector of f64.
const LARGE: usize = 1 << 17;

thread_local! {
    /// Each rank's input and output of 1 MiB (made once, outside the
    /// counted loops).
    static BUFFERS: std::cell::RefCell<(Vec<f64>, Vec<f64>)> =
        std::cell::RefCell::new((vec![1.0; LARGE], vec![0.0; LARGE]));
}

fn large_allreduce(comm: &mut Comm<'_>) {
    BUFFERS.with_borrow_mut(|(input, out)| {
        comm.all_reduce_into(&input[..], &mut out[..], SystemOperation::sum())
            .unwrap();
        assert_eq!(out[LARGE - 1], comm.size() as f64);
    });
}

fn large_reduce(comm: &mut Comm<'_>) {
    BUFFERS.with_borrow_mut(|(input, out)| {
        comm.reduce_into(0, &input[..], &mut out[..], SystemOperation::sum())
            .unwrap();
    });
}

fn large_broadcast(comm: &mut Comm<'_>) {
    BUFFERS.with_borrow_mut(|(_, out)| {
        comm.broadcast_into(0, &mut out[..]).unwrap();
    });
}
