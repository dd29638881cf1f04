//! RPC mode (pi's `docs/rpc.md`, `docs/rpc-commands.md`): JSONL commands on stdin; responses
//! (`{"type":"response","command",...,"success",...}`, correlated by `id`) and session events
//! on stdout. A prompt's response only says it was accepted; `agent_settled` says that
//! nothing more will run.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::{json, Value};
use tern_agent::QueueMode;
use tern_ai::providers::catalog;
use tern_ai::{Content, ContentBlock, ImageContent, Message, ThinkingLevel, UserMessage};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};

use crate::setup::{on_the_fly_model, Runtime};
use crate::wire;

type Tx = mpsc::UnboundedSender<String>;

struct Rpc {
    rt: Arc<Runtime>,
    tx: Tx,
    idle: watch::Sender<bool>,
}

fn user_message(cmd: &Value) -> Result<Message, String> {
    let text = cmd
        .get("message")
        .and_then(Value::as_str)
        .ok_or("missing string field `message`")?;
    let mut blocks = vec![ContentBlock::text(text)];
    if let Some(images) = cmd.get("images").and_then(Value::as_array) {
        for i in images {
            let img: ImageContent = serde_json::from_value(i.clone())
                .map_err(|e| format!("bad image (want {{type, data, mimeType}}): {e}"))?;
            blocks.push(ContentBlock::Image(img));
        }
    }
    Ok(Message::from(UserMessage {
        content: Content::Blocks(blocks),
        timestamp: tern_ai::clock::now_ms(),
        extra: None,
    }))
}

fn texts(ms: &[Message]) -> Vec<String> {
    ms.iter()
        .map(|m| match m {
            Message::User(u) => u.content.text("\n"),
            other => other.content_json().to_string(),
        })
        .collect()
}

fn queue_mode(cmd: &Value) -> Result<QueueMode, String> {
    match cmd.get("mode").and_then(Value::as_str) {
        Some("all") => Ok(QueueMode::All),
        Some("one-at-a-time") => Ok(QueueMode::OneAtATime),
        _ => Err("mode must be \"all\" or \"one-at-a-time\"".into()),
    }
}

impl Rpc {
    fn send(&self, v: Value) {
        let _ = self.tx.send(v.to_string());
    }

    fn running(&self) -> bool {
        !*self.idle.borrow()
    }

    fn queue_update(&self) {
        let (s, f) = self.rt.agent.queued();
        self.send(json!({"type": "queue_update", "steering": texts(&s), "followUp": texts(&f)}));
    }

    fn start_run(&self, message: Message) {
        self.idle.send_replace(false);
        let rt = self.rt.clone();
        let tx = self.tx.clone();
        let idle = self.idle.clone();
        tokio::spawn(async move {
            rt.limits.reset_run();
            let timer = rt.limits.start_timer(&rt.agent);
            let mut result = rt.agent.prompt_messages(vec![message]).await;
            // Steering that arrived after the last turn still gets its run.
            while result.is_ok()
                && !rt.limits.user_aborted.load(Ordering::SeqCst)
                && !rt.limits.timed_out.load(Ordering::SeqCst)
                && !rt.limits.turn_limit_hit.load(Ordering::SeqCst)
                && rt.agent.has_queued_messages()
            {
                result = rt.agent.continue_run().await;
            }
            if let Some(t) = timer {
                t.abort();
            }
            if let Err(e) = result {
                eprintln!("tern: {e}");
            }
            let aborted = rt.limits.user_aborted.load(Ordering::SeqCst)
                || rt.limits.timed_out.load(Ordering::SeqCst);
            let _ = tx.send(wire::settled(aborted).to_string());
            idle.send_replace(true);
        });
    }

