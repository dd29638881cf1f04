//! MCP tools inside a real agent run on the scripted model.

mod common;

use std::time::Duration;

use common::{config, node_path, node_server};
use serde_json::json;
use tern_agent::Agent;
use tern_ai::faux::{FauxModel, FauxResponse};
use tern_ai::{Message, Model};
use tern_mcp::config::ServerConfig;
use tern_mcp::McpHub;
use tern_testkit::agent::tool_results;

#[tokio::test]
async fn an_agent_reads_a_file_through_server_filesystem() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "the tern nests on the shore\n").unwrap();
    let fs = ServerConfig::stdio(
        "node",
        [
            node_path("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"),
            root.to_string_lossy().into_owned(),
        ],
    );
    let hub = McpHub::new(&config(vec![("fs", fs)]));
    assert!(hub.connect_all().await.is_empty());
    let path = root.join("notes.txt").to_string_lossy().into_owned();
    let model = FauxModel::new(vec![
        FauxResponse::tool_call("c1", "mcp__fs__read_text_file", json!({"path": path})),
        FauxResponse::tool_call("c2", "mcp__fs__read_text_file", json!({"head": 1})),
        FauxResponse::text("It nests on the shore."),
    ]);
    let agent = Agent::builder(Model::default(), model)
        .tools(hub.tools())
        .build();
    agent.prompt("What does notes.txt say?").await.unwrap();
    let results = agent.with_messages(tool_results);
    assert_eq!(
        results[0],
        (
            "mcp__fs__read_text_file".into(),
            false,
            "the tern nests on the shore\n".into()
        )
    );
    // The server's schema is checked by tern before any call reaches the server.
    assert!(results[1].1, "{results:?}");
    assert!(results[1].2.contains("path"), "{results:?}");
    hub.close().await;
}

#[tokio::test]
async fn list_changed_reaches_the_transcript_through_the_tool_declarations() {
    let hub = McpHub::new(&config(vec![(
        "changing",
        node_server("changing-server.mjs", &[]),
    )]));
    assert!(hub.connect_all().await.is_empty());
    let model = FauxModel::new(vec![
        FauxResponse::tool_call("c1", "mcp__changing__add_tool", json!({})),
        FauxResponse::text("added"),
        FauxResponse::tool_call("c2", "mcp__changing__extra", json!({"n": 5})),
        FauxResponse::text("done"),
    ]);
    let agent = Agent::builder(Model::default(), model)
        .tools(hub.tools())
        .build();
    let mut changes = hub.subscribe();
    changes.borrow_and_update();
    agent.prompt("add a tool").await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), changes.changed())
        .await
        .expect("list_changed within 10s")
        .unwrap();
    // What a host does on a change: give the agent the new set.
    agent.set_tools(hub.tools());
    agent.prompt("use it").await.unwrap();

    let results = agent.with_messages(tool_results);
    assert_eq!(
        results[1],
        ("mcp__changing__extra".into(), false, "extra 5".into())
    );
    let added: Vec<String> = agent.with_messages(|messages| {
        messages
            .iter()
            .filter_map(|m| match m {
                Message::System(s) => s.tools_added.clone(),
                _ => None,
            })
            .flatten()
            .map(|t| t.name.clone())
            .collect()
    });
    assert!(
        added.contains(&"mcp__changing__extra".to_string()),
        "{added:?}"
    );
    hub.close().await;
}
