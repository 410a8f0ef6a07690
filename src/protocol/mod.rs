//! Protocol cores: every algorithm written once as a sans-IO state machine,
//! one instance per rank per operation, driven by an engine (the LogP
//! simulator in [`crate::sim`], and the thread and MPI engines through
//! the driver).
//!
//! A core never reads a clock, spawns a thread, touches a queue or draws a
//! random number it was not handed: time comes in as `now`, messages come in
//! through [`Protocol::handle`] and go out one at a time through
//! [`Protocol::poll_transmit`]. One send per poll matters: checked correction
//! decides its next send from what it has received so far, and LogP charges
//! the overhead o per send.
//!
//! [`Protocol`] is the whole contract: everything an engine needs to fence a
//! core's messages, decide when its caller may return, keep it after the
//! call, and suspect a silent peer is asked of the core, so an engine never
//! names a concrete core. Shared building blocks: the ring [`correction`]
//! any dissemination phase can end with, a [`timer`] table for cores with
//! several deadlines, and the [`random`] stream an engine hands a core that
//! draws.

mod message;

pub mod ack_tree;
pub mod allreduce;
pub mod bcast;
pub mod correction;
pub mod ftco;
pub mod gossip;
pub mod op_clock;
pub mod pair;
pub mod random;
pub mod reduce;
pub mod scatter;
pub mod script;
pub mod timer;

pub use message::{Header, Msg, Tag};

use crate::types::{Collective, Rank, Tick};

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
    /// not need a detector (broadcast with correction) may ignore it.
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

/// What cut a core off from its output ([`Protocol::stranded`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stranded {
    /// The nearest failed rank on this rank's path from the root (the
    /// engine's numbering).
    pub cut_by: Rank,
    /// No rank that could still bring the output lives: the engine ends
    /// the call at once, not after a failure timeout.
    pub certain: bool,
}

/// When the call that drives a core may return to its caller (asked only
/// once the core has given its output).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leave {
    /// Not yet: the core has sends to make, or owes sends that others
    /// depend on.
    Not,
    /// Now: whatever is left answers messages yet to come, and a lingering
    /// core serves it (see [`Protocol::is_finished`]).
    Now,
    /// After a grace period of the engine's choosing: the core has its
    /// output, but expects a message that would make it owe sends to others
    /// (a rank colored by correction still expects its tree message and must
    /// forward it). Waiting a little lets the sends go out from within the
    /// call; a sender that hangs cannot hold the caller for longer.
    AfterGrace,
}

impl Leave {
    /// [`Leave::Now`] once `finished`, [`Leave::Not`] before: for a core
    /// whose call lasts until its part is done (gossip, BIG, the ack tree).
    pub fn once(finished: bool) -> Self {
        if finished {
            Leave::Now
        } else {
            Leave::Not
        }
    }
}

/// The contract between a protocol core and the engine driving it.
///
/// **Calls.** The engine calls [`handle`](Protocol::handle) for every event
/// ([`Event::Start`] first, once), then
/// [`poll_transmit`](Protocol::poll_transmit) whenever the rank may start a
/// send (one send per call: an engine charges each its cost), arms a timer
/// at [`poll_deadline`](Protocol::poll_deadline) and hands
/// [`Event::Timer`] once it has passed, and collects
/// [`take_output`](Protocol::take_output) after every call.
///
/// **Time.** What an engine guarantees about `now`: it never decreases from
/// one call to the next, on any method; in the simulator it is virtual time
/// (LogP ticks) and a rank's consecutive sends are at least o apart; on
/// threads it is nanoseconds since the team started and, for a core whose
/// [`uses_time`](Protocol::uses_time) is true, it is read again before every
/// [`poll_transmit`](Protocol::poll_transmit), so a core that sends "until
/// time T" stops. What a core must guarantee: at a fixed `now` it returns
/// finitely many sends from consecutive `poll_transmit` calls (an engine
/// that drains them at one instant terminates), and
/// [`poll_deadline`](Protocol::poll_deadline) is later than the `now` of the
/// last call unless `poll_transmit` has something to send.
///
/// **Fencing.** [`header`](Protocol::header) names the operation; every
/// message the core sends carries it, and an engine hands the core only
/// messages whose header it [`accepts`](Header::accepts) (another
/// collective at the same operation number is a mismatch, an error for the
/// caller, not a hang).
///
/// **Returning and lingering.** The caller returns once the core has its
/// output and [`may_return`](Protocol::may_return) says so. The engine then
/// keeps the core ("lingering") and keeps feeding it messages of its
/// operation and failure news, and lets it send, until
/// [`is_finished`](Protocol::is_finished), a later operation
/// [retires](Protocol::retired_by) it, or the engine's bound on kept cores
/// pushes it out.
pub trait Protocol {
    /// What a message carries besides its header (e.g. the broadcast value).
    /// `Clone`, not `Copy`: on threads a large value is a reference-counted
    /// segment (`value::data::Data`); a core clones it for each
    /// message it sends, which is a copy for small payloads.
    type Payload: Clone + Send + 'static;
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

