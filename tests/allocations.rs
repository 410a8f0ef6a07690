//! Heap allocations of a steady loop of collectives, counted by a global
//! allocator (one test in this binary, so nothing else allocates while it
//! counts). docs/architecture.md, *Memory*, says what still allocates.

use std::sync::atomic::{AtomicU64, Ordering};

use corrected::runtime::{AllreduceAlgorithm, Comm, SystemOperation, Team};

#[path = "../examples/common/counting.rs"]
mod counting;
use counting::allocations;

/// Allocations of all ranks together in `calls` calls of `call`, after
/// `warm` calls; barriers line the ranks up around the counted loop.
fn counted(team: &Team, warm: u32, calls: u32, call: &(dyn Fn(&mut Comm<'_>) + Sync)) -> u64 {
    let count = AtomicU64::new(0);
    let report = team.run(|comm| {
        for _ in 0..warm {
            call(comm);
        }
        comm.barrier().unwrap();
        let before = allocations();
        for _ in 0..calls {
            call(comm);
        }
        let after = allocations();
        comm.barrier().unwrap();
        // Rank 0 leaves the counted loop last or with the others: the
        // largest difference any rank saw covers the whole loop's.
        count.fetch_max(after - before, Ordering::Relaxed);
    });
    assert_eq!(report.returned().count(), team.ranks() as usize);
    count.load(Ordering::Relaxed)
}

fn allreduce(comm: &mut Comm<'_>) {
    let mine = comm.rank() as f64;
    let mut sum = 0.0;
    comm.all_reduce_into(&mine, &mut sum, SystemOperation::sum())
        .unwrap();
}

fn broadcast(comm: &mut Comm<'_>) {
    let mut x = comm.rank() as f64;
    comm.broadcast_into(0, &mut x).unwrap();
}

#[test]
fn a_steady_loop_of_small_collectives_allocates_nothing_but_the_star_roots_list() {
    let calls = 1000;
    // The pair exchange: nothing at all.
    let pair = Team::builder().ranks(2).fault_budget(1).build().unwrap();
    assert_eq!(counted(&pair, 200, calls, &allreduce), 0);
    assert_eq!(counted(&pair, 200, calls, &broadcast), 0);

    // The star allreduce of 8 ranks: every call keeps each rank's core
    // after it returns (its heap block is the retired core's, reused);
    // what remains is the root's list of its 7 children's values.
    let star = Team::builder()
        .ranks(8)
        .fault_budget(1)
        .allreduce(AllreduceAlgorithm::Star)
        .build()
        .unwrap();
    let n = counted(&star, 200, calls, &allreduce);
    assert!(
        n <= u64::from(calls) + 64,
        "{n} allocations in {calls} allreduces of 8 ranks"
    );

    // A broadcast's core is kept too; the fence's lists of early messages
    // are made while the root first runs ahead, and kept.
    let four = Team::builder().ranks(4).fault_budget(1).build().unwrap();
    let n = counted(&four, 1000, calls, &broadcast);
    assert!(
        n <= u64::from(calls) / 4,
        "{n} allocations in {calls} broadcasts of 4 ranks"
    );

    // Cores of two sizes kept in turn (a barrier's and a broadcast's); the
    // barrier is a star allreduce where ranks outnumber cores (its root's
    // list), a pair exchange otherwise.
    let n = counted(&four, 1000, calls, &|comm| {
        comm.barrier().unwrap();
        broadcast(comm);
    });
    assert!(
        n <= u64::from(calls) + u64::from(calls) / 4,
        "{n} allocations in {calls} barriers and broadcasts of 4 ranks"
    );
}
