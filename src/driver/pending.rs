//! Operations started without waiting (the non-blocking collectives,
//! `crate::call::immediate`): [`Driver::launch`] enters a core, sends what
//! it can and leaves it *pending*; from then on it is served as the
//! lingering cores are (its messages, its sends, failure news) and also
//! gets its timers and has its output taken whenever the rank is inside the
//! library, by any call on the communicator or [`Driver::progress`].
//! [`Driver::wait_pending`] drives one to its end with the loop of a
//! blocking call (its waits, the detector, a root's failure, the
//! timeout), resumed where the launch left it.
//!
//! Several may be pending at once, and be waited in any order: a message
//! of a pending operation reaches its core whichever operation the rank is
//! in (`take` hands the core being driven its own operation's messages,
//! `route_other` finds the others here). Once its output is taken, a core
//! that still has work is kept as a lingering one.

use std::any::Any;

use super::failures::tell_failures;
use super::{Carries, Driver, Members, Transport};
use crate::error::Error;
use crate::protocol::{Event, Header, Leave, Msg, Protocol, Stranded, Tag, Transmit};
use crate::types::{Collective, OpId, Rank, Tick};

/// A pending core's output, its type erased: the call layer that launched
/// the core knows what it is.
pub type Outcome = Box<dyn Any + Send>;

/// A pending core over wire type `W`, its output erased.
pub(crate) type Flying<'t, W> = Box<dyn Protocol<Payload = W, Output = Outcome> + Send + 't>;

/// A core `C` seen through the wire type `W` (messages unwrapped on the way
/// in, wrapped on the way out) with its output boxed, and its clock kept
/// from running backwards: a pending core is handed time by the launch
/// (the clock), by the serving of pending and lingering cores (a stale 0
/// for a core that does not use time) and by its wait's loop (0, then the
/// clock after each wait), and the contract promises a core a `now` that
/// never decreases (the up-correction reduce checks it).
struct Erased<C, W> {
    core: C,
    /// The latest `now` handed to the core.
    floor: Tick,
    wire: std::marker::PhantomData<fn() -> W>,
}

impl<C, W> Erased<C, W> {
    /// `now`, or the latest handed before if that is later.
    fn clock(&mut self, now: Tick) -> Tick {
        self.floor = self.floor.max(now);
        self.floor
    }
}

impl<C, W> Protocol for Erased<C, W>
where
    C: Protocol,
    C::Output: Send + 'static,
    W: Carries<C::Payload>,
{
    type Payload = W;
    type Output = Outcome;

    fn handle(&mut self, now: Tick, event: Event<Msg<W>>) {
        let event = match event {
            Event::Message { from, msg } => match msg.try_map(Carries::unwrap) {
                Ok(msg) => Event::Message { from, msg },
                // Not this core's kind: the header check before lets
                // only a corrupt wire value through; dropped.
                Err(_) => return,
            },
            Event::Start => Event::Start,
            Event::PeerFailed(r) => Event::PeerFailed(r),
            Event::Timer => Event::Timer,
        };
        let now = self.clock(now);
        self.core.handle(now, event);
    }

    fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<W>>> {
        let now = self.clock(now);
        self.core.poll_transmit(now).map(|tx| Transmit {
            to: tx.to,
            msg: tx.msg.map(W::wrap),
        })
    }

    fn poll_deadline(&self) -> Option<Tick> {
        self.core.poll_deadline()
    }

    fn take_output(&mut self) -> Option<Outcome> {
        self.core.take_output().map(|o| Box::new(o) as Outcome)
    }

    fn is_quiescent(&self) -> bool {
        self.core.is_quiescent()
    }

    fn header(&self) -> Header {
        self.core.header()
    }

    fn may_return(&self) -> Leave {
        self.core.may_return()
    }

    fn is_finished(&self) -> bool {
        self.core.is_finished()
    }

    fn retired_by(&self, completed: &Header) -> bool {
        self.core.retired_by(completed)
    }

    fn waits_once(&self) -> bool {
        self.core.waits_once()
    }

    fn uses_time(&self) -> bool {
        self.core.uses_time()
    }

    fn output_from_root(&self) -> bool {
        self.core.output_from_root()
    }

    fn root_lost(&self) -> bool {
        self.core.root_lost()
    }

    fn stranded(&self) -> Option<Stranded> {
        self.core.stranded()
    }

    fn awaiting(&self) -> Option<Rank> {
        self.core.awaiting()
    }

    fn answer_ahead(&self, kind: Collective, tag: Tag) -> Option<(Tick, Tag, W)> {
        let (delay, tag, payload) = self.core.answer_ahead(kind, tag)?;
        Some((delay, tag, W::wrap(payload)))
    }
}

