//! The correction phase on the ring (Corrected Trees Section 3.3, Corrected
//! Gossip Section III): who still sends where, after dissemination.
//!
//! Shared by every dissemination phase that ends with a ring correction: a
//! tree ([`crate::protocol::bcast`]) or gossip. A core keeps one [`Sweep`],
//! tells it of every correction message it hears ([`Sweep::observe`]) and
//! asks it for the next send once its dissemination sends are done
//! ([`Sweep::next`]). Distances are ring distances from the rank, so the
//! sweep knows nothing of roots or relabelling.
//!
//! Only ranks colored by dissemination (a tree or gossip message) take part;
//! ranks colored by a correction message never send one (Corrected Trees,
//! Section 3.1), except in [`Correction::Relaying`] (they sweep too) and
//! [`Correction::Forwarding`] (they send the tree message on, as the
//! authors' simulator does). Every variant sends left first and then
//! alternates, one message per poll, and never sends to the same rank twice
//! in one direction. A sweep never covers more than the whole ring
//! (`left + right <= P - 1`).

use std::fmt;
use std::str::FromStr;

use crate::error::ConfigError;
use crate::protocol::Tag;
use crate::types::Tick;

/// Which correction follows dissemination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Correction {
    /// No correction: a plain tree. Misses every descendant of a dead rank.
    None,
    /// Opportunistic correction, overlapped: `distance` messages in each
    /// direction right after the tree sends. Colors every live rank if no
    /// gap (run of ranks not colored by dissemination) exceeds 2·`distance`;
    /// with `distance >= k` on a k-ary tree it survives any k - 1 dead ranks
    /// (Section 3.2.1).
    Opportunistic {
        /// d: messages per direction.
        distance: u32,
    },
    /// Optimized opportunistic correction (Section 3.3): as opportunistic,
    /// but a message from `j` on the right at distance `δ < d` tells the
    /// receiver that `j` covers its nearest `d - δ` left neighbours, so it
    /// skips them (and mirrored). Never less safe than plain opportunistic.
    Optimized {
        /// d: messages per direction at most.
        distance: u32,
    },
    /// Opportunistic correction in which every colored rank sends
    /// `distance` messages in each direction, also a rank colored by a
    /// correction message (the paper's text says such ranks stay silent).
    /// Relaying bridges gaps longer than 2·`distance` as long as no
    /// `distance` consecutive ranks are dead, at the price of up to
    /// 2·`distance` messages from every rank. Overlapped, no delivery
    /// guarantee.
    Relaying {
        /// d: messages per direction.
        distance: u32,
    },
    /// Opportunistic correction as the authors' simulator (flogsim)
    /// composes it for the paper's opportunistic runs: a rank colored by a
    /// correction message before its tree message sends the value on to
    /// its tree children, as if the tree message had come, and no
    /// correction. Ranks colored by the tree (the first time or so
    /// forwarded) correct as in [`Correction::Opportunistic`]. Overlapped,
    /// no delivery guarantee.
    Forwarding {
        /// d: messages per direction.
        distance: u32,
    },
    /// Checked correction, overlapped: each side continues until the rank has
    /// sent to the nearest correction sender it heard from on that side.
    /// Colors every live rank for any dead set fixed before the operation.
    Checked,
    /// Checked correction, synchronized: every rank colored by dissemination
    /// starts at the same time, the tree's fault-free dissemination time.
    /// Lemma 2: fault-free it takes 4o + L + ⌈L/o⌉·o with 3 + ⌈L/o⌉ messages
    /// per process (the paper's ⌊·⌋, equal when o divides L).
    CheckedSync,
    /// Delayed correction (Section 3.3), synchronized: one message to the
    /// left, then wait `delay`; if nothing came from the right by then, sweep
    /// right until something does. A rank colored by dissemination that hears
    /// from its left replies at once to stop that sweep. Fault-free, with
    /// `delay >= 2o + L`, one message per process.
    Delayed {
        /// Ticks to wait after the first left message.
        delay: Tick,
    },
}

impl Correction {
    /// True if correction starts at the same time on every rank.
    pub fn synchronized(&self) -> bool {
        matches!(self, Correction::CheckedSync | Correction::Delayed { .. })
    }

    /// True if the variant colors every live rank whenever the root is alive
    /// and no rank fails during the operation, whatever the dead set.
    pub fn guarantees_delivery(&self) -> bool {
        matches!(
            self,
            Correction::Checked | Correction::CheckedSync | Correction::Delayed { .. }
        )
    }

