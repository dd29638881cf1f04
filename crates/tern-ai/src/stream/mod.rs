//! Event streams: a producer pushes events, one consumer iterates them and can await the
//! final result.
//!
//! [`EventStream`] is generic; [`AssistantMessageEventStream`] is the one stream functions
//! return. It ends at `done` or `error`, and it times the response: the final message gets
//! `durationMs` from the stream's creation, as the reference's stream does.
//!
//! ```
//! # tokio_test_block(async {
//! use tern_ai::{assistant_stream, AssistantMessage, AssistantMessageEvent, StopReason};
//! let (tx, mut stream) = assistant_stream();
//! let message = AssistantMessage { timestamp: tern_ai::clock::now_ms(), ..Default::default() };
//! tx.push(AssistantMessageEvent::Done { reason: StopReason::Stop, message: std::sync::Arc::new(message) });
//! assert_eq!(stream.next().await.map(|e| e.kind()), Some("done"));
//! assert!(stream.next().await.is_none());
//! assert!(stream.result().await.duration_ms.is_some());
//! # });
//! # fn tokio_test_block(f: impl std::future::Future<Output = ()>) {
//! #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
//! # }
//! ```

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use parking_lot::Mutex;

use crate::clock::now_ms;
use crate::event::AssistantMessageEvent;
use crate::message::{AssistantMessage, StopReason};

mod queue;
use queue::{Chunks, Drain};

/// An event type that may end its stream with a result.
///
/// Events are `Send + 'static`: a stream's producer and consumer may run on different threads,
/// and the buffers of large queues are kept process-wide for the next stream of the same type.
pub trait StreamEvent: Send + 'static {
    /// The stream's final result.
    type Output: Clone;
    /// `Some(result)` when this event completes the stream.
    fn completes(&self) -> Option<Self::Output>;
}

struct State<E: StreamEvent> {
    queue: Chunks<E>,
    done: bool,
    result: Option<E::Output>,
    consumer: Option<Waker>,
    result_waiters: Vec<Waker>,
    // Why the producer failed part-way (assistant streams); kept here rather than in an
    // allocation of its own per response.
    failure: Option<String>,
}

struct Shared<E: StreamEvent> {
    state: Mutex<State<E>>,
}

impl<E: StreamEvent> Shared<E> {
    /// Ends the stream; `failure`, when given, is recorded unless the stream was done.
    fn finish_with(&self, result: Option<E::Output>, failure: Option<String>) {
        let wakers = {
            let mut st = self.state.lock();
            if failure.is_some() && !st.done {
                st.failure = failure;
            }
            st.done = true;
            if result.is_some() && st.result.is_none() {
                st.result = result;
            }
            let mut w = std::mem::take(&mut st.result_waiters);
            w.extend(st.consumer.take());
            w
        };
        for w in wakers {
            w.wake();
        }
    }
}

/// The producing half of an [`EventStream`]. Dropping it ends the stream.
pub struct EventSender<E: StreamEvent> {
    shared: Arc<Shared<E>>,
    // Set once this sender saw the stream done (in the lock): the end on drop then has
    // nothing left to do and skips the lock. The stream never comes undone.
    ended: AtomicBool,
}

/// The consuming half: iterate with [`EventStream::next`], then await the final message (for
/// assistant messages, [`AssistantMessageEventStream::result`]).
pub struct EventStream<E: StreamEvent> {
    shared: Arc<Shared<E>>,
    // Events taken from the shared queue in one lock, handed out one by one.
    local: Drain<E>,
    // The producer, run by this consumer's polls ([`AssistantMessageEventStream::driven_by`]).
    driver: Option<Mutex<Option<Driver>>>,
}

/// A producer future run by the stream's consumer.
type Driver = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A connected sender and stream.
pub fn event_stream<E: StreamEvent>() -> (EventSender<E>, EventStream<E>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            queue: Chunks::new(),
            done: false,
            result: None,
            consumer: None,
            result_waiters: Vec::new(),
            failure: None,
        }),
    });
    (
        EventSender {
            shared: shared.clone(),
            ended: AtomicBool::new(false),
        },
        EventStream {
            shared,
            local: Drain::new(),
            driver: None,
        },
    )
}

