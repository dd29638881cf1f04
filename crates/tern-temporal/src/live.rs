//! Live deltas: a model request's events while it streams, sent by the worker straight to
//! the session's subscribers, beside the session's event log.
//!
//! The log (the `events` query) is the authority: a model request's events enter it when
//! the request's activity completes. A caller that wants them as they stream opens a
//! [`LiveListener`] on an address the workers can reach and names it to the session
//! ([`SessionHandle::subscribe_live`](crate::SessionHandle::subscribe_live) with its
//! [`target`](LiveListener::target)); each model
//! request then carries the session's subscribers, and the worker running it connects to
//! each and writes, one JSON object a line:
//!
//! - a header: `{"token": T, "session": ID, "eventOffset": N, "attempt": A}` (`T`: the
//!   listener's token, drawn from the OS's randomness when it was bound: a connection
//!   without it is closed, so another process that finds the port cannot put events in the
//!   stream; `N`: where in the log the request's events will begin; `A`: the activity's
//!   attempt, 1 first);
//! - the request's events as the log will hold them: `message_start` with the message as it
//!   started, then a `message_update` per delta (no partial message, as in the log).
//!   The end (`message_end`) comes from the log only.
//!
//! A subscriber that cannot be reached is skipped (after a 1 s connect timeout); a slow one
//! only delays its own copy. [`LiveMerge`] puts the two sources together for a follower:
//! live events print as they come, and the log's copies of them are skipped when it
//! catches up, so each event prints once.
//!
//! A worker that dies mid-stream: its subscribers have seen the dead attempt's first
//! events; the retried attempt sends a new header (`attempt` + 1) and its events from its
//! own `message_start`, so a subscriber sees the message start over. The log, and the
//! transcript, hold only the attempt whose result reached the workflow.
//!
//! ```no_run
//! # async fn f(session: tern_temporal::SessionHandle) -> Result<(), Box<dyn std::error::Error>> {
//! let mut live = tern_temporal::live::LiveListener::bind("127.0.0.1:0").await?;
//! session.subscribe_live(live.target()).await?;
//! while let Some(event) = live.next().await {
//!     println!("{} at {}: {}", event.session, event.event_offset, event.event);
//! }
//! # Ok(()) }
//! ```

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};
use tern_ai::{AssistantMessage, AssistantMessageEvent, Message};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::wire::{LiveTarget, SessionState};

/// How long a worker tries to reach a subscriber.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// The longest line a listener reads (a larger one ends that connection).
const MAX_LINE: usize = 16 << 20;
/// The longest header line.
const MAX_HEADER: usize = 4096;
/// How many live events a merge keeps for a request the log has not reached yet.
const MAX_PENDING: usize = 100_000;

/// The worker's side: sends one model request's events to the session's subscribers.
pub(crate) struct Publisher {
    subscribers: Vec<mpsc::UnboundedSender<String>>,
}

impl Publisher {
    /// Starts sending to `targets` (none: `None`), each in a task of its own.
    pub(crate) fn start(
        targets: &[LiveTarget],
        session: &str,
        event_offset: usize,
        attempt: u32,
    ) -> Option<Publisher> {
        if targets.is_empty() {
            return None;
        }
        let subscribers = targets
            .iter()
            .map(|target| {
                let header = json!({"token": target.token, "session": session,
                                    "eventOffset": event_offset, "attempt": attempt})
                .to_string();
                let (tx, rx) = mpsc::unbounded_channel();
                tokio::spawn(send_to(target.address.clone(), header, rx));
                tx
            })
            .collect();
        Some(Publisher { subscribers })
    }

    /// Sends `event` (the request's `start` and deltas; the end is the log's). `start` is
    /// the message as the recorder took it at `start`: the event's partial is shared with
    /// the provider, which may have moved on, and the log must get the very same message.
    pub(crate) fn publish(&self, event: &AssistantMessageEvent, start: Option<&AssistantMessage>) {
        let Some(line) = line_of(event, start) else {
            return;
        };
        for s in &self.subscribers {
            // A subscriber that went away is simply no longer written to.
            let _ = s.send(line.clone());
        }
    }
}

/// The log's form of a streamed event: `message_start` with the message as it started
/// (`start`, else the event's partial now), a `message_update` without the partial message;
/// `None` for the end.
fn line_of(event: &AssistantMessageEvent, start: Option<&AssistantMessage>) -> Option<String> {
    let v = match event {
        AssistantMessageEvent::Start { partial } => {
            // As a message: with its `role`, as the log's `message_start` has it.
            let started = start.cloned().unwrap_or_else(|| partial.snapshot());
            json!({"type": "message_start", "message": Message::from(started)})
        }
        AssistantMessageEvent::Done { .. } | AssistantMessageEvent::Error { .. } => return None,
        other => {
            let mut e = serde_json::to_value(other).ok()?;
            if let Some(m) = e.as_object_mut() {
                m.remove("partial");
            }
            json!({"type": "message_update", "assistantMessageEvent": e})
        }
    };
    Some(v.to_string())
}

