//! A rank outside its calls: [`Driver::progress`] between calls, and
//! [`Driver::finish`] after the program, until the whole team is quiet.

use super::{Driver, RankState, Transport};
use crate::error::Error;

impl<'t, T: Transport> Driver<'t, T> {
    /// Between calls: takes what has arrived (for the cores kept from past
    /// operations, or held for operations to come), serves the kept cores,
    /// and sends what the outbox held back; never waits. A rank that waits
    /// outside the library calls this so that its kept cores still answer
    /// (FTCO's ACKs and KEEPALIVE answers, a correction's late messages).
    pub fn progress(&mut self) -> Result<(), Error> {
        self.check_alive()?;
        self.transport.beat();
        self.flush_outbox();
        while self.receive_with(|d, from, msg| d.route_other(from, msg)) {}
        self.serve_lingering()?;
        self.flush_outbox();
        Ok(())
    }

    /// After the program: keep serving late messages until the whole team
    /// is quiet. Failed and hung ranks only take messages out of their
    /// channels (and drop them), so that the count of messages in flight
    /// reaches zero.
    pub fn finish(&mut self) {
        self.transport.leave(self.state == RankState::Hung);
        let mut idle_rounds = 0u32;
        loop {
            self.transport.beat();
            let serving = self.is_alive();
            let mut busy = false;
            if serving {
                self.learn_failures_lingering();
                self.flush_outbox();
                let _ = self.serve_lingering();
            } else {
                self.drop_outbox();
            }
            // A failure can make a lingering core send with no message to
            // answer: the team is quiet only once every serving rank has
            // handled every failure (the sends come first, then this store).
            let seen = if serving { self.seen_epoch } else { u64::MAX };
            self.transport.publish_served_epoch(seen);
            while self.receive_with(|d, from, msg| {
                if serving && d.state == RankState::Alive {
                    d.route_other(from, msg);
                    let _ = d.serve_lingering();
                }
            }) {
                busy = true;
            }
            if !busy && self.outbox.is_empty() && self.transport.team_quiet() {
                return;
            }
            idle_rounds = if busy { 0 } else { idle_rounds + 1 };
            let pause = if idle_rounds < 10 {
                20_000
            } else if self.transport.others_running()
                && !self.lingering.iter().any(|k| k.core.uses_time())
                && !self.has_pending()
            {
                // Nothing but a message or the last program's end (which
                // wakes this rank) can make the team quiet, and no kept
                // core acts on time.
                5_000_000
            } else {
                500_000
            };
            let until = self.transport.now().saturating_add(pause);
            self.transport.wait(until);
        }
    }
}
