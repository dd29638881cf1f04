//! The steering and follow-up queues.

use serde::{Deserialize, Serialize};
use tern_ai::Message;

/// How a queue is drained.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum QueueMode {
    /// Everything queued is delivered at once.
    #[serde(rename = "all")]
    All,
    /// One message per poll (the default).
    #[default]
    #[serde(rename = "one-at-a-time")]
    OneAtATime,
}

/// Messages waiting to be injected into a run.
#[derive(Clone, Debug, Default)]
pub struct PendingMessageQueue {
    messages: Vec<Message>,
    /// How `drain` takes messages.
    pub mode: QueueMode,
}

impl PendingMessageQueue {
    /// An empty queue.
    pub fn new(mode: QueueMode) -> Self {
        PendingMessageQueue {
            messages: Vec::new(),
            mode,
        }
    }

    /// Adds a message at the end.
    pub fn enqueue(&mut self, m: Message) {
        self.messages.push(m);
    }

    /// Whether anything waits.
    pub fn has_items(&self) -> bool {
        !self.messages.is_empty()
    }

    /// What the next drain would take, without taking it.
    pub fn peek(&self) -> Vec<Message> {
        match self.mode {
            QueueMode::All => self.messages.clone(),
            QueueMode::OneAtATime => self.messages.first().cloned().into_iter().collect(),
        }
    }

    /// Takes what the mode allows.
    pub fn drain(&mut self) -> Vec<Message> {
        // The usual case, asked at every turn: nothing queued.
        if self.messages.is_empty() {
            return Vec::new();
        }
        let n = match self.mode {
            QueueMode::All => self.messages.len(),
            QueueMode::OneAtATime => self.messages.len().min(1),
        };
        self.messages.drain(..n).collect()
    }

    /// Everything queued, oldest first.
    pub fn all(&self) -> &[Message] {
        &self.messages
    }

    /// Removes everything.
    pub fn clear(&mut self) {
        self.messages.clear();
    }

    /// Takes everything, whatever the mode.
    pub fn take_all(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.messages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_at_a_time_takes_one() {
        let mut q = PendingMessageQueue::new(QueueMode::OneAtATime);
        q.enqueue(Message::user_text("a"));
        q.enqueue(Message::user_text("b"));
        assert_eq!(q.drain().len(), 1);
        assert_eq!(q.all().len(), 1);
        q.mode = QueueMode::All;
        q.enqueue(Message::user_text("c"));
        assert_eq!(q.peek().len(), 2);
        assert_eq!(q.drain().len(), 2);
        assert!(!q.has_items());
    }
}