/// `core` as a pending core over wire type `W`.
fn erase<'t, C, W>(core: C) -> Flying<'t, W>
where
    C: Protocol + Send + 't,
    C::Output: Send + 'static,
    W: Carries<C::Payload>,
{
    Box::new(Erased {
        core,
        floor: 0,
        wire: std::marker::PhantomData,
    })
}

/// One operation launched and not yet waited.
pub(super) struct Pending<'t, W> {
    op: OpId,
    /// The numbering of the communicator it was launched in.
    members: Members<'t>,
    core: Flying<'t, W>,
    /// Its output once taken (or how it ended), for its wait.
    done: Option<Result<Outcome, Error>>,
}

impl<'t, T: Transport> Driver<'t, T> {
    /// Starts `core`, of operation `op` entered just now, without waiting:
    /// it takes what came early for `op` and the failures known, sends
    /// what it can, and stays pending until [`Driver::wait_pending`]. The
    /// rank is then outside the call (published as returned), as after a
    /// blocking call whose core lingers: it must come back into the
    /// library (any call, [`Driver::progress`]) more often than the failure
    /// timeout while a peer may wait on it. An emulated death planned for
    /// the operation's sends fires here at the latest.
    pub fn launch<C>(&mut self, op: OpId, core: C) -> Result<(), Error>
    where
        C: Protocol + Send + 't,
        C::Output: Send + 'static,
        T::Payload: Carries<C::Payload>,
    {
        self.launch_erased(op, erase(core))
    }

    fn launch_erased(&mut self, op: OpId, mut core: Flying<'t, T::Payload>) -> Result<(), Error> {
        let uses_time = core.uses_time();
        let mut tick = self.transport.now();
        let started = self
            .start_core(op, &mut core, tick)
            .and_then(|()| self.send_all(&mut core, op, &mut tick, uses_time).map(drop));
        let result = self.end_call(op, &core.header(), started);
        self.returned(op);
        result?;
        let done = core.take_output().map(Ok);
        self.pending.push(Pending {
            op,
            members: self.members,
            core,
            done,
        });
        Ok(())
    }

    /// Whether operation `op` is pending here (launched, not yet waited).
    pub fn is_pending(&self, op: OpId) -> bool {
        self.pending.iter().any(|p| p.op == op)
    }

    /// Whether any operation is pending here.
    pub(super) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Operations launched and not yet waited, oldest first.
    pub fn pending_ops(&self) -> Vec<OpId> {
        self.pending.iter().map(|p| p.op).collect()
    }

    /// The output of pending operation `op` if it has come (then it is no
    /// longer pending; its core lingers if it still has work), `None` if it
    /// has not, without waiting. Serve first ([`Driver::progress`]) to
    /// take what has arrived.
    pub fn try_complete(&mut self, op: OpId) -> Option<Result<Outcome, Error>> {
        let i = self.pending.iter().position(|p| p.op == op)?;
        let p = &mut self.pending[i];
        if p.done.is_none() {
            // A message handed to it since the last serve may have given it.
            p.done = p.core.take_output().map(Ok);
        }
        p.done.as_ref()?;
        let p = self.pending.remove(i);
        self.keep_served(p.members, p.core);
        p.done
    }

    /// Keeps a core whose output was taken, if it still has work.
    pub(super) fn keep_served(&mut self, members: Members<'t>, core: Flying<'t, T::Payload>) {
        if core.is_finished() {
            return;
        }
        let now_members = self.members;
        self.members = members;
        self.keep(core);
        self.members = now_members;
    }

