//! RPC mode with the session on Temporal (`tern --temporal HOST:PORT --mode rpc`): the same
//! protocol on stdin and stdout, each command carried out on the session's workflow.
//!
//! - `prompt` starts a run (answered once the prompt is in the transcript); while a run is
//!   going, `streamingBehavior` queues it, as in process;
//! - `steer`, `follow_up`: queued on the session (answered once it accepted them);
//! - `abort`: aborts the run and keeps the session (answered once idle);
//! - `clear_queue`, `get_state`, `get_messages`, `get_last_assistant_text`,
//!   `set_thinking_level`, `set_steering_mode`, `set_follow_up_mode`, `get_commands`.
//!
//! Events: a follower reads the session's event log from the offset it had when the mode
//! started and prints each event; when the session is idle again after a run it prints
//! `agent_settled`, as the local mode does. A query that fails (the worker holding the
//! session died and another has not taken it up yet) is tried again.
//!
//! The commands that act on a session file, the model list, compaction, retries or a local
//! shell answer with a failure that says so: the session's state lives in the workflow.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tern_ai::Message;
use tern_temporal::live::{LiveEvent, LiveListener, LiveMerge};
use tern_temporal::{ClearQueues, SessionHandle, SessionSettings, SessionState, QUERY_PATIENCE};
use tokio::sync::{mpsc, watch};

use super::command::{Command, Level, Mode, StreamingBehavior};
use super::handler::{texts, BUSY};
use super::io::Input;
use super::response;
use crate::secrets::eprintln_redacted;

/// How often the follower asks for new events.
const POLL_EVERY: Duration = Duration::from_millis(50);

/// The commands this mode carries out.
const COMMANDS: &[&str] = &[
    "prompt",
    "steer",
    "follow_up",
    "abort",
    "clear_queue",
    "get_state",
    "get_messages",
    "get_last_assistant_text",
    "set_thinking_level",
    "set_steering_mode",
    "set_follow_up_mode",
    "get_commands",
];

/// Runs RPC mode against `session` until stdin closes and the session is idle; returns the
/// exit code. `live` (subscribed to the session) brings model requests' events while they
/// stream. `expand` expands a prompt's templates and skills; `commands` is
/// `get_commands`' answer (them, listed).
pub async fn run(
    session: SessionHandle,
    live: Option<LiveListener>,
    max_line_bytes: usize,
    expand: impl Fn(&str) -> String,
    commands: Value,
) -> i32 {
    let (tx, writer) = super::io::stdout_lines();
    let session = Arc::new(session);
    let start = match patient_state(&session).await {
        Ok(s) => s,
        Err(e) => {
            eprintln_redacted!("tern: {e}");
            return crate::exit::ERROR;
        }
    };
    let (stop_tx, stop_rx) = watch::channel(false);
    let (idle_tx, idle_rx) = watch::channel((start.event_count, !start.is_streaming));
    let aborted = Arc::new(AtomicBool::new(false));
    let live_target = live.as_ref().map(LiveListener::target);
    let follower = tokio::spawn(follow(
        Follow {
            session: session.clone(),
            tx: tx.clone(),
            idle: idle_tx,
            aborted: aborted.clone(),
            live,
        },
        start.event_count,
        stop_rx,
    ));
    let rpc = TemporalRpc {
        session,
        tx: tx.clone(),
        idle: idle_rx,
        aborted,
        commands,
    };
    let mut commands = super::io::Commands::new(max_line_bytes);
    let mut signalled = false;
    loop {
        let (command, kind, id) = match commands.next_command(|r| rpc.send(r)).await {
            Input::Command(c, kind, id) => (c, kind, id),
            Input::End => break,
            Input::Interrupted => {
                signalled = true;
                // The run stops; the session stays for a later attach.
                if let Err(e) = rpc.abort().await {
                    eprintln_redacted!("tern: {e}");
                }
                break;
            }
        };
        let result = rpc.handle(command, &kind, &expand).await;
        rpc.send(response(&kind, id, result));
    }
    // Orderly shutdown: the running prompt settles and its events are all printed.
    rpc.wait_idle().await;
    let _ = stop_tx.send(true);
    let _ = follower.await;
    if let Some(t) = live_target {
        // A session that ended, or a cluster gone, has nobody left to tell.
        let _ = rpc.session.unsubscribe_live(t).await;
    }
    drop(rpc);
    drop(tx);
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
    if signalled {
        crate::exit::ABORTED
    } else {
        crate::exit::OK
    }
}

/// The session's state, asked again while the session has no worker to answer.
async fn patient_state(session: &SessionHandle) -> Result<SessionState, tern_temporal::Error> {
    let since = Instant::now();
    loop {
        match session.state().await {
            Ok(s) => return Ok(s),
            Err(e) if since.elapsed() > QUERY_PATIENCE => return Err(e),
            Err(_) => tokio::time::sleep(POLL_EVERY * 10).await,
        }
    }
}

