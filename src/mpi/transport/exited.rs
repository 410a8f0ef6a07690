//! Peers of this node whose process has exited: a failure the operating
//! system knows for certain, found as soon as a rank waits on the peer,
//! instead of after a failure timeout of silence (or, for a peer that died
//! between operations, after a whole operation timeout: the detector never
//! holds a peer's absence outside the library against it sooner,
//! `driver::detector`). A process that is slow, descheduled or stopped
//! still exists, so it is never taken for exited.

use std::cell::Cell;
use std::hash::{DefaultHasher, Hash, Hasher};

use mpi::collective::CommunicatorCollectives;
use mpi::topology::{Communicator, SimpleCommunicator};

use crate::types::{Rank, Tick};

/// How often a waiting rank looks at one peer's process, at most: a read
/// of `/proc/PID/stat` (about 10 µs) per millisecond of waiting.
const CHECK_EVERY: Tick = 1_000_000;

/// The processes of the ranks that share this process's kernel and pid
/// namespace (so that their pids mean the same here).
pub(super) struct Exited {
    /// Per rank: its pid and its start time (in clock ticks since boot,
    /// `/proc/PID/stat` field 22, which tells a reused pid apart), if it
    /// runs on this node and is not this process.
    local: Vec<Option<(u64, u64)>>,
    /// Per rank: when this rank last looked at its process.
    checked: Vec<Cell<Tick>>,
    /// Per rank: whether the last look found its process exited.
    seen: Vec<Cell<bool>>,
}

impl Exited {
    /// Every rank's node, pid and start time, gathered over `comm`
    /// (collective: every rank calls it, at start, when all are alive).
    pub(super) fn new(comm: &SimpleCommunicator) -> Self {
        let procs = comm.size() as usize;
        let me = comm.rank() as usize;
        let pid = u64::from(std::process::id());
        let mine = [node_key(), pid, start_time(pid).unwrap_or(0)];
        let mut all = vec![0u64; 3 * procs];
        comm.all_gather_into(&mine[..], &mut all[..]);
        let local = all
            .chunks_exact(3)
            .enumerate()
            .map(|(r, peer)| {
                let comparable = r != me && peer[0] == mine[0] && mine[0] != 0 && peer[2] != 0;
                comparable.then_some((peer[1], peer[2]))
            })
            .collect();
        Exited {
            local,
            checked: (0..procs).map(|_| Cell::new(0)).collect(),
            seen: (0..procs).map(|_| Cell::new(false)).collect(),
        }
    }

    /// True if `peer` runs on this node and its process has exited (it is
    /// gone, a zombie, or its pid now names a younger process) at two looks
    /// in a row, [`CHECK_EVERY`] apart at least: a process that ended its
    /// program normally sent its `Left` before it exited, and the rank that
    /// looks, polling its receives while it waits, has read it by the
    /// second look (the driver never takes a peer that left for failed).
    /// `now` is this rank's clock; false between looks.
    pub(super) fn has_exited(&self, peer: Rank, now: Tick) -> bool {
        let Some(Some((pid, started))) = self.local.get(peer as usize).copied() else {
            return false;
        };
        let checked = &self.checked[peer as usize];
        if checked.get() != 0 && now.saturating_sub(checked.get()) < CHECK_EVERY {
            return false;
        }
        checked.set(now.max(1));
        let exited = match stat(pid) {
            Stat::Missing => true,
            Stat::Running { state, start } => matches!(state, 'Z' | 'X') || start != started,
            Stat::Unreadable => false,
        };
        let seen = &self.seen[peer as usize];
        let confirmed = exited && seen.get();
        seen.set(exited);
        confirmed
    }
}

/// What `/proc/PID/stat` says of a process.
enum Stat {
    /// No such process.
    Missing,
    /// Its state letter and start time.
    Running { state: char, start: u64 },
    /// Read but not understood, or not readable: nothing is concluded.
    Unreadable,
}

fn stat(pid: u64) -> Stat {
    let text = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Stat::Missing,
        Err(_) => return Stat::Unreadable,
    };
    // `pid (comm) state ...`: the command may hold spaces and parentheses,
    // so the fields start after the last `)`. The start time is field 22,
    // the 20th after the state.
    let Some((_, rest)) = text.rsplit_once(')') else {
        return Stat::Unreadable;
    };
    let mut fields = rest.split_whitespace();
    let state = fields.next().and_then(|s| s.chars().next());
    let start = fields.nth(18).and_then(|s| s.parse().ok());
    match (state, start) {
        (Some(state), Some(start)) => Stat::Running { state, start },
        _ => Stat::Unreadable,
    }
}

/// The start time of this process's pid `pid`, if readable.
fn start_time(pid: u64) -> Option<u64> {
    match stat(pid) {
        Stat::Running { start, .. } => Some(start),
        _ => None,
    }
}

/// Equal for two processes whose pids mean the same: one boot of one
/// kernel (`/proc/sys/kernel/random/boot_id`), one pid namespace (the
/// inode `/proc/self/ns/pid` names). 0 if either cannot be read: then no
/// peer is looked at.
fn node_key() -> u64 {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id");
    let namespace = std::fs::read_link("/proc/self/ns/pid");
    match (boot, namespace) {
        (Ok(boot), Ok(namespace)) => {
            let mut h = DefaultHasher::new();
            (boot.trim(), namespace).hash(&mut h);
            h.finish().max(1)
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_running_and_a_child_that_exited_is_not() {
        let me = u64::from(std::process::id());
        assert!(matches!(stat(me), Stat::Running { state, .. } if state != 'Z'));
        assert!(start_time(me).is_some_and(|s| s > 0));
        assert_ne!(node_key(), 0, "this Linux names its boot and pid namespace");
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("true runs");
        let pid = u64::from(child.id());
        let started = start_time(pid);
        child.wait().expect("reaped");
        // Reaped: gone (or, in the unlikely case, its pid reused by a
        // younger process).
        match stat(pid) {
            Stat::Missing => {}
            Stat::Running { start, .. } => assert_ne!(Some(start), started),
            Stat::Unreadable => panic!("/proc/{pid}/stat unreadable"),
        }
    }

    #[test]
    fn a_killed_child_not_yet_reaped_is_a_zombie() {
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .expect("sleep runs");
        let pid = u64::from(child.id());
        child.kill().expect("killed");
        // The kernel makes it a zombie once the signal is delivered; its
        // parent (this test) has not reaped it.
        let mut state = ' ';
        for _ in 0..1_000_000 {
            if let Stat::Running { state: s, .. } = stat(pid) {
                state = s;
                if s == 'Z' {
                    break;
                }
            }
            std::thread::yield_now();
        }
        assert_eq!(state, 'Z');
        child.wait().expect("reaped");
    }
}
