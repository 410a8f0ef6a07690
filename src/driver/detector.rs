//! The timeout detector: finds a rank that is alive but silent inside an
//! operation, so that the ranks waiting on it can go on.

use crate::driver::transport::Transport;
use crate::types::{OpId, Rank, Tick};

/// The detector's memory: which peer the core waits on, since when.
#[derive(Debug, Default)]
pub(crate) struct Suspicion {
    peer: Option<Rank>,
    since: Option<Tick>,
}

impl Suspicion {
    /// The peer to declare failed: the core has waited on it for `timeout`
    /// while it was inside operation `op` (or later) and not itself waiting
    /// on another rank. A peer that has not reached `op` yet is late, not
    /// hung; one waiting on another is blocked, and the rank it waits on is
    /// the suspect (its own waiters find it).
    pub(crate) fn watch<T: Transport>(
        &mut self,
        awaiting: Option<Rank>,
        now: Tick,
        transport: &T,
        op: OpId,
        timeout: Tick,
    ) -> Option<Rank> {
        let peer = awaiting.filter(|&p| {
            let view = transport.peer(p);
            !transport.is_failed(p) && view.entered > op && view.awaiting.is_none()
        });
        if peer != self.peer {
            self.peer = peer;
            self.since = peer.map(|_| now);
            return None;
        }
        let since = self.since?;
        (now.saturating_sub(since) >= timeout).then(|| {
            self.since = Some(now);
            peer.expect("since is set only with a peer")
        })
    }
}
