//! The partial messages of one response, followed as the agent loop follows them.
//!
//! The loop puts a response's partial into its context at every `start` and replaces only
//! the last one with the final message, as the reference's loop does; a provider that
//! starts again (Bedrock pushes a `start` at each `messageStart`) so leaves earlier partials
//! in the context, and in the next request. A layer between a stream and the loop that
//! records responses (a journal, a workflow) follows the same handles with
//! [`ResponsePartials`], keeps what they show as [`Restart`]s, and plays them back with
//! [`Restart::into_partial`], so a replayed loop's context is the live one.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tern_ai::{AssistantMessage, AssistantMessageEvent, PartialMessage};

/// Which partial handle of a response the loop holds, and which ones a later `start` left
/// behind in its context.
///
/// ```
/// use tern_agent::{ResponsePartials, Restart};
/// use tern_ai::{AssistantMessage, AssistantMessageEvent, ContentBlock, PartialMessage};
///
/// let first = PartialMessage::new(AssistantMessage::default());
/// let mut partials = ResponsePartials::default();
/// partials.observe(&AssistantMessageEvent::Start { partial: first.clone() });
/// first.update(|m| m.content.push(ContentBlock::text("draft")));
/// let again = PartialMessage::new(AssistantMessage::default());
/// partials.observe(&AssistantMessageEvent::Start { partial: again.clone() });
/// // The first partial stays in the loop's context, as it is when the response ends.
/// let restarts = partials.restarts(&again.shared());
/// let Restart::Partial { message } = &restarts[0] else { panic!() };
/// assert_eq!(message.content, vec![ContentBlock::text("draft")]);
/// ```
#[derive(Debug, Default)]
pub struct ResponsePartials {
    current: Option<PartialMessage>,
    left: Vec<PartialMessage>,
}

impl ResponsePartials {
    /// A `start`: `partial` becomes the loop's, and the one it held, if any, stays behind.
    #[inline]
    pub fn start(&mut self, partial: PartialMessage) {
        if let Some(earlier) = self.current.replace(partial) {
            self.left_behind(earlier);
        }
    }

    /// Any other event before the end: the loop shows it (a `message_update`) when a `start`
    /// came first and the event carries a partial, and then holds that partial's handle.
    /// Returns whether the loop shows it.
    #[inline]
    pub fn update(&mut self, event: &AssistantMessageEvent) -> bool {
        let (Some(current), Some(p)) = (&mut self.current, event.partial()) else {
            return false;
        };
        // A provider updates one handle: a pointer test, no count, per delta.
        if !current.ptr_eq(p) {
            *current = p.clone();
        }
        true
    }

    /// [`start`](Self::start) or [`update`](Self::update), by the event's kind.
    pub fn observe(&mut self, event: &AssistantMessageEvent) {
        match event {
            AssistantMessageEvent::Start { partial } => self.start(partial.clone()),
            other => {
                self.update(other);
            }
        }
    }

    /// Whether a `start` came.
    #[inline]
    pub fn is_started(&self) -> bool {
        self.current.is_some()
    }

    /// The handle the loop holds now: the last `start`'s, or a later update's.
    #[inline]
    pub fn current(&self) -> Option<&PartialMessage> {
        self.current.as_ref()
    }

    /// The partials a later `start` left behind, in order (empty for almost every response).
    #[inline]
    pub fn left(&self) -> &[PartialMessage] {
        &self.left
    }

    /// What each left-behind partial shows in the loop's context, for a response that ended
    /// with `done` (its final message): read once the response has ended, as the loop reads
    /// them.
    pub fn restarts(&self, done: &Arc<AssistantMessage>) -> Vec<Restart> {
        // The loop records the thinking level on the final message in place when the handle
        // it holds shares it, so such a handle shows the final message as the loop keeps it.
        let ended_on = self.current.as_ref().filter(|c| c.is_shared(done));
        self.left
            .iter()
            .map(|p| match ended_on {
                Some(c) if c.ptr_eq(p) => Restart::Final,
                _ => Restart::Partial {
                    message: p.snapshot(),
                },
            })
            .collect()
    }

    // Out of line: almost no response starts twice.
    #[cold]
    fn left_behind(&mut self, earlier: PartialMessage) {
        self.left.push(earlier);
    }
}

/// What a partial that a repeated `start` left behind shows in the loop's context once its
/// response has ended ([`ResponsePartials::restarts`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Restart {
    /// The handle the response ended on, whose message the final event shares (a provider
    /// that keeps one partial, as tern's and the reference's do): the context shows the
    /// final message there too, as the loop keeps it.
    Final,
    /// Another partial, showing this message.
    Partial {
        /// The message as it was when the response ended.
        message: AssistantMessage,
    },
}

impl Restart {
    /// The handle a replay's repeated `start` carries for this restart: `ended_on`, the handle
    /// the replayed response ends on (its final event sharing its message), or a new one.
    pub fn into_partial(self, ended_on: &PartialMessage) -> PartialMessage {
        match self {
            Restart::Final => ended_on.clone(),
            Restart::Partial { message } => PartialMessage::new(message),
        }
    }
}