    /// The operation, collective and root this core serves: the header of
    /// every message it sends, and what the messages it hears must match.
    fn header(&self) -> Header;

    /// Whether the caller may return now that the core has given its
    /// output. The default: once the core is quiescent.
    fn may_return(&self) -> Leave {
        if self.is_quiescent() {
            Leave::Now
        } else {
            Leave::Not
        }
    }

    /// True when the core will never send again, whatever arrives (messages,
    /// failure news, time): an engine may drop it.
    fn is_finished(&self) -> bool;

    /// True when a lingering core may be dropped because this rank has just
    /// completed the later operation `completed`, even though it is not
    /// [finished](Protocol::is_finished). An allreduce core is kept in case
    /// its root fails and a new round starts; once a later allreduce has
    /// completed, every live rank has entered that one, and no round of an
    /// older operation can start (reduce paper, Section 5.1). Default: never.
    fn retired_by(&self, completed: &Header) -> bool {
        let _ = completed;
        false
    }

    /// True when a call of this core waits for one message at most before
    /// it may return (a broadcast: the tree message or a correction
    /// message that colors it). An engine may use it to decide whether to
    /// let other ranks' threads advance the call while its rank waits
    /// (`helping`): the rank of such a call has to run once its
    /// message has come anyway, to return, and can take the message then.
    /// Default: false (a reduce or an allreduce waits for messages in
    /// sequence: group exchange, subtree values, the broadcast of the
    /// result).
    fn waits_once(&self) -> bool {
        false
    }

    /// True when the core acts on the `now` it is handed (synchronized or
    /// paced correction, deadlines, a gossip phase); if false an engine may
    /// hand it a stale `now` and save the clock reads. Default: false.
    fn uses_time(&self) -> bool {
        false
    }

    /// True while the core's output can only come from its root (the
    /// [`Header::root`]), directly or relayed: a broadcast before it has the
    /// value. An engine that knows the root failed before it entered the
    /// operation ends the call with [`Error::RootFailed`](crate::Error) at
    /// once, and one that learns it failed later gives the value a failure
    /// timeout to arrive from the ranks the root reached. Default: false
    /// (a reduce's non-root delivers its own part whether the root lives or
    /// not).
    fn output_from_root(&self) -> bool {
        false
    }

    /// True when the output can no longer come: it could only come from the
    /// root's own message (no rank relays it, and no correction runs), and
    /// the core was told the root failed, after which an engine drops what
    /// the root sent. An engine ends the call with
    /// [`Error::RootFailed`](crate::Error) at once instead of giving the
    /// value a failure timeout to arrive ([`Protocol::output_from_root`]).
    /// Default: false.
    fn root_lost(&self) -> bool {
        false
    }

    /// For a core whose output may never come because a rank it depends on
    /// failed and its algorithm promises no correction for that (a
    /// corrected tree with no or opportunistic correction, below a failed
    /// ancestor): the failure that cut it off. An engine ends the call with
    /// [`Error::NotReached`](crate::Error) at once if
    /// [`Stranded::certain`], else once the value has not come for a
    /// failure timeout. Default: `None`.
    fn stranded(&self) -> Option<Stranded> {
        None
    }

