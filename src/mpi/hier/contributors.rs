//! A node team's contributors: which threads' inputs a reduction's result
//! holds, from what each level knows.
//!
//! Each proxy knows its process's missing threads (the thread level's
//! [`Contributors`], from its local reduce), and the process level knows
//! the missing processes (the process level's, from its reduction of the
//! partials). Before that reduction the proxies join their processes'
//! lists in an allreduce (each process's [`report`], bitwise or), so that
//! every proxy that gets the result also knows the missing threads of each
//! process whose partial it holds, and every thread of a process whose
//! partial it lacks is missing. A process whose partial is in the result
//! was alive through the first allreduce too, so its report is in that
//! one's result (the up-correction holds every live rank's input): the
//! joined reports cover every process the result holds.
//!
//! The process level names its missing processes while at most
//! [`LIST_CAPACITY`](crate::protocol::reduce::LIST_CAPACITY) are missing;
//! beyond, the processes absent from the first allreduce are the missing
//! ones, unless one more failed between the two (then [`global`] says the
//! contributors cannot be counted).

use std::ops::Range;

use super::Level;
use crate::buffer::Element;
use crate::collectives::Collectives;
use crate::contributors::Contributors;
use crate::error::Error;
use crate::op::{Operation, SystemOperation};
use crate::types::Rank;

/// A process's slot in a report: its partial is in the first allreduce.
const PRESENT: u64 = 1 << 63;
/// Its slot's missing threads are all in the report's bitmap.
const LISTED: u64 = 1 << 62;

/// The number of `u64` words of a report: a bitmap of the global ranks,
/// then one slot per process.
pub(super) fn report_words(size: u32, procs: u32) -> usize {
    bitmap_words(size) + procs as usize
}

fn bitmap_words(size: u32) -> usize {
    (size as usize).div_ceil(64)
}

fn set(bits: &mut [u64], r: Rank) {
    bits[r as usize / 64] |= 1 << (r % 64);
}

fn is_set(bits: &[u64], r: Rank) -> bool {
    bits[r as usize / 64] & (1 << (r % 64)) != 0
}

/// Process `proc_rank`'s report of its threads (global ranks `threads`)
/// missing from its local result (`local`, in its local numbering): in a
/// team of `size` threads over `procs` processes. Each process sets only
/// its own bits and slot, so the reports join by bitwise or.
pub(super) fn report(
    local: &Contributors,
    threads: Range<Rank>,
    (proc_rank, procs): (u32, u32),
    size: u32,
) -> Vec<u64> {
    let mut words = vec![0u64; report_words(size, procs)];
    let mut slot = PRESENT | u64::from(local.size() - local.len());
    if let Some(missing) = local.missing() {
        slot |= LISTED;
        for &r in missing {
            set(&mut words, threads.start + r);
        }
    }
    words[bitmap_words(size) + proc_rank as usize] = slot;
    words
}

/// The result's contributors among all `size` threads: `joined` (every
/// process's [`report`], joined), `processes` (the process level's
/// contributors), and the global ranks of each process's threads
/// (`threads_of`).
pub(super) fn global(
    joined: &[u64],
    processes: &Contributors,
    size: u32,
    threads_of: impl Fn(u32) -> Range<Rank>,
) -> Result<Contributors, Error> {
    let procs = processes.size();
    let (bitmap, slots) = joined.split_at(bitmap_words(size));
    // The processes whose partials the result lacks.
    let absent: Vec<Rank> = match processes.missing() {
        Some(missing) => missing.to_vec(),
        None => {
            let absent: Vec<Rank> = (0..procs)
                .filter(|&p| slots[p as usize] & PRESENT == 0)
                .collect();
            if absent.len() as u32 != procs - processes.len() {
                return Err(Error::UpperLevel(
                    "the contributors cannot be counted: more processes missing than the \
                     failure list holds, one of them failed during the call"
                        .into(),
                ));
            }
            absent
        }
    };
    let mut missing = bitmap.to_vec();
    let (mut count, mut listed) = (0u32, true);
    for p in 0..procs {
        if absent.binary_search(&p).is_ok() {
            let threads = threads_of(p);
            count += threads.len() as u32;
            threads.for_each(|r| set(&mut missing, r));
        } else {
            let slot = slots[p as usize];
            count += slot as u32;
            listed &= slot & LISTED != 0;
        }
    }
    if !listed {
        return Ok(Contributors::counted(size, count));
    }
    let missing: Vec<Rank> = (0..size).filter(|&r| is_set(&missing, r)).collect();
    Ok(Contributors::all_but(size, &missing))
}

