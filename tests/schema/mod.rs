//! The JSON vocabulary of `docs/cli.md` (*JSON output*), read from the
//! document itself, and a check of one command's object against it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde_json::Value;

/// One row of the table: the commands that print the key, its type, and
/// whether it may be null.
#[derive(Debug)]
pub struct Key {
    pub commands: BTreeSet<String>,
    pub kind: String,
    pub nullable: bool,
}

const COMMANDS: [&str; 5] = ["sim", "run", "soak", "mpi", "topo"];

/// The table of `docs/cli.md`, by key.
pub fn schema() -> &'static BTreeMap<String, Key> {
    static SCHEMA: OnceLock<BTreeMap<String, Key>> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/cli.md"))
            .expect("docs/cli.md");
        let section = doc
            .split("\n## JSON output\n")
            .nth(1)
            .expect("docs/cli.md has a section *JSON output*");
        let section = section.split("\n## ").next().unwrap_or(section);
        let mut keys = BTreeMap::new();
        for line in section.lines().filter(|l| l.starts_with("| `")) {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
            assert!(cells.len() >= 4, "a row of key, in, type, meaning: {line}");
            let key = cells[0].trim_matches('`').to_string();
            let commands: BTreeSet<String> = if cells[1] == "all" {
                COMMANDS.iter().map(|c| c.to_string()).collect()
            } else {
                cells[1].split_whitespace().map(str::to_string).collect()
            };
            for c in &commands {
                assert!(COMMANDS.contains(&c.as_str()), "{key}: no command {c}");
            }
            let (kind, nullable) = match cells[2].strip_suffix('?') {
                Some(k) => (k.to_string(), true),
                None => (cells[2].to_string(), false),
            };
            let known = [
                "int", "float", "string", "bool", "dist", "list", "pairs", "map", "object",
            ];
            assert!(known.contains(&kind.as_str()), "{key}: no type {kind}");
            let old = keys.insert(
                key.clone(),
                Key {
                    commands,
                    kind,
                    nullable,
                },
            );
            assert!(old.is_none(), "{key} is in the table twice");
        }
        assert!(keys.len() > 50, "the table was read: {} keys", keys.len());
        keys
    })
}

/// Whether `v` is of the table's type `kind`.
fn is(kind: &str, v: &Value) -> bool {
    match kind {
        "int" => v.is_u64() || v.is_i64(),
        "float" => v.is_f64(),
        "string" => v.is_string(),
        "bool" => v.is_boolean(),
        "list" => v.is_array(),
        "pairs" => v
            .as_array()
            .is_some_and(|a| a.iter().all(|p| p.as_array().is_some_and(|p| p.len() == 2))),
        "map" => v
            .as_object()
            .is_some_and(|m| m.values().all(|n| n.is_u64())),
        "object" => v.is_object(),
        "dist" => v.as_object().is_some_and(|d| {
            let keys: Vec<&str> = d.keys().map(String::as_str).collect();
            let mut want = ["samples", "mean", "p50", "p99", "p999", "max"];
            want.sort_unstable();
            let mut keys = keys;
            keys.sort_unstable();
            keys == want && d["samples"].is_u64() && want.iter().all(|k| d[*k].is_number())
        }),
        _ => false,
    }
}

/// Checks `obj` against the table: its `command`, every key of that
/// command present, no other key, each of its type. Panics with what
/// differs.
pub fn check(obj: &Value) {
    let map = obj
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {obj}"));
    let command = map
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no command: {obj}"));
    let schema = schema();
    let want: BTreeSet<&str> = schema
        .iter()
        .filter(|(_, k)| k.commands.contains(command))
        .map(|(name, _)| name.as_str())
        .collect();
    let got: BTreeSet<&str> = map.keys().map(String::as_str).collect();
    let missing: Vec<_> = want.difference(&got).collect();
    let extra: Vec<_> = got.difference(&want).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{command}: keys missing from the object {missing:?}, not in docs/cli.md {extra:?}: {obj}"
    );
    for (name, v) in map {
        let key = &schema[name];
        let ok = (key.nullable && v.is_null()) || is(&key.kind, v);
        assert!(
            ok,
            "{command}: {name} is {v}, the table says {}{}",
            key.kind,
            if key.nullable { "?" } else { "" }
        );
    }
}
