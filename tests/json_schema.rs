//! Every command's `--json` follows the one vocabulary `docs/cli.md`
//! states (*JSON output*): the keys of its command and no other, each of
//! its type, over every algorithm and collective; and every key of the
//! table is printed (not null) by some command line. `corrected mpi`'s
//! lines are checked in `tests/mpi.rs`, where every launch goes through
//! the same check.

mod schema;

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::Value;

/// Runs `corrected LINE --json` and parses its one line.
fn json_of(line: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_corrected"))
        .args(line.split_whitespace())
        .arg("--json")
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        matches!(out.status.code(), Some(0 | 1 | 3)),
        "{line}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{line}: one object on one line: {stdout}");
    serde_json::from_str(lines[0]).unwrap_or_else(|e| panic!("{line}: {e}: {stdout}"))
}

const LINES: &[&str] = &[
    // sim: every broadcast algorithm, reduce and allreduce of both kinds.
    "sim --procs 64 --runs 3",
    "sim --procs 64 --runs 3 --fault-rate 0.05 --correction opportunistic:2",
    "sim --procs 64 --runs 3 --algorithm gossip --curve 5",
    "sim --procs 64 --runs 3 --algorithm gossip --correction fcg:2 --die-at 5:30,9:31",
    "sim --procs 64 --runs 3 --algorithm big --dead 3",
    "sim --procs 64 --runs 3 --algorithm ftco --dead 5",
    "sim --procs 64 --runs 3 --algorithm ack-tree",
    "sim --procs 64 --runs 3 --op reduce --dead 7",
    "sim --procs 64 --runs 3 --op allreduce",
    "sim --procs 64 --runs 3 --op allreduce --allreduce star",
    "sim --procs 64 --runs 3 --op allreduce --allreduce blocks --bytes 4096 --gap-per-byte 1",
    "sim --procs 64 --runs 3 --op reduce --algorithm ftco --tree knomial:4",
    "sim --procs 64 --runs 3 --op allreduce --algorithm ftco --timeout 30",
    // run: every broadcast algorithm and collective, every kind of fault.
    "run --ranks 4 --iters 20",
    "run --ranks 4 --iters 20 --kill 3 --hang 2",
    "run --ranks 4 --iters 20 --algorithm gossip",
    "run --ranks 4 --iters 20 --algorithm big",
    "run --ranks 4 --iters 20 --algorithm ftco --timeout-ms 20 --kill-after-sends 2:1",
    "run --ranks 4 --iters 20 --algorithm ack-tree",
    "run --ranks 4 --iters 20 --op reduce --root 1 --panic 3",
    "run --ranks 4 --iters 20 --op allreduce --bytes 64",
    "run --ranks 4 --iters 20 --op barrier",
    "run --ranks 4 --iters 20 --op allreduce --algorithm ftco",
    // soak and topo.
    "soak --ranks 4 --ops 100 --episode 50",
    "topo",
    "topo --kill-domain core:0 --table",
];

#[test]
fn every_commands_json_follows_the_vocabulary_of_docs_cli() {
    let mut printed: BTreeSet<String> = BTreeSet::new();
    for line in LINES {
        let v = json_of(line);
        schema::check(&v);
        let command = line.split_whitespace().next().unwrap_or_default();
        assert_eq!(v["command"], command, "{line}");
        printed.extend(
            v.as_object()
                .into_iter()
                .flatten()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, _)| k.clone()),
        );
    }
    // Every key of the table that a command other than `mpi` prints is
    // printed by one of these lines: no key documented and never shown.
    let unshown: Vec<&String> = schema::schema()
        .iter()
        .filter(|(k, key)| key.commands.iter().any(|c| c != "mpi") && !printed.contains(*k))
        .map(|(k, _)| k)
        .collect();
    assert!(unshown.is_empty(), "never printed: {unshown:?}");
}

/// The checker refuses what the table does not allow: a missing key, an
/// extra one, a wrong type, a null where none may be.
#[test]
fn the_check_finds_a_key_missing_added_mistyped_or_null() {
    let good = json_of("sim --procs 16 --runs 2");
    schema::check(&good);
    let broken = |f: &dyn Fn(&mut serde_json::Map<String, Value>)| {
        let mut v = good.clone();
        f(v.as_object_mut().expect("an object"));
        std::panic::catch_unwind(|| schema::check(&v)).is_err()
    };
    assert!(broken(&|m| {
        m.remove("latency_ticks");
    }));
    assert!(broken(&|m| {
        m.insert("coloring_latency".into(), Value::from(3));
    }));
    assert!(broken(&|m| {
        m.insert("procs".into(), Value::from("64"));
    }));
    assert!(broken(&|m| {
        m.insert("latency_ticks".into(), Value::from(24));
    }));
    assert!(broken(&|m| {
        m.insert("violations".into(), Value::Null);
    }));
}
