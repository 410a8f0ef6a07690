//! A call in progress as one object, so that the thread of another rank can
//! advance it while its own rank waits (see [`crate::helping`]).

use crate::driver::{Carries, Driver, Progress, Transport};
use crate::error::Error;
use crate::helping::Pump;
use crate::protocol::Protocol;
use crate::types::{OpId, Tick};

/// The driver, the core and the loop state of one call, borrowed from
/// [`Driver::drive`] for one wait.
pub(crate) struct Call<'d, 't, T: Transport, C: Protocol> {
    pub(crate) driver: &'d mut Driver<'t, T>,
    pub(crate) core: &'d mut C,
    pub(crate) op: OpId,
    pub(crate) tick: &'d mut Tick,
    pub(crate) output: &'d mut Option<C::Output>,
    /// How the call ended while lent (the driver returns it).
    pub(crate) failed: Option<Error>,
}

impl<T, C> Pump for Call<'_, '_, T, C>
where
    T: Transport + Send,
    C: Protocol + Send,
    C::Output: Send,
    T::Payload: Carries<C::Payload>,
{
    fn pump(&mut self) -> bool {
        if self.failed.is_some() || !self.driver.is_alive() {
            return false;
        }
        match self
            .driver
            .advance(self.core, self.op, self.tick, self.output)
        {
            Ok(moved) => moved,
            Err(e) => {
                self.failed = Some(e);
                true
            }
        }
    }
}

impl<T, C> Progress<T> for Call<'_, '_, T, C>
where
    T: Transport + Send,
    C: Protocol + Send,
    C::Output: Send,
    T::Payload: Carries<C::Payload>,
{
    fn transport(&mut self) -> &mut T {
        &mut self.driver.transport
    }

    fn worth_lending(&self) -> bool {
        !self.core.waits_once()
    }
}
