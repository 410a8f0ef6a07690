//! Placement policies: which PU each rank of the correction ring sits on.
//!
//! * `compact`: ranks fill the machine in tree order (rank r on the r-th PU):
//!   neighbours on the ring share a core, an L3, a package.
//! * `scatter`: ranks are dealt round-robin over the domains of the
//!   outermost level that has more than one (usually the packages), and fill
//!   each of those compactly: what `--map-by package` does in MPI launchers.
//! * `separated`: a domain-aware digit reversal. At every node of the domain
//!   tree the node's ring positions are dealt to its children in proportion
//!   to their share, each child's next position being the one whose ideal
//!   place `(k + 1/2) · n / n_child` comes first (ties to the lower child).
//!   On a balanced machine this is exactly the mixed-radix digit reversal:
//!   rank i's least significant digit picks the package, the next the L3
//!   within it, and so on, so the members of a domain of size |D| sit every
//!   P/|D| positions. With fewer ranks than PUs, every node first shares its
//!   ranks among its children as evenly as their sizes allow.

use std::fmt;
use std::str::FromStr;

use crate::error::ConfigError;
use crate::placement::layout::Placement;
use crate::placement::machine::Machine;

/// A placement policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Ranks in tree order: ring neighbours share domains.
    Compact,
    /// Round-robin over the outermost level with two or more domains,
    /// compact inside each.
    Scatter,
    /// Ring neighbours (and interleaved subtrees) in different domains at
    /// every level, as far as the machine allows.
    #[default]
    Separated,
}

impl Policy {
    /// Every policy.
    pub const ALL: [Policy; 3] = [Policy::Compact, Policy::Scatter, Policy::Separated];

    /// Places `ranks` ranks on `machine`, one per PU. Errors with
    /// [`ConfigError::ZeroRanks`] or [`ConfigError::NotEnoughPus`]; never panics.
    pub fn place(self, machine: &Machine, ranks: u32) -> Result<Placement, ConfigError> {
        if ranks == 0 {
            return Err(ConfigError::ZeroRanks);
        }
        let p = ranks as usize;
        if p > machine.pus() {
            return Err(ConfigError::NotEnoughPus {
                ranks,
                pus: machine.pus(),
            });
        }
        let leaves = match self {
            Policy::Compact => (0..p).collect(),
            Policy::Scatter => scatter(machine, p),
            Policy::Separated => separated(machine, p),
        };
        Ok(Placement::new(self, machine, leaves))
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Policy::Compact => "compact",
            Policy::Scatter => "scatter",
            Policy::Separated => "separated",
        })
    }
}

impl FromStr for Policy {
    type Err = ConfigError;

    /// `compact`, `scatter` or `separated`.
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        match s.trim() {
            "compact" => Ok(Policy::Compact),
            "scatter" => Ok(Policy::Scatter),
            "separated" => Ok(Policy::Separated),
            _ => Err(ConfigError::BadPlacement(s.to_string())),
        }
    }
}

/// Round-robin over the outermost level with two or more domains; leaves
/// taken in tree order inside each; full domains are skipped.
fn scatter(machine: &Machine, p: usize) -> Vec<usize> {
    let Some(groups) = machine
        .levels()
        .iter()
        .map(|&l| machine.domains(l))
        .find(|d| d.len() > 1)
    else {
        return (0..p).collect();
    };
    let mut next: Vec<usize> = groups.iter().map(|r| r.start).collect();
    let mut out = Vec::with_capacity(p);
    while out.len() < p {
        for (g, r) in groups.iter().enumerate() {
            if out.len() < p && next[g] < r.end {
                out.push(next[g]);
                next[g] += 1;
            }
        }
    }
    out
}

/// Shares `demand` among children of the given capacities as evenly as the
/// capacities allow (one at a time, round-robin).
fn share(capacity: &[usize], mut demand: usize) -> Vec<usize> {
    let mut got = vec![0; capacity.len()];
    while demand > 0 {
        for (g, &c) in got.iter_mut().zip(capacity) {
            if demand > 0 && *g < c {
                *g += 1;
                demand -= 1;
            }
        }
    }
    got
}

/// The separated layout: `out[rank]` = leaf position.
fn separated(machine: &Machine, p: usize) -> Vec<usize> {
    let mut out = vec![0; p];
    let slots: Vec<usize> = (0..p).collect();
    deal(machine, None, 0, &slots, &mut out);
    out
}

