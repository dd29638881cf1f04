//! # tern-temporal
//!
//! tern agents on Temporal: one workflow per session runs tern-agent's own loop as workflow
//! code; each model request and each tool call is an activity on a worker. Input arrives as
//! Workflow Updates, state is read with queries. See the crate README for what runs where
//! and what is guaranteed.
//!
//! - [`Sessions`] / [`SessionHandle`]: start, prompt, steer, follow and close sessions.
//! - [`build_worker`]: a worker with a provider (a `StreamFn`), tools, hooks and a listener.
//! - [`hooks`]: how the loop's hooks and event listeners run on the worker.
//! - [`live`]: a model request's events sent to subscribers while it streams.
//! - [`wire`]: the payloads that cross Temporal.

#![warn(missing_docs)]

pub mod activities;
mod client;
mod error;
pub mod hooks;
pub mod live;
pub mod stream_record;
pub mod wire;
mod worker;
pub mod workflow;

pub use activities::AgentActivities;
pub use client::{connect_client, parse_address, SessionHandle, Sessions, QUERY_PATIENCE};
pub use error::Error;
pub use wire::{
    ClearQueues, LiveSubscription, LiveTarget, RequestOptions, SessionInput, SessionMessages,
    SessionOutput, SessionSettings, SessionState, ToolReply, ToolRequest, ToolSpec,
};
pub use worker::{build_worker, runtime};
pub use workflow::AgentWorkflow;
