//! A timeline of what each rank's thread does around its waits, for finding
//! where an operation's time goes where ranks share cores.
//!
//! Counters say how many context switches an operation costs; they do not
//! say which rank ran when, or what it waited for. With the cargo feature
//! `trace`, each rank's thread records [`Event`]s with a timestamp into a
//! buffer of its own (no sharing, no atomics: the recording moves no cache
//! line between cores), and [`take`] gathers the records of every thread
//! that has ended (each flushes its buffer when it exits), oldest first.
//! Without the feature (and always under loom) [`record`] is an empty
//! `#[inline(always)]` function and the library's code is the same as
//! without it. `examples/timing.rs` prints the timeline (`TRACE=N`);
//! docs/benchmarks.md reads one.
//!
//! Each record costs a clock read (about 25 ns), so a traced run is slower
//! than an untraced one: read a timeline for its order and its proportions,
//! never for a speed.
//!
//! Not the `tracing` crate: the phases read here last a few hundred
//! nanoseconds, and a `tracing` event goes through its dispatcher and a
//! subscriber's shared state, which would take a good part of that and move
//! cache lines between the cores whose traffic is being measured; a push
//! onto a thread's own vector does neither.

use crate::types::{OpId, Rank};

/// What a rank's thread did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// Entered a collective call (an allreduce, a broadcast or a barrier)
    /// that will be operation `OpId` if it begins.
    Enter(Call, OpId),
    /// Left the call (returned, or failed in it).
    Exit(Call),
    /// Began to wait inside a call (its messages are not all there).
    Wait,
    /// Gave the core up (`sched_yield`) while waiting.
    Yield,
    /// Had the core again after a yield.
    Resumed,
    /// Began to poll instead of yielding: every core mate is idle in a lent
    /// call (`helping`).
    SpinStart,
    /// Stopped polling.
    SpinEnd,
    /// Advanced the lent call of core mate `Rank` (the pump moved it).
    Helped(Rank),
    /// Stopped waiting: its own call moved (`true`: a helper moved it).
    Woke(bool),
    /// Waits in the mailbox (spinning briefly, yielding, then parking):
    /// nothing moved for a while, or at once where helping is off.
    Park,
    /// Back from that wait.
    Unpark,
}

/// Which collective an [`Event::Enter`] or [`Event::Exit`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Call {
    /// An allreduce (any size).
    Allreduce,
    /// A broadcast.
    Broadcast,
    /// A barrier.
    Barrier,
}

/// One event of one rank: nanoseconds since the first record of the
/// process, the rank, what it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Nanoseconds since the process's first record.
    pub at: u64,
    /// The rank whose thread recorded it.
    pub rank: Rank,
    /// What it did.
    pub event: Event,
}

#[cfg(all(feature = "trace", not(loom)))]
mod on {
    use super::{Event, Record};
    use crate::types::Rank;
    use std::cell::RefCell;
    use std::sync::{Mutex, OnceLock};
    use std::time::Instant;

    /// Records a thread holds at most (the latest are dropped beyond: a
    /// timeline is read over the first seconds of a run).
    const PER_THREAD: usize = 1 << 20;

    pub(super) static ENDED: Mutex<Vec<Record>> = Mutex::new(Vec::new());
    static ORIGIN: OnceLock<Instant> = OnceLock::new();

    /// A thread's records, moved to [`ENDED`] when the thread exits.
    struct Buffer(Vec<Record>);

    impl Drop for Buffer {
        fn drop(&mut self) {
            if let Ok(mut ended) = ENDED.lock() {
                ended.append(&mut self.0);
            }
        }
    }

    thread_local! {
        static BUFFER: RefCell<Buffer> = const { RefCell::new(Buffer(Vec::new())) };
    }

    pub(super) fn record(rank: Rank, event: Event) {
        let at = ORIGIN.get_or_init(Instant::now).elapsed().as_nanos() as u64;
        // A thread being torn down has no buffer any more: nothing to record.
        let _ = BUFFER.try_with(|b| {
            let records = &mut b.borrow_mut().0;
            if records.len() < PER_THREAD {
                records.push(Record { at, rank, event });
            }
        });
    }
}

/// Records `event` for `rank` on the calling thread. Compiled to nothing
/// without the feature `trace` and under loom.
#[cfg(all(feature = "trace", not(loom)))]
#[inline]
pub fn record(rank: Rank, event: Event) {
    on::record(rank, event);
}

/// Records `event` for `rank` on the calling thread. Compiled to nothing
/// without the feature `trace` and under loom.
#[cfg(not(all(feature = "trace", not(loom))))]
#[inline(always)]
pub fn record(_rank: Rank, _event: Event) {}

/// The records of every thread that has ended since the last `take`,
/// oldest first (threads still running keep theirs). Empty without the
/// feature `trace`.
pub fn take() -> Vec<Record> {
    #[cfg(all(feature = "trace", not(loom)))]
    {
        let mut all = match on::ENDED.lock() {
            Ok(mut ended) => std::mem::take(&mut *ended),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        all.sort_by_key(|r| r.at);
        all
    }
    #[cfg(not(all(feature = "trace", not(loom))))]
    Vec::new()
}

/// A call's [`Event::Enter`] when made and its [`Event::Exit`] when
/// dropped, on every way out of the call. Nothing without the feature.
#[must_use = "the exit is recorded when the span is dropped"]
pub struct Span {
    #[cfg(all(feature = "trace", not(loom)))]
    rank: Rank,
    #[cfg(all(feature = "trace", not(loom)))]
    call: Call,
}

impl Span {
    /// Records that `rank` enters `call`, which will be operation `op`.
    #[inline(always)]
    pub fn enter(rank: Rank, call: Call, op: OpId) -> Span {
        record(rank, Event::Enter(call, op));
        #[cfg(all(feature = "trace", not(loom)))]
        return Span { rank, call };
        #[cfg(not(all(feature = "trace", not(loom))))]
        Span {}
    }
}

#[cfg(all(feature = "trace", not(loom)))]
impl Drop for Span {
    fn drop(&mut self) {
        record(self.rank, Event::Exit(self.call));
    }
}

/// True when the library was built with the feature `trace`.
pub const ENABLED: bool = cfg!(all(feature = "trace", not(loom)));
