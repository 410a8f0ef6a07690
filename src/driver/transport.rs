//! What the driver needs of an engine: moving messages, a clock, waiting,
//! and the team's knowledge of failures and of its members' progress.
//!
//! The thread runtime's SPSC mailboxes are one transport
//! ([`crate::runtime`]), [`super::memory`] is a deterministic in-memory one
//! for tests, and the MPI engine will be another. A transport knows nothing
//! of protocol cores: it carries [`Msg`]s whose payload is its own wire
//! type, which [`Carries`] the payload of each core it serves.

use crate::protocol::{Header, Msg};
use crate::types::{Collective, OpId, Rank, Tick};

/// A wire payload type that can carry a core's payload `P`: the engine's one
/// message type wraps every core's (an enum of them, or `P` itself).
pub trait Carries<P>: Clone + Send + 'static {
    /// Wraps a core's payload for the wire.
    fn wrap(payload: P) -> Self;
    /// The core's payload, if this wire value carries one of type `P`
    /// (otherwise the value back: the message is of another kind of core,
    /// a mismatch).
    fn unwrap(self) -> Result<P, Self>;
    /// Whether this wire value carries a payload of type `P`.
    fn holds(&self) -> bool;
}

impl<P: Clone + Send + 'static> Carries<P> for P {
    #[inline]
    fn wrap(payload: P) -> Self {
        payload
    }
    #[inline]
    fn unwrap(self) -> Result<P, Self> {
        Ok(self)
    }
    #[inline]
    fn holds(&self) -> bool {
        true
    }
}

/// What the timeout detector knows of a peer (see [`Transport::peer`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerView {
    /// One more than the last operation the peer entered (0: none yet).
    pub entered: OpId,
    /// One more than the last operation the peer's call returned from.
    pub returned: OpId,
    /// The peer's heartbeat: a count it raises whenever it runs inside the
    /// library (when a call starts and returns, on every turn of its drive
    /// loop, before every wait, while it serves after its program). A rank
    /// that waits inside a call keeps it moving; only one whose count
    /// stands still for the failure timeout can be suspected.
    pub beat: u64,
    /// The peer's program has ended: it enters no further operation.
    pub left: bool,
    /// The peer's process has exited, as its engine knows for certain (the
    /// MPI engine, for a process of this node: SIGKILLed, crashed): unless
    /// it [`left`](PeerView::left) first, a failure, taken as soon as a
    /// rank waits on the peer.
    pub exited: bool,
    /// The collective of the last operation the peer began to drive (its
    /// number, kind and root, [`Transport::publish_call`]): a rank waiting
    /// on a peer that calls another collective at the same number finds
    /// the mismatch here when no message of either call can show it (a
    /// star allreduce's root waits for inputs while the others wait for a
    /// broadcast from it).
    pub call: Option<Header>,
}

impl PeerView {
    /// Never entered, never returned, no beat, has not left.
    pub const START: PeerView = PeerView {
        entered: 0,
        returned: 0,
        beat: 0,
        left: false,
        exited: false,
        call: None,
    };

    /// True while the peer is inside a call: it entered an operation and
    /// has not returned from it.
    pub fn in_call(&self) -> bool {
        self.entered > self.returned
    }
}

/// A call in progress as [`Transport::block_call`] sees it: a
/// [`Pump`](crate::helping::Pump) that other threads may run, and the
/// transport it runs over (for the waiting itself, only while the call is
/// not lent).
pub trait Progress<T>: crate::helping::Pump {
    /// The call's transport.
    fn transport(&mut self) -> &mut T;

    /// Whether other ranks' threads advancing the call can save its rank a
    /// scheduling round (false for a core that [waits
    /// once](crate::protocol::Protocol::waits_once)).
    fn worth_lending(&self) -> bool;
}

/// One rank's connection to its team, as the [driver](super::Driver) uses it.
///
/// Messages: [`send`](Transport::send) never blocks (a full channel hands
/// the message back, and the driver keeps it in its outbox),
/// [`try_recv`](Transport::try_recv) never blocks, per-sender FIFO. Time:
/// [`now`](Transport::now) is monotonic, in ticks (nanoseconds on threads).
/// Failures: a registry every rank reads, whose epoch grows with each new
/// failure; a rank marks itself failed only after its last send, so a
/// receiver that drains its channels before it reads the registry has every
/// message a failed rank sent before it failed (FIFO channels with a perfect
/// detector).
pub trait Transport {
    /// The wire payload: one type for every core this transport serves.
    /// Its default is what an abort carries when no message showed the
    /// mismatch (a peer's [`PeerView::call`] did).
    type Payload: Clone + Send + Default + 'static;

