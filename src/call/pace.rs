//! Flow control of reduces: how far a rank that is not a reduce's root may
//! run ahead of it ([`REDUCES_AHEAD_BYTES`]).

use crate::call::{Caller, Control, Engine};
use crate::driver::{Driver, Transport};
use crate::types::{OpId, Rank};

/// How far a rank that is not a reduce's root may run ahead of it: before a
/// reduce, it waits (serving) while the root has not returned from the
/// operation [`reduces_ahead`] before this one. Such a rank returns once it
/// sent, and the root takes what arrives into its fence while it works, so
/// no lane fills up to hold the sender back: a loop of reduces would
/// otherwise run ahead of a slower root without bound. Values that do not
/// travel inline were held in segments (for 320 KB values and 8 ranks on 2
/// cores: 360 segments in 200 calls, against 19), and the segment pool grew
/// and slowed with them; 8-byte values piled up as early messages at the
/// root (127 MB after 200 000 reduces of 8 ranks, against 3 MB paced).
/// The values held ahead come to about this many bytes per rank, at least
/// two calls' and at most [`REDUCES_AHEAD_MAX`] calls' worth.
pub const REDUCES_AHEAD_BYTES: usize = 1 << 20;

/// The most reduces a rank may run ahead of their root (see
/// [`REDUCES_AHEAD_BYTES`]).
pub const REDUCES_AHEAD_MAX: OpId = 16;

/// How many operations ahead of the root a reduce of `bytes` may start
/// (see [`REDUCES_AHEAD_BYTES`]): 2 from 512 KiB, up to
/// [`REDUCES_AHEAD_MAX`] for small values. Where ranks share cores a wait
/// costs a scheduling round, so small values go further ahead
/// (docs/benchmarks.md).
pub fn reduces_ahead(bytes: usize) -> OpId {
    let calls = REDUCES_AHEAD_BYTES / bytes.max(1);
    (calls.min(REDUCES_AHEAD_MAX as usize) as OpId).max(2)
}

/// What a rank remembers of the roots it paces its reduces to.
#[derive(Default)]
pub(crate) struct Pace {
    /// A root (transport numbering) this rank stopped pacing its reduces
    /// to, and the `returned` count it stood still at.
    stalled_root: Option<(Rank, OpId)>,
    /// A root (transport numbering) and the `returned` count this rank last
    /// read of it.
    root_returned: Option<(Rank, OpId)>,
}

impl<'t, E: Engine<'t>> Caller<'t, E> {
    /// Flow control of reduces ([`REDUCES_AHEAD_BYTES`]): waits, serving,
    /// while `root` is alive, has not returned from the operation `ahead`
    /// operations before the next one, and shows signs of life. A root
    /// whose heartbeat stands still for a failure timeout (hung, or busy
    /// outside the library) is not declared anything: this rank stops
    /// pacing to it until it returns from another operation, so a hung
    /// root costs one failure timeout, not one per call. For an engine
    /// whose transport publishes its ranks' progress as it happens (the
    /// thread runtime's); over a transport that learns it from heartbeats,
    /// pacing would wait on stale news.
    pub(crate) fn pace_reduce(&mut self, root: Rank, ahead: OpId) {
        if root == self.rank() {
            return;
        }
        let next = self.driver.next_op();
        let t = self.driver.members().to_transport(root);
        // A root's `returned` only grows: a value read before is a bound
        // that spares reading its line (which it writes every call) again
        // until this rank is `ahead` operations past it.
        if let Some((r, returned)) = self.pace.root_returned {
            if r == t && returned.saturating_add(ahead) > next {
                return;
            }
        }
        let behind = |d: &Driver<'t, E::Transport>| {
            let transport = d.transport();
            let view = transport.peer(t).filter(|_| !transport.is_failed(t))?;
            (view.returned.saturating_add(ahead) <= next).then_some(view)
        };
        let transport = self.driver.transport();
        let Some(view) = transport.peer(t) else {
            return;
        };
        self.pace.root_returned = Some((t, view.returned));
        if transport.is_failed(t) || view.returned.saturating_add(ahead) > next {
            return;
        }
        if self.pace.stalled_root == Some((t, view.returned)) {
            return;
        }
        let timeout = self.driver.config().failure_timeout;
        let mut heard = (view.beat, self.driver.transport().now());
        let mut stalled = None;
        self.driver.hold_back(|d| {
            let Some(view) = behind(d) else {
                return false;
            };
            let now = d.transport().now();
            if view.beat != heard.0 {
                heard = (view.beat, now);
            } else if now.saturating_sub(heard.1) >= timeout {
                stalled = Some((t, view.returned));
                return false;
            }
            true
        });
        self.pace.stalled_root = stalled;
    }
}
