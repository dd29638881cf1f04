//! The command line of a test runner that takes one JSON file (a conformance scenario, a
//! recorded case): read it, or say why not with the runner's usage exit status.

use std::process::ExitCode;

use serde_json::Value;

/// The one argument of `program` (its path) and the JSON it names. `Err` after telling
/// stderr why: no argument or more than one (with `usage`), a file that cannot be read, or
/// one that is not JSON; the exit status is 2 in each case.
pub fn json_file_arg(program: &str, usage: &str) -> Result<(String, Value), ExitCode> {
    let mut args = std::env::args().skip(1);
    let (Some(path), None) = (args.next(), args.next()) else {
        eprintln!("usage: {usage}");
        return Err(ExitCode::from(2));
    };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        eprintln!("{program}: cannot read {path}: {e}");
        ExitCode::from(2)
    })?;
    let value = serde_json::from_str(&text).map_err(|e| {
        eprintln!("{program}: {path} is not JSON: {e}");
        ExitCode::from(2)
    })?;
    Ok((path, value))
}
