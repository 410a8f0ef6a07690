//! Messages in: operation fencing (the current core, a lingering core, or
//! the fence for a later operation), messages of failed ranks dropped,
//! mismatches found, and the answers a core gives ahead for a later
//! operation ([`Protocol::answer_ahead`]).

use super::fence::Route;
use super::{Carries, Driver, Transport};
use crate::error::Error;
use crate::protocol::{Event, Msg, Protocol, Tag};
use crate::types::{OpId, Rank, Tick};

impl<'t, T: Transport> Driver<'t, T> {
    /// Hands a received message to the current core, a lingering one, or the
    /// fence. Counted handled at once: the sends it causes come within this
    /// call, before this rank's program can end.
    pub(super) fn take<C>(
        &mut self,
        core: &mut C,
        op: OpId,
        tick: Tick,
        from: Rank,
        msg: Msg<T::Payload>,
    ) -> Result<(), Error>
    where
        C: Protocol,
        T::Payload: Carries<C::Payload>,
    {
        self.transport.count_handled();
        if self.sent_by_failed(from) {
            return Ok(());
        }
        if msg.op == op {
            // The core's own operation: the one the rank entered last, or
            // (a launched core waited) an older one.
            return self.hand(core, op, tick, from, msg);
        }
        match self.fence.route(msg.op) {
            Route::Early => {
                // A message of this core's kind (the same algorithm, at a
                // later operation), which it may answer for this rank if
                // the rank does not get there soon.
                if <T::Payload as Carries<C::Payload>>::holds(&msg.payload) {
                    if let Some((delay, tag, payload)) = core.answer_ahead(msg.kind, msg.tag) {
                        let answer = Msg {
                            tag,
                            payload: <T::Payload as Carries<C::Payload>>::wrap(payload),
                            ..msg
                        };
                        let due = self.transport.now().saturating_add(delay);
                        self.ahead.push((due, from, answer));
                    }
                }
                self.route_other(from, msg);
                Ok(())
            }
            _ => {
                self.route_other(from, msg);
                Ok(())
            }
        }
    }

    /// Sends the answers for later operations whose time has come
    /// ([`Protocol::answer_ahead`]). True if it sent one.
    pub(super) fn answer_ahead(&mut self, now: Tick) -> Result<bool, Error> {
        if self.ahead.iter().all(|&(due, _, _)| due > now) {
            return Ok(false);
        }
        let mut i = 0;
        while i < self.ahead.len() {
            if self.ahead[i].0 <= now {
                let (_, to, msg) = self.ahead.swap_remove(i);
                if !self.sent_by_failed(to) {
                    self.transmit(msg.op, to, msg)?;
                }
            } else {
                i += 1;
            }
        }
        Ok(true)
    }

    /// True for a message from a rank whose failure this rank's cores have
    /// been told: it is dropped. A rank marks itself failed after its last
    /// send, and the registry is read before the channels are drained, so
    /// such a message can only come from a rank declared failed while it was
    /// merely slow (a zombie): fail-stop by decree, nothing it sends from
    /// then on enters a result. (What a zombie sent before this rank learned
    /// of its failure is taken, as if it had failed just after sending it.)
    #[inline]
    fn sent_by_failed(&self, from: Rank) -> bool {
        !self.known_failed.is_empty() && self.known_failed.contains(&from)
    }

    /// Hands a message of the current operation to its core, or ends the
    /// call with a mismatch: a message the core's header does not accept,
    /// whose payload is another kind of core's, or another rank's abort of
    /// the operation.
    #[inline]
    pub(super) fn hand<C>(
        &mut self,
        core: &mut C,
        op: OpId,
        tick: Tick,
        from: Rank,
        msg: Msg<T::Payload>,
    ) -> Result<(), Error>
    where
        C: Protocol,
        T::Payload: Carries<C::Payload>,
    {
        let Some(from) = self.members.of_transport(from) else {
            // Not in this communicator: late traffic of the team it was
            // shrunk from.
            return Ok(());
        };
        let header = core.header();
        if msg.tag == Tag::Abort {
            return Err(Error::Mismatch {
                op,
                mine: header.to_string(),
                theirs: format!(
                    "{} (rank {from} met a mismatch and aborted the operation)",
                    msg.describe()
                ),
            });
        }
        let accepted = if header.accepts(&msg) {
            msg.try_map(Carries::unwrap)
        } else {
            Err(msg)
        };
        match accepted {
            Ok(msg) => {
                core.handle(tick, Event::Message { from, msg });
                Ok(())
            }
            Err(msg) => {
                let theirs = msg.describe();
                self.mismatched = Some(msg);
                Err(Error::Mismatch {
                    op,
                    mine: header.to_string(),
                    theirs,
                })
            }
        }
    }

    /// A message of another operation than the current one (or any message
    /// while the rank is between operations).
    pub(super) fn route_other(&mut self, from: Rank, msg: Msg<T::Payload>) {
        if self.sent_by_failed(from) {
            return;
        }
        if self.fence.route(msg.op) == Route::Early {
            self.fence.hold(from, msg.op, msg);
            return;
        }
        let msg = if self.pending.is_empty() {
            msg
        } else {
            match self.route_pending(from, msg) {
                Err(msg) => msg,
                Ok(()) => return,
            }
        };
        let Some(i) = self
            .lingering
            .iter()
            .position(|k| k.core.header().op == msg.op)
        else {
            return;
        };
        if msg.tag == Tag::Abort {
            // The operation was aborted after this rank completed it: its
            // core has nobody left to serve.
            self.drop_kept(i);
            return;
        }
        let Some(from) = self.lingering[i].members.of_transport(from) else {
            return;
        };
        let core = &mut self.lingering[i].core;
        let now = if core.uses_time() {
            self.transport.now()
        } else {
            0
        };
        core.handle(now, Event::Message { from, msg });
    }

    /// Takes the next message, if any, counting it handled once `handle`
    /// is done.
    pub(super) fn receive_with(
        &mut self,
        handle: impl FnOnce(&mut Self, Rank, Msg<T::Payload>),
    ) -> bool {
        match self.transport.try_recv() {
            Some((from, msg)) => {
                handle(self, from, msg);
                self.transport.count_handled();
                true
            }
            None => false,
        }
    }

    /// Takes what has arrived and drops it (a hung rank's channels must
    /// drain for the team to be quiet).
    pub fn drain_and_drop(&mut self) {
        while self.receive_with(|_, _, _| {}) {}
    }
}