impl<E: StreamEvent> EventSender<E> {
    /// Pushes an event. Ignored once the stream is done; an event that completes the stream
    /// sets its result.
    pub fn push(&self, event: E) {
        self.push_with(event, |_| {});
    }

    /// [`push`](Self::push), with `prepare` run on the event first, in the same lock, unless
    /// the stream is done (then the event is dropped unprepared).
    fn push_with(&self, mut event: E, prepare: impl FnOnce(&mut E)) {
        let waker = {
            let mut st = self.shared.state.lock();
            if st.done {
                self.ended.store(true, Ordering::Relaxed);
                return;
            }
            prepare(&mut event);
            let mut wakers = Vec::new();
            if let Some(r) = event.completes() {
                self.ended.store(true, Ordering::Relaxed);
                st.done = true;
                st.result = Some(r);
                wakers = std::mem::take(&mut st.result_waiters);
            }
            st.queue.push(event);
            for w in wakers {
                w.wake();
            }
            st.consumer.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Pushes events in order under one lock, waking the consumer once: what
    /// [`push`](Self::push) does for each, for a producer that has several at once (a network
    /// read, a scripted block). Events after one that completes the stream are ignored.
    pub fn push_all(&self, events: impl IntoIterator<Item = E>) {
        let (consumer, waiters) = {
            let mut st = self.shared.state.lock();
            let mut waiters = Vec::new();
            if !st.done {
                if let Some(r) = st.queue.extend(&mut events.into_iter()) {
                    st.done = true;
                    st.result = Some(r);
                    waiters = std::mem::take(&mut st.result_waiters);
                }
            }
            self.ended.store(st.done, Ordering::Relaxed);
            let consumer = match st.queue.is_empty() && !st.done {
                true => None,
                false => st.consumer.take(),
            };
            (consumer, waiters)
        };
        for w in waiters.into_iter().chain(consumer) {
            w.wake();
        }
    }

    /// Ends the stream, optionally with a result (when no event gave one).
    pub fn end(&self, result: Option<E::Output>) {
        self.finish_with(result, None);
    }

    /// Ends the stream (see [`Shared::finish_with`]); this sender then has nothing left to
    /// end on drop.
    fn finish_with(&self, result: Option<E::Output>, failure: Option<String>) {
        self.shared.finish_with(result, failure);
        self.ended.store(true, Ordering::Relaxed);
    }

    /// Whether the stream is done (a completing event or `end`).
    pub fn is_done(&self) -> bool {
        self.shared.state.lock().done
    }
}

impl<E: StreamEvent> Drop for EventSender<E> {
    fn drop(&mut self) {
        // A sender is never cloned, so it is the only producer: when it goes away the stream
        // ends, and a consumer never hangs on it. One that saw it done has nothing to end: no
        // waker registers on a done stream, and a done stream keeps its result.
        if !self.ended.load(Ordering::Relaxed) {
            self.shared.finish_with(None, None);
        }
    }
}

impl<E: StreamEvent> EventStream<E> {
    /// The next event, or `None` once the stream is done and drained.
    // A plain future rather than an `async fn`: the event is handed out by the poll itself,
    // without a state machine of its own to move it through. Named as `StreamExt::next` is.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> impl Future<Output = Option<E>> + '_ {
        poll_fn(|cx| self.poll_next_event(cx))
    }

    /// Runs the driver, if any, until it waits or finishes (then it is dropped).
    fn poll_driver(&self, cx: &mut Context<'_>) {
        let Some(slot) = &self.driver else { return };
        let mut slot = slot.lock();
        if let Some(driver) = slot.as_mut() {
            if driver.as_mut().poll(cx).is_ready() {
                *slot = None;
            }
        }
    }

    // The usual case, an event taken already, inlined into the consumer: an event returned
    // from a call is copied out of the callee's stores at an offset, which stalls.
    #[inline]
    fn poll_next_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<E>> {
        match self.local.pop() {
            Some(e) => Poll::Ready(Some(e)),
            None => self.poll_refill(cx),
        }
    }

    /// Takes what the producer queued since, or waits for it.
    #[inline(never)]
    fn poll_refill(&mut self, cx: &mut Context<'_>) -> Poll<Option<E>> {
        self.poll_driver(cx);
        let mut st = self.shared.state.lock();
        if !st.queue.is_empty() {
            self.local.refill(&mut st.queue);
            drop(st);
            return Poll::Ready(self.local.pop());
        }
        if st.done {
            return Poll::Ready(None);
        }
        st.consumer = Some(cx.waker().clone());
        Poll::Pending
    }

    /// The final result: the completing event's result, or what `end` was given. `None` when
    /// the stream ended without one.
    pub async fn final_result(&self) -> Option<E::Output> {
        poll_fn(|cx| {
            self.poll_driver(cx);
            let mut st = self.shared.state.lock();
            if let Some(r) = &st.result {
                return Poll::Ready(Some(r.clone()));
            }
            if st.done {
                return Poll::Ready(None);
            }
            st.result_waiters.push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

impl<E: StreamEvent + Unpin> futures::Stream for EventStream<E> {
    type Item = E;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<E>> {
        self.get_mut().poll_next_event(cx)
    }
}

impl StreamEvent for AssistantMessageEvent {
    type Output = Arc<AssistantMessage>;
    fn completes(&self) -> Option<Arc<AssistantMessage>> {
        match self {
            AssistantMessageEvent::Done { message, .. } => Some(message.clone()),
            AssistantMessageEvent::Error { error, .. } => Some(error.clone()),
            _ => None,
        }
    }
}

/// The producing half of an [`AssistantMessageEventStream`]; times the final message.
pub struct AssistantMessageEventSender {
    inner: EventSender<AssistantMessageEvent>,
    started_at_ms: u64,
    started: crate::clock::Stopwatch,
}

/// The stream of one assistant response.
pub struct AssistantMessageEventStream {
    inner: EventStream<AssistantMessageEvent>,
}

/// A connected sender and assistant-message stream; the response's clock starts now.
pub fn assistant_stream() -> (AssistantMessageEventSender, AssistantMessageEventStream) {
    let (tx, rx) = event_stream();
    (
        AssistantMessageEventSender {
            inner: tx,
            started_at_ms: now_ms(),
            started: crate::clock::Stopwatch::start(),
        },
        AssistantMessageEventStream { inner: rx },
    )
}

impl AssistantMessageEventSender {
    /// Whether a final message gets its `durationMs` from this stream: not when it has one,
    /// nor when it started before the stream (a forwarded response).
    fn times(&self, message: &AssistantMessage) -> bool {
        message.duration_ms.is_none() && message.timestamp >= self.started_at_ms
    }

    fn time(&self, message: &mut Arc<AssistantMessage>) {
        // A producer that shares its partial message as the final one stamps it first
        // ([`time_message`](Self::time_message)), so this copies nothing then.
        if self.times(message) {
            self.time_message(crate::cow::make_mut(message));
        }
    }

    /// Gives `message` the `durationMs` its `done` or `error` would get on this stream: for a
    /// producer that shares the message its events built as the final one (see
    /// [`PartialMessage::shared`](crate::PartialMessage::shared)), so that the push then has
    /// nothing to change.
    ///
    /// ```
    /// use tern_ai::{assistant_stream, clock::now_ms, AssistantMessage, AssistantMessageEvent, PartialMessage, StopReason};
    /// let (tx, _stream) = assistant_stream();
    /// let partial = PartialMessage::new(AssistantMessage { timestamp: now_ms(), ..Default::default() });
    /// partial.update(|m| tx.time_message(m));
    /// let message = partial.shared();
    /// assert!(message.duration_ms.is_some());
    /// tx.push(AssistantMessageEvent::Done { reason: StopReason::Stop, message });
    /// ```
    pub fn time_message(&self, message: &mut AssistantMessage) {
        if self.times(message) {
            message.duration_ms = Some(self.started.elapsed_ms());
        }
    }

    /// Gives a `done`/`error` event its `durationMs`.
    #[inline]
    fn time_final(&self, event: &mut AssistantMessageEvent) {
        match event {
            AssistantMessageEvent::Done { message, .. } => self.time(message),
            AssistantMessageEvent::Error { error, .. } => self.time(error),
            _ => {}
        }
    }

    /// Pushes an event; `done`/`error` get their `durationMs` and end the stream.
    pub fn push(&self, event: AssistantMessageEvent) {
        // A final event pushed after the end is ignored: it is not timed (nor copied).
        self.inner.push_with(event, |e| self.time_final(e));
    }

    /// Pushes events in order under one lock, as [`push`](Self::push) each: for a producer
    /// with several at once (the records of one network read, a scripted block).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use tern_ai::{assistant_stream, AssistantMessage, AssistantMessageEvent as E, PartialMessage};
    /// let (tx, mut stream) = assistant_stream();
    /// let partial = PartialMessage::new(AssistantMessage::default());
    /// tx.push_all([E::Start { partial: partial.clone() }, E::Start { partial }]);
    /// drop(tx);
    /// let mut n = 0;
    /// while stream.next().await.is_some() {
    ///     n += 1;
    /// }
    /// assert_eq!(n, 2);
    /// # });
    /// ```
    pub fn push_all(&self, events: impl IntoIterator<Item = AssistantMessageEvent>) {
        self.inner.push_all(events.into_iter().map(|mut e| {
            self.time_final(&mut e);
            e
        }));
    }

    /// Ends the stream with a final message when no `done`/`error` event gave one.
    pub fn end(&self, result: Option<AssistantMessage>) {
        let done = self.inner.is_done();
        let result = result.map(|m| {
            let mut m = Arc::new(m);
            if !done {
                self.time(&mut m);
            }
            m
        });
        self.inner.end(result);
    }

    /// Whether a final event was pushed or the stream ended.
    pub fn is_done(&self) -> bool {
        self.inner.is_done()
    }

    /// Ends the stream with an error instead of a final message: the stream function failed
    /// part-way (the reference's stream iteration throwing). The consumer sees the events
    /// pushed so far, then [`AssistantMessageEventStream::failure`]. Ignored once done.
    pub fn fail(&self, message: impl Into<String>) {
        self.inner.finish_with(None, Some(message.into()));
    }
}

impl AssistantMessageEventStream {
    /// This stream with its producer run by its consumer: every poll of the stream (for an
    /// event or for the result) first polls `driver`, until it finishes. A stream function
    /// that forwards another stream, or awaits something before it answers, needs no task of
    /// its own (and no hop through the runtime's queue per event). Dropping the stream drops
    /// the driver.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use tern_ai::{assistant_stream, AssistantMessage, AssistantMessageEvent, StopReason};
    /// let (tx, stream) = assistant_stream();
    /// let stream = stream.driven_by(async move {
    ///     tokio::task::yield_now().await; // e.g. waiting for a journal
    ///     let message = AssistantMessage { timestamp: tern_ai::clock::now_ms(), ..Default::default() };
    ///     tx.push(AssistantMessageEvent::Done { reason: StopReason::Stop, message: std::sync::Arc::new(message) });
    /// });
    /// assert_eq!(stream.result().await.stop_reason, StopReason::Stop);
    /// # });
    /// ```
    pub fn driven_by(mut self, driver: impl Future<Output = ()> + Send + 'static) -> Self {
        self.inner.driver = Some(Mutex::new(Some(Box::pin(driver))));
        self
    }

    /// The next event, `None` after the last.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> impl Future<Output = Option<AssistantMessageEvent>> + '_ {
        self.inner.next()
    }

    /// Why the producer failed part-way ([`AssistantMessageEventSender::fail`]), once the
    /// events are drained; a consumer treats it as the stream function's error.
    pub fn failure(&self) -> Option<String> {
        self.inner.shared.state.lock().failure.clone()
    }

    /// The final message (shared with the final event). A producer that went away without a
    /// final event yields an `error` message saying so, never a hang.
    pub async fn result(&self) -> Arc<AssistantMessage> {
        match self.inner.final_result().await {
            Some(m) => m,
            None => Arc::new(AssistantMessage {
                stop_reason: StopReason::Error,
                error_message: Some(
                    "The response stream ended without a final message".to_string(),
                ),
                timestamp: now_ms(),
                ..AssistantMessage::default()
            }),
        }
    }
}

impl futures::Stream for AssistantMessageEventStream {
    type Item = AssistantMessageEvent;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().inner.poll_next_event(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::PartialMessage;

    fn text_delta(partial: &PartialMessage, d: &str) -> AssistantMessageEvent {
        AssistantMessageEvent::TextDelta {
            content_index: 0,
            delta: d.into(),
            partial: partial.clone(),
        }
    }

    #[tokio::test]
    async fn push_all_wakes_a_waiting_consumer_and_stops_at_the_final_event() {
        let (tx, mut rx) = assistant_stream();
        let partial = PartialMessage::new(AssistantMessage::default());
        // The consumer waits first, so only the batch's wake-up can bring it back.
        let consumer = tokio::spawn(async move {
            let mut deltas = String::new();
            while let Some(e) = rx.next().await {
                if let AssistantMessageEvent::TextDelta { delta, .. } = &e {
                    deltas.push_str(delta);
                }
            }
            (deltas, rx.result().await)
        });
        tokio::task::yield_now().await;
        let done = AssistantMessageEvent::Done {
            reason: StopReason::Stop,
            message: Arc::new(AssistantMessage {
                timestamp: now_ms(),
                ..AssistantMessage::default()
            }),
        };
        tx.push_all([
            text_delta(&partial, "a"),
            text_delta(&partial, "b"),
            done,
            text_delta(&partial, "after the end"),
        ]);
        tx.push_all([text_delta(&partial, "later still")]);
        let (deltas, result) = tokio::time::timeout(std::time::Duration::from_secs(10), consumer)
            .await
            .expect("the batch woke the consumer")
            .expect("the consumer ends");
        assert_eq!(deltas, "ab");
        assert_eq!(result.stop_reason, StopReason::Stop);
        assert!(result.duration_ms.is_some(), "the final message is timed");
    }

    #[tokio::test]
    async fn dropping_a_sender_ends_its_stream_unless_it_ended_already() {
        // Events but no final one, pushed one by one and in a batch: the drop ends the
        // stream, so a waiting consumer wakes and sees no result.
        let (tx, mut rx) = assistant_stream();
        let partial = PartialMessage::new(AssistantMessage::default());
        let consumer = tokio::spawn(async move {
            let mut n = 0;
            while rx.next().await.is_some() {
                n += 1;
            }
            (n, rx.inner.final_result().await.is_none())
        });
        tokio::task::yield_now().await;
        tx.push(text_delta(&partial, "a"));
        tx.push_all([text_delta(&partial, "b")]);
        drop(tx);
        let ended = tokio::time::timeout(std::time::Duration::from_secs(10), consumer).await;
        assert_eq!(ended.ok().and_then(Result::ok), Some((2, true)));
        // Ended by `end`: the drop leaves the result it gave.
        let (tx, mut rx) = assistant_stream();
        tx.end(Some(AssistantMessage::default()));
        drop(tx);
        assert!(rx.next().await.is_none());
        assert!(rx.inner.final_result().await.is_some());
    }

    #[tokio::test]
    async fn a_final_event_after_the_end_is_ignored() {
        let (tx, mut rx) = assistant_stream();
        let done = |reason, text: &str| AssistantMessageEvent::Done {
            reason,
            message: Arc::new(AssistantMessage {
                content: vec![crate::ContentBlock::text(text)],
                timestamp: now_ms(),
                ..AssistantMessage::default()
            }),
        };
        tx.push(done(StopReason::Stop, "first"));
        tx.push(done(StopReason::Length, "second"));
        let mut kinds = Vec::new();
        while let Some(e) = rx.next().await {
            kinds.push(e.kind());
        }
        assert_eq!(kinds, ["done"]);
        let result = rx.result().await;
        assert_eq!(result.text(), "first");
        assert!(result.duration_ms.is_some());
    }
}
