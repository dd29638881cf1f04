//! Tool declarations: the transcript's system messages declare what the model may call,
//! the context's tools are what the loop can execute, and before each request the
//! difference is announced in a system message.
//!
//! [`TranscriptIndex`] follows the loop's growing transcript so that a turn costs the same
//! whether the transcript holds ten messages or ten thousand.

use std::sync::Arc;

use tern_ai::transcript::{get_tool_state_changes, with_tool_changes, ToolChanges, ToolReplay};
use tern_ai::{Content, Message, SystemMessage, ToolDeclaration};

use crate::config::AgentContext;
use crate::tool::AgentTool;

/// What the loop knows about its context without rescanning it: the declared tools and
/// whether custom messages are present. Synced by looking only at messages appended since
/// the last look; a different transcript (a hook's replacement, a copy-on-write) is rescanned.
#[derive(Default)]
pub(crate) struct TranscriptIndex {
    messages_at: usize,
    len: usize,
    replay: ToolReplay,
    custom: usize,
    tools_at: usize,
    executable: Vec<Arc<ToolDeclaration>>,
    // The declared and the executable tools were found equal, and neither changed since:
    // the per-request check is then free.
    in_step: bool,
}

impl TranscriptIndex {
    fn sync(&mut self, context: &AgentContext) {
        let at = Arc::as_ptr(&context.messages) as usize;
        if at != self.messages_at || context.messages.len() < self.len {
            self.messages_at = at;
            self.len = 0;
            self.replay = ToolReplay::default();
            self.custom = 0;
            self.in_step = false;
        }
        for m in &context.messages[self.len..] {
            match m {
                Message::System(s) => {
                    self.replay.apply(s);
                    self.in_step &= !has_tool_fields(s);
                }
                Message::Custom(_) => self.custom += 1,
                _ => {}
            }
        }
        self.len = context.messages.len();
        let tools_at = Arc::as_ptr(&context.tools) as usize;
        if tools_at != self.tools_at {
            self.tools_at = tools_at;
            self.in_step = false;
            self.executable = context
                .tools
                .iter()
                .map(AgentTool::declaration)
                .cloned()
                .collect();
        }
    }

    /// Forgets everything (the context was replaced).
    pub(crate) fn invalidate(&mut self) {
        *self = TranscriptIndex::default();
    }

    /// Whether the transcript holds custom-role messages.
    pub(crate) fn has_custom(&mut self, context: &AgentContext) -> bool {
        self.sync(context);
        self.custom > 0
    }

    /// Announces the difference between the declared and the executable tools for the
    /// `pending` messages: a pending system message gets the delta as its tool fields, else a
    /// new system message goes before the first non-system pending message.
    pub(crate) fn declare_tool_changes(
        &mut self,
        context: &AgentContext,
        mut pending: Vec<Message>,
    ) -> Vec<Message> {
        self.sync(context);
        let system_index = pending
            .iter()
            .rposition(|m| matches!(m, Message::System(_)));
        let Some(i) = system_index else {
            if self.in_step {
                return pending;
            }
            let changes = get_tool_state_changes(self.replay.tools(), &self.executable);
            if changes.is_empty() {
                self.in_step = true;
                return pending;
            }
            let update = with_tool_changes(
                &SystemMessage {
                    content: Content::Text(String::new()),
                    timestamp: tern_ai::clock::now_ms(),
                    ..Default::default()
                },
                &changes,
            );
            let at = pending
                .iter()
                .position(|m| !matches!(m, Message::System(_)))
                .unwrap_or(pending.len());
            pending.insert(at, Message::from(update));
            return pending;
        };
        let Message::System(s) = &pending[i] else {
            return pending;
        };
        // The pending message's own tool fields are intent: they are replaced by the delta
        // between the committed transcript (plus the other pending messages) and the
        // executable set, so replay always yields exactly the context's tools.
        let had_fields = has_tool_fields(s);
        let stripped = with_tool_changes(s, &ToolChanges::default());
        let mut declared = self.replay.clone();
        for (j, m) in pending.iter().enumerate() {
            match m {
                Message::System(_) if j == i => declared.apply(&stripped),
                Message::System(other) => declared.apply(other),
                _ => {}
            }
        }
        let changes = get_tool_state_changes(declared.tools(), &self.executable);
        if changes.is_empty() && !had_fields {
            return pending;
        }
        pending[i] = Message::from(with_tool_changes(&stripped, &changes));
        pending
    }
}

fn has_tool_fields(s: &SystemMessage) -> bool {
    s.tools_added.as_ref().is_some_and(|t| !t.is_empty())
        || s.tools_removed.as_ref().is_some_and(|t| !t.is_empty())
}
