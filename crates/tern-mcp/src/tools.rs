//! An MCP tool as an [`AgentTool`]: the server's input schema (validated by tern before the
//! call), its title as label, and a body that calls it once.

use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::{Map, Value};
use tern_agent::{AgentTool, Replay};

use crate::content::tool_result;
use crate::output_limit::limit_content;
use crate::server::McpServer;

/// The agent tool `name` that calls `tool` on `server`. A failed call (crash, hang, abort,
/// refusal) is an error result saying what happened; a tool that reports `isError` gives
/// an error result with its own content.
pub fn agent_tool(server: &Arc<McpServer>, tool: &Tool, name: &str) -> AgentTool {
    let description = tool
        .description
        .as_deref()
        .filter(|d| !d.is_empty())
        .unwrap_or(&tool.name);
    let server = server.clone();
    let remote = tool.name.to_string();
    let read_only = tool
        .annotations
        .as_ref()
        .and_then(|a| a.read_only_hint)
        .unwrap_or(false);
    let agent_tool = AgentTool::dynamic(
        name,
        description,
        input_schema(&tool.input_schema),
        move |call| {
            let server = server.clone();
            let remote = remote.clone();
            async move {
                let result = server
                    .call_tool(&remote, call.args.into_value(), &call.signal)
                    .await?;
                let mut result = tool_result(&result);
                result.content = result.content.map(limit_content);
                Ok(result)
            }
        },
    )
    .with_label(tool.title.as_deref().unwrap_or(&tool.name));
    // A read-only tool may run again after a crash; anything else might act twice.
    if read_only {
        agent_tool.with_replay(Replay::Safe)
    } else {
        agent_tool
    }
}

/// The input schema as providers take it: an object schema with `properties` (servers may
/// omit both); other keywords are kept.
fn input_schema(schema: &Map<String, Value>) -> Value {
    let mut schema = schema.clone();
    schema
        .entry("type")
        .or_insert_with(|| Value::String("object".into()));
    schema
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    Value::Object(schema)
}