    /// True if ranks colored by a correction message send correction too.
    pub fn relays(&self) -> bool {
        matches!(self, Correction::Relaying { .. })
    }

    /// True if ranks colored by a correction message send the value on to
    /// their tree children.
    pub fn forwards_tree(&self) -> bool {
        matches!(self, Correction::Forwarding { .. })
    }
}

impl FromStr for Correction {
    type Err = ConfigError;

    fn from_str(text: &str) -> Result<Self, ConfigError> {
        let bad = |why: &str| ConfigError::BadCorrection {
            spec: text.to_string(),
            why: why.to_string(),
        };
        let lower = text.trim().to_ascii_lowercase();
        let (name, arg) = match lower.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (lower.as_str(), None),
        };
        let number = |min: u64| -> Result<u64, ConfigError> {
            let a = arg.ok_or_else(|| bad("this correction needs a parameter after ':'"))?;
            let n: u64 = a
                .parse()
                .map_err(|_| bad("the parameter must be a whole number"))?;
            if n < min {
                return Err(bad(&format!("the parameter must be at least {min}")));
            }
            Ok(n)
        };
        let plain = |c: Correction| match arg {
            Some(_) => Err(bad("this correction takes no parameter")),
            None => Ok(c),
        };
        let distance = || -> Result<u32, ConfigError> {
            u32::try_from(number(1)?).map_err(|_| bad("the distance does not fit in 32 bits"))
        };
        match name {
            "none" => plain(Correction::None),
            "checked" => plain(Correction::Checked),
            "checked-sync" => plain(Correction::CheckedSync),
            "opportunistic" => Ok(Correction::Opportunistic {
                distance: distance()?,
            }),
            "optimized" => Ok(Correction::Optimized {
                distance: distance()?,
            }),
            "relaying" => Ok(Correction::Relaying {
                distance: distance()?,
            }),
            "forwarding" => Ok(Correction::Forwarding {
                distance: distance()?,
            }),
            "delayed" => Ok(Correction::Delayed { delay: number(0)? }),
            _ => Err(bad("unknown correction")),
        }
    }
}

impl fmt::Display for Correction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Correction::None => f.write_str("none"),
            Correction::Opportunistic { distance } => write!(f, "opportunistic:{distance}"),
            Correction::Optimized { distance } => write!(f, "optimized:{distance}"),
            Correction::Relaying { distance } => write!(f, "relaying:{distance}"),
            Correction::Forwarding { distance } => write!(f, "forwarding:{distance}"),
            Correction::Checked => f.write_str("checked"),
            Correction::CheckedSync => f.write_str("checked-sync"),
            Correction::Delayed { delay } => write!(f, "delayed:{delay}"),
        }
    }
}

/// A broadcast core whose dissemination phase (a tree, gossip) is followed
/// by a ring correction: what the papers' metrics ask of it besides the
/// [`Protocol`](crate::protocol::Protocol) contract.
pub trait Dissemination {
    /// True once the rank was colored by dissemination (a tree or gossip
    /// message, or it is the root), not by a correction message. The gaps
    /// correction must close are the runs of ranks for which this is false
    /// (Corrected Trees, Section 3.2, maximum gap g_max).
    fn colored_by_dissemination(&self) -> bool;
}

/// A correction send: which way, and how far from the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// [`Tag::Leftward`], [`Tag::Rightward`] or (delayed correction's
    /// reply) [`Tag::Stop`].
    pub tag: Tag,
    /// Ring distance from the sender: to its left for leftward messages and
    /// stop replies, to its right for rightward ones.
    pub dist: u32,
}

const NONE: u32 = u32::MAX;
const REPLIES: usize = 2;
const UNSET: Tick = Tick::MAX;

/// One rank's correction state. Distances are ring distances from this rank.
///
/// Guarantees: it sends left first and then alternates, never to the same
/// distance twice in one direction, and never more than the whole ring
/// (`left + right <= P - 1`); [`Sweep::finished`] is final. At most two
/// stop replies wait at a time (delayed correction): a third rightward
/// sender heard before the first two were answered gets no reply from this
/// rank.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// Left distances covered: sent to, or known to be covered by a neighbour.
    left: u32,
    right: u32,
    /// Distance of the nearest correction sender heard on each side.
    nearest_left: u32,
    nearest_right: u32,
    /// Delayed: when the first left message went out.
    first_left_at: Tick,
    /// Delayed: left distances of rightward senders still to be stopped,
    /// in order, `NONE` after the last (no count field: the state stays 32
    /// bytes, which 64K simulated cores feel).
    replies: [u32; REPLIES],
}