async fn send_to(address: String, header: String, mut lines: mpsc::UnboundedReceiver<String>) {
    let Ok(Ok(stream)) = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&address)).await
    else {
        return;
    };
    let _ = stream.set_nodelay(true);
    let mut out = BufWriter::new(stream);
    let mut next = Some(header);
    while let Some(line) = next {
        if write_line(&mut out, &line).await.is_err() {
            return;
        }
        // What is already queued goes in the same write; the subscriber gets it now.
        while let Ok(more) = lines.try_recv() {
            if write_line(&mut out, &more).await.is_err() {
                return;
            }
        }
        if out.flush().await.is_err() {
            return;
        }
        next = lines.recv().await;
    }
    let _ = out.shutdown().await;
}

async fn write_line<W: AsyncWrite + Unpin>(out: &mut W, line: &str) -> std::io::Result<()> {
    out.write_all(line.as_bytes()).await?;
    out.write_all(b"\n").await
}

/// One event a worker sent live.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveEvent {
    /// The session (its workflow id).
    pub session: String,
    /// Where in the session's log the request's events begin.
    pub event_offset: usize,
    /// The request's activity attempt (1 first; a larger one after a worker died).
    pub attempt: u32,
    /// The event, as the log will hold it.
    pub event: Value,
}

/// The subscriber's side: a TCP listener the workers connect to.
pub struct LiveListener {
    address: SocketAddr,
    token: String,
    events: mpsc::UnboundedReceiver<LiveEvent>,
    accept: tokio::task::JoinHandle<()>,
}

impl LiveListener {
    /// Listens on `address` (`HOST:PORT`; port 0 picks one: read it with
    /// [`address`](Self::address)), with a new token.
    pub async fn bind(address: &str) -> std::io::Result<LiveListener> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let listener = TcpListener::bind(address).await?;
        let address = listener.local_addr()?;
        let (tx, events) = mpsc::unbounded_channel();
        let expected = token.clone();
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(read_from(stream, expected.clone(), tx.clone()));
            }
        });
        Ok(LiveListener {
            address,
            token,
            events,
            accept,
        })
    }

    /// The address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// What a session is told: the address and the token.
    pub fn target(&self) -> LiveTarget {
        LiveTarget {
            address: self.address.to_string(),
            token: self.token.clone(),
        }
    }

    /// The next event any worker sent.
    pub async fn next(&mut self) -> Option<LiveEvent> {
        self.events.recv().await
    }

    /// Every event received and not yet taken, without waiting.
    pub fn drain(&mut self) -> Vec<LiveEvent> {
        std::iter::from_fn(|| self.events.try_recv().ok()).collect()
    }
}

impl Drop for LiveListener {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Reads one worker's connection: its header (closed unless it has `token`), then its
/// events.
async fn read_from(stream: TcpStream, token: String, tx: mpsc::UnboundedSender<LiveEvent>) {
    let mut lines = BufReader::new(stream);
    let mut line = String::new();
    let mut header: Option<(String, usize, u32)> = None;
    loop {
        line.clear();
        // Until the token is checked, a connection may send only a short header.
        let limit = if header.is_none() {
            MAX_HEADER
        } else {
            MAX_LINE
        };
        match (&mut lines).take(limit as u64).read_line(&mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) if !line.ends_with('\n') => return,
            Ok(_) => {}
        }
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            return;
        };
        match &header {
            None => {
                if v["token"].as_str() != Some(token.as_str()) {
                    return;
                }
                let session = v["session"].as_str().map(str::to_string);
                let offset = v["eventOffset"]
                    .as_u64()
                    .and_then(|n| usize::try_from(n).ok());
                let attempt = v["attempt"].as_u64().and_then(|n| u32::try_from(n).ok());
                let (Some(s), Some(o), Some(a)) = (session, offset, attempt) else {
                    return;
                };
                header = Some((s, o, a));
            }
            Some((session, event_offset, attempt)) => {
                let event = LiveEvent {
                    session: session.clone(),
                    event_offset: *event_offset,
                    attempt: *attempt,
                    event: v,
                };
                if tx.send(event).is_err() {
                    return;
                }
            }
        }
    }
}

