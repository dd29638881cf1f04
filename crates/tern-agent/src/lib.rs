//! # tern-agent
//!
//! The Pi agent core in Rust: the low-level [loop](mod@agent_loop) and the stateful [`Agent`].
//! An agent sends the transcript to a model, streams its reply, runs the tools it asks for,
//! feeds the results back, and goes again until the work is done. Steering messages can
//! redirect it between turns, follow-up messages extend it when it would stop, hooks can
//! inspect and change every step, and every step is reported as an [`AgentEvent`].
//!
//! Where things are:
//!
//! - [`agent`]: the stateful [`Agent`], its [`AgentBuilder`] and the Pi-shaped
//!   [`AgentOptions`]; [`outcome`]: the [`RunOutcome`] its runs return.
//! - [`agent_loop`](mod@agent_loop): the low-level loop (`agent_loop`, `run_agent_loop`, ...), configured by
//!   [`config`] ([`AgentLoopConfig`], [`AgentContext`]).
//! - [`hooks`]: every hook, its context and its decision, in one [`Hooks`] set.
//! - [`tool`]: tools and their results; [`tool_exec`]: how calls run (`run_tool_call`).
//! - [`events`]: [`AgentEvent`] and the [`EventSink`] that receives them; [`queue`]: the
//!   steering and follow-up queues; [`error`]: [`AgentError`].
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use serde_json::json;
//! use tern_agent::{Agent, AgentTool, RunEnding, ToolResult};
//! use tern_ai::faux::{FauxModel, FauxResponse};
//! use tern_ai::Model;
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
//! let agent = Agent::builder(Model::default(), model)
//!     .system_prompt("You answer weather questions.")
//!     .tool(weather)
//!     .build();
//! agent.subscribe_sync(|e| eprintln!("event: {}", e.kind()));
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let outcome = agent.prompt("Weather in Oslo?").await.unwrap();
//! assert_eq!(outcome.ending, RunEnding::Completed);
//! assert_eq!(outcome.final_text().as_deref(), Some("It is sunny in Oslo."));
//! # });
//! ```

#![warn(missing_docs)]

pub mod agent;
pub mod agent_loop;
pub mod config;
pub mod error;
pub mod events;
pub mod hooks;
pub mod outcome;
pub mod partials;
pub mod queue;
mod shared_declarations;
pub mod tool;
mod tool_args;
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
pub use partials::{ResponsePartials, Restart};
pub use queue::{PendingMessageQueue, QueueMode};
pub use tool::{
    schema_for, AgentTool, Replay, ToolCallInput, ToolExecutionMode, ToolOutput, ToolResult,
    ToolUpdater,
};
pub use tool_args::ToolArgs;
pub use tool_exec::{run_tool_call, RunToolCallOptions, ToolCallOutcome};

// The README's Rust example is compiled and run as a doctest.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
