//! The suspicions an FTCO core raises (Algorithm 4: a DATA or KEEPALIVE
//! unanswered past f_timeout), kept so that an engine can count timeouts
//! fired and tell false suspicions (a live node suspected) from true ones.

use crate::types::{Rank, Tick};

/// Suspected nodes (virtual ranks), when, and whether a later message from
/// the suspect refuted the suspicion.
#[derive(Clone, Debug, Default)]
pub(super) struct Suspicions {
    list: Vec<(Rank, Tick, bool)>,
    refuted: u32,
}

impl Suspicions {
    /// A timeout fired: `rank` is suspected at `now`.
    pub(super) fn raise(&mut self, rank: Rank, now: Tick) {
        self.list.push((rank, now, false));
    }

    /// A message from `rank`: it lived, whatever was suspected of it.
    pub(super) fn heard(&mut self, rank: Rank) {
        for s in self.list.iter_mut().filter(|s| s.0 == rank && !s.2) {
            s.2 = true;
            self.refuted += 1;
        }
    }

    /// Timeouts fired (each raised one suspicion).
    pub(super) fn count(&self) -> u32 {
        self.list.len() as u32
    }

    /// Suspicions refuted by a later message from the suspect.
    pub(super) fn refuted(&self) -> u32 {
        self.refuted
    }

    /// Every suspicion, as (virtual rank, tick).
    pub(super) fn iter(&self) -> impl Iterator<Item = (Rank, Tick)> + '_ {
        self.list.iter().map(|&(r, t, _)| (r, t))
    }
}
