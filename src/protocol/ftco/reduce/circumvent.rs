//! The up phase's waiting and circumvention (Algorithm 4): the nodes a
//! node waits on for their partials, asked by KEEPALIVE when their time is
//! up and circumvented (their children waited on instead) when they do not
//! answer or are known failed; the DATA sent up, watched until its ACK and
//! sent to the next live ancestor when none comes (Appendix D).

use crate::protocol::reduce::Combine;
use crate::protocol::{Event, Protocol};
use crate::topology::ring;
use crate::types::{Rank, Tick};

use super::{FtcoReduce, Pending, UpWatch, ASK, WATCH};

impl<P, O> FtcoReduce<'_, P, O>
where
    P: Clone + Send + 'static,
    O: Combine<P>,
{
    /// Waits on the children of `z` that no folded piece answers for
    /// (Algorithm 4 lines 9-10: Down ← Down_z ∪ (Down − {z})); those whose
    /// own value alone is in, it passes through.
    pub(super) fn descend(&mut self, z: Rank) {
        let plan = self.plan;
        for &c in plan.tree().children(z) {
            if self.covers.in_whole_piece(plan, c) {
                continue;
            }
            if self.covers.covers(plan, c) {
                self.descend(c);
            } else if self.known.contains(c) && !self.immune(c) {
                // Known failed: left out, its children waited on.
                if !self.suspects.contains(&c) {
                    self.suspects.push(c);
                }
                self.descend(c);
            } else if !self.pending.iter().any(|p| p.rank == c) {
                self.pending.push(Pending {
                    rank: c,
                    dist: plan.depth(c) - plan.depth(self.me),
                    ask_at: self.now.max(plan.ask_after(plan.up_eta(c))),
                    deadline: None,
                    backoff: 0,
                });
            }
        }
    }

    pub(super) fn rearm(&mut self) {
        let ask = self
            .pending
            .iter()
            .map(|p| p.deadline.unwrap_or(p.ask_at))
            .min();
        match ask {
            Some(t) => self.timers.set(ASK, t),
            None => self.timers.stop(ASK),
        }
        match self.up.and_then(|u| u.deadline) {
            Some(t) => self.timers.set(WATCH, t),
            None => self.timers.stop(WATCH),
        }
    }

    /// Handles every up-phase deadline at or before `now` (Algorithm 4).
    pub(super) fn expire(&mut self, now: Tick) {
        self.now = self.now.max(now);
        let mut changed = false;
        while let Some(which) = self.timers.take_expired(now) {
            changed = true;
            if which == WATCH {
                let Some(up) = self.up else { continue };
                if up.deadline.is_some_and(|d| d <= now) {
                    if self.immune(up.rank) {
                        // A root never fails (Section 2): wait for it.
                        self.up = Some(UpWatch {
                            deadline: Some(Tick::MAX),
                            ..up
                        });
                        continue;
                    }
                    self.suspicions.raise(up.rank, now);
                    self.up = self.past(up);
                }
                continue;
            }
            let mut i = 0;
            while i < self.pending.len() {
                if self.pending[i].deadline.is_some_and(|d| d <= now) {
                    let gone = self.pending.swap_remove(i);
                    self.suspicions.raise(gone.rank, now);
                    self.suspects.push(gone.rank);
                    self.descend(gone.rank);
                } else {
                    i += 1;
                }
            }
        }
        if changed {
            self.progress();
        }
    }

    /// `rank` failed, as the engine's detector reports (before the
    /// operation or during it): a Down node is circumvented at once, as a
    /// timeout would (Algorithm 4 lines 9-10, without the wait), its input
    /// left out; DATA meant for it goes to the first live node above; the
    /// down phase routes around it too. The roots never fail (Section 2).
    pub(super) fn peer_failed(&mut self, rank: Rank) {
        if self.immune(rank) || !self.known.add(rank) {
            return;
        }
        if let Some(down) = self.down.as_mut() {
            down.handle(
                self.now,
                Event::PeerFailed(ring::right(rank, self.root, self.plan.procs())),
            );
        }
        if let Some(i) = self.pending.iter().position(|p| p.rank == rank) {
            self.pending.swap_remove(i);
            self.suspects.push(rank);
            let before = self.pending.len();
            self.descend(rank);
            if self.now > 0 {
                // News during the operation: a child may have handed its
                // partial to the failed node already, and will not send
                // it again unasked. Known from the start (operation time
                // 0), the children send here themselves.
                let now = self.now;
                for p in &mut self.pending[before..] {
                    p.ask_at = now;
                }
            }
        }
        if let Some(up) = self.up.filter(|u| u.rank == rank) {
            self.up = self.past(up);
        }
        self.progress();
    }

    /// The DATA sent up to a node taken for failed goes to the first live
    /// node above it (Appendix D's grand-parent walk), still to send; the
    /// root never fails (Section 2), so the walk ends there.
    fn past(&self, up: UpWatch) -> Option<UpWatch> {
        self.plan
            .live_above(up.rank, up.dist, &self.known, self.roots)
            .map(|(rank, dist)| UpWatch {
                rank,
                dist,
                deadline: None,
            })
    }
}
