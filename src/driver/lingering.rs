//! Cores kept after their call returned, behind one object-safe face, so
//! that the driver keeps cores of any kind without naming them.

use crate::driver::transport::Carries;
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
