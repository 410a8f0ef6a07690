//! Limits the command line checks before it starts anything: ranges of
//! times and the memory a run or simulation will need.

use corrected::topology::{Shape, TreeSpec};

use crate::error::CliError;

/// The shortest `--timeout` of `corrected run`, in seconds: a rank that
/// shares its core with others may wait out a time slice (milliseconds)
/// before it runs, so shorter operation timeouts fail live ranks.
pub const MIN_TIMEOUT_S: f64 = 0.001;

/// The longest `--timeout` of `corrected run`, in seconds (one day).
pub const MAX_TIMEOUT_S: f64 = 86_400.0;

/// The largest LogP latency or overhead `corrected sim` and `corrected
/// topo` accept, in ticks. With at most 2^30 processes, a correction sweep
/// around the whole ring then stays below 2^53 ticks: times neither
/// overflow nor lose precision in the statistics.
pub const MAX_LOGP_TICKS: u64 = 1_000_000;

/// The largest wait in ticks `corrected sim` accepts: delayed correction's
/// DELAY, `--detector` and the tick of `--die-at` (10^12).
pub const MAX_WAIT_TICKS: u64 = 1_000_000_000_000;

/// Memory the process needs besides what a run sizes by its inputs.
const BASE_BYTES: u64 = 16 << 20;

/// `Err(OutOfRange)` for `option`, with the value as given: a number as
/// it was typed (`18446744073709551000`, not the `f64`'s
/// `18446744073709552000`).
pub fn out_of_range(
    option: &'static str,
    value: impl ToString,
    why: impl Into<String>,
    hint: impl Into<String>,
) -> CliError {
    let value = value.to_string();
    CliError::OutOfRange {
        option,
        value: as_typed(option, &value).unwrap_or(value),
        why: why.into(),
        hint: hint.into(),
    }
}

/// The text typed for `option` (its last `--option V` or `--option=V`)
/// where it is the number `value` spells.
fn as_typed(option: &str, value: &str) -> Option<String> {
    let number = value.parse::<f64>().ok()?;
    let args: Vec<String> = std::env::args().collect();
    let typed = args.iter().enumerate().rev().find_map(|(i, arg)| {
        if arg == option {
            args.get(i + 1).cloned()
        } else {
            arg.strip_prefix(option)?
                .strip_prefix('=')
                .map(String::from)
        }
    })?;
    (typed.trim().parse::<f64>().ok()? == number).then_some(typed)
}

/// Checks a number of ticks of `option` against `max` ([`MAX_LOGP_TICKS`]
/// or [`MAX_WAIT_TICKS`]).
pub fn ticks_at_most(option: &'static str, ticks: u64, max: u64) -> Result<(), CliError> {
    if ticks > max {
        return Err(out_of_range(
            option,
            ticks,
            format!("at most {max} ticks are accepted (larger times would overflow the simulator's clock)"),
            format!("pass {option} {max} or less"),
        ));
    }
    Ok(())
}

/// Checks that a number of operations or runs is at least one.
pub fn at_least_one(option: &'static str, n: u64) -> Result<(), CliError> {
    if n == 0 {
        return Err(out_of_range(
            option,
            n,
            "nothing would run",
            format!("pass {option} 1 or more"),
        ));
    }
    Ok(())
}

/// Bytes of memory this process may still allocate: the kernel's
/// `MemAvailable`, lowered to the room left under a cgroup (v2) limit.
/// `None` where neither can be read (not Linux): the check is then skipped.
pub fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let available = meminfo.as_deref().and_then(|text| {
        text.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib.saturating_mul(1024))
    });
    let read = |file: &str| -> Option<u64> {
        std::fs::read_to_string(format!("/sys/fs/cgroup/{file}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let cgroup =
        read("memory.max").map(|max| max.saturating_sub(read("memory.current").unwrap_or(0)));
    match (available, cgroup) {
        (Some(a), Some(c)) => Some(a.min(c)),
        (a, c) => a.or(c),
    }
}

/// Refuses, before anything is allocated, a run whose estimated need
/// (`need` bytes, plus the process's base) exceeds the memory available.
pub fn check_memory(
    what: &'static str,
    need: u64,
    detail: impl FnOnce() -> String,
    shrink: &'static str,
) -> Result<(), CliError> {
    let need = need.saturating_add(BASE_BYTES);
    match available_memory() {
        Some(available) if need > available => Err(CliError::NotEnoughMemory {
            what,
            need,
            available,
            detail: detail(),
            shrink,
        }),
        _ => Ok(()),
    }
}

/// `a * b` in bytes, saturating (estimates only need to say "too much").
pub fn bytes(a: u64, b: u64) -> u64 {
    a.saturating_mul(b)
}

/// Refuses a tree larger than the team: `multiroot:K` with more roots than
/// its `ranks` (`size`: the option that gives them).
pub fn check_tree_fits(tree: TreeSpec, ranks: u32, size: &str) -> Result<(), CliError> {
    match tree.shape {
        Shape::MultiRoot(k) if k > ranks => Err(out_of_range(
            "--tree",
            tree,
            format!("{k} roots cannot be among {ranks} ranks"),
            format!("pass --tree multiroot:K with K from 2 to {ranks}, or a larger {size}"),
        )),
        _ => Ok(()),
    }
}
