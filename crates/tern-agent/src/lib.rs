//! tern-agent (work in progress)
pub mod events;
pub mod tool;
pub use events::AgentEvent;
pub use tool::{schema_for, AgentTool, ToolCallInput, ToolExecutionMode, ToolOutput, ToolResult, ToolUpdater};