    /// Hands a message to the pending core of its operation (which may
    /// drop it); the message back if no operation of its number is pending.
    pub(super) fn route_pending(
        &mut self,
        from: Rank,
        msg: Msg<T::Payload>,
    ) -> Result<(), Msg<T::Payload>> {
        let Some(p) = self.pending.iter_mut().find(|p| p.op == msg.op) else {
            return Err(msg);
        };
        let header = p.core.header();
        if msg.tag == Tag::Abort {
            if p.done.is_none() {
                p.done = Some(Err(Error::Mismatch {
                    op: msg.op,
                    mine: header.to_string(),
                    theirs: format!("{} (another rank aborted the operation)", msg.describe()),
                }));
            }
            return Ok(());
        }
        let Some(from) = p.members.of_transport(from) else {
            return Ok(());
        };
        if !header.accepts(&msg) {
            // Met when the operation is waited (its own call's rules):
            // here, only kept out of the core.
            return Ok(());
        }
        let now = if p.core.uses_time() {
            self.transport.now()
        } else {
            0
        };
        p.core.handle(now, Event::Message { from, msg });
        Ok(())
    }

    /// Lets the pending cores send what they have, fires their timers and
    /// takes their outputs.
    pub(super) fn serve_pending(&mut self) -> Result<(), Error> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let now = self.transport.now();
        for i in 0..self.pending.len() {
            let p = &mut self.pending[i];
            if p.core.poll_deadline().is_some_and(|t| t <= now) {
                p.core.handle(now, Event::Timer);
            }
            while let Some(tx) = self.pending[i].core.poll_transmit(now) {
                let p = &self.pending[i];
                let (op, to) = (p.op, p.members.to_transport(tx.to));
                self.transmit(op, to, tx.msg)?;
            }
            let p = &mut self.pending[i];
            if p.done.is_none() {
                p.done = p.core.take_output().map(Ok);
            }
        }
        Ok(())
    }

    /// Hands the pending cores every failure in `known_failed`.
    pub(super) fn tell_pending_failures(&mut self, now: Tick) {
        let me = self.transport.rank();
        for p in &mut self.pending {
            let mine = p.members.of_transport(me).unwrap_or(me);
            tell_failures::<T::Payload, _>(&mut p.core, &self.known_failed, p.members, mine, now);
        }
    }
}

/// Waiting drives the core with the loop of a blocking call.
impl<'t, T: Transport + Send> Driver<'t, T> {
    /// Drives pending operation `op` to its output (or its error) as a
    /// blocking call would, then returns it; its core lingers if it still
    /// has work. An operation not pending here: [`Error::UnknownRequest`].
    pub fn wait_pending(&mut self, op: OpId) -> Result<Outcome, Error> {
        let Some(i) = self.pending.iter().position(|p| p.op == op) else {
            return Err(Error::UnknownRequest { op });
        };
        if self.pending[i].done.is_some() {
            return self.try_complete(op).expect("checked: done");
        }
        self.check_alive()?;
        let Pending {
            members, mut core, ..
        } = self.pending.remove(i);
        // Driven in the numbering it was launched in (every pending
        // operation is settled before a shrink or a split renumbers, see
        // `settle_pending`, so this is the current one).
        debug_assert!(members.is(self.members));
        let result = self.drive_from(op, None, &mut core, false);
        if result.is_ok() {
            self.keep_served(members, core);
        }
        result
    }

    /// Drives every pending operation to its end, keeping each outcome for
    /// its wait: what a shrink or a split does first, since it renumbers
    /// the ranks the pending cores name.
    pub fn settle_pending(&mut self) {
        let ops: Vec<OpId> = self
            .pending
            .iter()
            .filter(|p| p.done.is_none())
            .map(|p| p.op)
            .collect();
        for op in ops {
            let Some(i) = self.pending.iter().position(|p| p.op == op) else {
                continue;
            };
            let mut p = self.pending.remove(i);
            let done = self.drive_from(op, None, &mut p.core, false);
            p.done = Some(done);
            // Back in its place: its wait returns the outcome.
            self.pending.insert(i, p);
        }
    }
}
