//! The argument parser's refusals in the CLI's own form: the error on one
//! line, clap's tip if it has one, and a `hint:` line, exit code 2, as
//! every other refusal of `corrected` (`error.rs`).

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// Prints `e` as the CLI prints its refusals and gives the exit code: 0 for
/// `--help` and `--version` (printed as clap prints them), 2 otherwise.
pub fn report(e: &clap::Error) -> u8 {
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            2
        } else {
            0
        };
    }
    let rendered = e.render().to_string();
    let mut lines = rendered.lines().map(str::trim_end);
    if let Some(first) = lines.next() {
        match negative_number(e) {
            // clap names the first "short flag" of `-64`, `-6`: the
            // number as typed instead.
            Some(typed) => eprintln!("error: unexpected negative number '{typed}'"),
            None => eprintln!("{first}"),
        }
    }
    for tip in lines.filter(|l| l.trim_start().starts_with("tip:")) {
        eprintln!("{}", tip.trim_start());
    }
    eprintln!("hint: {}", hint(e));
    2
}

/// What to do about `e`.
fn hint(e: &clap::Error) -> String {
    let value = |kind: ContextKind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let invalid = value(ContextKind::InvalidArg);
    match e.kind() {
        ErrorKind::UnknownArgument => {
            let token = invalid.unwrap_or_default();
            if let Some(typed) = negative_number(e) {
                format!(
                    "'{typed}' is a negative number, and no option takes one here: counts, sizes and times are 0 or more (`--help` gives each option's range)"
                )
            } else if let Some(similar) = e.get(ContextKind::SuggestedArg) {
                match similar {
                    ContextValue::Strings(s) => format!("pass {}", s.join(" or ")),
                    other => format!("pass {other}"),
                }
            } else {
                format!("'{token}' is no option of this command: `--help` lists them")
            }
        }
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
            let arg = invalid.unwrap_or_else(|| "the option".into());
            match e.get(ContextKind::ValidValue) {
                Some(ContextValue::Strings(valid)) if !valid.is_empty() => {
                    format!("pass {arg} with one of: {}", valid.join(", "))
                }
                _ => format!("pass {arg} a value of the form its `--help` line gives"),
            }
        }
        ErrorKind::InvalidSubcommand => {
            "the commands are sim, run, soak, topo and (feature mpi) mpi".into()
        }
        ErrorKind::MissingRequiredArgument | ErrorKind::MissingSubcommand => {
            "`--help` shows what the command needs".into()
        }
        ErrorKind::ArgumentConflict => {
            "pass each option once, and not two that exclude each other (`--help`)".into()
        }
        ErrorKind::TooManyValues | ErrorKind::TooFewValues | ErrorKind::WrongNumberOfValues => {
            "`--help` shows how many values the option takes".into()
        }
        _ => "`corrected --help` and `corrected COMMAND --help` list the options".into(),
    }
}

/// The negative number typed where clap found an unknown argument (it
/// names only its first characters, `-6` of `-64`), as typed.
fn negative_number(e: &clap::Error) -> Option<String> {
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(token)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    if !(token.starts_with('-') && token[1..].starts_with(|c: char| c.is_ascii_digit())) {
        return None;
    }
    let typed =
        std::env::args().find(|arg| arg.starts_with(token.as_str()) && arg.parse::<f64>().is_ok());
    Some(typed.unwrap_or_else(|| token.clone()))
}