/// Puts a session's live events and its log together, so that each event is given out
/// once, live ones as soon as the log before them has been.
///
/// ```
/// use serde_json::json;
/// use tern_temporal::live::{LiveEvent, LiveMerge};
///
/// let mut merge = LiveMerge::new("s", 2);
/// let live = |event| LiveEvent { session: "s".into(), event_offset: 2, attempt: 1, event };
/// let start = json!({"type": "message_start"});
/// let delta = json!({"type": "message_update"});
/// // The request's first two events arrive live, and are given out at once.
/// assert_eq!(merge.live(live(start.clone())), vec![start.clone()]);
/// assert_eq!(merge.live(live(delta.clone())), vec![delta.clone()]);
/// // The log brings them again with the end: only the end is new.
/// let end = json!({"type": "message_end"});
/// assert_eq!(merge.log(vec![start, delta, end.clone()]), vec![end]);
/// assert_eq!(merge.offset(), 5);
/// ```
pub struct LiveMerge {
    session: String,
    /// How many log events were given out (the next log offset).
    offset: usize,
    /// The request being streamed live: its log offset, attempt and the events of it given
    /// out so far.
    current: Option<Streamed>,
    /// Live events of a request the log has not reached yet.
    pending: Vec<LiveEvent>,
}

/// The events of one request given out live.
struct Streamed {
    event_offset: usize,
    attempt: u32,
    given: Vec<Value>,
}

impl LiveMerge {
    /// A merge for `session` whose log is given out from `offset` on.
    pub fn new(session: &str, offset: usize) -> LiveMerge {
        LiveMerge {
            session: session.to_string(),
            offset,
            current: None,
            pending: Vec::new(),
        }
    }

    /// The next log offset to read.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Whether `state` (read before the events last given to [`log`](Self::log)) shows the
    /// session idle with every event given out. Events published after the state was read
    /// make it stale (it may say idle from before a run began), so idle counts only when
    /// the events end where the state does.
    pub fn idle_at(&self, state: &SessionState) -> bool {
        !state.is_streaming && self.offset == state.event_count
    }

    /// Moves on to `offset` when the log no longer keeps the events before it (a follower
    /// more than a run behind a continue-as-new): they are not given out.
    pub fn skip_to(&mut self, offset: usize) {
        if offset > self.offset {
            self.offset = offset;
            self.current = None;
        }
    }

    /// A live event: what to give out now (itself, or nothing yet).
    pub fn live(&mut self, e: LiveEvent) -> Vec<Value> {
        if e.session != self.session || e.event_offset < self.offset {
            // Another session's, or the log already gave this request's events out.
            return Vec::new();
        }
        if e.event_offset > self.offset {
            if self.pending.len() < MAX_PENDING {
                self.pending.push(e);
            }
            return Vec::new();
        }
        let same = self
            .current
            .as_ref()
            .is_some_and(|c| c.event_offset == e.event_offset && c.attempt == e.attempt);
        if !same {
            // A new request, or a new attempt of it after a worker died.
            self.current = Some(Streamed {
                event_offset: e.event_offset,
                attempt: e.attempt,
                given: Vec::new(),
            });
        }
        if let Some(c) = &mut self.current {
            c.given.push(e.event.clone());
        }
        vec![e.event]
    }

