//! The outcomes of a node team's process-level steps, kept in memory its
//! process's threads share until every live thread is past them, so that
//! threads whose proxy died while spreading one still get it
//! ([`super::NodeComm`]'s doc says how the proxy fails over).

use std::collections::VecDeque;

use crate::error::Error;
use crate::types::Rank;

/// Outcomes of steps, oldest first, and buffers for reuse.
#[derive(Default)]
pub(super) struct History {
    kept: VecDeque<Kept>,
    spare: Vec<Vec<u8>>,
}

/// The outcome of node operation `seq`'s step, the proxy that ran it, and
/// its value's bytes followed by its tail's (what the step adds to the
/// value: a reduction's contributors).
pub(super) struct Kept {
    seq: u64,
    pub(super) by: Rank,
    outcome: Result<(), Error>,
    bytes: Vec<u8>,
}

impl Kept {
    /// The outcome; if it succeeded, its value into `buf` (an empty `buf`:
    /// a thread that hears only the outcome, as those of other processes
    /// than a reduce's root) and its tail into `tail` (of the length the
    /// step kept, or empty).
    pub(super) fn read<T: bytemuck::Pod>(
        &self,
        buf: &mut [T],
        tail: &mut [u8],
    ) -> Result<(), Error> {
        self.outcome
            .clone()
            .map_err(|_| super::proxy_failed_its_step())?;
        let out: &mut [u8] = bytemuck::cast_slice_mut(buf);
        let other_length =
            || Error::UpperLevel("the process level's value has another length".into());
        let value_len = self
            .bytes
            .len()
            .checked_sub(tail.len())
            .ok_or_else(other_length)?;
        let (value, kept_tail) = self.bytes.split_at(value_len);
        tail.copy_from_slice(kept_tail);
        if out.is_empty() {
            return Ok(());
        }
        if out.len() != value.len() {
            return Err(other_length());
        }
        out.copy_from_slice(value);
        Ok(())
    }
}

impl History {
    /// Keeps node operation `seq`'s outcome (run by proxy `by`), `value`
    /// and `tail`, forgetting those of operations up to `past` (every live
    /// thread has finished them).
    pub(super) fn keep(
        &mut self,
        seq: u64,
        by: Rank,
        past: u64,
        outcome: Result<(), Error>,
        (value, tail): (&[u8], &[u8]),
    ) {
        while self.kept.front().is_some_and(|k| k.seq <= past) {
            if let Some(old) = self.kept.pop_front() {
                self.spare.push(old.bytes);
            }
        }
        let mut kept = self.spare.pop().unwrap_or_default();
        kept.clear();
        kept.extend_from_slice(value);
        kept.extend_from_slice(tail);
        self.kept.push_back(Kept {
            seq,
            by,
            outcome,
            bytes: kept,
        });
    }

    /// The kept outcome of node operation `seq`, if its step ran.
    pub(super) fn find(&self, seq: u64) -> Option<&Kept> {
        self.kept.iter().rev().find(|k| k.seq == seq)
    }
}