/// What the follower reads from and writes to.
struct Follow {
    session: Arc<SessionHandle>,
    /// The output lines.
    tx: mpsc::UnboundedSender<String>,
    /// How many events are printed, and whether the session is idle after them (and
    /// `agent_settled` printed).
    idle: watch::Sender<(usize, bool)>,
    /// Set when this mode aborted the run (taken when the run settles).
    aborted: Arc<AtomicBool>,
    /// Where workers send model requests' events while they stream.
    live: Option<LiveListener>,
}

/// Prints the session's events from `offset` on, and `agent_settled` each time the session
/// is idle again after events; `idle` tells the commands whether a run is going. Ends when
/// `stop` is set and every event has been printed.
async fn follow(f: Follow, offset: usize, mut stop: watch::Receiver<bool>) {
    let Follow {
        session,
        tx,
        idle,
        aborted: abort_sent,
        mut live,
    } = f;
    let mut merge = LiveMerge::new(session.id(), offset);
    let mut failing_since: Option<Instant> = None;
    // Whether events came since the last `agent_settled`, and whether the last answer was
    // cut by an abort.
    let mut unsettled = false;
    let mut aborted = false;
    let mut print = |events: Vec<Value>, unsettled: &mut bool| {
        for e in events {
            *unsettled = true;
            if e["type"] == "message_end" && e["message"]["role"] == "assistant" {
                aborted = e["message"]["stopReason"] == "aborted";
            }
            let _ = tx.send(e.to_string());
        }
        aborted
    };
    loop {
        // The state first: when it says idle, the events read after it are complete.
        match session.read_merged(&mut merge).await {
            Ok((state, events)) => {
                failing_since = None;
                let last_aborted = print(events, &mut unsettled);
                let settled = merge.idle_at(&state);
                if settled && unsettled {
                    // Sent before `idle` turns true: a command sent after a client read it
                    // finds the session idle.
                    let aborted = abort_sent.swap(false, Ordering::SeqCst) || last_aborted;
                    let _ = tx.send(crate::event_lines::settled(aborted, None).to_string());
                    unsettled = false;
                }
                let now = (merge.offset(), settled);
                idle.send_if_modified(|i| std::mem::replace(i, now) != now);
                if settled && *stop.borrow() {
                    return;
                }
            }
            Err(e) => {
                let since = *failing_since.get_or_insert_with(Instant::now);
                if since.elapsed() > QUERY_PATIENCE {
                    eprintln_redacted!("tern: the session stopped answering: {e}");
                    idle.send_replace((usize::MAX, true));
                    return;
                }
            }
        }
        // Until the next poll, live events as they come.
        let poll = tokio::time::sleep(POLL_EVERY);
        tokio::pin!(poll);
        loop {
            tokio::select! {
                () = &mut poll => break,
                _ = stop.changed() => break,
                e = next_live(&mut live) => match e {
                    Some(e) => {
                        print(merge.live(e), &mut unsettled);
                    }
                    None => live = None,
                },
            }
        }
    }
}

/// The next live event; never, without a listener.
async fn next_live(live: &mut Option<LiveListener>) -> Option<LiveEvent> {
    match live {
        Some(l) => l.next().await,
        None => std::future::pending().await,
    }
}

/// The command side of the mode.
struct TemporalRpc {
    session: Arc<SessionHandle>,
    tx: mpsc::UnboundedSender<String>,
    /// How far the follower has printed, and whether the session was idle then.
    idle: watch::Receiver<(usize, bool)>,
    /// Set when this mode aborts a run, for the follower's `agent_settled`.
    aborted: Arc<AtomicBool>,
    /// `get_commands`' answer.
    commands: Value,
}

impl TemporalRpc {
    fn send(&self, v: Value) {
        let _ = self.tx.send(v.to_string());
    }

    /// Until the session is idle and the follower has printed every event of it (and
    /// `agent_settled`).
    async fn wait_idle(&self) {
        let target = loop {
            match self.state().await {
                Ok(s) if !s.is_streaming => break s.event_count,
                Ok(_) => tokio::time::sleep(POLL_EVERY).await,
                Err(_) => return,
            }
        };
        let mut idle = self.idle.clone();
        let _ = idle
            .wait_for(|&(printed, idle)| idle && printed >= target)
            .await;
    }

    /// Whether a run is going now (asked of the session, not of the follower's last look).
    async fn running(&self) -> Result<bool, String> {
        Ok(self.state().await?.is_streaming)
    }

    async fn state(&self) -> Result<SessionState, String> {
        patient_state(&self.session)
            .await
            .map_err(|e| e.to_string())
    }

