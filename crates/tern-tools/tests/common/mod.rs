//! Helpers: every test calls a tool through `AgentTool::execute`, as the agent loop does.
#![allow(dead_code)]

use std::path::Path;

use serde_json::Value;
use tern_agent::{AgentTool, ToolCallInput, ToolOutput, ToolResult, ToolUpdater};
use tern_tools::ToolConfig;
use tokio_util::sync::CancellationToken;

/// A multi-threaded runtime with two workers, for tests that run tools outside
/// `#[tokio::test]` or need more than one worker.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The input of one call with `args`, cancelled through `signal`.
pub fn input(args: Value, signal: CancellationToken) -> ToolCallInput {
    ToolCallInput {
        tool_call_id: "call-1".into(),
        args: args.into(),
        signal,
        updater: ToolUpdater::noop(),
    }
}

/// Runs a tool the way the loop does: prepare_arguments, then execute.
pub async fn run(tool: &AgentTool, args: Value) -> ToolOutput {
    run_with(tool, args, CancellationToken::new()).await
}

pub async fn run_with(tool: &AgentTool, args: Value, signal: CancellationToken) -> ToolOutput {
    let args = tool.prepare_arguments(&args).unwrap_or(args);
    tool.execute(input(args, signal)).await
}

pub async fn ok(tool: &AgentTool, args: Value) -> ToolResult {
    match run(tool, args).await {
        Ok(r) => r,
        Err(e) => panic!("tool {} failed: {e}", tool.name()),
    }
}

/// The text of a call that must succeed.
pub async fn ok_text(tool: &AgentTool, args: Value) -> String {
    text(&ok(tool, args).await)
}

/// Runs `tool` with each case's arguments: each call must succeed with the case's text.
pub async fn assert_texts(tool: &AgentTool, cases: &[(Value, &str)]) {
    for (args, expected) in cases {
        assert_eq!(ok_text(tool, args.clone()).await, *expected, "{args}");
    }
}

pub async fn err(tool: &AgentTool, args: Value) -> String {
    match run(tool, args).await {
        Ok(r) => panic!(
            "tool {} should have failed, got {:?}",
            tool.name(),
            text(&r)
        ),
        Err(e) => e.to_string(),
    }
}

pub fn text(r: &ToolResult) -> String {
    r.content()
        .iter()
        .filter_map(|b| b.as_text())
        .collect::<Vec<_>>()
        .join("")
}

/// A fresh working directory `work/` inside a temp dir, so `..` has somewhere to go.
pub struct Sandbox {
    pub tmp: tempfile::TempDir,
    pub config: ToolConfig,
}

impl Sandbox {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(tmp.path().join("work")).expect("mkdir");
        std::fs::write(tmp.path().join("secret.txt"), "top secret\n").expect("write");
        let config = ToolConfig::new(tmp.path().join("work"));
        Sandbox { tmp, config }
    }

    pub fn work(&self) -> &Path {
        &self.config.cwd
    }

    pub fn outside(&self) -> &Path {
        self.tmp.path()
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let p = self.work().join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(p, content).expect("write");
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.work().join(rel)).expect("read")
    }
}
