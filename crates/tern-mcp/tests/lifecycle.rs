//! A server whose tools change, crash, hang or get killed (`tests/node/changing-server.mjs`).

mod common;

use std::time::Duration;

use common::{call, call_named, config, find, node_server, text};
use serde_json::json;
use tern_mcp::McpHub;
use tokio_util::sync::CancellationToken;

async fn hub(timeout: Duration, env: &[(&str, &str)]) -> McpHub {
    let mut server = node_server("changing-server.mjs", &[]).with_timeout(timeout);
    if let tern_mcp::config::Transport::Stdio { env: vars, .. } = &mut server.transport {
        vars.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    }
    let hub = McpHub::new(&config(vec![("changing", server)]));
    let failed = hub.connect_all().await;
    assert!(failed.is_empty(), "{failed:?}");
    hub
}

async fn pid(hub: &McpHub) -> String {
    text(&call_named(&hub.tools(), "mcp__changing__pid", json!({})).await)
}

#[tokio::test]
async fn list_changed_updates_the_tool_set() {
    let hub = hub(Duration::from_secs(30), &[]).await;
    let mut changes = hub.subscribe();
    changes.borrow_and_update();
    assert!(hub
        .tools()
        .iter()
        .all(|t| t.name() != "mcp__changing__extra"));
    let added = call_named(&hub.tools(), "mcp__changing__add_tool", json!({})).await;
    assert_eq!(text(&added), "added");
    tokio::time::timeout(Duration::from_secs(10), changes.changed())
        .await
        .expect("the tool list changed within 10s")
        .unwrap();
    let extra = find(&hub.tools(), "mcp__changing__extra");
    assert_eq!(extra.parameters()["required"], json!(["n"]));
    assert_eq!(
        text(&call(&extra, json!({"n": 7}), CancellationToken::new()).await),
        "extra 7"
    );
    hub.close().await;
}

#[tokio::test]
async fn a_server_that_crashes_mid_call_gives_a_clear_error_and_restarts_on_the_next_call() {
    let hub = hub(Duration::from_secs(30), &[]).await;
    let before = pid(&hub).await;
    let crashed = call_named(&hub.tools(), "mcp__changing__crash", json!({})).await;
    let message = text(&crashed);
    assert!(
        message
            .starts_with("error: MCP server \"changing\" closed the connection during tools/call"),
        "{message}"
    );
    assert!(
        message.contains("crashing on purpose"),
        "the stderr tail is shown: {message}"
    );
    assert!(message.contains("restarted on the next call"), "{message}");
    let after = pid(&hub).await;
    assert!(
        after.parse::<u32>().is_ok() && after != before,
        "{before} then {after}"
    );
    hub.close().await;
}

#[tokio::test]
async fn a_server_killed_mid_call_fails_the_call_and_restarts() {
    let hub = hub(Duration::from_secs(30), &[]).await;
    let before = pid(&hub).await;
    let hang = find(&hub.tools(), "mcp__changing__hang");
    let victim = before.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let status = std::process::Command::new("kill")
            .args(["-9", &victim])
            .status();
        assert!(status.is_ok_and(|s| s.success()));
    });
    let killed = text(&call(&hang, json!({}), CancellationToken::new()).await);
    assert!(
        killed
            .starts_with("error: MCP server \"changing\" closed the connection during tools/call"),
        "{killed}"
    );
    assert_ne!(pid(&hub).await, before);
    hub.close().await;
}

#[tokio::test]
async fn a_server_that_hangs_times_out_and_is_replaced() {
    let hub = hub(Duration::from_secs(1), &[]).await;
    let before = pid(&hub).await;
    let hung = text(&call_named(&hub.tools(), "mcp__changing__hang", json!({})).await);
    assert!(
        hung.starts_with("error: MCP server \"changing\" did not answer tools/call within 1s"),
        "{hung}"
    );
    assert_ne!(
        pid(&hub).await,
        before,
        "the hung server was stopped and started again"
    );
    hub.close().await;
}

#[tokio::test]
async fn abort_sends_notifications_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancel.log");
    let hub = hub(
        Duration::from_secs(30),
        &[("CANCEL_LOG", log.to_str().unwrap())],
    )
    .await;
    let signal = CancellationToken::new();
    let abort = signal.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        abort.cancel();
    });
    let out = call(
        &find(&hub.tools(), "mcp__changing__hang"),
        json!({}),
        signal,
    )
    .await;
    assert_eq!(text(&out), "error: MCP tool call aborted");
    let mut seen = String::new();
    for _ in 0..50 {
        seen = std::fs::read_to_string(&log).unwrap_or_default();
        if !seen.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(seen, "cancelled: The user aborted the request.\n");
    hub.close().await;
}
