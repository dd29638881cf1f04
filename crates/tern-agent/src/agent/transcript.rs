//! The agent's transcript: packed into one buffer while the agent is idle, decoded while a
//! run is active.
//!
//! An idle agent's messages are only read, and rarely: held as a [`PackedTranscript`] they
//! cost a few bytes each beyond their texts instead of hundreds (ten thousand idle
//! conversations in one process is the case this serves). A run decodes them once when it
//! begins and works on ordinary messages, so nothing is decoded per turn; soon after it ends
//! (off the run's path, see `Agent::pack_when_idle`), only the messages it appended are
//! encoded (appended to the buffer) and the decoded ones are dropped.

use tern_ai::message::{MessageKind, PackedTranscript};
use tern_ai::Message;

pub(super) struct Transcript {
    packed: PackedTranscript,
    /// While a run is active: every message, decoded. Its first `packed.len()` messages are
    /// the packed ones (a replacement during the run empties `packed`).
    live: Option<Vec<Message>>,
}

impl Transcript {
    /// Packs `first` (the system message an agent adds, if any) and `rest`.
    pub(super) fn new(first: Option<Message>, rest: &[Message]) -> Self {
        let mut packed = PackedTranscript::new();
        packed.extend(first.iter().chain(rest));
        packed.shrink_to_fit();
        Transcript { packed, live: None }
    }

    pub(super) fn len(&self) -> usize {
        match &self.live {
            Some(live) => live.len(),
            None => self.packed.len(),
        }
    }

    /// Calls `f` with the messages: the decoded ones during a run, else a temporary decode.
    pub(super) fn with<R>(&self, f: impl FnOnce(&[Message]) -> R) -> R {
        match &self.live {
            Some(live) => f(live),
            None => f(&decode(&self.packed)),
        }
    }

    /// The messages, as a vector of their own.
    pub(super) fn to_vec(&self) -> Vec<Message> {
        match &self.live {
            Some(live) => live.clone(),
            None => decode(&self.packed),
        }
    }

    /// The kind of message `i`, without decoding it.
    pub(super) fn kind(&self, i: usize) -> Option<MessageKind> {
        match &self.live {
            Some(live) => live.get(i).map(MessageKind::of),
            None => self.packed.kind(i).ok(),
        }
    }

    /// The role of the last message (a custom one is decoded for its role).
    pub(super) fn last_role(&self) -> Option<String> {
        let i = self.len().checked_sub(1)?;
        match (&self.live, self.kind(i)?.role()) {
            (Some(live), _) => live.get(i).map(|m| m.role().to_string()),
            (None, Some(role)) => Some(role.to_string()),
            (None, None) => self.packed.get(i).ok().map(|m| m.role().to_string()),
        }
    }

    /// The system messages alone (all the replayed prompt and tools are made of): an idle
    /// transcript decodes only them.
    pub(super) fn system_messages(&self) -> Vec<Message> {
        let system = |i: &usize| self.kind(*i) == Some(MessageKind::System);
        match &self.live {
            Some(live) => live
                .iter()
                .filter(|m| matches!(m, Message::System(_)))
                .cloned()
                .collect(),
            None => (0..self.packed.len())
                .filter(system)
                .filter_map(|i| self.packed.get(i).ok())
                .collect(),
        }
    }

    /// Appends a message the run produced.
    pub(super) fn push(&mut self, m: Message) {
        match &mut self.live {
            Some(live) => live.push(m),
            None => self.packed.push(&m),
        }
    }

    /// Replaces every message.
    pub(super) fn replace(&mut self, mut messages: Vec<Message>) {
        match &mut self.live {
            Some(live) => {
                // Kept decoded until the run ends: no spare capacity meanwhile.
                messages.iter_mut().for_each(Message::shrink_to_fit);
                *live = messages;
                self.packed = PackedTranscript::new();
            }
            None => self.packed = PackedTranscript::from(messages),
        }
    }

    /// A run begins: decode the transcript for it (once; a second call keeps it).
    pub(super) fn begin_run(&mut self) {
        if self.live.is_none() {
            // With room for the run's messages from the start, not a second allocation.
            self.live = Some(decode_with_room(&self.packed, crate::agent_loop::RUN_ROOM));
        }
    }

    /// A run ended: encode what it appended and drop the decoded messages.
    pub(super) fn end_run(&mut self) {
        if let Some(live) = self.live.take() {
            let packed = self.packed.len().min(live.len());
            self.packed.extend(&live[packed..]);
            self.packed.shrink_to_fit();
        }
    }
}

/// All messages decoded. The buffer is written only by `PackedTranscript` itself, so a
/// message that does not decode means the buffer was damaged in memory; such a message is
/// left out rather than failing every reader of the agent.
fn decode(packed: &PackedTranscript) -> Vec<Message> {
    decode_with_room(packed, 0)
}

/// [`decode`] into a vector with room for `room` more messages.
fn decode_with_room(packed: &PackedTranscript, room: usize) -> Vec<Message> {
    let mut all = Vec::with_capacity(packed.len() + room);
    all.extend(packed.iter().filter_map(Result::ok));
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(t: &Transcript) -> Vec<String> {
        t.with(|ms| {
            ms.iter()
                .map(|m| serde_json::to_string(m).unwrap())
                .collect()
        })
    }

    fn user(text: &str) -> Message {
        Message::from(tern_ai::UserMessage {
            content: text.into(),
            timestamp: 7,
            extra: None,
        })
    }

    #[test]
    fn a_run_appends_to_the_packed_messages_and_a_replacement_replaces_them() {
        let system = Message::from(tern_ai::SystemMessage {
            content: "p".into(),
            ..tern_ai::SystemMessage::default()
        });
        let mut t = Transcript::new(Some(system.clone()), &[user("a")]);
        assert_eq!(t.len(), 2);
        assert_eq!(t.to_vec(), vec![system.clone(), user("a")]);
        assert_eq!(t.last_role().as_deref(), Some("user"));

        t.begin_run();
        t.push(user("b"));
        assert_eq!(t.len(), 3);
        t.end_run();
        assert!(t.live.is_none());
        assert_eq!(t.packed.len(), 3);
        assert_eq!(t.to_vec(), vec![system.clone(), user("a"), user("b")]);
        assert_eq!(t.system_messages(), vec![system.clone()]);

        // Replaced during a run: the packed prefix no longer applies.
        t.begin_run();
        t.replace(vec![user("x")]);
        t.push(user("y"));
        t.end_run();
        assert_eq!(
            texts(&t),
            texts(&Transcript::new(None, &[user("x"), user("y")]))
        );
        assert!(t.system_messages().is_empty());
    }
}
