//! What each RPC command does to the agent, and the data its response carries.

use std::sync::Arc;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use serde_json::{json, Value};
use tern_ai::Message;
use tokio::sync::{mpsc, watch};

use super::command::{Command, Level, Mode, StreamingBehavior};
use crate::event_lines;
use crate::model_choice::on_the_fly_model;
use crate::runtime::Runtime;
use crate::secrets::eprintln_redacted;

/// The RPC session: the agent, the output line channel, and whether a run is going.
pub struct Rpc {
    /// The agent and its session.
    pub rt: Arc<Runtime>,
    /// Lines for stdout, written in order by one task.
    pub tx: mpsc::UnboundedSender<String>,
    /// `true` when no run is going.
    pub idle: watch::Sender<bool>,
    /// The name `set_session_name` gave a session kept in memory.
    pub session_name: Mutex<Option<String>>,
    /// Stops the running `bash` commands (`abort_bash`); replaced after each abort.
    pub bash_cancel: Mutex<CancellationToken>,
}

/// The text of queued messages, as `queue_update` and `clear_queue` list them.
pub(super) fn texts(ms: &[Message]) -> Vec<String> {
    ms.iter()
        .map(|m| match m {
            Message::User(u) => u.content.text("\n"),
            other => other.content_json().to_string(),
        })
        .collect()
}

/// What a run started from a command begins with.
enum Start {
    /// A prompt.
    Prompt(Message),
    /// The session's interrupted run.
    Recover(crate::runs::Prepared),
}

pub(super) const BUSY: &str = "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.";

impl Rpc {
    /// The RPC session of `rt`, writing lines to `tx`.
    pub fn new(rt: Runtime, tx: mpsc::UnboundedSender<String>) -> Self {
        let (idle, _) = watch::channel(true);
        Rpc {
            rt: Arc::new(rt),
            tx,
            idle,
            session_name: Mutex::new(None),
            bash_cancel: Mutex::new(CancellationToken::new()),
        }
    }

    /// Writes a line to stdout.
    pub fn send(&self, v: Value) {
        let _ = self.tx.send(v.to_string());
    }

    pub(super) fn running(&self) -> bool {
        !*self.idle.borrow()
    }

    /// Waits until no run is going.
    pub async fn wait_idle(&self) {
        let mut rx = self.idle.subscribe();
        let _ = rx.wait_for(|idle| *idle).await;
    }

    fn queue_update(&self) {
        let (s, f) = self.rt.agent.queued();
        self.send(json!({"type": "queue_update", "steering": texts(&s), "followUp": texts(&f)}));
    }

    /// Queues a message; while a run is going it is journaled before it is queued, and the
    /// response names its input id (`input_update` events follow it to `committed` and
    /// `seen`).
    async fn queue(&self, message: Message, how: StreamingBehavior) -> Option<Value> {
        let id = match how {
            StreamingBehavior::Steer => self.rt.steer(message).await,
            StreamingBehavior::FollowUp => self.rt.follow_up(message).await,
        };
        self.queue_update();
        Some(match id {
            Some(id) => json!({"disposition": "queued", "inputId": id}),
            None => json!({"disposition": "queued"}),
        })
    }

    fn start_run(&self, start: Start) {
        self.idle.send_replace(false);
        let rt = self.rt.clone();
        let tx = self.tx.clone();
        let idle = self.idle.clone();
        tokio::spawn(async move {
            let result = match start {
                Start::Prompt(message) => rt.run_prompt(vec![message]).await,
                Start::Recover(prepared) => rt.run_recovered(prepared).await,
            };
            if let Err(e) = result {
                eprintln_redacted!("tern: {e}");
            }
            // Idle in the same step as `agent_settled` is sent: a command sent after a client
            // read it finds the agent idle.
            let settled =
                event_lines::settled(rt.limits.aborted(), rt.limits.ended_by()).to_string();
            idle.send_modify(|idle| {
                let _ = tx.send(settled);
                *idle = true;
            });
        });
    }

