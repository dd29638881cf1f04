//! An Agent on the scripted model works on a temporary project with the built-in tools:
//! it reads, edits and greps, and the files end up as the script asked. A permission policy
//! wired as `before_tool_call` refuses one call, and the model sees the reason.

use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::json;
use tern_agent::{Agent, AgentOptions};
use tern_ai::faux::{FauxModel, FauxResponse};
use tern_testkit::agent::tool_results;
use tern_tools::{builtin_tools, Action, PermissionGate, Policy, Rule, ToolConfig};

#[tokio::test]
async fn agent_reads_edits_and_greps_a_project() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("src/lib.rs"),
        "pub fn greet() -> &'static str {\n    \"helo\"\n}\n",
    )
    .unwrap();
    std::fs::write(root.join("README.md"), "Say helo to the world.\n").unwrap();

    let model = FauxModel::new(vec![
        // Turn 1: read both files in parallel.
        FauxResponse::tool_calls(vec![
            ("c1", "read", json!({"path": "src/lib.rs"})),
            ("c2", "read", json!({"path": "README.md"})),
        ]),
        // Turn 2: fix the typo in both files (edit is sequential).
        FauxResponse::tool_calls(vec![
            (
                "c3",
                "edit",
                json!({"path": "src/lib.rs", "edits": [{"oldText": "\"helo\"", "newText": "\"hello\""}]}),
            ),
            (
                "c4",
                "edit",
                json!({"path": "README.md", "edits": [{"oldText": "helo", "newText": "hello"}]}),
            ),
        ]),
        // Turn 3: check nothing is left, and try a command the policy refuses.
        FauxResponse::tool_calls(vec![
            ("c5", "grep", json!({"pattern": "helo\\b"})),
            ("c6", "bash", json!({"command": "rm -rf src"})),
        ]),
        FauxResponse::text("Fixed the typo in src/lib.rs and README.md."),
    ]);

    let policy = Policy::new(Action::Allow).rule(Rule::deny("bash").because("no shell here"));
    let mut options = AgentOptions {
        system_prompt: Some("Fix typos.".into()),
        tools: builtin_tools(&ToolConfig::new(root)),
        stream_fn: Some(Arc::new(model)),
        ..Default::default()
    };
    options.hooks.before_tool_call = Some(PermissionGate::new(policy).into_hook());
    let agent = Agent::new(options);
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    agent.subscribe_sync(move |e| seen.lock().push(e.kind()));

    agent
        .prompt("Fix the typo 'helo' everywhere.")
        .await
        .unwrap();

    assert_eq!(
        std::fs::read_to_string(root.join("src/lib.rs")).unwrap(),
        "pub fn greet() -> &'static str {\n    \"hello\"\n}\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("README.md")).unwrap(),
        "Say hello to the world.\n"
    );
    assert!(
        root.join("src").exists(),
        "the refused command must not run"
    );

    let state = agent.state();
    let results = tool_results(&state.messages);
    let names: Vec<&str> = results.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(names, ["read", "read", "edit", "edit", "grep", "bash"]);
    assert!(
        results[0].2.contains("\"helo\""),
        "read returns the file: {:?}",
        results[0]
    );
    assert!(!results[2].1 && !results[3].1, "edits succeed: {results:?}");
    assert!(!results[4].1, "grep runs: {:?}", results[4]);
    assert!(
        !results[4].2.contains("lib.rs:"),
        "no typo left after the edits: {:?}",
        results[4]
    );
    assert!(results[5].1, "bash is refused");
    assert!(results[5].2.contains("no shell here"), "{:?}", results[5]);

    let kinds = events.lock().clone();
    assert_eq!(kinds.first(), Some(&"agent_start"));
    assert_eq!(kinds.last(), Some(&"agent_end"));
    assert_eq!(
        kinds.iter().filter(|k| **k == "turn_start").count(),
        kinds.iter().filter(|k| **k == "turn_end").count()
    );
    assert_eq!(
        state
            .messages
            .last()
            .and_then(|m| m.as_assistant())
            .map(|a| a.text()),
        Some("Fixed the typo in src/lib.rs and README.md.".to_string())
    );
    assert!(!state.is_streaming && state.pending_tool_calls.is_empty());
}
