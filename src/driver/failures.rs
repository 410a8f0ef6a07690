//! Failure news: the registry's list of failed ranks handed to the current
//! core and the lingering ones, after the messages already in the channels
//! (what a rank sent before it failed is taken before its failure is told).

use super::lingering::Lingering;
use super::{Carries, Driver, Members, Transport};
use crate::error::Error;
use crate::protocol::{Event, Protocol};
use crate::types::{OpId, Rank, Tick};

impl<'t, T: Transport> Driver<'t, T> {
    /// When the registry has news, hands the current core and the lingering
    /// ones every failure it lists, after the messages already in the
    /// channels: a rank marks itself failed after its last send, so what it
    /// sent before it failed is taken before its failure is reported (as
    /// over FIFO channels with a perfect detector). A pair exchange relies
    /// on it: a peer that sent its input and then died in a later operation
    /// must not be left out of the one it completed. Without news it is one
    /// load: the list is kept (`known_failed`) and handed to each new core
    /// at its start.
    #[inline]
    pub(super) fn learn_failures<C>(
        &mut self,
        core: &mut C,
        op: OpId,
        tick: &mut Tick,
    ) -> Result<(), Error>
    where
        C: Protocol,
        T::Payload: Carries<C::Payload>,
    {
        // The common case, on every turn of every call: nothing new.
        if self.transport.failure_epoch() == self.seen_epoch {
            return Ok(());
        }
        self.learn_new_failures(core, op, tick)
    }

    #[inline(never)]
    fn learn_new_failures<C>(
        &mut self,
        core: &mut C,
        op: OpId,
        tick: &mut Tick,
    ) -> Result<(), Error>
    where
        C: Protocol,
        T::Payload: Carries<C::Payload>,
    {
        let Some(fresh) = self.failure_news() else {
            return Ok(());
        };
        let now = (*tick).max(self.transport.now());
        *tick = now;
        while let Some((from, msg)) = self.transport.try_recv() {
            self.take(core, op, now, from, msg)?;
        }
        self.known_failed = fresh;
        tell_failures::<T::Payload, C>(core, &self.known_failed, self.members, self.me, now);
        self.tell_lingering_failures(now);
        Ok(())
    }

    /// The registry's list, if it moved since `seen_epoch`. The caller
    /// drains the channels, then makes it `known_failed`: the list is read
    /// first, so every message its ranks sent before they failed is in the
    /// channels by then, and is taken before their messages are dropped.
    fn failure_news(&mut self) -> Option<Vec<Rank>> {
        let epoch = self.transport.failure_epoch();
        if epoch == self.seen_epoch {
            return None;
        }
        self.seen_epoch = epoch;
        Some(self.transport.failed())
    }

    /// Hands the lingering cores every failure in `known_failed`.
    fn tell_lingering_failures(&mut self, now: Tick) {
        let me = self.transport.rank();
        for kept in &mut self.lingering {
            let mine = kept.members.of_transport(me).unwrap_or(me);
            tell_failures(&mut *kept.core, &self.known_failed, kept.members, mine, now);
        }
        self.tell_pending_failures(now);
    }

    /// [`Driver::learn_failures`] for the lingering cores alone.
    pub(super) fn learn_failures_lingering(&mut self) {
        let Some(fresh) = self.failure_news() else {
            return;
        };
        // Messages first, as in `learn_failures`.
        while self.receive_with(|d, from, msg| d.route_other(from, msg)) {}
        self.known_failed = fresh;
        let now = self.transport.now();
        self.tell_lingering_failures(now);
    }
}

/// Hands `core` (rank `me` of `members`) the failure of every member in
/// `failed` (transport ranks) but itself.
pub(super) fn tell_failures<W, C>(
    core: &mut C,
    failed: &[Rank],
    members: Members<'_>,
    me: Rank,
    now: Tick,
) where
    C: Lingering<W> + ?Sized,
{
    for r in failed.iter().filter_map(|&t| members.of_transport(t)) {
        if r != me {
            core.handle(now, Event::PeerFailed(r));
        }
    }
}
