//! Listeners: who hears the agent's events, in subscription order, after the state was
//! updated for each event.

use std::borrow::Cow;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use futures::future::{BoxFuture, Either};
use tern_ai::PartialMessage;
use tokio_util::sync::CancellationToken;

use super::state::State;
use super::Inner;
use crate::events::{AgentEvent, EventSink};

type AsyncListener =
    Arc<dyn Fn(Arc<AgentEvent>, CancellationToken) -> BoxFuture<'static, ()> + Send + Sync>;
type SyncListener = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

#[derive(Clone)]
pub(super) enum Listener {
    Async(AsyncListener),
    Sync(SyncListener),
}

#[derive(Clone)]
pub(super) struct Listeners {
    list: Vec<(u64, Listener)>,
    all_sync: bool,
}

impl Default for Listeners {
    fn default() -> Self {
        Listeners {
            list: Vec::new(),
            all_sync: true,
        }
    }
}

impl Listeners {
    pub(super) fn add(&mut self, id: u64, listener: Listener) {
        // Agents usually have one or two listeners: no room for four.
        self.list.reserve_exact(1);
        self.list.push((id, listener));
        self.changed();
    }

    fn remove(&mut self, id: u64) {
        self.list.retain(|(i, _)| *i != id);
        self.changed();
    }

    fn changed(&mut self) {
        self.all_sync = self
            .list
            .iter()
            .all(|(_, l)| matches!(l, Listener::Sync(_)));
    }
}

/// Handle returned by [`Agent::subscribe`](super::Agent::subscribe); call
/// [`Subscription::unsubscribe`] to remove the listener (dropping the handle keeps it).
pub struct Subscription {
    pub(super) inner: std::sync::Weak<Inner>,
    pub(super) id: u64,
}

impl Subscription {
    /// Removes the listener.
    pub fn unsubscribe(self) {
        if let Some(inner) = self.inner.upgrade() {
            let mut st = inner.state.lock();
            st.listeners_mut(&inner.changes).remove(self.id);
        }
    }
}

/// The run's view of the agent. Shared: the tool executor clones it for every call.
#[derive(Clone)]
pub(super) struct AgentSink(Arc<SinkInner>);

struct SinkInner {
    inner: Arc<Inner>,
    signal: CancellationToken,
    // The listeners when the run began. While the agent's list is this one, an event reads it
    // from here without a reference count; the agent changes its list by copying it (this
    // clone keeps it shared), so a changed list is a different allocation.
    listeners: Arc<Listeners>,
    // What the last event that took the lock found, written in that lock: the agent's count
    // of changes when the listeners were this run's (`NOT_OURS` when they were not), and the
    // partial message (its identity) the state streamed then (0 for none, or when that event
    // carried no partial). While the count stays there, an event that changes no state
    // ([`State::ignores`]) and a delta of that partial read the listeners without the lock.
    ours_at: AtomicU64,
    streamed: AtomicUsize,
}

/// [`SinkInner::ours_at`] when the agent's listeners are not the run's.
const NOT_OURS: u64 = u64::MAX;

impl AgentSink {
    pub(super) fn new(inner: Arc<Inner>, signal: CancellationToken) -> Self {
        let (listeners, ours_at) = {
            let st = inner.state.lock();
            (st.listeners().clone(), inner.changes.get())
        };
        AgentSink(Arc::new(SinkInner {
            inner,
            signal,
            listeners,
            ours_at: AtomicU64::new(ours_at),
            streamed: AtomicUsize::new(0),
        }))
    }

    /// Whether listener `id` of the dispatch snapshot `seen` is still subscribed.
    fn still_subscribed(&self, seen: &Arc<Listeners>, id: u64) -> bool {
        let st = self.0.inner.state.lock();
        Arc::ptr_eq(st.listeners(), seen) || st.listeners().list.iter().any(|(i, _)| *i == id)
    }

    /// Applies the event to the state; returns the listeners to call, read in the same lock.
    ///
    /// A delta of the partial message the state already streams changes nothing: while the
    /// state's count of changes stays where the previous delta left it, the lock is skipped
    /// (a response's deltas are most of a run's events).
    fn reduce(&self, event: &AgentEvent) -> Cow<'_, Arc<Listeners>> {
        let partial = event.partial_message();
        let address = partial.map_or(0, PartialMessage::identity);
        let sink = &self.0;
        let unchanged = match address {
            0 => State::ignores(event),
            a => sink.streamed.load(Ordering::Relaxed) == a,
        };
        if unchanged && sink.inner.changes.get() == sink.ours_at.load(Ordering::Relaxed) {
            return Cow::Borrowed(&sink.listeners);
        }
        let mut st = sink.inner.state.lock();
        st.apply(event, &sink.inner.changes);
        let ours = Arc::ptr_eq(st.listeners(), &sink.listeners);
        let at = if ours {
            sink.inner.changes.get()
        } else {
            NOT_OURS
        };
        sink.ours_at.store(at, Ordering::Relaxed);
        let streamed = match partial {
            Some(partial) if ours && st.streams(partial) => address,
            _ => 0,
        };
        sink.streamed.store(streamed, Ordering::Relaxed);
        if ours {
            Cow::Borrowed(&sink.listeners)
        } else {
            Cow::Owned(st.listeners().clone())
        }
    }
}

impl EventSink for AgentSink {
    // Not an `async fn`: with only sync listeners (the usual case) the event is handled when
    // `emit` is called, and the loop awaits a ready future instead of moving an event-sized
    // state machine for every event. The loop awaits every emit at once, so this is the
    // order an `async fn` would give.
    fn emit(&self, event: AgentEvent) -> impl Future<Output = ()> + Send {
        let listeners = self.reduce(&event);
        if listeners.all_sync {
            for (_, l) in listeners.list.iter() {
                if let Listener::Sync(f) = l {
                    f(&event);
                }
            }
            return Either::Left(std::future::ready(()));
        }
        let sink = self.clone();
        let listeners = listeners.into_owned();
        Either::Right(Box::pin(
            async move { sink.dispatch(listeners, event).await },
        ))
    }
}

impl AgentSink {
    /// Calls the listeners of `listeners` in order, awaiting the async ones.
    async fn dispatch(&self, listeners: Arc<Listeners>, event: AgentEvent) {
        // Async listeners share one allocation of the event.
        let event = Arc::new(event);
        for (index, (id, l)) in listeners.list.iter().enumerate() {
            // A listener removed while this event is dispatched (by an earlier listener) does
            // not get it, as with the reference's live listener set.
            if index > 0 && !self.still_subscribed(&listeners, *id) {
                continue;
            }
            match l {
                Listener::Sync(f) => f(&event),
                Listener::Async(f) => f(event.clone(), self.0.signal.clone()).await,
            }
        }
    }
}
