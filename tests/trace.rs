//! The timeline of `corrected::trace`: with the feature `trace`, every call
//! of every rank is recorded, entries and exits paired, waits inside calls;
//! without it, nothing is recorded.
//!
//! `cargo test --features trace --test trace`

use corrected::runtime::{SystemOperation, Team};
use corrected::trace;
#[cfg(all(feature = "trace", not(loom)))]
use corrected::trace::{Call, Event};
use corrected::Collectives;

const CALLS: u64 = 40;

/// Runs `CALLS` rounds of an allreduce, a broadcast and a barrier on
/// `ranks` ranks, with [helping](corrected::helping) on or off, and returns
/// the records taken afterwards.
fn traced_run(ranks: u32, helping: bool) -> Vec<trace::Record> {
    let team = Team::builder()
        .ranks(ranks)
        .fault_budget(1)
        .helping(helping)
        .build()
        .unwrap();
    // Records of threads of earlier tests in this binary are not this run's.
    let _ = trace::take();
    let report = team.run(|comm| -> Result<(), corrected::Error> {
        for i in 0..CALLS {
            let mut sum = 0.0;
            comm.all_reduce_into(&(i as f64), &mut sum, SystemOperation::sum())?;
            let mut x = if comm.rank() == 0 { i as f64 } else { 0.0 };
            comm.broadcast_into(0, &mut x)?;
            assert_eq!(x, i as f64);
            comm.barrier()?;
        }
        Ok(())
    });
    for (rank, got) in report.returned() {
        got.as_ref().unwrap_or_else(|e| panic!("rank {rank}: {e}"));
    }
    trace::take()
}

#[cfg(all(feature = "trace", not(loom)))]
#[test]
fn every_call_of_every_rank_is_entered_and_left_once_with_its_waits_inside() {
    for helping in [true, false] {
        check_timeline(4, &traced_run(4, helping));
    }
}

/// Every rank's calls entered and left once each, in order, operation
/// numbers growing, every other event inside a call.
#[cfg(all(feature = "trace", not(loom)))]
fn check_timeline(ranks: u32, records: &[trace::Record]) {
    assert!(
        records.windows(2).all(|w| w[0].at <= w[1].at),
        "records come oldest first"
    );
    for rank in 0..ranks {
        let mine: Vec<Event> = records
            .iter()
            .filter(|r| r.rank == rank)
            .map(|r| r.event)
            .collect();
        let mut open: Option<Call> = None;
        let mut last_op = None;
        let mut entered = [0u64; 3];
        for event in &mine {
            match *event {
                Event::Enter(call, op) => {
                    assert_eq!(open, None, "rank {rank}: {call:?} entered inside a call");
                    if let Some(last) = last_op {
                        assert!(op > last, "rank {rank}: operation {op} after {last}");
                    }
                    last_op = Some(op);
                    open = Some(call);
                    entered[call as usize] += 1;
                }
                Event::Exit(call) => {
                    assert_eq!(open, Some(call), "rank {rank}: left a call it was not in");
                    open = None;
                }
                // Waiting, yielding, spinning and helping happen inside a
                // call only.
                other => assert!(open.is_some(), "rank {rank}: {other:?} outside any call"),
            }
        }
        assert_eq!(open, None, "rank {rank}: a call never left");
        assert_eq!(
            entered, [CALLS; 3],
            "rank {rank}: allreduces, broadcasts, barriers entered"
        );
    }
}

#[cfg(not(all(feature = "trace", not(loom))))]
#[test]
fn without_the_feature_nothing_is_recorded() {
    const { assert!(!trace::ENABLED) };
    assert!(traced_run(4, true).is_empty());
}
