use super::*;

fn load(files: &[(&str, &str)]) -> McpConfig {
    let mut config = McpConfig::default();
    for (path, text) in files {
        config.merge_json(path, text).unwrap();
    }
    config
}

#[test]
fn stdio_and_http_entries_in_pi_format() {
    let c = load(&[(
        "/p/.tern/mcp.json",
        r#"{"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "server-fs", "."], "env": {"A": "1"}, "cwd": "sub", "timeout": 5},
            "docs": {"type": "streamable-http", "url": "https://example.com/mcp", "headers": {"X": "y"}, "enabled": false}
        }}"#,
    )]);
    assert!(c.errors.is_empty(), "{:?}", c.errors);
    let fs = &c.servers["fs"];
    assert_eq!(
        fs.transport,
        Transport::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "server-fs".into(), ".".into()],
            env: BTreeMap::from([("A".into(), "1".into())]),
            cwd: Some(PathBuf::from("/p/sub")),
        }
    );
    assert_eq!(fs.timeout, Duration::from_secs(5));
    let docs = &c.servers["docs"];
    assert!(!docs.enabled);
    assert!(
        matches!(&docs.transport, Transport::Http { url, .. } if url == "https://example.com/mcp")
    );
}

#[test]
fn invalid_entries_are_reported_and_skipped_with_pi_messages() {
    let c = load(&[(
        "m.json",
        r#"{"mcpServers": {
            "sse": {"type": "sse", "url": "http://x/sse"},
            "nothing": {"args": []},
            "args": {"command": "x", "args": "a b"},
            "url": {"url": "ftp://x"},
            "timeout": {"command": "x", "timeout": 0},
            "env": {"command": "x", "env": {"K": "${TERN_MCP_TEST_UNSET_VAR}"}},
            "ok": {"command": "x"}
        }}"#,
    )]);
    assert_eq!(c.servers.keys().collect::<Vec<_>>(), ["ok"]);
    assert_eq!(
        c.errors,
        [
            "m.json: server \"sse\": legacy SSE transport is not supported; use the streamable HTTP URL",
            "m.json: server \"nothing\" needs either \"command\" (stdio) or \"url\" (streamable HTTP)",
            "m.json: server \"args\": args must be an array of strings",
            "m.json: server \"url\": url must be an http or https URL",
            "m.json: server \"timeout\": timeout must be a positive number of seconds",
            "m.json: server \"env\": Failed to resolve MCP server \"env\" env \"K\" from environment variable: TERN_MCP_TEST_UNSET_VAR (set it, or change the entry)",
        ]
    );
}

#[test]
fn a_later_file_replaces_or_overrides_an_entry() {
    let user = r#"{"mcpServers": {"a": {"command": "user-a"}, "b": {"command": "user-b"}}}"#;
    let project = r#"{"mcpServers": {"a": {"command": "project-a"}, "b": {"enabled": false}}}"#;
    let c = load(&[("user.json", user), ("project.json", project)]);
    assert!(
        matches!(&c.servers["a"].transport, Transport::Stdio { command, .. } if command == "project-a")
    );
    assert!(
        matches!(&c.servers["b"].transport, Transport::Stdio { command, .. } if command == "user-b")
    );
    assert!(!c.servers["b"].enabled);
}

#[test]
fn a_file_that_is_not_json_is_an_error_and_a_missing_one_is_skipped() {
    let err = McpConfig::default().merge_json("x.json", "{").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("MCP config x.json is not valid: "),
        "{err}"
    );
    let c = McpConfig::load(&[PathBuf::from("/nonexistent/tern/mcp.json")]).unwrap();
    assert!(c.servers.is_empty());
}