    /// Log events from [`offset`](Self::offset) on: what to give out (the ones not given
    /// out live already), then any live events that were waiting for them. A log event is
    /// skipped only when it is the very event given out live at its place: after a worker
    /// died, the attempt that reached the log may not be the one streamed.
    pub fn log(&mut self, events: Vec<Value>) -> Vec<Value> {
        let mut out = Vec::new();
        for event in events {
            let at = self.offset;
            self.offset += 1;
            if let Some(c) = &self.current {
                let given = at.checked_sub(c.event_offset).and_then(|i| c.given.get(i));
                if given == Some(&event) {
                    continue;
                }
                if at >= c.event_offset {
                    self.current = None;
                }
            }
            out.push(event);
        }
        let waiting = std::mem::take(&mut self.pending);
        for e in waiting {
            out.extend(self.live(e));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tern_ai::faux::{FauxModel, FauxResponse};
    use tern_ai::{
        assistant_stream, AssistantMessage, AssistantMessageEvent as E, Context, Model, StreamFn,
        StreamOptions,
    };

    use super::*;
    use crate::stream_record::{replay, Recorder};

    /// A response with thinking, text and a tool call, event by event, as a provider
    /// streams it (the scripted model's events), and its final message.
    async fn streamed() -> (Vec<E>, AssistantMessage) {
        let response = FauxResponse::tool_call("c1", "read", json!({"path": "a"}))
            .with_text_first("Hi")
            .with_thinking("Hm.");
        let mut stream = FauxModel::new(vec![response])
            .stream(
                &Model::default(),
                Context::default(),
                &StreamOptions::default(),
            )
            .expect("the scripted model starts");
        let mut events = Vec::new();
        while let Some(e) = stream.next().await {
            events.push(e);
        }
        let end = events.pop().expect("a final event");
        assert!(matches!(end, E::Done { .. }), "{end:?}");
        let end = AssistantMessage::clone(&*stream.result().await);
        (events, end)
    }

    #[tokio::test]
    async fn live_lines_are_the_lines_of_the_events_the_log_replays() {
        let (events, end) = streamed().await;
        let mut recorder = Recorder::default();
        let live: Vec<String> = events
            .iter()
            .map(|e| {
                recorder.record(e);
                line_of(e, recorder.start()).expect("not an end")
            })
            .collect();
        let (tx, mut replayed) = assistant_stream();
        replay(&tx, recorder.finish(&std::sync::Arc::new(end)));
        let mut log = Vec::new();
        while let Some(e) = replayed.next().await {
            log.extend(line_of(&e, None));
        }
        assert_eq!(log.len(), live.len());
        for (l, r) in live.iter().zip(&log) {
            let (l, r): (Value, Value) = (
                serde_json::from_str(l).unwrap(),
                serde_json::from_str(r).unwrap(),
            );
            assert_eq!(l, r);
        }
    }

    /// Connects to `listener` and writes `lines`.
    async fn send_lines(listener: &LiveListener, lines: &[Value]) {
        let mut stream = TcpStream::connect(listener.address())
            .await
            .expect("connect");
        for l in lines {
            write_line(&mut stream, &l.to_string())
                .await
                .expect("write");
        }
        let _ = stream.shutdown().await;
    }

    #[tokio::test]
    async fn a_listener_takes_events_only_from_connections_with_its_token() {
        let mut listener = LiveListener::bind("127.0.0.1:0").await.expect("bind");
        let target = listener.target();
        assert_eq!(target.token.len(), 32);
        let other = LiveListener::bind("127.0.0.1:0").await.expect("bind");
        assert_ne!(other.target().token, target.token, "a token per listener");
        let header =
            |token: &str| json!({"token": token, "session": "s", "eventOffset": 3, "attempt": 1});
        let forged = json!({"type": "message_update", "forged": true});
        send_lines(&listener, &[header("wrong"), forged.clone()]).await;
        send_lines(
            &listener,
            &[
                json!({"session": "s", "eventOffset": 3, "attempt": 1}),
                forged,
            ],
        )
        .await;
        let real = json!({"type": "message_start"});
        send_lines(&listener, &[header(&target.token), real.clone()]).await;
        let got = tokio::time::timeout(Duration::from_secs(10), listener.next())
            .await
            .expect("an event in time")
            .expect("an event");
        assert_eq!(
            got,
            LiveEvent {
                session: "s".into(),
                event_offset: 3,
                attempt: 1,
                event: real
            }
        );
        // Give the forged connections time to be read: still nothing from them.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(listener.drain().is_empty());
    }

    fn live(offset: usize, attempt: u32, event: Value) -> LiveEvent {
        LiveEvent {
            session: "s".into(),
            event_offset: offset,
            attempt,
            event,
        }
    }

    #[test]
    fn live_events_wait_for_the_log_before_them_and_print_once() {
        let mut m = LiveMerge::new("s", 0);
        let (a, b) = (
            json!({"type": "message_start", "n": 1}),
            json!({"type": "message_update", "n": 2}),
        );
        // The request's events begin at 2: they wait for the log's first two.
        assert!(m.live(live(2, 1, a.clone())).is_empty());
        let before = vec![json!({"type": "turn_start"}), json!({"type": "x"})];
        let mut expected = before.clone();
        expected.push(a.clone());
        assert_eq!(m.log(before), expected);
        assert_eq!(m.live(live(2, 1, b.clone())), vec![b.clone()]);
        // Another session's events are not this one's.
        let other = LiveEvent {
            session: "t".into(),
            ..live(4, 1, json!({}))
        };
        assert!(m.live(other).is_empty());
        let end = json!({"type": "message_end"});
        assert_eq!(m.log(vec![a, b, end.clone()]), vec![end]);
        // Late live events of a request the log gave out are dropped.
        assert!(m
            .live(live(2, 1, json!({"type": "message_update", "n": 3})))
            .is_empty());
    }

    #[test]
    fn an_attempt_that_did_not_reach_the_log_does_not_hide_the_one_that_did() {
        let mut m = LiveMerge::new("s", 0);
        let dead = json!({"type": "message_start", "attempt": 1});
        assert_eq!(m.live(live(0, 1, dead.clone())), vec![dead]);
        // The worker died; the retry was not seen live. The log has the retry's events,
        // which were never given out: they all are now.
        let retried = vec![
            json!({"type": "message_start", "attempt": 2}),
            json!({"type": "message_update", "attempt": 2}),
            json!({"type": "message_end", "attempt": 2}),
        ];
        assert_eq!(m.log(retried.clone()), retried);
    }
}