/// The process level's step of a reduction that reports its contributors,
/// on a proxy: the reports joined (an allreduce, or a reduce to `root`),
/// then the partials reduced (the same), and at every process that gets the
/// result the contributors among all threads encoded into `tail` (of
/// [`tail_len`], or empty where they are not wanted). `offsets`: the global
/// rank of each process's first thread, the team's size last. Both steps
/// run whatever the first's outcome, so that every process keeps the
/// process level's count of operations.
pub(super) fn process_step<T: Element, O: Operation<T>>(
    level: Level<'_>,
    root: Option<u32>,
    (local, partial): (&Contributors, &[T]),
    (result, tail): (&mut [T], &mut [u8]),
    op: O,
    (offsets, proc_rank): (&[Rank], u32),
) -> Result<(), Error> {
    let procs = offsets.len() as u32 - 1;
    let size = offsets[procs as usize];
    let threads_of = |p: u32| offsets[p as usize]..offsets[p as usize + 1];
    let mine = report(local, threads_of(proc_rank), (proc_rank, procs), size);
    let mut joined = vec![0u64; mine.len()];
    let or = SystemOperation::bitwise_or();
    let (first, second) = match level {
        Level::Ours(up) => match root {
            None => (
                up.all_reduce_into(&mine[..], &mut joined[..], or),
                up.all_reduce_into_contributors(partial, result, op)
                    .map(Some),
            ),
            Some(root) => (
                up.reduce_into(root, &mine[..], &mut joined[..], or),
                up.reduce_into_contributors(root, partial, result, op),
            ),
        },
        Level::Native(native) => (
            native.reduce(root, &mine, &mut joined, &or),
            native
                .reduce(root, partial, result, &op)
                .map(|()| Some(Contributors::everyone(procs))),
        ),
    };
    first?;
    match second? {
        Some(processes) if !tail.is_empty() => {
            encode(&global(&joined, &processes, size, threads_of)?, tail);
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The bytes that carry `c` to a process's threads: a fixed length for a
/// team of `size` threads (the count, whether the set is known, and the
/// missing threads' bitmap).
pub(super) fn tail_len(size: u32) -> usize {
    8 * (2 + bitmap_words(size))
}

/// `c` as [`tail_len`] bytes.
pub(super) fn encode(c: &Contributors, tail: &mut [u8]) {
    let mut words = vec![0u64; tail.len() / 8];
    words[0] = u64::from(c.size() - c.len());
    if let Some(missing) = c.missing() {
        words[1] = 1;
        missing.iter().for_each(|&r| set(&mut words[2..], r));
    }
    for (bytes, w) in tail.chunks_exact_mut(8).zip(words) {
        bytes.copy_from_slice(&w.to_le_bytes());
    }
}

/// The contributors [`encode`] wrote for a team of `size` threads.
pub(super) fn decode(tail: &[u8], size: u32) -> Contributors {
    let words: Vec<u64> = tail
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
        .collect();
    if words[1] == 0 {
        return Contributors::counted(size, words[0] as u32);
    }
    let missing: Vec<Rank> = (0..size).filter(|&r| is_set(&words[2..], r)).collect();
    Contributors::all_but(size, &missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three processes of 4 threads: process 0 misses its thread 1,
    /// process 1 its threads 2 and 3 (listed, or only counted), process 2
    /// is absent from the result (and sent no report).
    #[test]
    fn missing_threads_of_present_processes_and_every_thread_of_absent_ones() {
        let (size, procs) = (12, 3);
        let or = |a: Vec<u64>, b: Vec<u64>| -> Vec<u64> {
            a.iter().zip(&b).map(|(x, y)| x | y).collect()
        };
        let first = || report(&Contributors::all_but(4, &[1]), 0..4, (0, procs), size);
        let second = |c: Contributors| report(&c, 4..8, (1, procs), size);
        let listed = or(first(), second(Contributors::all_but(4, &[2, 3])));
        let counted = or(first(), second(Contributors::counted(4, 2)));
        let threads_of = |p: u32| 4 * p..4 * p + 4;
        let upper = Contributors::all_but(procs, &[2]);
        let c = global(&listed, &upper, size, threads_of).unwrap();
        assert_eq!(c.missing(), Some(&[1, 6, 7, 8, 9, 10, 11][..]));
        let c = global(&counted, &upper, size, threads_of).unwrap();
        assert_eq!((c.len(), c.missing()), (12 - 1 - 2 - 4, None));
        // The process level's list overflowed: process 2, absent from the
        // reports, is the one missing; unless one more is missing.
        let unnamed = Contributors::counted(procs, 1);
        let c = global(&listed, &unnamed, size, threads_of).unwrap();
        assert_eq!(c.missing(), Some(&[1, 6, 7, 8, 9, 10, 11][..]));
        let two = Contributors::counted(procs, 2);
        assert!(global(&listed, &two, size, threads_of).is_err());
    }

    #[test]
    fn the_tail_carries_the_set_or_the_count() {
        let size = 70;
        let mut tail = vec![0u8; tail_len(size)];
        for c in [
            Contributors::all_but(size, &[0, 63, 64, 69]),
            Contributors::counted(size, 9),
            Contributors::everyone(size),
        ] {
            encode(&c, &mut tail);
            assert_eq!(decode(&tail, size), c);
        }
    }
}