    /// This rank.
    fn rank(&self) -> Rank;

    /// This rank's process dies now, unannounced, as a SIGKILL would kill
    /// it (the emulation of [`crate::call::Fault::SigkillAfterSends`]). A
    /// transport whose ranks share a process cannot, and returns: the
    /// default, after which the driver hangs the rank.
    fn vanish(&self) {}

    /// The team size.
    fn procs(&self) -> u32;

    /// The clock, in ticks.
    fn now(&self) -> Tick;

    /// Sends one message, or hands it back if the channel to `to` is full.
    fn send(&mut self, to: Rank, msg: Msg<Self::Payload>) -> Result<(), Msg<Self::Payload>>;

    /// Takes one received message, if any.
    fn try_recv(&mut self) -> Option<(Rank, Msg<Self::Payload>)>;

    /// Waits briefly, without reading the clock, for a message or a wake-up;
    /// true if one may have come. A cheap first stage before the driver's
    /// bookkeeping for a longer wait.
    fn spin(&mut self) -> bool;

    /// Waits until a message may have come, a wake-up (failure news), or
    /// the clock reaches `until`, without spinning first.
    fn block(&mut self, until: Tick);

    /// Whether everything a waiting rank must act on ends its
    /// [`block`](Transport::block): a message and failure news (the thread
    /// runtime's registry wakes every rank). Then a long wait may sleep
    /// long, and the driver lets its waits grow
    /// ([`DriverConfig::max_sleep`](crate::driver::DriverConfig::max_sleep)).
    /// Default false: the driver looks every `max_sleep` (an MPI process
    /// finds a peer that exited only by looking).
    fn woken_by_every_event(&self) -> bool {
        false
    }

    /// Whether another rank's program is still running, in an engine where
    /// the end of the last one wakes every rank: a rank whose own program
    /// has ended then waits for quiet with long naps (it answers what
    /// arrives at once: a message wakes it). Default false: it looks every
    /// half millisecond.
    fn others_running(&self) -> bool {
        false
    }

    /// [`block`](Transport::block) for a call in progress: an engine whose
    /// ranks share cores may meanwhile [lend](crate::helping::Loan::lend)
    /// the call, so that other ranks' threads pump it, and pump theirs
    /// (see [`crate::helping`]). Returns like `block`; the driver looks at
    /// the call again either way. Default: `block`.
    fn block_call<P: Progress<Self>>(call: &mut P, until: Tick)
    where
        Self: Sized,
    {
        call.transport().block(until);
    }

    /// A short wait for something no message announces (room in a
    /// receiver's full channel), which [`wait`](Transport::wait) would
    /// sleep through to `until`: an engine whose ranks share cores gives
    /// the core away once instead (the receiver may be the rank it goes
    /// to), one whose rank has its core spins a microsecond or two on its
    /// own inbox, and the driver looks again. Default: `wait`.
    fn pause(&mut self, until: Tick) {
        self.wait(until);
    }

    /// [`spin`](Transport::spin), then [`block`](Transport::block).
    fn wait(&mut self, until: Tick) {
        if !self.spin() {
            self.block(until);
        }
    }

    /// The failure registry's epoch: it grows with every new failure.
    fn failure_epoch(&self) -> u64;

    /// Every rank known failed, in order.
    fn failed(&self) -> Vec<Rank>;

    /// True if `rank` is known failed.
    fn is_failed(&self, rank: Rank) -> bool;

    /// Marks `rank` failed for everyone (a timeout detector's verdict, or
    /// this rank's own death) and wakes them to learn it.
    fn declare_failed(&self, rank: Rank);

    /// What is known of `peer`'s progress, for the timeout detector;
    /// `None` if this transport cannot know it (the detector then never
    /// suspects that peer). The view must be consistent in the order the
    /// peer publishes: `entered` at least as new as `returned`, and both at
    /// least as new as `left` (a peer seen to have left after entering an
    /// operation must be seen to have entered it).
    fn peer(&self, peer: Rank) -> Option<PeerView>;

