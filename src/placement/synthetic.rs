//! Synthetic machine descriptions such as `package:2 l3:4 core:8 pu:2`, for
//! tests and for planning machines we do not have.
//!
//! The format follows hwloc's synthetic topologies: levels outermost first,
//! each `LEVEL:COUNT`, the number of children per parent. Two extensions
//! describe uneven machines: a count list (`l3:3,2`) is cycled over the
//! parents in logical order (package 0 gets 3 L3 groups, package 1 gets 2,
//! package 2 gets 3, ...), and levels may be left out (no NUMA level above).
//! A missing `pu` level means one PU per core. OS cpu ids are numbered
//! 0, 1, ... in tree order, as hwloc numbers synthetic PUs.

use crate::error::ConfigError;
use crate::placement::machine::{KeyedPu, Level, Machine};

/// The largest synthetic machine, in PUs.
pub const MAX_SYNTHETIC_PUS: usize = 1 << 20;

/// Parses a synthetic description into a [`Machine`]. Errors (never panics)
/// on unknown or repeated levels, levels out of order, zero or unparsable
/// counts, and machines over [`MAX_SYNTHETIC_PUS`] PUs.
pub fn synthetic(spec: &str) -> Result<Machine, ConfigError> {
    let bad = |why: String| ConfigError::BadSynthetic {
        spec: spec.to_string(),
        why,
    };
    let mut levels: Vec<(Level, Vec<usize>)> = Vec::new();
    for token in spec.split_whitespace() {
        let (name, counts) = token
            .split_once(':')
            .ok_or_else(|| bad(format!("'{token}' is not LEVEL:COUNT")))?;
        let level: Level = name.parse().map_err(|_| {
            bad(format!(
                "unknown level '{name}'; use package, numa, l3, core or pu"
            ))
        })?;
        if let Some(&(prev, _)) = levels.last() {
            if prev >= level {
                return Err(bad(format!(
                    "'{level}' comes after '{prev}': give each level once, outermost first (package, numa, l3, core, pu)"
                )));
            }
        }
        let counts = counts
            .split(',')
            .map(|c| match c.trim().parse::<usize>() {
                Ok(0) => Err(bad(format!("'{token}': a count must be at least 1"))),
                Ok(n) => Ok(n),
                Err(_) => Err(bad(format!("'{token}': '{c}' is not a count"))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        levels.push((level, counts));
    }
    if levels.is_empty() {
        return Err(bad("no levels given".into()));
    }
    if levels.last().map(|&(l, _)| l) != Some(Level::Pu) {
        levels.push((Level::Pu, vec![1]));
    }
    // Expand level by level: each entry is the key path of one domain.
    let mut paths: Vec<Vec<u64>> = vec![Vec::new()];
    for (level, counts) in &levels {
        let total = (0..paths.len()).fold(0usize, |sum, i| {
            sum.saturating_add(counts[i % counts.len()])
        });
        if total > MAX_SYNTHETIC_PUS {
            return Err(bad(format!(
                "more than {MAX_SYNTHETIC_PUS} {level} domains; describe a smaller machine"
            )));
        }
        let mut next = Vec::with_capacity(total);
        for (i, path) in paths.iter().enumerate() {
            for k in 0..counts[i % counts.len()] {
                let mut p = path.clone();
                p.push(k as u64);
                next.push(p);
            }
        }
        paths = next;
    }
    let pus: Vec<KeyedPu> = paths
        .into_iter()
        .enumerate()
        .map(|(cpu, key)| (key, cpu as u32))
        .collect();
    Machine::from_keys(
        format!("synthetic '{spec}'"),
        levels.into_iter().map(|(l, _)| l).collect(),
        pus,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balanced_and_uneven_machines() {
        let m = synthetic("package:2 l3:4 core:8 pu:2").unwrap();
        assert_eq!(m.pus(), 128);
        assert_eq!(m.domains(Level::L3).len(), 8);
        assert_eq!(m.domains(Level::Core)[3], 6..8);
        assert_eq!(m.cpus()[..4], [0, 1, 2, 3]);
        assert_eq!(m.shape(), "package:2 l3:4 core:8 pu:2");
        let u = synthetic("package:2 l3:3,2 core:4,3").unwrap();
        // Package 0: L3s of 4, 3, 4 cores; package 1: 3, 4.
        assert_eq!(u.pus(), 18);
        assert_eq!(
            u.levels(),
            &[Level::Package, Level::L3, Level::Core, Level::Pu]
        );
        assert_eq!(u.domains(Level::Package), &[0..11, 11..18]);
        assert_eq!(u.shape(), "package:2 l3:2-3 core:3-4 pu:1");
    }

    #[test]
    fn bad_descriptions_are_errors() {
        for spec in [
            "",
            "package",
            "package:0",
            "package:x",
            "core:2 package:2",
            "l3:2 l3:2",
            "cache:2",
            "package:1024 core:1024 pu:1024",
        ] {
            assert!(
                matches!(synthetic(spec), Err(ConfigError::BadSynthetic { .. })),
                "{spec}"
            );
        }
    }
}