    async fn handle(&self, cmd: Value) -> Result<Option<Value>, String> {
        let kind = cmd.get("type").and_then(Value::as_str).unwrap_or_default();
        let agent = &self.rt.agent;
        match kind {
            "prompt" => {
                let m = user_message(&cmd)?;
                if self.running() {
                    match cmd.get("streamingBehavior").and_then(Value::as_str) {
                        Some("steer") => agent.steer(m),
                        Some("followUp") => agent.follow_up(m),
                        _ => return Err("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.".into()),
                    }
                    self.queue_update();
                    return Ok(Some(json!({"disposition": "queued"})));
                }
                self.start_run(m);
                Ok(Some(json!({"disposition": "started"})))
            }
            "steer" | "follow_up" => {
                let m = user_message(&cmd)?;
                if kind == "steer" {
                    agent.steer(m)
                } else {
                    agent.follow_up(m)
                }
                self.queue_update();
                Ok(Some(json!({"disposition": "queued"})))
            }
            "abort" => {
                if self.running() {
                    self.rt.limits.user_aborted.store(true, Ordering::SeqCst);
                    agent.abort();
                    let mut rx = self.idle.subscribe();
                    let _ = rx.wait_for(|idle| *idle).await;
                }
                Ok(None)
            }
            "clear_queue" => {
                let (s, f) = agent.queued();
                agent.clear_all_queues();
                self.queue_update();
                Ok(Some(json!({"steering": texts(&s), "followUp": texts(&f)})))
            }
            "new_session" => {
                if self.running() {
                    return Err(
                        "cannot start a new session while the agent is running; send abort first"
                            .into(),
                    );
                }
                self.rt.new_session()?;
                Ok(Some(json!({"cancelled": false})))
            }
            "get_state" => {
                let st = agent.state();
                let (s, f) = agent.queued();
                let mut data = json!({
                    "model": st.model,
                    "thinkingLevel": st.thinking_level,
                    "isStreaming": self.running(),
                    "isCompacting": false,
                    "steeringMode": agent.steering_mode(),
                    "followUpMode": agent.follow_up_mode(),
                    "sessionId": self.rt.session_id(),
                    "autoCompactionEnabled": false,
                    "messageCount": st.messages.len(),
                    "pendingMessageCount": s.len() + f.len(),
                });
                if let Some(file) = self.rt.session_file() {
                    data["sessionFile"] = json!(file);
                }
                Ok(Some(data))
            }
            "get_messages" => Ok(Some(json!({"messages": agent.state().messages}))),
            "get_last_assistant_text" => {
                let text = agent.with_messages(|m| {
                    m.iter()
                        .rev()
                        .filter_map(Message::as_assistant)
                        .map(|a| a.text())
                        .find(|t| !t.is_empty())
                });
                Ok(Some(json!({ "text": text })))
            }
            "set_model" => {
                let provider = cmd
                    .get("provider")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let id = cmd
                    .get("modelId")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let current = agent.state().model;
                let model = catalog::get_model(provider, id)
                    .or_else(|| {
                        (provider == current.provider && current.api == "openai-completions")
                            .then(|| on_the_fly_model(id, provider, &current.base_url))
                    })
                    .ok_or_else(|| format!("Model not found: {provider}/{id}"))?;
                agent.set_model(model.clone());
                let mut rec = self.rt.recorder.lock();
                if let Err(e) = rec.session.append_model_change(provider, id) {
                    rec.warn(&e);
                }
                Ok(Some(serde_json::to_value(model).unwrap_or(Value::Null)))
            }
            "set_thinking_level" => {
                let level = cmd
                    .get("level")
                    .and_then(Value::as_str)
                    .and_then(ThinkingLevel::parse)
                    .ok_or("level must be off, minimal, low, medium, high, xhigh or max")?;
                agent.set_thinking_level(level);
                let mut rec = self.rt.recorder.lock();
                if let Err(e) = rec.session.append_thinking_change(level.as_str()) {
                    rec.warn(&e);
                }
                self.send(json!({"type": "thinking_level_changed", "level": level}));
                Ok(None)
            }
            "set_steering_mode" => {
                agent.set_steering_mode(queue_mode(&cmd)?);
                Ok(None)
            }
            "set_follow_up_mode" => {
                agent.set_follow_up_mode(queue_mode(&cmd)?);
                Ok(None)
            }
            "" => Err("missing field `type`".into()),
            other => Err(format!("Unknown command: {other}")),
        }
    }
}

/// Runs RPC mode until stdin closes and the last run settles; returns the exit code.
pub async fn run(rt: Runtime) -> i32 {
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        let mut out = tokio::io::stdout();
        while let Some(line) = rx.recv().await {
            if out.write_all(line.as_bytes()).await.is_err()
                || out.write_all(b"\n").await.is_err()
                || out.flush().await.is_err()
            {
                break;
            }
        }
    });
    let events_tx = tx.clone();
    let sub = rt.agent.subscribe_sync(move |e| {
        let _ = events_tx.send(wire::event_json(e).to_string());
    });
    let (idle, _) = watch::channel(true);
    let rpc = Arc::new(Rpc {
        rt: Arc::new(rt),
        tx: tx.clone(),
        idle,
    });
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    loop {
        let line = match lines.next_line().await {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => {
                eprintln!("tern: cannot read stdin: {e}");
                break;
            }
        };
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let cmd: Value = match serde_json::from_str(line) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => {
                rpc.send(json!({"type": "response", "command": "parse", "success": false, "error": "Failed to parse command: a command is a JSON object"}));
                continue;
            }
            Err(e) => {
                rpc.send(json!({"type": "response", "command": "parse", "success": false, "error": format!("Failed to parse command: {e}")}));
                continue;
            }
        };
        // Commands are handled in order; a prompt's run goes on in its own task.
        {
            let id = cmd.get("id").cloned();
            let command = cmd
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let mut resp = match rpc.handle(cmd).await {
                Ok(data) => {
                    let mut r = json!({"type": "response", "command": command, "success": true});
                    if let Some(d) = data {
                        r["data"] = d;
                    }
                    r
                }
                Err(e) => {
                    json!({"type": "response", "command": command, "success": false, "error": e})
                }
            };
            if let Some(id) = id {
                resp["id"] = id;
            }
            rpc.send(resp);
        }
    }
    // Orderly shutdown: let a running prompt settle.
    let mut rx_idle = rpc.idle.subscribe();
    let _ = rx_idle.wait_for(|idle| *idle).await;
    sub.unsubscribe();
    drop(rpc);
    drop(tx);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), writer).await;
    0
}
