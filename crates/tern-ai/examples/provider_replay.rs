//! `provider_replay CASE.json`: serves the case's recorded response from a local HTTP server,
//! runs the matching provider against it and prints the output document of
//! `shared/providers/FORMAT.md` (events, final message, the captured request).

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: provider_replay CASE.json");
        return ExitCode::from(2);
    };
    let case: serde_json::Value = match std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(v) => v,
        Err(e) => {
            eprintln!("cannot read {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(tern_ai::providers::replay::run_case(&case)) {
        Ok(doc) => {
            println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}