    /// A peer this core is blocked on: it cannot finish before that peer's
    /// message or its [`Event::PeerFailed`]; or one its own timeouts
    /// suspected and routed around (FTCO), which the engine should find
    /// failed if it is, so that later operations route around it from the
    /// start. An engine's detector watches this rank's heartbeat and
    /// declares it failed when it stays silent for the failure timeout (a
    /// live rank's heartbeat goes on: it is never declared). `None` (the
    /// default) for algorithms that never wait on a particular peer.
    fn awaiting(&self) -> Option<Rank> {
        None
    }

    /// The answer an engine sends on this rank's behalf to a message
    /// tagged `tag` of a later operation of collective `kind` whose payload
    /// is of this core's type (the same algorithm), if the
    /// rank is still inside this call the returned delay after the message
    /// came: the delay, and the answer's tag and payload. FTCO's cores
    /// answer a DATA or KEEPALIVE with an ACK, which says the node lives
    /// (FTCO, Section 3; Algorithm 4, lines 12-17: a node that waits itself
    /// answers so), half a timeout unit after it came: a rank waiting out a
    /// timeout in operation k is not suspected by the ranks already in
    /// k + 1, whose messages it takes when it gets there; a rank that gets
    /// there sooner answers them itself, and nothing extra is sent. An ACK
    /// before the rank forwards anything is what the paper's node that
    /// acked and then failed sends, which its protocol survives
    /// (KEEPALIVEs go past it). `None` (the default): the message waits,
    /// unanswered, in the engine's fence.
    fn answer_ahead(&self, kind: Collective, tag: Tag) -> Option<(Tick, Tag, Self::Payload)> {
        let _ = (kind, tag);
        None
    }
}

/// The [`Protocol`] methods a wrapper around a core (a field `core`)
/// passes on unchanged: the output, the header, when its call may return
/// and when it is finished, retirement, waiting once, the root's part (and
/// its loss) and the awaited peer. Used inside the wrapper's `impl Protocol` (the gossip
/// slot clock, Corrected Gossip Section III-A; FTCO's operation clock,
/// FTCO Section 4), which writes the rest.
macro_rules! forward_to_core {
    () => {
        fn take_output(&mut self) -> Option<Self::Output> {
            self.core.take_output()
        }

        fn header(&self) -> $crate::protocol::Header {
            self.core.header()
        }

        fn may_return(&self) -> $crate::protocol::Leave {
            self.core.may_return()
        }

        fn is_finished(&self) -> bool {
            self.core.is_finished()
        }

        fn retired_by(&self, completed: &$crate::protocol::Header) -> bool {
            self.core.retired_by(completed)
        }

        fn waits_once(&self) -> bool {
            self.core.waits_once()
        }

        fn output_from_root(&self) -> bool {
            self.core.output_from_root()
        }

        fn root_lost(&self) -> bool {
            self.core.root_lost()
        }

        fn awaiting(&self) -> Option<$crate::types::Rank> {
            self.core.awaiting()
        }

        fn stranded(&self) -> Option<$crate::protocol::Stranded> {
            self.core.stranded()
        }
    };
}
pub(crate) use forward_to_core;

/// A boxed core is a core (an engine that keeps cores of several kinds
/// behind one type: the driver's pending operations).
impl<P: Protocol + ?Sized> Protocol for Box<P> {
    type Payload = P::Payload;
    type Output = P::Output;

    fn handle(&mut self, now: Tick, event: Event<Msg<Self::Payload>>) {
        (**self).handle(now, event)
    }

    fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<Self::Payload>>> {
        (**self).poll_transmit(now)
    }

    fn poll_deadline(&self) -> Option<Tick> {
        (**self).poll_deadline()
    }

    fn take_output(&mut self) -> Option<Self::Output> {
        (**self).take_output()
    }

    fn is_quiescent(&self) -> bool {
        (**self).is_quiescent()
    }

    fn header(&self) -> Header {
        (**self).header()
    }

    fn may_return(&self) -> Leave {
        (**self).may_return()
    }

