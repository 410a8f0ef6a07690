//! The topology model: a tree of failure domains (package, NUMA node, L3
//! group, core, processing unit) with OS cpu ids at the leaves.
//!
//! Leaves (processing units, PUs) are kept in *tree order*: the order of a
//! depth-first walk, so every domain covers a contiguous range of leaves.
//! Domains are numbered per level in that order (their *logical index*, as
//! hwloc numbers them), and named `level:index`, e.g. `l3:0`.

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use crate::error::ConfigError;

/// A kind of failure domain. Levels nest in this order, outermost first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// A processor package (socket).
    Package,
    /// A NUMA node (memory locality domain).
    Numa,
    /// The PUs sharing one L3 cache.
    L3,
    /// A physical core.
    Core,
    /// A processing unit (hardware thread): a leaf, one OS cpu id.
    Pu,
}

impl Level {
    /// Every level, outermost first.
    pub const ALL: [Level; 5] = [
        Level::Package,
        Level::Numa,
        Level::L3,
        Level::Core,
        Level::Pu,
    ];

    /// The name used in domain names and synthetic descriptions.
    pub fn name(self) -> &'static str {
        match self {
            Level::Package => "package",
            Level::Numa => "numa",
            Level::L3 => "l3",
            Level::Core => "core",
            Level::Pu => "pu",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Level {
    type Err = ConfigError;

    /// Accepts the names of [`Level::name`] and the aliases `socket`, `pack`,
    /// `node`, `numanode`, `l3cache`, `thread`, case-insensitively.
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "package" | "pack" | "socket" => Level::Package,
            "numa" | "node" | "numanode" => Level::Numa,
            "l3" | "l3cache" => Level::L3,
            "core" => Level::Core,
            "pu" | "thread" => Level::Pu,
            other => {
                return Err(ConfigError::UnknownDomain {
                    domain: s.to_string(),
                    why: format!("no level named '{other}'; use package, numa, l3, core or pu"),
                })
            }
        })
    }
}

/// The name of one domain: a level and a logical index within it (`l3:0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DomainRef {
    /// The level.
    pub level: Level,
    /// The logical index among that level's domains, in tree order.
    pub index: usize,
}

impl fmt::Display for DomainRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.level, self.index)
    }
}

impl FromStr for DomainRef {
    type Err = ConfigError;

    /// Parses `LEVEL:INDEX`, e.g. `l3:0` or `package:1`.
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        let bad = |why: &str| ConfigError::UnknownDomain {
            domain: s.to_string(),
            why: why.to_string(),
        };
        let (level, index) = s
            .split_once(':')
            .ok_or_else(|| bad("expected LEVEL:INDEX, e.g. l3:0"))?;
        Ok(DomainRef {
            level: level
                .parse()
                .map_err(|_| bad("unknown level; use package, numa, l3, core or pu (e.g. l3:0)"))?,
            index: index
                .trim()
                .parse()
                .map_err(|_| bad("the index must be a number, e.g. l3:0"))?,
        })
    }
}

/// A machine: the levels it has, its PUs in tree order, and per level its
/// domains as ranges of PUs.
///
/// Guarantees: the levels are a subset of [`Level::ALL`] in that order and
/// end with [`Level::Pu`]; at every level the domains partition the PUs into
/// non-empty contiguous ranges, each inside one domain of the level above; OS
/// cpu ids are distinct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    source: String,
    levels: Vec<Level>,
    cpus: Vec<u32>,
    domains: Vec<Vec<Range<usize>>>,
}

/// One PU as a source sees it: the key of its domain at every level of the
/// machine (the last level, [`Level::Pu`], keyed by anything unique), and
/// its OS cpu id. Keys only need to be unique among siblings.
pub(crate) type KeyedPu = (Vec<u64>, u32);

