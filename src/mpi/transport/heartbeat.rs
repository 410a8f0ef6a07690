//! The heartbeat between processes: what a waiting process sends every
//! quarter of the failure timeout (the last operation it entered and
//! returned from, a beat count, the call it drives), read by the others'
//! timeout detectors as the thread runtime's shared counters are
//! (docs/mpi.md, *Failures*).

use super::MpiTransport;
use crate::driver::{pack_call, Transport};
use crate::mpi::wire::Frame;
use crate::types::Tick;

impl MpiTransport {
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
