//! A provider sink that keeps only the final message (the `done` message or the error's).

use tern_ai::providers::ProviderSink;
use tern_ai::{AssistantMessage, AssistantMessageEvent};

/// The final message a provider run produced, once it has ended.
#[derive(Default)]
pub struct Final(pub Option<AssistantMessage>);

impl ProviderSink for Final {
    fn emit(&mut self, event: AssistantMessageEvent) {
        match event {
            AssistantMessageEvent::Done { message, .. }
            | AssistantMessageEvent::Error { error: message, .. } => {
                self.0 = Some((*message).clone())
            }
            _ => {}
        }
    }
}