impl Default for Sweep {
    fn default() -> Self {
        Sweep::new()
    }
}

impl Sweep {
    /// A sweep that has sent nothing and heard nothing.
    pub fn new() -> Self {
        Sweep {
            left: 0,
            right: 0,
            nearest_left: NONE,
            nearest_right: NONE,
            first_left_at: UNSET,
            replies: [NONE; REPLIES],
        }
    }

    /// Takes note of a correction message `dist` away on the side `tag`
    /// says. `by_dissemination` tells whether this rank was colored by
    /// dissemination (only such ranks answer delayed correction's sweeps).
    pub fn observe(&mut self, kind: Correction, tag: Tag, dist: u32, by_dissemination: bool) {
        if tag.from_right() {
            self.nearest_right = self.nearest_right.min(dist);
            if let Correction::Optimized { distance } = kind {
                // The sender covers its d nearest left neighbours, our nearest d - δ among them.
                self.left = self.left.max(distance.saturating_sub(dist));
            }
        } else {
            self.nearest_left = self.nearest_left.min(dist);
            if let Correction::Optimized { distance } = kind {
                self.right = self.right.max(distance.saturating_sub(dist));
            }
            if matches!(kind, Correction::Delayed { .. })
                && by_dissemination
                && !self.replies.contains(&dist)
            {
                if let Some(free) = self.replies.iter_mut().find(|r| **r == NONE) {
                    *free = dist;
                }
            }
        }
    }

    /// The next send of an active rank at `now` on a ring of `procs`, taken
    /// (the state records it as sent), or `None` if it has nothing to send
    /// (now or, for `delayed`, until its deadline).
    pub fn next(&mut self, kind: Correction, now: Tick, procs: u32) -> Option<Step> {
        let ring = procs.saturating_sub(1);
        if self.replies[0] != NONE {
            let dist = self.replies[0];
            self.replies.copy_within(1.., 0);
            self.replies[REPLIES - 1] = NONE;
            return Some(Step {
                tag: Tag::Stop,
                dist,
            });
        }
        if self.left + self.right >= ring {
            return None;
        }
        let (left_open, right_open) = match kind {
            Correction::None => return None,
            Correction::Opportunistic { distance }
            | Correction::Optimized { distance }
            | Correction::Relaying { distance }
            | Correction::Forwarding { distance } => (self.left < distance, self.right < distance),
            Correction::Checked | Correction::CheckedSync => (
                self.left < self.nearest_left,
                self.right < self.nearest_right,
            ),
            Correction::Delayed { delay } => match self.first_left_at {
                UNSET => {
                    self.first_left_at = now;
                    (true, false)
                }
                at => (
                    false,
                    now >= at.saturating_add(delay) && self.nearest_right == NONE,
                ),
            },
        };
        if left_open && (self.left <= self.right || !right_open) {
            self.left += 1;
            Some(Step {
                tag: Tag::Leftward,
                dist: self.left,
            })
        } else if right_open {
            self.right += 1;
            Some(Step {
                tag: Tag::Rightward,
                dist: self.right,
            })
        } else {
            None
        }
    }

    /// True when the sweep will never send again, whatever it hears.
    pub fn finished(&self, kind: Correction, procs: u32) -> bool {
        if self.left + self.right >= procs.saturating_sub(1)
            && !matches!(kind, Correction::Delayed { .. })
        {
            return true;
        }
        match kind {
            Correction::None => true,
            Correction::Opportunistic { distance }
            | Correction::Optimized { distance }
            | Correction::Relaying { distance }
            | Correction::Forwarding { distance } => {
                self.left >= distance && self.right >= distance
            }
            Correction::Checked | Correction::CheckedSync => {
                self.left >= self.nearest_left && self.right >= self.nearest_right
            }
            Correction::Delayed { .. } => false,
        }
    }

    /// When delayed correction wants to be woken to decide on sweeping
    /// right: while it has heard nothing from the right, has not started
    /// the sweep, and the ring is not covered yet.
    pub fn deadline(&self, kind: Correction, procs: u32) -> Option<Tick> {
        let open = self.left + self.right < procs.saturating_sub(1);
        match (kind, self.first_left_at) {
            (Correction::Delayed { delay }, at)
                if at != UNSET && self.nearest_right == NONE && self.right == 0 && open =>
            {
                Some(at.saturating_add(delay))
            }
            _ => None,
        }
    }
}
