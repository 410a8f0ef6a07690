//! Agreement on the failed ranks, and the shrink that follows it, for every
//! engine.

use crate::call::plans::{Generation, Plans};
use crate::call::{Caller, Control, Engine};
use crate::driver::Members;
use crate::error::Error;
use crate::protocol::bcast::Bcast;
use crate::types::Rank;
use crate::value::data::Data;

impl<'t, E: Engine<'t>> Caller<'t, E> {
    /// Gives every live rank the same list of failed ranks: a collective
    /// (every live rank calls it), after which the lists agree, whatever
    /// the number of failures before or during it. Each listed rank has
    /// failed (known failed to the engine: killed, panicked, or declared
    /// failed by the timeout detector); a rank that fails late in the call
    /// may be left out, and is then found failed by later operations.
    ///
    /// The algorithm is the rotating coordinator of consensus with a
    /// perfect failure detector (Chandra and Toueg, 1996): for each rank c
    /// in turn, c broadcasts its current list and every rank that receives
    /// it adopts it. A broadcast from a live root reaches every live rank
    /// (checked correction, any number of failures), so after the first
    /// round whose coordinator does not fail all lists are equal and stay
    /// so; a round whose coordinator is known dead ends in
    /// [`Error::RootFailed`] at once, one whose coordinator dies during it
    /// within the root wait once the detector knows. Cost: one broadcast
    /// per rank (of a bitmap of one bit per rank each).
    ///
    /// Errors: this rank failed or hung, ranks disagree on the operation
    /// ([`Error::Mismatch`]), or a broadcast timed out.
    pub(crate) fn agree_failed(&mut self) -> Result<Vec<Rank>, Error> {
        let size = self.size();
        let mut estimate = vec![0u64; (size as usize).div_ceil(64)];
        for r in self.failed_ranks() {
            estimate[r as usize / 64] |= 1 << (r % 64);
        }
        for coordinator in 0..size {
            let mut got = estimate.clone();
            let op = match coordinator {
                0 => self.begin()?,
                _ => self.begin_within()?,
            };
            match self.broadcast_agreement(op, coordinator, &mut got) {
                Ok(()) => estimate = got,
                Err(Error::RootFailed { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok((0..size)
            .filter(|&r| estimate[r as usize / 64] & (1 << (r % 64)) != 0)
            .collect())
    }

    /// One broadcast of the agreement (operation `op`, entered), with the plans' agreement broadcast
    /// (one that reaches every live rank from a live root whatever the
    /// team's correction).
    fn broadcast_agreement(
        &mut self,
        op: crate::types::OpId,
        root: Rank,
        bitmap: &mut [u64],
    ) -> Result<(), Error> {
        let (plans, me) = (self.plans(), self.rank());
        let value = (root == me).then(|| Data::encode(bitmap, self.engine.pool()));
        let core = Bcast::new(&plans.agreement, root, me, op, value);
        let mut core = core.map_err(|e| self.abandon(op, e))?;
        let got = self.driver.drive(op, None, &mut core);
        let got = got.map_err(|e| super::broadcast::root_failed(&self.driver, e, op, root))?;
        self.driver.keep(core);
        got.decode_into(bitmap, op, None)
    }

    /// Goes on with the survivors: agrees on the failed ranks
    /// ([`Caller::agree_failed`]), then renumbers the others densely, in
    /// their order, with a fault budget of this communicator's f, at most
    /// the new size minus one, and new plans for the new size. Returns the
    /// ranks left out, in the numbering before the shrink. Operations go on
    /// being numbered after the old ones, so late messages of the old team
    /// are told apart and dropped.
    ///
    /// Errors: those of [`Caller::agree_failed`]; [`Error::Failed`] if this
    /// rank is among the failed.
    pub(crate) fn shrink(&mut self) -> Result<Vec<Rank>, Error> {
        let failed = self.agree_failed()?;
        self.renumber(&failed)?;
        Ok(failed)
    }

    /// The second half of [`Caller::shrink`]: leaves out `failed`, a list
    /// every live rank of this communicator holds alike (an agreement's),
    /// and renumbers the others. The engine drops its state of the old
    /// numbering ([`Engine::shrunk`]).
    ///
    /// Errors: [`Error::Failed`] if this rank is in `failed`; a
    /// configuration that does not fit the survivors.
    pub(crate) fn renumber(&mut self, failed: &[Rank]) -> Result<(), Error> {
        if failed.contains(&self.rank()) {
            return Err(Error::Failed(self.rank()));
        }
        let kept: Vec<Rank> = (0..self.size()).filter(|r| !failed.contains(r)).collect();
        self.regroup(&kept)
    }

    /// Makes this communicator the team of `members` (ranks of the current
    /// numbering, each once, this rank among them), renumbered in their
    /// order, with a fault budget of this communicator's f, at most the
    /// new size minus one, and new plans for the new size. Every member
    /// calls it with the same list. The engine drops its state of the old
    /// numbering ([`Engine::shrunk`]).
    ///
    /// Errors: [`Error::RankOutOfRange`] for a member out of range;
    /// [`Error::Failed`] if this rank is not a member; a configuration
    /// that does not fit the new size.
    pub(crate) fn regroup(&mut self, members: &[Rank]) -> Result<(), Error> {
        let size = self.size();
        if let Some(&rank) = members.iter().find(|&&r| r >= size) {
            return Err(Error::RankOutOfRange { rank, procs: size });
        }
        if !members.contains(&self.rank()) {
            return Err(Error::Failed(self.rank()));
        }
        // Immediate operations still pending are driven to their end
        // first: their cores number ranks the old way (outcomes kept for
        // their waits).
        self.driver.settle_pending();
        let old = self.driver.members();
        let members: Box<[Rank]> = members.iter().map(|&r| old.to_transport(r)).collect();
        let size = members.len() as u32;
        let f = self.fault_budget().min(size - 1);
        let crowded = self.engine.crowded(size);
        let plans = Plans::build(self.config(), size, f, crowded)?;
        let index = Members::index_of(&members);
        let generation = self.engine.keep_generation(Generation {
            members,
            index,
            plans,
        });
        self.plans = &generation.plans;
        let numbering = Members::ordered(&generation.members, &generation.index);
        self.driver.set_members(numbering);
        self.regrouped_at = self.driver.next_op();
        self.engine.shrunk();
        Ok(())
    }
}
