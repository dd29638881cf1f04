//! # tern-agent
//!
//! The Pi agent core in Rust: the low-level [loop](agent_loop) and the stateful [`Agent`].
//! An agent sends the transcript to a model, streams its reply, runs the tools it asks for,
//! feeds the results back, and goes again until the work is done. Steering messages can
//! redirect it between turns, follow-up messages extend it when it would stop, hooks can
//! inspect and change every step, and every step is reported as an [`AgentEvent`].
//!
//! ```
//! use std::sync::Arc;
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use serde_json::json;
//! use tern_agent::{Agent, AgentOptions, AgentTool, ToolResult};
//! use tern_ai::faux::{FauxModel, FauxResponse};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Weather { city: String }
//!
//! let weather = AgentTool::typed("weather", "Current weather of a city.", |a: Weather, _| async move {
//!     Ok(ToolResult::text(format!("Sunny in {}", a.city)))
//! });
//! let model = FauxModel::new(vec![
//!     FauxResponse::tool_call("call_1", "weather", json!({"city": "Oslo"})),
//!     FauxResponse::text("It is sunny in Oslo."),
//! ]);
//! let agent = Agent::new(AgentOptions {
//!     system_prompt: Some("You answer weather questions.".into()),
//!     tools: vec![weather],
//!     stream_fn: Some(Arc::new(model)),
//!     ..Default::default()
//! });
//! agent.subscribe_sync(|e| eprintln!("event: {}", e.kind()));
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! agent.prompt("Weather in Oslo?").await.unwrap();
//! # });
//! let last = agent.state().messages.last().cloned().unwrap();
//! assert_eq!(last.as_assistant().unwrap().text(), "It is sunny in Oslo.");
//! ```

#![warn(missing_docs)]

pub mod agent;
pub mod agent_loop;
pub mod config;
pub mod error;
pub mod events;
pub mod hooks;
pub mod outcome;
pub mod queue;
pub mod tool;
mod tool_declarations;
pub mod tool_exec;

pub use agent::{Agent, AgentBuilder, AgentOptions, AgentState, Subscription};
pub use agent_loop::{
    agent_loop, agent_loop_continue, default_convert_to_llm, run_agent_loop,
    run_agent_loop_continue, AgentEventStream,
};
pub use config::{AgentContext, AgentLoopConfig};
pub use error::AgentError;
pub use events::{AgentEvent, EventSink};
pub use hooks::Hooks;
pub use outcome::{RunEnding, RunOutcome, StopCause};
pub use queue::{PendingMessageQueue, QueueMode};
pub use tool::{
    schema_for, AgentTool, ToolCallInput, ToolExecutionMode, ToolOutput, ToolResult, ToolUpdater,
};
pub use tool_exec::{run_tool_call, RunToolCallOptions, ToolCallOutcome};

// The README's Rust example is compiled and run as a doctest.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
