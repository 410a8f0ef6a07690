//! Protocol cores: every algorithm written once as a sans-IO state machine,
//! one instance per rank per operation, driven by an engine (the LogP
//! simulator in [`crate::sim`], later the thread runtime and MPI).
//!
//! A core never reads a clock, spawns a thread, touches a queue or draws a
//! random number it was not handed: time comes in as `now`, messages come in
//! through [`Protocol::handle`] and go out one at a time through
//! [`Protocol::poll_transmit`]. One send per poll matters: checked correction
//! decides its next send from what it has received so far, and LogP charges
//! the overhead o per send.

mod message;

pub mod allreduce;
pub mod bcast;
pub mod pair;
pub mod reduce;
/// A scripted-event harness: drive one core by hand in tests, no engine.
pub mod script;

pub use message::{Msg, Tag};

use crate::types::{Rank, Tick};

/// Something that happens to a core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<M> {
    /// The operation begins on this rank (delivered once, first).
    Start,
    /// A message from `from` has been received (its receive overhead is paid).
    Message {
        /// The sender.
        from: Rank,
        /// The message.
        msg: M,
    },
    /// A failure detector reports that `Rank` has failed. Algorithms that do
    /// not need a detector (broadcast with correction) ignore it.
    PeerFailed(Rank),
    /// The deadline last returned by [`Protocol::poll_deadline`] has passed.
    Timer,
}

/// One message to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit<M> {
    /// The destination.
    pub to: Rank,
    /// The message.
    pub msg: M,
}

/// The contract between a protocol core and the engine driving it.
///
/// The engine calls [`handle`](Protocol::handle) for every event, then
/// [`poll_transmit`](Protocol::poll_transmit) whenever the rank may start a
/// send (at most one at a time), arms a timer at
/// [`poll_deadline`](Protocol::poll_deadline), and collects
/// [`take_output`](Protocol::take_output) after every call.
pub trait Protocol {
    /// What a message carries besides its header (e.g. the broadcast value).
    type Payload: Copy + Send + 'static;
    /// What the caller gets: the delivered value, the reduced value, ...
    type Output;

    /// Feeds one event at time `now`.
    fn handle(&mut self, now: Tick, event: Event<Msg<Self::Payload>>);

    /// The next message to send at `now`, if any. Called only when the
    /// rank's send port is free; the engine charges the send's cost.
    fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<Self::Payload>>>;

    /// The earliest time at which the core wants a [`Event::Timer`], if any.
    /// Always later than the `now` of the last call, unless
    /// [`poll_transmit`](Protocol::poll_transmit) has something to send.
    fn poll_deadline(&self) -> Option<Tick>;

    /// The output, exactly once, as soon as it is known.
    fn take_output(&mut self) -> Option<Self::Output>;

    /// True when the core has nothing to send and no deadline: it stays
    /// silent until another event arrives. (Whether an event can still come
    /// is the engine's knowledge, not the core's.)
    fn is_quiescent(&self) -> bool;

    /// A peer this core is blocked on: it cannot finish before that peer's
    /// message or its [`Event::PeerFailed`]. An engine's timeout detector
    /// suspects this rank when nothing comes for too long. `None` (the
    /// default) for algorithms that never wait on a particular peer.
    fn awaiting(&self) -> Option<Rank> {
        None
    }
}
