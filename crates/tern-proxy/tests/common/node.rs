//! The Node side: finding `node`, installing the reference packages (`npm ci` in
//! tests/node when they are missing) and running tests/node/proxy-cases.mjs.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The fixture directory with package.json and package-lock.json.
pub fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node")
}

fn script() -> PathBuf {
    fixture_dir().join("proxy-cases.mjs")
}

/// `node` (or `$TERN_NODE`), version 20 or later, with the reference packages installed.
/// Panics with what to do when that is not possible: these tests never skip silently.
pub fn node() -> &'static str {
    static NODE: OnceLock<Result<String, String>> = OnceLock::new();
    match NODE.get_or_init(prepare) {
        Ok(node) => node,
        Err(why) => panic!("{why}"),
    }
}

fn prepare() -> Result<String, String> {
    let node = std::env::var("TERN_NODE").unwrap_or_else(|_| "node".to_string());
    let version = std::process::Command::new(&node)
        .arg("--version")
        .output()
        .map_err(|e| {
            format!(
                "The cross-implementation tests need Node.js 20 or later, and `{node}` could not run ({e}). \
                 Install Node 20+ (or set TERN_NODE to a node binary)."
            )
        })?;
    let text = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let major: u32 = text
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    if major < 20 {
        return Err(format!(
            "The cross-implementation tests need Node.js 20 or later; `{node} --version` says {text:?}."
        ));
    }
    let installed = fixture_dir().join("node_modules/@earendil-works/pi-agent-core/package.json");
    if !installed.exists() {
        let npm = std::env::var("TERN_NPM").unwrap_or_else(|_| "npm".to_string());
        let out = std::process::Command::new(&npm)
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(fixture_dir())
            .output()
            .map_err(|e| {
                format!(
                    "`{npm} ci` could not run in {}: {e}. Install npm (or set TERN_NPM).",
                    fixture_dir().display()
                )
            })?;
        if !out.status.success() || !installed.exists() {
            return Err(format!(
                "`{npm} ci` failed in {} (it installs @earendil-works/pi-agent-core 1.6.0 from the npm registry):\n{}",
                fixture_dir().display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    Ok(node)
}

async fn run(args: &[&str]) -> Value {
    let out = Command::new(node())
        .arg(script())
        .args(args)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "node proxy-cases.mjs {} failed:\n{}",
        args.first().unwrap_or(&""),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "node printed no trace ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// The reference's `streamProxy` once against `url`: its trace.
pub async fn reference_client(url: &str, token: &str, case: &str, abort: Option<usize>) -> Value {
    let context =
        serde_json::to_value(json!({"messages": super::context().messages.as_slice()})).unwrap();
    let spec = json!({
        "proxyUrl": url,
        "authToken": token,
        "model": super::model(case),
        "context": context,
        "options": {},
        "abortAfterDeltas": abort,
    });
    run(&["client", &spec.to_string()]).await
}

/// The reference's scripted model for `case`, without a proxy: its trace.
pub async fn reference_direct(case: &str) -> Value {
    run(&["direct", case]).await
}

/// The reference-shaped proxy server; it stops when this is dropped.
pub struct NodeServer {
    pub url: String,
    _child: Child,
}

/// Starts the Node proxy server on a free port.
pub async fn reference_server() -> NodeServer {
    let mut child = Command::new(node())
        .arg(script())
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).await.unwrap();
    let port = serde_json::from_str::<Value>(&line)
        .ok()
        .and_then(|v| v["port"].as_u64())
        .unwrap_or_else(|| panic!("the Node server did not report its port: {line:?}"));
    NodeServer {
        url: format!("http://127.0.0.1:{port}"),
        _child: child,
    }
}
