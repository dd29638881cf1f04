//! Where the loop's events go.

use std::future::Future;

use crate::events::AgentEvent;

/// Receives the loop's events; the loop awaits each `emit` before it goes on.
///
/// Any `Fn(AgentEvent) -> impl Future<Output = ()>` closure is a sink:
///
/// ```
/// use tern_agent::{AgentEvent, EventSink};
/// fn takes_sink(_: &impl EventSink) {}
/// takes_sink(&|event: AgentEvent| async move { println!("{}", event.kind()) });
/// ```
pub trait EventSink: Send + Sync {
    /// Handles one event.
    fn emit(&self, event: AgentEvent) -> impl Future<Output = ()> + Send;
}

impl<F, Fut> EventSink for F
where
    F: Fn(AgentEvent) -> Fut + Send + Sync,
    Fut: Future<Output = ()> + Send,
{
    fn emit(&self, event: AgentEvent) -> impl Future<Output = ()> + Send {
        self(event)
    }
}
