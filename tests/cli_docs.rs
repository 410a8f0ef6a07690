//! `docs/cli.md` names only options that exist: every `--flag` it writes is
//! one of some command's (`corrected <command> --help`; `corrected mpi`'s,
//! built with the feature `mpi` only, read from its source).

use std::collections::BTreeSet;
use std::process::Command;

/// The `--flags` in `text`.
fn flags_in(text: &str) -> BTreeSet<String> {
    let mut flags = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("--") {
        let start = i + at;
        let mut end = start + 2;
        while end < bytes.len()
            && (bytes[end].is_ascii_lowercase()
                || bytes[end].is_ascii_digit()
                || bytes[end] == b'-')
        {
            end += 1;
        }
        let before_ok = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
        if before_ok && end > start + 2 && bytes[start + 2].is_ascii_lowercase() {
            flags.insert(text[start..end].trim_end_matches('-').to_string());
        }
        i = end;
    }
    flags
}

fn help(command: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_corrected"))
        .args([command, "--help"])
        .output()
        .expect("the binary runs");
    assert!(out.status.success(), "{command} --help: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn every_option_docs_cli_names_exists() {
    let mut known = BTreeSet::new();
    for command in ["sim", "run", "soak", "topo"] {
        known.extend(flags_in(&help(command)));
    }
    // `corrected mpi`'s options: its argument fields, spelled as flags.
    let mpi = include_str!("../src/bin/corrected/mpi/mod.rs");
    let lines: Vec<&str> = mpi.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with("#[arg(long") {
            let field = lines[i + 1..]
                .iter()
                .find(|l| !l.trim_start().starts_with("#["))
                .and_then(|l| l.trim().split(':').next())
                .unwrap_or_default();
            known.insert(format!("--{}", field.trim().replace('_', "-")));
        }
    }
    let doc = include_str!("../docs/cli.md");
    // Not options of ours: cargo's and mpirun's.
    let others = [
        "--release",
        "--features",
        "--example",
        "--allow-run-as-root",
        "--oversubscribe",
        "--bind-to",
        "--mca",
        "--bench",
    ];
    let unknown: Vec<String> = flags_in(doc)
        .into_iter()
        .filter(|f| !known.contains(f) && !others.contains(&f.as_str()))
        .collect();
    assert!(
        unknown.is_empty(),
        "docs/cli.md names options no command has: {unknown:?}"
    );
    assert!(known.len() > 40, "the options were read: {known:?}");
}
