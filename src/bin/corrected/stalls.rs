//! The warning for a failure timeout this machine cannot honour: below
//! twice the longest time a busy thread of a team this size went without
//! running (`corrected::runtime::stalls`).

use std::time::Duration;

use corrected::runtime::stalls;

/// Failure timeouts from this one up are not probed: a stall of half of it
/// is beyond what a scheduler does to a thread that can run.
const PROBED_BELOW: Duration = Duration::from_secs(1);

/// Measures the stalls of `ranks` busy threads if `timeout_ms` (the value
/// of `option`) is below [`PROBED_BELOW`], over four timeouts, and warns
/// on stderr when it is below twice the longest, with a hint from a
/// second's measurement. True if it warned.
pub fn warn_if_below(option: &str, timeout_ms: f64, ranks: u32) -> bool {
    let timeout = Duration::from_secs_f64(timeout_ms / 1e3);
    if timeout >= PROBED_BELOW {
        return false;
    }
    let s = stalls::measure(ranks, stalls::window_for(timeout));
    if timeout >= s.longest * 2 {
        return false;
    }
    // A short window sees stalls of about the failure timeout; the hint
    // needs the longest a scheduling round takes: one second's worth.
    let s = stalls::measure(ranks, Duration::from_secs(1)).max(s);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let suggested = (ms(s.longest) * 2.0).ceil().max(1.0);
    eprintln!(
        "warning: {option} {timeout_ms} is below twice the longest stall measured here: {} busy threads \
         on {} cores went {:.1} ms without running (over {:.0} ms); live ranks will be declared \
         failed under load (false suspicions)",
        s.threads,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        ms(s.longest),
        ms(s.window),
    );
    eprintln!(
        "hint: pass {option} {suggested} or more (docs/benchmarks.md, *Soak and false suspicions*)"
    );
    true
}
