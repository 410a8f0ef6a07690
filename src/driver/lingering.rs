//! Cores kept after their call returned, behind one object-safe face, so
//! that the driver keeps cores of any kind without naming them, each in a
//! heap block the driver recycles (see the driver's *lingering*).

use std::alloc::Layout;

use recycle_box::{coerce_box, RecycleBox};

use super::{Carries, Driver, Members, Transport};
use crate::error::Error;
use crate::protocol::{Event, Header, Msg, Protocol, Transmit};
use crate::types::Tick;

/// What the driver does with a kept core: hand it messages of its operation
/// and failure news, let it send, and ask whether it may go. Every
/// [`Protocol`] core whose payload the wire type `W` carries is one.
pub(crate) trait Lingering<W> {
    /// The operation it serves.
    fn header(&self) -> Header;
    /// A message of its operation (dropped unless its header is accepted
    /// and its payload is the core's), or failure news.
    fn handle(&mut self, now: Tick, event: Event<Msg<W>>);
    /// Its next send, wrapped for the wire.
    fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<W>>>;
    /// See [`Protocol::is_finished`].
    fn is_finished(&self) -> bool;
    /// See [`Protocol::retired_by`].
    fn retired_by(&self, completed: &Header) -> bool;
    /// See [`Protocol::uses_time`].
    fn uses_time(&self) -> bool;
}

impl<W, C> Lingering<W> for C
where
    C: Protocol,
    W: Carries<C::Payload>,
{
    fn header(&self) -> Header {
        Protocol::header(self)
    }

    fn handle(&mut self, now: Tick, event: Event<Msg<W>>) {
        let event = match event {
            Event::Message { from, msg } => {
                if !Protocol::header(self).accepts(&msg) {
                    return;
                }
                match msg.try_map(Carries::unwrap) {
                    Ok(msg) => Event::Message { from, msg },
                    Err(_) => return,
                }
            }
            Event::Start => Event::Start,
            Event::PeerFailed(r) => Event::PeerFailed(r),
            Event::Timer => Event::Timer,
        };
        Protocol::handle(self, now, event);
    }

    fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<W>>> {
        Protocol::poll_transmit(self, now).map(|tx| Transmit {
            to: tx.to,
            msg: tx.msg.map(W::wrap),
        })
    }

    fn is_finished(&self) -> bool {
        Protocol::is_finished(self)
    }

    fn retired_by(&self, completed: &Header) -> bool {
        Protocol::retired_by(self, completed)
    }

    fn uses_time(&self) -> bool {
        Protocol::uses_time(self)
    }
}

/// Heap blocks of cores no longer kept that a driver holds for the next
/// kept cores (each call keeps at most one core and retires about one).
const SPARE_BLOCKS: usize = 4;

/// A core kept after its call, with the numbering of the communicator it
/// was made in.
pub(super) struct Kept<'t, W> {
    pub(super) members: Members<'t>,
    pub(super) core: RecycleBox<dyn Lingering<W> + Send + 't>,
}

impl<'t, T: Transport> Driver<'t, T> {
    /// Keeps a core after its call, unless it is finished: it is served
    /// from then on (see the module's *lingering*).
    #[inline]
    pub fn keep<C>(&mut self, core: C)
    where
        C: Protocol + Send + 't,
        T::Payload: Carries<C::Payload>,
    {
        // Inlined, so that a finished core (most, fault-free) is dropped
        // where it stands instead of being moved here first.
        if !core.is_finished() {
            self.keep_unfinished(core);
        }
    }

    fn keep_unfinished<C>(&mut self, core: C)
    where
        C: Protocol + Send + 't,
        T::Payload: Carries<C::Payload>,
    {
        if self.lingering.len() == self.config.linger {
            self.drop_kept(0);
        }
        // The smallest spare block that holds a `C` (cores of several
        // kinds take turns: a barrier's and a broadcast's).
        let need = Layout::new::<C>();
        let fits = self
            .spares
            .iter()
            .enumerate()
            .filter(|(_, (l, _))| l.size() >= need.size() && l.align() >= need.align())
            .min_by_key(|(_, (l, _))| l.size())
            .map(|(i, _)| i);
        let core: RecycleBox<dyn Lingering<T::Payload> + Send + 't> = match fits {
            Some(i) => coerce_box!(RecycleBox::recycle(self.spares.swap_remove(i).1, core)),
            None => coerce_box!(RecycleBox::new(core)),
        };
        self.lingering.push_back(Kept {
            members: self.members,
            core,
        });
    }

    /// Stops keeping the `i`-th lingering core; its heap block is kept
    /// for the next core kept (a few blocks at most).
    pub(super) fn drop_kept(&mut self, i: usize) {
        if let Some(kept) = self.lingering.remove(i) {
            if self.spares.len() < SPARE_BLOCKS {
                let held = Layout::for_value(&*kept.core);
                self.spares.push((held, RecycleBox::vacate(kept.core)));
            }
        }
    }

    /// Lets lingering cores send what they have.
    pub(super) fn serve_lingering(&mut self) -> Result<(), Error> {
        self.serve_pending()?;
        if self.lingering.is_empty() {
            return Ok(());
        }
        // The clock only for a core that acts on it (the contract lets the
        // others see a stale tick): this runs on every idle turn and pump.
        let now = if self.lingering.iter().any(|k| k.core.uses_time()) {
            self.transport.now()
        } else {
            0
        };
        let mut i = 0;
        while i < self.lingering.len() {
            while let Some(tx) = self.lingering[i].core.poll_transmit(now) {
                let kept = &self.lingering[i];
                let (op, to) = (kept.core.header().op, kept.members.to_transport(tx.to));
                self.transmit(op, to, tx.msg)?;
            }
            if self.lingering[i].core.is_finished() {
                self.drop_kept(i);
            } else {
                i += 1;
            }
        }
        Ok(())
    }
}
