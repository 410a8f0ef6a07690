//! The timeout detector: finds a rank that is alive but silent, so that the
//! ranks waiting on it can go on, and never takes a rank that is itself
//! waiting for one that is silent.
//!
//! The evidence is the peer's heartbeat ([`PeerView::beat`]): the driver
//! raises it on every turn of its loop and before every wait, so a rank
//! blocked inside a call (behind a dead or hung rank, or in a grace period)
//! keeps it moving however long it waits. A wait-for chain is therefore
//! never evidence of death: only the rank at its end, the one that does not
//! run, stands still. Silence is measured on the observer's clock, from the
//! first time it saw the peer's current beat, and remembered across calls:
//! a hung rank awaited briefly by each of many operations (a broadcast's
//! grace) is found after one failure timeout in all, not never.
//!
//! Whom to suspect, for a core that awaits peer `p` (not yet failed) whose
//! beat has stood still for the failure timeout:
//! * `p` is inside a call: it hangs inside the library (or its thread is
//!   frozen);
//! * `p` has returned from this operation or a later one: it does not serve
//!   the core it kept for this operation.
//!
//! A `p` that has not reached this operation and is outside the library is
//! late, not hung: its program computes. Only when this rank's whole
//! operation timeout has passed, with `p` still outside and silent for the
//! failure timeout, is `p` declared failed as absent
//! ([`Suspicion::absent`]): it costs one operation timeout, once, and the
//! operation goes on without it. A rank whose own operation timeout passes
//! while the peer it awaits waits inside the same operation too (a chain
//! that ends at such an absent rank) waits one more operation timeout,
//! once: the rank at the chain's end declares the absent one when its own
//! timeout passes, and announces it, so every rank of the chain gets the
//! operation's outcome rather than its own `Timeout` first.
//!
//! Suspicion is the fallback: a peer whose engine knows its process exited
//! ([`PeerView::exited`]: the MPI engine, for a process of its node) is
//! declared failed by the driver as soon as it is awaited, before any of
//! these rules applies.

use crate::driver::transport::{PeerView, Transport};
use crate::types::{OpId, Rank, Tick};

/// The detector's memory, kept across calls: the peer last awaited, its
/// beat then, and since when (this rank's clock) that beat stands.
#[derive(Debug, Default)]
pub(crate) struct Suspicion {
    peer: Option<Rank>,
    beat: u64,
    since: Tick,
    /// When the driver last read an awaited peer's view.
    looked: Option<Tick>,
}

/// The longest a waiting rank goes without reading the view of the peer it
/// awaits: the view is four loads of a line the peer writes on every beat,
/// a cache miss per wait when the peer runs on another core, while the
/// detector needs a look per failure timeout at most (a sixteenth of it is
/// taken if shorter).
const LOOK_EVERY: Tick = 50_000;

impl Suspicion {
    /// Whether to read the awaited peer's view on this wait (at most one
    /// read per [`LOOK_EVERY`], or per a sixteenth of `timeout` if that is
    /// shorter); counts this one if so.
    pub(crate) fn look_due(&mut self, now: Tick, timeout: Tick) -> bool {
        let every = LOOK_EVERY.min(timeout / 16);
        match self.looked {
            Some(at) if now.saturating_sub(at) < every => false,
            _ => {
                self.looked = Some(now);
                true
            }
        }
    }

    /// Looks at the awaited peer (a transport rank not known failed, with
    /// its view) and returns it if it is to be declared failed (see the
    /// module's rules).
    pub(crate) fn watch(
        &mut self,
        awaited: Option<(Rank, PeerView)>,
        now: Tick,
        op: OpId,
        timeout: Tick,
    ) -> Option<Rank> {
        let (p, view) = awaited?;
        if self.peer != Some(p) || self.beat != view.beat {
            *self = Suspicion {
                peer: Some(p),
                beat: view.beat,
                since: now,
                looked: self.looked,
            };
            return None;
        }
        let silent = now.saturating_sub(self.since) >= timeout;
        (silent && (view.in_call() || view.entered > op)).then_some(p)
    }

    /// The peer to declare failed once this rank's operation timeout has
    /// passed: the awaited peer, if it never reached operation `op`, is
    /// outside the library, and has been silent for `timeout` (the failure
    /// timeout).
    pub(crate) fn absent<T: Transport>(
        &self,
        now: Tick,
        transport: &T,
        op: OpId,
        timeout: Tick,
    ) -> Option<Rank> {
        let p = self.peer.filter(|&p| !transport.is_failed(p))?;
        let view = transport.peer(p)?;
        let silent = view.beat == self.beat && now.saturating_sub(self.since) >= timeout;
        (silent && !view.in_call() && view.entered <= op).then_some(p)
    }
}

#[cfg(test)]
mod look_tests {
    use super::*;

    #[test]
    fn the_awaited_peer_is_looked_at_once_per_interval() {
        let mut s = Suspicion::default();
        let timeout = 1_000_000_000;
        assert!(s.look_due(10, timeout), "the first wait looks");
        assert!(!s.look_due(10 + LOOK_EVERY - 1, timeout));
        assert!(s.look_due(10 + LOOK_EVERY, timeout));
        // A short failure timeout shortens the interval to a sixteenth.
        let mut s = Suspicion::default();
        assert!(s.look_due(0, 160));
        assert!(!s.look_due(9, 160));
        assert!(s.look_due(10, 160));
    }
}
