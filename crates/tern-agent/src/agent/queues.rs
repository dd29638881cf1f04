//! The agent's steering and follow-up queues.
//!
//! A run asks for steering messages at every turn, and almost always there are none: the
//! queue says so through a flag it keeps beside its lock, so that the usual answer takes no
//! lock.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Mutex, MutexGuard};
use tern_ai::Message;

use crate::queue::{PendingMessageQueue, QueueMode};

/// A [`PendingMessageQueue`] behind a lock, with a flag that tells whether it holds anything.
pub(super) struct SharedQueue {
    queue: Mutex<PendingMessageQueue>,
    // Written under the lock, after every change (the guard's drop); read without it.
    queued: AtomicBool,
}

impl SharedQueue {
    pub(super) fn new(mode: QueueMode) -> Self {
        SharedQueue {
            queue: Mutex::new(PendingMessageQueue::new(mode)),
            queued: AtomicBool::new(false),
        }
    }

    /// The queue, to read or change.
    pub(super) fn lock(&self) -> QueueGuard<'_> {
        QueueGuard {
            queue: self.queue.lock(),
            queued: &self.queued,
        }
    }

    /// Takes what the queue's mode allows; nothing, without the lock, when nothing waits.
    ///
    /// A message queued while this runs is either taken now or left for the next call, as
    /// with the lock taken first.
    pub(super) fn drain(&self) -> Vec<Message> {
        if !self.queued.load(Ordering::Acquire) {
            return Vec::new();
        }
        self.lock().drain()
    }
}

/// The locked queue; dropping it records whether anything waits.
pub(super) struct QueueGuard<'a> {
    queue: MutexGuard<'a, PendingMessageQueue>,
    queued: &'a AtomicBool,
}

impl Deref for QueueGuard<'_> {
    type Target = PendingMessageQueue;
    fn deref(&self) -> &PendingMessageQueue {
        &self.queue
    }
}

impl DerefMut for QueueGuard<'_> {
    fn deref_mut(&mut self) -> &mut PendingMessageQueue {
        &mut self.queue
    }
}

impl Drop for QueueGuard<'_> {
    fn drop(&mut self) {
        self.queued.store(self.queue.has_items(), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drain_sees_what_the_guard_left() {
        let q = SharedQueue::new(QueueMode::OneAtATime);
        assert!(q.drain().is_empty());
        q.lock().enqueue(Message::user_text("a"));
        q.lock().enqueue(Message::user_text("b"));
        assert_eq!(q.drain().len(), 1, "one at a time");
        assert_eq!(q.drain().len(), 1);
        assert!(q.drain().is_empty());
        q.lock().enqueue(Message::user_text("c"));
        q.lock().clear();
        assert!(q.drain().is_empty());
        q.lock().mode = QueueMode::All;
        q.lock().enqueue(Message::user_text("d"));
        q.lock().enqueue(Message::user_text("e"));
        assert_eq!(q.drain().len(), 2);
        assert!(!q.queued.load(Ordering::Relaxed));
    }
}