/// Deals `slots` (ring positions, increasing, out of `out.len()`) among the
/// children of domain `index` at `depth` (`None`: the machine), then recurses.
///
/// Each slot goes to the child whose next ideal position `(2k+1) n / (2
/// want)` comes first (ties to the lower child), unless that child already
/// holds a ring neighbour of the slot and another child is due by the next
/// slot: where the parent's own slots touch (a parent holding more than half
/// of its own parent's ranks), touching slots go to different children.
/// Slots are dealt starting right after a ring position the parent does not
/// hold, so that the wrap-around is handled like any other neighbour.
fn deal(machine: &Machine, depth: Option<usize>, index: usize, slots: &[usize], out: &mut [usize]) {
    let below = depth.map_or(0, |d| d + 1);
    if below == machine.levels().len() {
        // A PU: exactly one slot.
        let leaf = machine.domains(machine.levels()[below - 1])[index].start;
        out[slots[0]] = leaf;
        return;
    }
    let kids = machine.children(depth, index);
    let level = machine.levels()[below];
    let capacity: Vec<usize> = machine.domains(level)[kids.clone()]
        .iter()
        .map(|r| r.len())
        .collect();
    let want = share(&capacity, slots.len());
    let (n, ring) = (slots.len(), out.len());
    let adjacent = |a: usize, b: usize| (a + 1) % ring == b;
    // Start right after a ring position that is not ours, so that our first
    // and last slots are not ring neighbours (unless every position is ours).
    let start = (0..n)
        .find(|&i| !adjacent(slots[(i + n - 1) % n], slots[i]))
        .unwrap_or(0);
    let mut owner = vec![usize::MAX; n];
    let mut dealt = vec![0usize; want.len()];
    // a's next ideal position comes before b's: (2k_a+1)/(2 want_a) < (2k_b+1)/(2 want_b).
    let earlier = |dealt: &[usize], a: usize, b: usize| {
        (2 * dealt[a] + 1) * want[b] < (2 * dealt[b] + 1) * want[a]
    };
    for step in 0..n {
        let (i, prev, next) = (
            (start + step) % n,
            (start + step + n - 1) % n,
            (start + step + 1) % n,
        );
        let before = (step > 0 && adjacent(slots[prev], slots[i])).then(|| owner[prev]);
        let after =
            (step + 1 == n && step > 0 && adjacent(slots[i], slots[next])).then(|| owner[next]);
        let neighbour = |c: usize| before == Some(c) || after == Some(c);
        // Due by the next step: ideal position (2k+1) n / (2 want) <= step + 1.
        let due = |dealt: &[usize], c: usize| (2 * dealt[c] + 1) * n <= 2 * want[c] * (step + 1);
        let (mut first, mut other): (Option<usize>, Option<usize>) = (None, None);
        for c in (0..want.len()).filter(|&c| dealt[c] < want[c]) {
            if first.map_or(true, |f| earlier(&dealt, c, f)) {
                first = Some(c);
            }
            if !neighbour(c) && due(&dealt, c) && other.map_or(true, |o| earlier(&dealt, c, o)) {
                other = Some(c);
            }
        }
        let first = first.expect("the wants add up to the slots");
        let c = match other {
            Some(o) if neighbour(first) => o,
            _ => first,
        };
        dealt[c] += 1;
        owner[i] = c;
    }
    for c in 0..want.len() {
        let mine: Vec<usize> = slots
            .iter()
            .zip(&owner)
            .filter(|&(_, &o)| o == c)
            .map(|(&s, _)| s)
            .collect();
        if !mine.is_empty() {
            deal(machine, Some(below), kids.start + c, &mine, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::synthetic::synthetic;

    #[test]
    fn separated_is_digit_reversal_on_balanced_machines() {
        let m = synthetic("package:2 l3:2 core:2 pu:2").unwrap();
        let p = Policy::Separated.place(&m, 16).unwrap();
        // Rank i = d0 + 2 d1 + 4 d2 + 8 d3 sits on PU d3 + 2 d2 + 4 d1 + 8 d0.
        let reversed: Vec<u32> = (0..16u32).map(|i| i.reverse_bits() >> 28).collect();
        assert_eq!(p.cpus(), &reversed[..]);
    }

    #[test]
    fn compact_and_scatter() {
        let m = synthetic("package:2 core:3").unwrap();
        assert_eq!(Policy::Compact.place(&m, 4).unwrap().cpus(), &[0, 1, 2, 3]);
        assert_eq!(
            Policy::Scatter.place(&m, 6).unwrap().cpus(),
            &[0, 3, 1, 4, 2, 5]
        );
        assert_eq!(Policy::Scatter.place(&m, 3).unwrap().cpus(), &[0, 3, 1]);
        assert_eq!(
            Policy::Separated.place(&m, 4).unwrap().cpus(),
            &[0, 3, 1, 4]
        );
        assert!(matches!(
            Policy::Compact.place(&m, 7),
            Err(ConfigError::NotEnoughPus { ranks: 7, pus: 6 })
        ));
        assert!(matches!(
            Policy::Compact.place(&m, 0),
            Err(ConfigError::ZeroRanks)
        ));
        assert!("spread".parse::<Policy>().is_err());
    }

    #[test]
    fn shares_are_even_within_capacity() {
        assert_eq!(share(&[4, 1, 4], 7), vec![3, 1, 3]);
        assert_eq!(share(&[2, 2], 4), vec![2, 2]);
    }
}