    async fn queue(&self, m: Message, how: StreamingBehavior) -> Result<Option<Value>, String> {
        let queued = match how {
            StreamingBehavior::Steer => self.session.queue_steer(vec![m]).await,
            StreamingBehavior::FollowUp => self.session.queue_follow_up(vec![m]).await,
        };
        queued.map_err(|e| e.to_string())?;
        let s = self.state().await?;
        self.send(
            json!({"type": "queue_update", "steering": texts(&s.steering_queue),
                         "followUp": texts(&s.follow_up_queue)}),
        );
        Ok(Some(json!({"disposition": "queued"})))
    }

    /// Aborts the run, keeping the session.
    async fn abort(&self) -> Result<(), tern_temporal::Error> {
        self.aborted.store(true, Ordering::SeqCst);
        self.session.abort_run().await
    }

    async fn set(&self, settings: SessionSettings) -> Result<(), String> {
        self.session.set(settings).await.map_err(|e| e.to_string())
    }

    /// Carries out a command; `Ok(Some(data))` is a response with `data`, `Ok(None)` one
    /// without, `Err` a failed response with that error.
    async fn handle(
        &self,
        command: Command,
        kind: &str,
        expand: &impl Fn(&str) -> String,
    ) -> Result<Option<Value>, String> {
        match command {
            Command::Prompt {
                input,
                streaming_behavior,
            } => {
                let m = input.map_text(expand).into_message();
                if !self.running().await? {
                    self.session
                        .prompt(vec![m])
                        .await
                        .map_err(|e| e.to_string())?;
                    return Ok(Some(json!({"disposition": "started"})));
                }
                match streaming_behavior {
                    Some(how) => self.queue(m, how).await,
                    None => Err(BUSY.into()),
                }
            }
            Command::Steer(input) => {
                self.queue(input.into_message(), StreamingBehavior::Steer)
                    .await
            }
            Command::FollowUp(input) => {
                self.queue(input.into_message(), StreamingBehavior::FollowUp)
                    .await
            }
            Command::Abort => {
                if self.running().await? {
                    self.abort().await.map_err(|e| e.to_string())?;
                    self.wait_idle().await;
                }
                Ok(None)
            }
            Command::ClearQueue => {
                let s = self.state().await?;
                self.session
                    .clear_queues(ClearQueues {
                        steering: true,
                        follow_up: true,
                    })
                    .await
                    .map_err(|e| e.to_string())?;
                self.send(json!({"type": "queue_update", "steering": [], "followUp": []}));
                Ok(Some(json!({"steering": texts(&s.steering_queue),
                               "followUp": texts(&s.follow_up_queue)})))
            }
            Command::GetState => {
                let s = self.state().await?;
                Ok(Some(json!({
                    "model": s.model,
                    "thinkingLevel": s.thinking_level,
                    "isStreaming": s.is_streaming,
                    "isCompacting": false,
                    "steeringMode": s.steering_mode,
                    "followUpMode": s.follow_up_mode,
                    "sessionId": self.session.id(),
                    "autoCompactionEnabled": false,
                    "messageCount": s.messages.len(),
                    "pendingMessageCount": s.steering_queue.len() + s.follow_up_queue.len(),
                })))
            }
            Command::GetMessages => Ok(Some(json!({"messages": self.state().await?.messages}))),
            Command::GetLastAssistantText => {
                let s = self.state().await?;
                let text = s
                    .messages
                    .iter()
                    .rev()
                    .filter_map(Message::as_assistant)
                    .map(|a| a.text())
                    .find(|t| !t.is_empty());
                Ok(Some(json!({ "text": text })))
            }
            Command::SetThinkingLevel {
                level: Level(level),
            } => {
                self.set(SessionSettings {
                    thinking_level: Some(level),
                    ..SessionSettings::default()
                })
                .await?;
                self.send(json!({"type": "thinking_level_changed", "level": level}));
                Ok(None)
            }
            Command::SetSteeringMode { mode: Mode(mode) } => {
                self.set(SessionSettings {
                    steering_mode: Some(mode),
                    ..SessionSettings::default()
                })
                .await?;
                Ok(None)
            }
            Command::SetFollowUpMode { mode: Mode(mode) } => {
                self.set(SessionSettings {
                    follow_up_mode: Some(mode),
                    ..SessionSettings::default()
                })
                .await?;
                Ok(None)
            }
            Command::GetCommands => Ok(Some(self.commands.clone())),
            Command::Unknown => Err(format!("Unknown command: {kind}")),
            _ => Err(format!(
                "{kind} is not available with --temporal: the session lives in its workflow, \
                 not in a local session file; this mode answers {}",
                COMMANDS.join(", ")
            )),
        }
    }
}