    /// Carries out a command; `Ok(Some(data))` is a response with `data`, `Ok(None)` one
    /// without, `Err` a failed response with that error.
    pub async fn handle(&self, command: Command, kind: &str) -> Result<Option<Value>, String> {
        let agent = &self.rt.agent;
        match command {
            Command::Prompt {
                input,
                streaming_behavior,
            } => {
                let m = input
                    .map_text(|t| self.rt.expand_template(t))
                    .into_message();
                if !self.running() {
                    if let Some((limit, why)) = self.rt.session_refusal() {
                        return Err(format!("{why} (limit: {})", limit.key()));
                    }
                    self.start_run(Start::Prompt(m));
                    return Ok(Some(json!({"disposition": "started"})));
                }
                match streaming_behavior {
                    Some(how) => Ok(self.queue(m, how).await),
                    None => Err(BUSY.into()),
                }
            }
            Command::Steer(input) => Ok(self
                .queue(input.into_message(), StreamingBehavior::Steer)
                .await),
            Command::FollowUp(input) => Ok(self
                .queue(input.into_message(), StreamingBehavior::FollowUp)
                .await),
            Command::Recover => {
                if self.running() {
                    return Err(
                        "cannot recover while the agent is running; wait for agent_settled".into(),
                    );
                }
                match self.rt.prepare_recovery().map_err(|e| e.to_string())? {
                    None => Ok(Some(json!({"interrupted": false}))),
                    Some(prepared) => {
                        self.start_run(Start::Recover(prepared));
                        Ok(Some(json!({"interrupted": true, "disposition": "started"})))
                    }
                }
            }
            Command::Abort => {
                if self.running() {
                    self.rt.abort_by_user();
                    self.wait_idle().await;
                }
                Ok(None)
            }
            Command::ClearQueue => {
                let (s, f) = agent.take_queued();
                self.rt.withdraw(&[s.clone(), f.clone()].concat()).await;
                self.queue_update();
                Ok(Some(json!({"steering": texts(&s), "followUp": texts(&f)})))
            }
            Command::NewSession => {
                if self.running() {
                    return Err(
                        "cannot start a new session while the agent is running; send abort first"
                            .into(),
                    );
                }
                self.rt.new_session()?;
                Ok(Some(json!({"cancelled": false})))
            }
            Command::Compact {
                custom_instructions,
            } => {
                if self.running() {
                    return Err(
                        "cannot compact while the agent is running; send abort first".into(),
                    );
                }
                let done = self.rt.compact(custom_instructions.as_deref()).await;
                done.map(|o| Some(o.to_json())).map_err(|e| e.to_string())
            }
            Command::GetState => Ok(Some(self.state())),
            Command::GetMessages => Ok(Some(json!({"messages": agent.state().messages}))),
            Command::GetLastAssistantText => {
                let text = agent.with_messages(|m| {
                    m.iter()
                        .rev()
                        .filter_map(Message::as_assistant)
                        .map(|a| a.text())
                        .find(|t| !t.is_empty())
                });
                Ok(Some(json!({ "text": text })))
            }
            Command::SetModel { provider, model_id } => {
                let current = agent.state().model;
                let model = crate::models_file::get_model(&provider, &model_id)
                    .or_else(|| {
                        (provider == current.provider && current.api == "openai-completions")
                            .then(|| on_the_fly_model(&model_id, &provider, &current.base_url))
                    })
                    .ok_or_else(|| format!("Model not found: {provider}/{model_id}"))?;
                agent.set_model(model.clone());
                self.rt
                    .recorder
                    .lock()
                    .record_model_change(&provider, &model_id);
                Ok(Some(serde_json::to_value(model).unwrap_or(Value::Null)))
            }
            Command::SetThinkingLevel {
                level: Level(level),
            } => {
                agent.set_thinking_level(level);
                self.rt
                    .recorder
                    .lock()
                    .record_thinking_change(level.as_str());
                self.send(json!({"type": "thinking_level_changed", "level": level}));
                Ok(None)
            }
            Command::SetSteeringMode { mode: Mode(mode) } => {
                agent.set_steering_mode(mode);
                Ok(None)
            }
            Command::SetFollowUpMode { mode: Mode(mode) } => {
                agent.set_follow_up_mode(mode);
                Ok(None)
            }
            Command::CycleModel => Ok(Some(self.cycle_model().unwrap_or(Value::Null))),
            Command::GetAvailableModels => Ok(Some(self.available_models())),
            Command::CycleThinkingLevel => {
                Ok(Some(self.cycle_thinking_level().unwrap_or(Value::Null)))
            }
            Command::GetAvailableThinkingLevels => Ok(Some(self.thinking_levels())),
            Command::SetAutoCompaction { enabled } => {
                self.rt.compaction.set_auto(enabled);
                Ok(None)
            }
            Command::SetAutoRetry { enabled } => {
                self.rt.retry.set_enabled(enabled);
                Ok(None)
            }
            // RPC mode answers this one in its read loop (`run`), before the wait is cut, as
            // pi does; this arm serves any other caller of `handle`.
            Command::AbortRetry => {
                self.rt.retry.abort();
                Ok(None)
            }
            Command::Bash {
                command,
                exclude_from_context,
            } => {
                let cancel = self.bash_cancel.lock().clone();
                self.bash(&command, exclude_from_context, None, cancel)
                    .await
                    .map(Some)
            }
            Command::AbortBash => {
                let token = std::mem::take(&mut *self.bash_cancel.lock());
                token.cancel();
                Ok(None)
            }
            Command::GetSessionStats => Ok(Some(self.session_stats())),
            Command::ExportHtml { output_path } => {
                self.export_html(output_path.as_deref()).map(Some)
            }
            Command::SwitchSession { session_path } => self.switch_session(&session_path).map(Some),
            Command::Fork { entry_id } => self.fork(&entry_id).map(Some),
            Command::Clone => self.clone_session().map(Some),
            Command::GetForkMessages => self.fork_messages().map(Some),
            Command::GetEntries { since } => self.get_entries(since.as_deref()).map(Some),
            Command::GetTree => self.get_tree().map(Some),
            Command::SetSessionName { name } => self.set_session_name(&name).map(|()| None),
            Command::GetCommands => Ok(Some(self.commands())),
            Command::Unknown => Err(format!("Unknown command: {kind}")),
        }
    }