impl Machine {
    /// Builds a machine from PUs keyed per level. The tree order sorts PUs
    /// by their keys, outermost level first, so keys choose sibling order.
    pub(crate) fn from_keys(
        source: impl Into<String>,
        levels: Vec<Level>,
        mut pus: Vec<KeyedPu>,
    ) -> Result<Machine, ConfigError> {
        let source = source.into();
        if pus.is_empty() {
            return Err(ConfigError::BadTopology(format!(
                "{source}: no processing unit found (or none this process may use)"
            )));
        }
        debug_assert_eq!(levels.last(), Some(&Level::Pu));
        debug_assert!(pus.iter().all(|(k, _)| k.len() == levels.len()));
        pus.sort();
        let cpus: Vec<u32> = pus.iter().map(|&(_, cpu)| cpu).collect();
        let mut sorted = cpus.clone();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(ConfigError::BadTopology(format!(
                "{source}: cpu {} appears twice",
                w[0]
            )));
        }
        let domains = (0..levels.len())
            .map(|depth| {
                let mut ranges: Vec<Range<usize>> = Vec::new();
                for i in 0..pus.len() {
                    let same = i > 0 && pus[i].0[..=depth] == pus[i - 1].0[..=depth];
                    match ranges.last_mut() {
                        Some(r) if same => r.end = i + 1,
                        _ => ranges.push(i..i + 1),
                    }
                }
                ranges
            })
            .collect();
        Ok(Machine {
            source,
            levels,
            cpus,
            domains,
        })
    }

    /// Where the description came from (`synthetic '...'`, a sysfs path, hwloc).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The levels this machine has, outermost first; always ends with [`Level::Pu`].
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// Number of PUs.
    pub fn pus(&self) -> usize {
        self.cpus.len()
    }

    /// OS cpu ids of the PUs, in tree order.
    pub fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    /// The domains of `level` as ranges of PU positions (tree order), in
    /// logical order; empty if the machine has no such level.
    pub fn domains(&self, level: Level) -> &[Range<usize>] {
        self.depth(level).map_or(&[], |d| &self.domains[d])
    }

    /// The position of `level` in [`Machine::levels`].
    pub fn depth(&self, level: Level) -> Option<usize> {
        self.levels.iter().position(|&l| l == level)
    }

    /// The PU positions (tree order) of one domain, or a typed error naming
    /// the domains that exist.
    pub fn domain(&self, domain: DomainRef) -> Result<Range<usize>, ConfigError> {
        let Some(depth) = self.depth(domain.level) else {
            return Err(ConfigError::UnknownDomain {
                domain: domain.to_string(),
                why: format!(
                    "this machine has no {} level; its levels are {}",
                    domain.level,
                    self.level_names()
                ),
            });
        };
        let all = &self.domains[depth];
        all.get(domain.index)
            .cloned()
            .ok_or_else(|| ConfigError::UnknownDomain {
                domain: domain.to_string(),
                why: format!(
                    "this machine has {} {l} domains ({l}:0..{l}:{})",
                    all.len(),
                    all.len().saturating_sub(1),
                    l = domain.level
                ),
            })
    }

    /// The children of a domain at `depth` (or of the whole machine for
    /// `depth == None`): their index range at `depth + 1`.
    pub(crate) fn children(&self, depth: Option<usize>, index: usize) -> Range<usize> {
        let (span, below) = match depth {
            None => (0..self.pus(), 0),
            Some(d) => (self.domains[d][index].clone(), d + 1),
        };
        let kids = &self.domains[below];
        let first = kids.partition_point(|r| r.start < span.start);
        let last = kids.partition_point(|r| r.start < span.end);
        first..last
    }

    /// The same machine with only the PUs whose OS cpu id `allowed` accepts
    /// (a `taskset` or cgroup cpuset); domains left empty disappear and the
    /// others are renumbered. Errors if no PU is left.
    pub fn restrict(&self, allowed: impl Fn(u32) -> bool) -> Result<Machine, ConfigError> {
        let pus = (0..self.pus())
            .filter(|&i| allowed(self.cpus[i]))
            .map(|i| {
                let key = self
                    .domains
                    .iter()
                    .map(|ranges| ranges.partition_point(|r| r.end <= i) as u64)
                    .collect();
                (key, self.cpus[i])
            })
            .collect();
        Machine::from_keys(
            format!("{} (restricted)", self.source),
            self.levels.clone(),
            pus,
        )
    }

    /// The machine restricted to the cpus this process may run on (its
    /// affinity mask, as `core_affinity` reports it); unchanged if the mask
    /// cannot be read.
    pub fn restrict_to_affinity(&self) -> Result<Machine, ConfigError> {
        match core_affinity::get_core_ids() {
            Some(ids) if !ids.is_empty() => {
                let allowed: Vec<u32> = ids.iter().map(|c| c.id as u32).collect();
                if self.cpus.iter().all(|c| allowed.contains(c)) {
                    Ok(self.clone())
                } else {
                    self.restrict(|c| allowed.contains(&c))
                }
            }
            _ => Ok(self.clone()),
        }
    }

    /// A short description such as `package:2 l3:4 core:8 pu:2`: per level,
    /// the number of children per parent (a range `min-max` if they differ).
    pub fn shape(&self) -> String {
        let mut parts = Vec::new();
        for (d, &level) in self.levels.iter().enumerate() {
            let counts: Vec<usize> = match d.checked_sub(1) {
                None => vec![self.children(None, 0).len()],
                Some(up) => (0..self.domains[up].len())
                    .map(|i| self.children(Some(up), i).len())
                    .collect(),
            };
            let lo = counts.iter().min().copied().unwrap_or(0);
            let hi = counts.iter().max().copied().unwrap_or(0);
            if lo == hi {
                parts.push(format!("{level}:{lo}"));
            } else {
                parts.push(format!("{level}:{lo}-{hi}"));
            }
        }
        parts.join(" ")
    }

    fn level_names(&self) -> String {
        self.levels
            .iter()
            .map(|l| l.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyed(keys: &[(&[u64], u32)]) -> Vec<KeyedPu> {
        keys.iter().map(|&(k, c)| (k.to_vec(), c)).collect()
    }

    #[test]
    fn domains_are_contiguous_in_tree_order() {
        // Two cores with two threads each; siblings are cpus i and i+2.
        let m = Machine::from_keys(
            "test",
            vec![Level::Core, Level::Pu],
            keyed(&[(&[0, 0], 0), (&[1, 1], 1), (&[0, 2], 2), (&[1, 3], 3)]),
        )
        .unwrap();
        assert_eq!(m.cpus(), &[0, 2, 1, 3]);
        assert_eq!(m.domains(Level::Core), &[0..2, 2..4]);
        assert_eq!(m.children(None, 0), 0..2);
        assert_eq!(m.children(Some(0), 1), 2..4);
        assert_eq!(m.shape(), "core:2 pu:2");
        let r = m.restrict(|c| c != 2).unwrap();
        assert_eq!(r.cpus(), &[0, 1, 3]);
        assert_eq!(r.shape(), "core:2 pu:1-2");
        assert!(m.restrict(|_| false).is_err());
    }

    #[test]
    fn domain_names_parse_and_are_checked() {
        let d: DomainRef = "l3:2".parse().unwrap();
        assert_eq!(
            d,
            DomainRef {
                level: Level::L3,
                index: 2
            }
        );
        assert_eq!(d.to_string(), "l3:2");
        assert!("l4:0".parse::<DomainRef>().is_err());
        assert!("l3".parse::<DomainRef>().is_err());
        assert!("l3:x".parse::<DomainRef>().is_err());
        let m = Machine::from_keys("t", vec![Level::Pu], keyed(&[(&[0], 0)])).unwrap();
        assert!(matches!(
            m.domain(d),
            Err(ConfigError::UnknownDomain { .. })
        ));
        assert_eq!(m.domain("pu:0".parse().unwrap()).unwrap(), 0..1);
        assert!(m.domain("pu:1".parse().unwrap()).is_err());
    }
}
