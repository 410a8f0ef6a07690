//! The suspicions an FTCO core raises (Algorithm 4: a DATA or KEEPALIVE
//! unanswered past f_timeout), kept so that an engine can count timeouts
//! fired and tell false suspicions (a live node suspected) from true ones;
//! and the failures an engine's detector reported ([`Known`]), which a core
//! circumvents from the start, without a timeout.

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

    /// The latest suspect not heard from since: a detector that watches it
    /// finds a failed node failed, and a live one alive.
    pub(super) fn unheard(&self) -> Option<Rank> {
        self.list.iter().rev().find(|s| !s.2).map(|s| s.0)
    }

    /// Every suspicion, as (virtual rank, tick).
    pub(super) fn iter(&self) -> impl Iterator<Item = (Rank, Tick)> + '_ {
        self.list.iter().map(|&(r, t, _)| (r, t))
    }
}

/// Nodes an engine's failure detector reported failed (virtual ranks):
/// certain, unlike a suspicion, and known to every node that was told, so
/// that a core routes around them as a communicator's failed set would.
#[derive(Clone, Debug, Default)]
pub(super) struct Known {
    failed: Vec<Rank>,
}

impl Known {
    /// Records `rank`'s failure; false if it was known already.
    pub(super) fn add(&mut self, rank: Rank) -> bool {
        if self.failed.contains(&rank) {
            return false;
        }
        self.failed.push(rank);
        true
    }

    /// Whether `rank` is known failed.
    pub(super) fn contains(&self, rank: Rank) -> bool {
        self.failed.contains(&rank)
    }

    /// Every known failure.
    pub(super) fn iter(&self) -> impl Iterator<Item = Rank> + '_ {
        self.failed.iter().copied()
    }
}
