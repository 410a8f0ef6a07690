//! A timer table for cores with several deadlines (FTCO's DATA, KEEPALIVE
//! and ACK timeouts, a gossip phase's end and its correction's), in the
//! shape of quinn-proto's `TimerTable`: one optional deadline per timer
//! kind, the earliest of them is what [`Protocol::poll_deadline`] reports,
//! and on [`Event::Timer`] the core asks which have expired.
//!
//! [`Protocol::poll_deadline`]: crate::protocol::Protocol::poll_deadline
//! [`Event::Timer`]: crate::protocol::Event::Timer

use crate::types::Tick;

/// `N` timers, named by a key that converts to their index (an enum of the
/// core's timer kinds with `as usize`, or plain indices). Costs `N` ticks of
/// state and no allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerTable<const N: usize> {
    at: [Tick; N],
}

const UNSET: Tick = Tick::MAX;

impl<const N: usize> Default for TimerTable<N> {
    fn default() -> Self {
        TimerTable { at: [UNSET; N] }
    }
}

impl<const N: usize> TimerTable<N> {
    /// A table with every timer stopped.
    pub fn new() -> Self {
        Self::default()
    }

    /// Arms timer `i` at `at` (replacing its previous deadline).
    /// `Tick::MAX` is "never", the same as [`TimerTable::stop`].
    pub fn set(&mut self, i: usize, at: Tick) {
        self.at[i] = at;
    }

    /// Stops timer `i`.
    pub fn stop(&mut self, i: usize) {
        self.at[i] = UNSET;
    }

    /// Timer `i`'s deadline, if armed.
    pub fn get(&self, i: usize) -> Option<Tick> {
        (self.at[i] != UNSET).then_some(self.at[i])
    }

    /// The earliest armed deadline: what the core's `poll_deadline` returns.
    pub fn next(&self) -> Option<Tick> {
        self.at.iter().copied().filter(|&t| t != UNSET).min()
    }

    /// Stops and returns the expired timer (deadline `<= now`) with the
    /// earliest deadline (the lowest index among equal ones), if any. Call
    /// it in a loop on [`Event::Timer`](crate::protocol::Event::Timer) to
    /// handle every timer that has expired, in deadline order.
    pub fn take_expired(&mut self, now: Tick) -> Option<usize> {
        let (i, _) = self
            .at
            .iter()
            .enumerate()
            .filter(|&(_, &t)| t != UNSET && t <= now)
            .min_by_key(|&(i, &t)| (t, i))?;
        self.at[i] = UNSET;
        Some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expired_timers_come_out_in_deadline_order_once() {
        const DATA: usize = 0;
        const KEEPALIVE: usize = 1;
        const ACK: usize = 2;
        let mut t = TimerTable::<3>::new();
        assert_eq!(t.next(), None);
        t.set(ACK, 30);
        t.set(DATA, 50);
        t.set(KEEPALIVE, 30);
        assert_eq!(t.next(), Some(30));
        assert_eq!(t.take_expired(29), None);
        assert_eq!(
            t.take_expired(40),
            Some(KEEPALIVE),
            "ties go to the lower index"
        );
        assert_eq!(t.take_expired(40), Some(ACK));
        assert_eq!(t.take_expired(40), None, "DATA is not due yet");
        assert_eq!(t.next(), Some(50));
        t.stop(DATA);
        assert_eq!((t.next(), t.get(DATA)), (None, None));
        t.set(DATA, 7);
        assert_eq!(t.get(DATA), Some(7));
    }
}