    fn is_finished(&self) -> bool {
        (**self).is_finished()
    }

    fn retired_by(&self, completed: &Header) -> bool {
        (**self).retired_by(completed)
    }

    fn waits_once(&self) -> bool {
        (**self).waits_once()
    }

    fn uses_time(&self) -> bool {
        (**self).uses_time()
    }

    fn output_from_root(&self) -> bool {
        (**self).output_from_root()
    }

    fn root_lost(&self) -> bool {
        (**self).root_lost()
    }

    fn stranded(&self) -> Option<Stranded> {
        (**self).stranded()
    }

    fn awaiting(&self) -> Option<Rank> {
        (**self).awaiting()
    }

    fn answer_ahead(&self, kind: Collective, tag: Tag) -> Option<(Tick, Tag, Self::Payload)> {
        (**self).answer_ahead(kind, tag)
    }
}

/// The arguments every rooted broadcast core checks (the corrected tree,
/// gossip's phase, BIG, the ack tree, FTCO): `root` and `me` ranks of the
/// `procs` nodes, and the root's `value` given. Returns this node's
/// [`virtual_rank`] and the value it starts with: the root's, `None`
/// elsewhere.
pub(crate) fn rooted_value<P>(
    procs: u32,
    root: Rank,
    me: Rank,
    value: Option<P>,
) -> Result<(Rank, Option<P>), crate::error::Error> {
    let virtual_me = virtual_rank(procs, root, me)?;
    match (me == root, value) {
        (true, None) => Err(crate::error::Error::NoRootValue(root)),
        (true, value) => Ok((virtual_me, value)),
        (false, _) => Ok((virtual_me, None)),
    }
}

/// Node `me` relabelled so that `root` is 0 ((me - root) mod procs,
/// [`ring::left`](crate::topology::ring::left)): the
/// virtual rank by which every rooted core (broadcasts, both reduces)
/// places itself in its tree. Errors, as every rooted core does, unless
/// `root` and `me` are ranks of the `procs` nodes.
pub(crate) fn virtual_rank(procs: u32, root: Rank, me: Rank) -> Result<Rank, crate::error::Error> {
    check_ranks(procs, [root, me])?;
    Ok(crate::topology::ring::left(me, root, procs))
}

/// Rank `rank` relabelled so that `root` is 0, as [`virtual_rank`], or
/// `None` for a rank outside the `procs` nodes: the sender of a message, or
/// a rank reported failed, that a rooted core ignores unless it is one of
/// the team's.
pub(crate) fn virtual_peer(procs: u32, root: Rank, rank: Rank) -> Option<Rank> {
    (rank < procs).then(|| crate::topology::ring::left(rank, root, procs))
}

/// An event as a rooted core sees it, ranks relabelled so that the root
/// is 0 ([`virtual_peer`]); ranks outside the team dropped.
pub(crate) enum Rooted<M> {
    /// A message from a node.
    Message(Rank, M),
    /// A node reported failed ([`Event::PeerFailed`]).
    Failed(Rank),
    /// Anything else (the start, a timer, a rank outside the team).
    Other,
}

/// `event` relabelled for a core of `procs` nodes rooted at `root`.
pub(crate) fn rooted_event<M>(procs: u32, root: Rank, event: Event<M>) -> Rooted<M> {
    match event {
        Event::Message { from, msg } => match virtual_peer(procs, root, from) {
            Some(from) => Rooted::Message(from, msg),
            None => Rooted::Other,
        },
        Event::PeerFailed(r) => virtual_peer(procs, root, r).map_or(Rooted::Other, Rooted::Failed),
        _ => Rooted::Other,
    }
}

/// Every rank of `ranks` is one of the `procs` nodes (a root and the node
/// itself, as every rooted core checks them).
pub(crate) fn check_ranks(
    procs: u32,
    ranks: impl IntoIterator<Item = Rank>,
) -> Result<(), crate::error::Error> {
    for rank in ranks {
        if rank >= procs {
            return Err(crate::error::Error::RankOutOfRange { rank, procs });
        }
    }
    Ok(())
}
