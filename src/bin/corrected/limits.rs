//! Limits the command line checks before it starts anything: ranges of
//! times and the memory a run or simulation will need.

use crate::error::CliError;

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

/// `Err(OutOfRange)` for `option`, with the value as given.
pub fn out_of_range(
    option: &'static str,
    value: impl ToString,
    why: impl Into<String>,
    hint: impl Into<String>,
) -> CliError {
    CliError::OutOfRange {
        option,
        value: value.to_string(),
        why: why.into(),
        hint: hint.into(),
    }
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
