//! tern-mcp against server-everything's streamable-HTTP mode on 127.0.0.1.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{call_named, config, node_path, text};
use serde_json::json;
use tern_mcp::config::ServerConfig;
use tern_mcp::McpHub;
use tokio::io::{AsyncBufReadExt, BufReader};

#[tokio::test]
async fn tools_over_streamable_http() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = tokio::process::Command::new("node")
        .arg(node_path(
            "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
        ))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("listening on port") {
                return;
            }
        }
        panic!("server-everything exited before listening");
    })
    .await
    .expect("server-everything listened within 30s");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

    let url = format!("http://127.0.0.1:{port}/mcp");
    let hub = McpHub::new(&config(vec![("web", ServerConfig::http(url))]));
    let failed = hub.connect_all().await;
    assert!(failed.is_empty(), "{failed:?}");
    let tools = hub.tools();
    let echo = call_named(&tools, "mcp__web__echo", json!({"message": "over http"})).await;
    assert_eq!(text(&echo), "Echo: over http");
    let sum = call_named(&tools, "mcp__web__get_sum", json!({"a": 1, "b": 2})).await;
    assert!(text(&sum).contains('3'), "{}", text(&sum));
    hub.close().await;
    server.kill().await.unwrap();
}

#[tokio::test]
async fn an_http_server_that_is_not_there_is_a_connect_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let hub = McpHub::new(&config(vec![(
        "gone",
        ServerConfig::http(format!("http://127.0.0.1:{port}/mcp")),
    )]));
    let failed = hub.connect_all().await;
    assert_eq!(failed.len(), 1);
    let message = failed[0].1.to_string();
    assert!(
        message.starts_with("MCP server \"gone\" did not start: "),
        "{message}"
    );
}