    fn state(&self) -> Value {
        let agent = &self.rt.agent;
        let st = agent.state();
        let (s, f) = agent.queued();
        let mut data = json!({
            "model": st.model,
            "thinkingLevel": st.thinking_level,
            "isStreaming": self.running(),
            "isCompacting": self.rt.compaction.is_compacting(),
            "steeringMode": agent.steering_mode(),
            "followUpMode": agent.follow_up_mode(),
            "sessionId": self.rt.session_id(),
            "autoCompactionEnabled": self.rt.compaction.settings().enabled,
            "messageCount": st.messages.len(),
            "pendingMessageCount": s.len() + f.len(),
        });
        if let Some(file) = self.rt.session_file() {
            data["sessionFile"] = json!(file);
        }
        if let Some(name) = self.session_name() {
            data["sessionName"] = json!(name);
        }
        data
    }

    /// `bash`: runs the command; the message it leaves is recorded, and goes to the model
    /// with the next prompt unless excluded.
    /// Output streams as `bash_execution_update` events carrying the command's `id`.
    pub(super) async fn bash(
        &self,
        command: &str,
        exclude_from_context: bool,
        id: Option<&Value>,
        cancel: CancellationToken,
    ) -> Result<Value, String> {
        let update = |delta: &str| {
            let mut e = json!({"type": "bash_execution_update", "delta": delta});
            if let Some(id) = id {
                e["id"] = id.clone();
            }
            self.send(e);
        };
        let result = crate::user_bash::run(command, &self.rt.cwd, cancel, update).await?;
        self.rt
            .keep_user_bash(result.message(command, exclude_from_context));
        Ok(result.to_json())
    }

    /// `get_commands`: the prompt templates and skills.
    fn commands(&self) -> Value {
        slash_commands(&self.rt.templates, &self.rt.skills)
    }
}

/// `get_commands`' answer: the prompt templates and the visible skills, as pi lists them.
pub(crate) fn slash_commands(
    templates: &[crate::prompt_templates::PromptTemplate],
    skills: &[crate::system_prompt::skills::Skill],
) -> Value {
    // A template's description is its first non-empty line, as pi's without frontmatter.
    let templates = templates.iter().map(|t| {
        let first = t
            .content
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or_default();
        json!({"name": t.name, "description": first, "source": "prompt",
               "sourceInfo": {"source": "local", "scope": "project", "origin": "top-level"}})
    });
    let skills = skills.iter().filter(|s| !s.hidden).map(|s| {
        json!({"name": format!("skill:{}", s.name), "description": s.description, "source": "skill",
               "sourceInfo": {"path": s.file, "source": "local", "scope": "project", "origin": "top-level"}})
    });
    json!({"commands": templates.chain(skills).collect::<Vec<_>>()})
}
