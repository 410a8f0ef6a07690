//! A table of bad and extreme command lines across every subcommand of
//! `corrected`: each with the exit code it must give and the
//! first words of its error. Every refusal (exit code 2) is one `error:`
//! line, at most a `tip:` line of the argument parser, and one `hint:`
//! line; nothing panics, aborts or hangs; a line that is taken (exit code
//! 0) prints no error. `docs/cli.md` says what each refusal guards.

use std::process::Command;

/// `command line<TAB>exit code<TAB>the first words of the error after
/// "error: "`, one line each: `fixtures/cli_fuzz.tsv`. Lines that are taken
/// run a tiny team or simulation. Words are split at white space; `"..."`
/// is one argument (`""` an empty one).
const TABLE_TSV: &str = include_str!("fixtures/cli_fuzz.tsv");

/// The table's rows.
fn table() -> Vec<(&'static str, i32, &'static str)> {
    TABLE_TSV
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut fields = l.split('\t');
            let (Some(line), Some(code), first) = (fields.next(), fields.next(), fields.next())
            else {
                panic!("not LINE<TAB>CODE<TAB>WORDS: {l}");
            };
            let code = code
                .parse()
                .unwrap_or_else(|_| panic!("bad exit code: {l}"));
            (line, code, first.unwrap_or(""))
        })
        .collect()
}

/// The arguments of `line`: split at white space, `"..."` kept whole.
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut rest = line.trim_start();
    while !rest.is_empty() {
        let (word, after) = match rest.strip_prefix('"') {
            Some(quoted) => {
                let end = quoted.find('"').expect("a closing quote");
                (&quoted[..end], &quoted[end + 1..])
            }
            None => rest.split_at(rest.find(' ').unwrap_or(rest.len())),
        };
        words.push(word.to_string());
        rest = after.trim_start();
    }
    words
}

/// What is wrong with `line`'s outcome, if anything.
fn check(line: &str, code: i32, first_words: &str) -> Option<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_corrected"))
        .args(words(line))
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("the corrected binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let wrong = |why: &str| Some(format!("{line}: {why}\n{stderr}"));
    if out.status.code() != Some(code) {
        return wrong(&format!("exit {:?}, not {code}", out.status.code()));
    }
    // A rank's planned panic (`--panic`) is part of the run; the main
    // thread's is not.
    if stderr.contains("thread 'main'") {
        return wrong("panicked");
    }
    if code == 0 {
        return stderr
            .contains("error:")
            .then(|| format!("{line}: taken, but {stderr}"));
    }
    let lines: Vec<&str> = stderr.lines().collect();
    let error = format!("error: {first_words}");
    if !lines.first().is_some_and(|l| l.starts_with(&error)) {
        return wrong(&format!("does not begin with '{error}'"));
    }
    let hints = lines.iter().filter(|l| l.starts_with("hint: ")).count();
    let tips = lines.iter().filter(|l| l.starts_with("tip: ")).count();
    if hints != 1 || tips > 1 || lines.len() != 1 + tips + hints {
        return wrong("not one error line, at most one tip and one hint");
    }
    None
}

/// Every line of the table gives its exit code and error, with a hint.
#[test]
fn every_bad_or_extreme_command_line_is_refused_with_a_hint_or_taken() {
    let table = table();
    assert!(table.len() >= 150, "{} lines", table.len());
    let mut lines: Vec<&str> = table.iter().map(|(l, _, _)| *l).collect();
    lines.sort_unstable();
    lines.dedup();
    assert_eq!(lines.len(), table.len(), "a line is in the table twice");
    for sub in ["run ", "sim ", "soak ", "topo "] {
        let n = table.iter().filter(|(l, _, _)| l.starts_with(sub)).count();
        assert!(n >= 15, "only {n} lines of {sub}");
    }
    // Four at a time: each line is a process of its own.
    let failures: Vec<String> = std::thread::scope(|s| {
        let chunks = table.chunks(table.len().div_ceil(4));
        let workers: Vec<_> = chunks
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|&(line, code, first)| check(line, code, first))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a worker"))
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n---\n"));
}

#[test]
fn words_keep_quoted_arguments_whole() {
    assert_eq!(
        words(r#"topo --synthetic "package:1 core:2" --synthetic """#),
        ["topo", "--synthetic", "package:1 core:2", "--synthetic", ""]
    );
}