    /// Whether `peer`'s [`PeerView::entered`] counts every operation it
    /// entered (its engine reads it where the peer writes it before the
    /// operation's first send), or may lag behind (a heartbeat's, sent
    /// while it waited, many operations ago). Only an exact one proves
    /// that a failed root never entered an operation, so that no rank can
    /// have its value and a receiver gives up at once (`RootFailed`); with
    /// a lagging one it waits [`DriverConfig::root_wait`] for a correction
    /// first. Default: exact.
    ///
    /// [`DriverConfig::root_wait`]: super::DriverConfig::root_wait
    fn entries_exact(&self, _peer: Rank) -> bool {
        true
    }

    /// Publishes that this rank entered operation `op`.
    fn publish_entered(&self, op: OpId);

    /// Publishes the collective this rank's current operation runs, as
    /// its core names it ([`PeerView::call`]), when the driver begins to
    /// drive it: one store.
    fn publish_call(&self, header: Header);

    /// Publishes that this rank's call of operation `op` returned.
    fn publish_returned(&self, op: OpId);

    /// Raises this rank's heartbeat (see [`PeerView::beat`]). Called on
    /// every turn of the drive loop: it must cost no more than a store.
    fn beat(&mut self);

    /// Counts a message as in flight: called once per message the driver
    /// hands to [`send`](Transport::send) or keeps in its outbox, so that an
    /// engine can tell when a team is quiet. Default: no counting.
    fn count_sent(&self) {}

    /// Counts a received message as fully handled, with every send it
    /// caused (or a kept message as dropped). Default: no counting.
    fn count_handled(&self) {}

    /// This rank's program has ended. `hung`: the rank hung (emulated), and
    /// its transport was told so when it did. Default: nothing to tell.
    fn leave(&self, hung: bool) {
        let _ = hung;
    }

    /// Publishes the failure epoch whose failures this rank has handed to
    /// its lingering cores after its program ended (`u64::MAX`: it serves
    /// nothing). Default: nothing to tell.
    fn publish_served_epoch(&self, epoch: u64) {
        let _ = epoch;
    }

    /// True when nothing can happen in the team any more: every program has
    /// ended, every serving rank has handled every failure, and no message
    /// is in flight or being handled. Default: true (a transport that does
    /// not count has nothing to wait for).
    fn team_quiet(&self) -> bool {
        true
    }
}

/// [`PeerView::call`] in one word, for engines that publish it as an
/// atomic or on the wire: the operation number plus one in the low 32 bits
/// (0: no call yet), the collective in the next 8, the root plus one in the
/// top 24 (0: none; a root above 2^24 - 2 reads as none, so such a root's
/// mismatch is found by messages alone).
pub(crate) fn pack_call(call: Option<Header>) -> u64 {
    let Some(h) = call else { return 0 };
    let root = h
        .root
        .and_then(|r| r.checked_add(1))
        .filter(|&r| r < (1 << 24) - 1)
        .unwrap_or(0);
    u64::from(h.op.wrapping_add(1)) | (h.kind as u64) << 32 | u64::from(root) << 40
}

/// The call [`pack_call`] packed, or `None` for 0 or an unknown collective.
pub(crate) fn unpack_call(word: u64) -> Option<Header> {
    let op = (word as u32).checked_sub(1)?;
    let kind = Collective::from_u8((word >> 32) as u8)?;
    let root = ((word >> 40) as u32).checked_sub(1);
    Some(Header { op, kind, root })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_packs_into_one_word_and_back() {
        assert_eq!(unpack_call(pack_call(None)), None);
        for kind in Collective::ALL {
            assert_eq!(Collective::from_u8(kind as u8), Some(kind));
            for op in [0, 1, 77, OpId::MAX - 1] {
                for root in [None, Some(0), Some(5), Some((1 << 24) - 3)] {
                    let h = Header { op, kind, root };
                    assert_eq!(unpack_call(pack_call(Some(h))), Some(h), "{h:?}");
                }
            }
        }
        // A root too large for its 24 bits reads as none (messages still
        // find such a root's mismatch); the number and kind stay.
        let big = Header::broadcast(3, 1 << 24);
        let back = unpack_call(pack_call(Some(big))).unwrap();
        assert_eq!((back.op, back.kind, back.root), (3, big.kind, None));
        assert_eq!(Collective::from_u8(Collective::ALL.len() as u8), None);
    }
}
