//! The machine as Linux sysfs describes it (no system dependency).
//!
//! Reads, under a root that is normally `/sys/devices/system`:
//!
//! * `cpu/online` (else `cpu/present`, else the `cpu/cpuN` directories): the PUs;
//! * `cpu/cpuN/topology/physical_package_id`: the package;
//! * `node/nodeM/cpulist`: the NUMA nodes (level left out unless there are two or more);
//! * `cpu/cpuN/cache/indexK/{level,type,shared_cpu_list}`: the L3 group, keyed
//!   by the lowest cpu sharing the cache (level left out if no cpu has one);
//! * `cpu/cpuN/topology/core_cpus_list` (else `thread_siblings_list`, else
//!   `die_id` and `core_id`): the core.
//!
//! Levels nest as package, NUMA node, L3, core, PU; a NUMA node that spans
//! several packages appears once per package (the tree stays a tree).

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::ConfigError;
use crate::placement::machine::{KeyedPu, Level, Machine};

/// Where Linux puts the cpu and node directories.
pub const SYSFS_ROOT: &str = "/sys/devices/system";

/// Parses a Linux cpu list such as `0-3,8,10-11` into ids; the empty list is
/// empty. Errors name the text.
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, ConfigError> {
    let bad = || ConfigError::BadTopology(format!("'{}' is not a cpu list", text.trim()));
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let (lo, hi): (u32, u32) = (
            lo.trim().parse().map_err(|_| bad())?,
            hi.trim().parse().map_err(|_| bad())?,
        );
        if lo > hi || hi - lo > 1 << 20 {
            return Err(bad());
        }
        out.extend(lo..=hi);
    }
    Ok(out)
}

fn read(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok()
}

fn read_num(path: &Path) -> Option<i64> {
    read(path)?.trim().parse().ok()
}

fn read_list(path: &Path) -> Result<Option<Vec<u32>>, ConfigError> {
    read(path)
        .map(|t| {
            parse_cpu_list(&t)
                .map_err(|e| ConfigError::BadTopology(format!("{}: {e}", path.display())))
        })
        .transpose()
}

/// The PUs of the tree under `root`: `online`, else `present`, else every
/// `cpuN` directory.
fn cpu_ids(cpu_dir: &Path) -> Result<Vec<u32>, ConfigError> {
    for list in ["online", "present"] {
        if let Some(ids) = read_list(&cpu_dir.join(list))? {
            return Ok(ids);
        }
    }
    let entries = fs::read_dir(cpu_dir)
        .map_err(|e| ConfigError::BadTopology(format!("cannot read {}: {e}", cpu_dir.display())))?;
    let mut ids: Vec<u32> = entries
        .filter_map(|e| {
            e.ok()?
                .file_name()
                .to_str()?
                .strip_prefix("cpu")?
                .parse()
                .ok()
        })
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

/// The NUMA node of every cpu, from `node/nodeM/cpulist`; `None` if the
/// tree has no NUMA nodes.
fn numa_nodes(node_dir: &Path) -> Result<Option<Vec<(u32, u64)>>, ConfigError> {
    let Ok(entries) = fs::read_dir(node_dir) else {
        return Ok(None);
    };
    let mut map = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(node) = name
            .to_str()
            .and_then(|n| n.strip_prefix("node")?.parse::<u64>().ok())
        else {
            continue;
        };
        if let Some(cpus) = read_list(&entry.path().join("cpulist"))? {
            map.extend(cpus.into_iter().map(|c| (c, node)));
        }
    }
    Ok((!map.is_empty()).then_some(map))
}

/// The lowest cpu sharing `cpu`'s L3 cache, if sysfs describes one.
fn l3_key(cpu_path: &Path) -> Result<Option<u64>, ConfigError> {
    let Ok(entries) = fs::read_dir(cpu_path.join("cache")) else {
        return Ok(None);
    };
    for entry in entries.flatten() {
        let p = entry.path();
        if read_num(&p.join("level")) != Some(3) {
            continue;
        }
        if read(&p.join("type")).is_some_and(|t| t.trim() == "Instruction") {
            continue;
        }
        if let Some(shared) = read_list(&p.join("shared_cpu_list"))? {
            return Ok(shared.iter().min().map(|&c| c as u64));
        }
    }
    Ok(None)
}

/// The key of `cpu`'s core: the lowest cpu of its core, or (die, core id).
fn core_key(topo: &Path, cpu: u32) -> Result<u64, ConfigError> {
    for list in ["core_cpus_list", "thread_siblings_list"] {
        if let Some(cpus) = read_list(&topo.join(list))? {
            if let Some(&min) = cpus.iter().min() {
                return Ok(min as u64);
            }
        }
    }
    match read_num(&topo.join("core_id")) {
        Some(core) if core >= 0 => {
            let die = read_num(&topo.join("die_id")).unwrap_or(0).max(0) as u64;
            Ok((die << 32) | core as u64)
        }
        // No core information: every PU is its own core.
        _ => Ok(cpu as u64),
    }
}

/// Reads the machine described by the sysfs tree under `root` (a directory
/// holding `cpu/` and, optionally, `node/`), with every PU it lists; see the
/// module documentation for the files read. Errors if there is no cpu
/// directory, a list cannot be parsed, or no PU is found.
pub fn from_sysfs_root(root: impl AsRef<Path>) -> Result<Machine, ConfigError> {
    let root = root.as_ref();
    let cpu_dir: PathBuf = root.join("cpu");
    let ids = cpu_ids(&cpu_dir)?;
    // One NUMA node says nothing a package does not: left out, as with hwloc.
    let numa = numa_nodes(&root.join("node"))?.filter(|m| m.iter().any(|&(_, n)| n != m[0].1));
    let mut rows = Vec::with_capacity(ids.len());
    for &cpu in &ids {
        let path = cpu_dir.join(format!("cpu{cpu}"));
        let topo = path.join("topology");
        let package = read_num(&topo.join("physical_package_id"))
            .unwrap_or(0)
            .max(0) as u64;
        let node = numa.as_ref().map(|m| {
            m.iter()
                .find(|&&(c, _)| c == cpu)
                .map_or(u64::MAX, |&(_, n)| n)
        });
        rows.push((package, node, l3_key(&path)?, core_key(&topo, cpu)?, cpu));
    }
    let has_l3 = rows.iter().any(|r| r.2.is_some());
    let mut levels = vec![Level::Package];
    levels.extend(numa.is_some().then_some(Level::Numa));
    levels.extend(has_l3.then_some(Level::L3));
    levels.extend([Level::Core, Level::Pu]);
    let pus: Vec<KeyedPu> = rows
        .into_iter()
        .map(|(package, node, l3, core, cpu)| {
            let mut key = vec![package];
            key.extend(node);
            if has_l3 {
                key.push(l3.unwrap_or(u64::MAX));
            }
            key.extend([core, cpu as u64]);
            (key, cpu)
        })
        .collect();
    Machine::from_keys(format!("sysfs {}", root.display()), levels, pus)
}

/// This machine, from `/sys`, restricted to the cpus this process may run on
/// (so `taskset` and cgroup cpusets are respected).
pub fn from_sysfs() -> Result<Machine, ConfigError> {
    from_sysfs_root(SYSFS_ROOT)?.restrict_to_affinity()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpu_list("\n").unwrap(), Vec::<u32>::new());
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
    }
}
