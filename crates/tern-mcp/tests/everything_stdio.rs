//! tern-mcp against `@modelcontextprotocol/server-everything` over stdio.

mod common;

use std::time::{Duration, Instant};

use common::{call, call_named, config, everything, find, text};
use serde_json::json;
use tern_mcp::McpHub;
use tokio_util::sync::CancellationToken;

async fn hub() -> McpHub {
    let hub = McpHub::new(&config(vec![("everything", everything())]));
    let failed = hub.connect_all().await;
    assert!(
        failed.is_empty(),
        "server-everything did not start: {failed:?}"
    );
    hub
}

#[tokio::test]
async fn tools_are_listed_under_mcp_names_with_the_server_schema() {
    let hub = hub().await;
    let tools = hub.tools();
    let sum = find(&tools, "mcp__everything__get_sum");
    assert_eq!(sum.parameters()["type"], "object");
    assert!(
        sum.parameters()["properties"]["a"].is_object(),
        "{}",
        sum.parameters()
    );
    find(&tools, "mcp__everything__echo");
    find(&tools, "mcp__everything__trigger_long_running_operation");
    assert!(hub.server("everything").unwrap().instructions().is_some());
    hub.close().await;
}

#[tokio::test]
async fn echo_and_add_return_the_server_text() {
    let hub = hub().await;
    let tools = hub.tools();
    let echo = call_named(&tools, "mcp__everything__echo", json!({"message": "hello"})).await;
    assert_eq!(text(&echo), "Echo: hello");
    let sum = call_named(&tools, "mcp__everything__get_sum", json!({"a": 2, "b": 40})).await;
    assert!(text(&sum).contains("42"), "{}", text(&sum));
    assert_eq!(sum.unwrap().is_error, None);
    hub.close().await;
}

#[tokio::test]
async fn an_image_result_becomes_an_image_block() {
    let hub = hub().await;
    let out = call_named(&hub.tools(), "mcp__everything__get_tiny_image", json!({}))
        .await
        .unwrap();
    let blocks = serde_json::to_value(out.content()).unwrap();
    let image = blocks
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "image")
        .unwrap_or_else(|| panic!("no image block in {blocks}"));
    assert_eq!(image["mimeType"], "image/png");
    assert!(image["data"].as_str().unwrap().len() > 100);
    hub.close().await;
}

#[tokio::test]
async fn structured_content_is_kept() {
    let hub = hub().await;
    let out = call_named(
        &hub.tools(),
        "mcp__everything__get_structured_content",
        json!({"location": "New York"}),
    )
    .await
    .unwrap();
    let structured = out.structured_content.expect("structuredContent kept");
    assert!(structured.get("temperature").is_some(), "{structured}");
    hub.close().await;
}

#[tokio::test]
async fn a_long_call_aborted_mid_way_ends_at_once_and_the_server_stays_usable() {
    let hub = hub().await;
    let tools = hub.tools();
    let long = find(&tools, "mcp__everything__trigger_long_running_operation");
    let signal = CancellationToken::new();
    let abort = signal.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        abort.cancel();
    });
    let started = Instant::now();
    let out = call(&long, json!({"duration": 30, "steps": 30}), signal).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(text(&out), "error: MCP tool call aborted");
    let echo = call_named(
        &tools,
        "mcp__everything__echo",
        json!({"message": "still here"}),
    )
    .await;
    assert_eq!(text(&echo), "Echo: still here");
    hub.close().await;
}

#[tokio::test]
async fn resources_and_prompts_reach_the_host() {
    let hub = hub().await;
    let server = hub.server("everything").unwrap();
    let resources = server.list_resources().await.unwrap();
    assert!(!resources.is_empty());
    let read = server.read_resource(&resources[0].uri).await.unwrap();
    assert!(!read.contents.is_empty());
    let prompts = server.list_prompts().await.unwrap();
    assert!(
        prompts.iter().any(|p| p.name == "simple-prompt"),
        "{prompts:?}"
    );
    let prompt = server
        .get_prompt("simple-prompt", Default::default())
        .await
        .unwrap();
    assert!(!prompt.messages.is_empty());
    hub.close().await;
}
