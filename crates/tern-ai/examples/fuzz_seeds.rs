//! `fuzz_seeds TARGET API...`: writes the fuzz seeds of a provider target: the `200` body of
//! each of the API's provider cases (`tests/providers/streams/<api>/`), in the bytes the replay
//! server sends, after the harness's first byte (255: the body in chunks of 1,021 bytes),
//! into `fuzz/seeds/<TARGET>/`. Binary framings (Bedrock's event stream) have no text form in
//! the cases, so their seeds are written from the cases rather than copied.
//!
//! ```text
//! cargo run -p tern-ai --example fuzz_seeds -- bedrock bedrock-converse-stream
//! ```

use std::path::Path;
use std::process::ExitCode;

use serde_json::Value;
use tern_ai::providers::replay::{chunk_bytes, responses_of};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(target), apis) = (args.next(), args.collect::<Vec<_>>()) else {
        eprintln!("usage: fuzz_seeds TARGET API...");
        return ExitCode::from(2);
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = root.join("../../fuzz/seeds").join(&target);
    if let Err(e) = std::fs::create_dir_all(&out) {
        eprintln!("cannot create {}: {e}", out.display());
        return ExitCode::from(1);
    }
    let mut written = 0;
    for api in &apis {
        let dir = root.join("tests/providers/streams").join(api);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            eprintln!("no cases in {}", dir.display());
            return ExitCode::from(2);
        };
        let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for file in files
            .iter()
            .filter(|f| f.extension().is_some_and(|x| x == "json"))
        {
            let Some(case) = std::fs::read_to_string(file)
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            else {
                eprintln!("skipped {}: not JSON", file.display());
                continue;
            };
            let Some(name) = file.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            for (i, response) in responses_of(&case).iter().enumerate() {
                if response["status"].as_u64().unwrap_or(200) != 200 {
                    continue;
                }
                let mut seed = vec![255u8];
                for chunk in response["chunks"].as_array().into_iter().flatten() {
                    seed.extend(chunk_bytes(chunk));
                }
                let path = out.join(format!("{name}-{i}"));
                if let Err(e) = std::fs::write(&path, seed) {
                    eprintln!("cannot write {}: {e}", path.display());
                    return ExitCode::from(1);
                }
                written += 1;
            }
        }
    }
    println!("{written} seeds in {}", out.display());
    ExitCode::SUCCESS
}
