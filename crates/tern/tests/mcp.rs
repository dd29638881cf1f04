//! MCP servers from mcp.json in the real binary: a tool call through server-everything in
//! print mode, `--mcp-config`, and `tern mcp list`.

mod common;

use std::path::{Path, PathBuf};

use common::{assert_contains, command, dirs, run, stderr, stdout, text_of, Reply, Server};
use serde_json::json;

/// server-everything's entry point, installed by `.ci/run` (a missing install fails with
/// what to run).
fn everything_js() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../tern-mcp/tests/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    assert!(
        path.is_file(),
        "the MCP test servers are not installed: run `npm ci --prefix crates/tern-mcp/tests/node` (.ci/run does)"
    );
    path.to_string_lossy().into_owned()
}

/// An mcp.json in pi's format with server-everything as `everything`.
fn write_config(path: &Path, extra: serde_json::Value) {
    let mut servers = json!({
        "everything": {"command": "node", "args": [everything_js(), "stdio"], "description": "test server"}
    });
    if let (Some(s), Some(e)) = (servers.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, json!({"mcpServers": servers}).to_string()).unwrap();
}

#[test]
fn print_mode_calls_an_mcp_tool_from_the_project_mcp_json() {
    let (home, cwd) = dirs();
    write_config(&cwd.path().join(".tern/mcp.json"), json!({}));
    let server = Server::start(vec![
        Reply::tool(
            "call_1",
            "mcp__everything__echo",
            json!({"message": "from tern"}),
        ),
        Reply::text("It echoed."),
    ]);
    let mut c = command(home.path(), cwd.path());
    c.args([
        "--base-url",
        &server.url,
        "--model",
        "local",
        "-p",
        "Echo something",
    ]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "It echoed.");
    let reqs = server.requests();
    let declared: Vec<&str> = reqs[0]["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert!(declared.contains(&"mcp__everything__echo"), "{declared:?}");
    assert!(
        declared.contains(&"read"),
        "the built-in tools stay: {declared:?}"
    );
    assert!(text_of(&reqs[1]).contains("Echo: from tern"), "{}", reqs[1]);
}

#[test]
fn mcp_config_adds_a_file_and_no_mcp_turns_every_server_off() {
    let (home, cwd) = dirs();
    let file = home.path().join("elsewhere/servers.json");
    write_config(&file, json!({}));
    let file = file.to_string_lossy().into_owned();
    for (extra, expect) in [(None, true), (Some("--no-mcp"), false)] {
        let server = Server::start(vec![Reply::text("ok")]);
        let mut c = command(home.path(), cwd.path());
        c.args(["--base-url", &server.url, "--mcp-config", &file, "-p", "hi"]);
        c.args(extra);
        let o = run(c);
        assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
        let declares = server.requests()[0]["tools"]
            .to_string()
            .contains("mcp__everything__get_sum");
        assert_eq!(declares, expect, "{extra:?}");
    }
    let mut c = command(home.path(), cwd.path());
    c.args([
        "--base-url",
        "http://127.0.0.1:1/v1",
        "--mcp-config",
        "missing.json",
        "-p",
        "hi",
    ]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(2));
    assert_contains(&stderr(&o), "--mcp-config missing.json: no such file");
}

#[test]
fn mcp_list_connects_and_reports_tools_and_bad_entries() {
    let (home, cwd) = dirs();
    write_config(&cwd.path().join(".tern/mcp.json"), json!({}));
    let mut c = command(home.path(), cwd.path());
    c.args(["mcp", "list"]);
    let o = run(c);
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout: {} stderr: {}",
        stdout(&o),
        stderr(&o)
    );
    let out = stdout(&o);
    assert!(out.starts_with("everything: connected, "), "{out}");
    assert!(out.contains("  tools: echo, "), "{out}");

    write_config(
        &cwd.path().join(".tern/mcp.json"),
        json!({"old": {"type": "sse", "url": "http://127.0.0.1:1/sse"}, "off": {"command": "nothing-here", "enabled": false}}),
    );
    let mut c = command(home.path(), cwd.path());
    c.args(["mcp", "list"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(out.contains("off: disabled"), "{out}");
    assert!(
        out.contains("invalid: ")
            && out.contains("server \"old\": legacy SSE transport is not supported"),
        "{out}"
    );
}
