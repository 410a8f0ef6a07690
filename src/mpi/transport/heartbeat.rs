//! The heartbeat between processes: what a waiting process sends every
//! quarter of the failure timeout (the last operation it entered and
//! returned from, a beat count, the call it drives), read by the others'
//! timeout detectors as the thread runtime's shared counters are
//! (docs/mpi.md, *Failures*), and the view of a peer made from it.

use super::MpiTransport;
use crate::driver::{pack_call, PeerView, Transport};
use crate::mpi::wire::Frame;
use crate::types::{Rank, Tick};

impl MpiTransport {
    /// What this rank knows of `peer` ([`Transport::peer`]): the last
    /// heartbeat it sent (or, before any, a peer that never entered the
    /// library: only absence after a whole operation timeout is held
    /// against it), whether its process exited, and, for a peer of this
    /// node, its last entry as its region tells it (a heartbeat may be
    /// operations old; read after `exited`: a dead one's last).
    pub(super) fn view_of(&self, peer: Rank) -> Option<PeerView> {
        let mut view = self.views.get(peer as usize).copied()?;
        view.exited = self.exited.has_exited(peer, self.now());
        if let Some(entered) = self.entries.as_ref().and_then(|e| e.entered(peer)) {
            view.entered = view.entered.max(entered);
        }
        Some(view)
    }

    /// Whether [`MpiTransport::view_of`]'s `entered` is exact
    /// ([`Transport::entries_exact`]): a peer of this node writes each
    /// entry in its region, one that left sent a last heartbeat (`leave`);
    /// any other's view may lag.
    pub(super) fn view_exact(&self, peer: Rank) -> bool {
        let told = self.entries.as_ref().and_then(|e| e.entered(peer));
        told.is_some() || self.left.get(peer as usize).copied().unwrap_or(false)
    }

    /// Sends this rank's heartbeat if the last one is a beat interval old
    /// (as a wait does): for progress made outside any wait.
    pub(crate) fn beat_if_due(&self) {
        let now = self.now();
        if now.saturating_sub(self.last_beat.get()) >= self.beat_every {
            self.send_beat(now);
        }
    }

    /// Sends this rank's heartbeat to every rank not known failed.
    pub(super) fn send_beat(&self, now: Tick) {
        let mut view = self.mine.get();
        view.beat += 1;
        self.mine.set(view);
        self.last_beat.set(now);
        self.beat_in_call.set(view.in_call());
        self.announce(&Frame::Beat {
            entered: view.entered,
            returned: view.returned,
            beat: view.beat,
            call: pack_call(view.call),
        });
    }
}
