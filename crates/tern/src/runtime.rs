//! The wired agent a mode runs: the model and tools behind the permission gate, as
//! journaled steps of the current durable run, and the session recorder. How a run, a
//! recovery or a steering message goes through the durable run is in `runs.rs`.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::Mutex;
use tern_agent::hooks::BeforeToolCallResult;
use tern_agent::{Agent, AgentOptions, AgentTool, Hooks, Subscription};
use tern_ai::{Message, Model, StreamFn, StreamOptions, ThinkingLevel};
use tern_session::recorder::Setting;
use tern_session::{Recorder, SessionFile};
use tern_tools::policy::{AskFn, PermissionGate, Policy};

use crate::durable::Current;
use crate::limits::Limits;
use crate::prompt_templates::PromptTemplate;
use crate::secrets::eprintln_redacted;
use crate::session_choice::SessionSource;
use crate::system_prompt::skills::Skill;
use crate::usage_error::UsageError;

/// Everything a mode needs.
pub struct Runtime {
    /// The agent.
    pub agent: Agent,
    /// Limits.
    pub limits: Limits,
    /// The session recorder.
    pub recorder: Arc<Mutex<Recorder>>,
    /// The folder new sessions go in (None: in memory).
    pub session_root: Option<PathBuf>,
    /// The session root ids are looked up in (`--session-dir`, or the default).
    pub id_root: PathBuf,
    /// The prompt templates: `/name args` prompts are expanded.
    pub templates: Vec<PromptTemplate>,
    /// The skills: `/skill:name args` prompts are expanded.
    pub skills: Vec<Skill>,
    /// Working directory.
    pub cwd: PathBuf,
    /// The durable run that is going, if one is.
    pub current: Current,
    /// Held while input is queued into the current run and while a run stops being
    /// current: input a run accepted is in its agent's queues before the run lets go of the
    /// agent (a message accepted as the run ends would otherwise be journaled and dropped).
    pub(crate) queueing: tokio::sync::Mutex<()>,
    /// Records the agent's messages into the session (replaced when a recovered run
    /// replays messages the file already holds).
    pub(crate) recording: Mutex<Option<Subscription>>,
    /// Who hears how far accepted input has come, in every durable run (RPC's
    /// `input_update` events).
    pub inputs: Mutex<Option<InputObserver>>,
    /// The journal of a session kept in memory (`--no-session`), replaced with the session.
    memory_journal: Mutex<Arc<tern_durable::MemoryJournal>>,
    /// Compaction: settings, the summarizer, the summary the transcript builds on.
    pub compaction: Arc<crate::compaction::run::State>,
    /// The compactor of the check between two turns, set while a run goes.
    pub(crate) between_turns: crate::compaction::compactor::Slot,
    /// Automatic retry of answers that failed with a transient error.
    pub retry: Arc<crate::auto_retry::AutoRetry>,
}

/// Hears each stage an accepted input reaches.
pub type InputObserver = Arc<dyn Fn(&tern_durable::InputProgress) + Send + Sync>;

/// How the permission gate asks (interactive mode), if anyone can.
pub type Asker = Option<AskFn>;

/// Inputs of [`build`] that depend on the mode.
pub struct BuildOptions {
    /// The stream function (providers, or the scripted demo).
    pub stream_fn: Arc<dyn StreamFn>,
    /// The model.
    pub model: Model,
    /// Explicit API key.
    pub api_key: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Tools.
    pub tools: Vec<AgentTool>,
    /// Policy.
    pub policy: Policy,
    /// Who answers `ask` verdicts.
    pub asker: Asker,
    /// The system prompt's sections, in order.
    pub system_prompt: Vec<(&'static str, String)>,
    /// Whether a resumed session whose prompt differs gets a system message patching it.
    pub record_prompt_change: bool,
    /// Thinking level.
    pub thinking: ThinkingLevel,
    /// Limits.
    pub limits: Limits,
    /// The session.
    pub session: SessionSource,
    /// Working directory.
    pub cwd: PathBuf,
    /// Keys redacted from the session file.
    pub secrets: Arc<[String]>,
    /// Retries and the idle timeout of model requests.
    pub requests: RequestSettings,
    /// The session's display name to record (`--name`).
    pub name: Option<String>,
    /// The session root ids are looked up in.
    pub id_root: PathBuf,
    /// The prompt templates (`/name args`).
    pub templates: Vec<PromptTemplate>,
    /// The skills (`/skill:name args`).
    pub skills: Vec<Skill>,
    /// When to compact and how much to keep.
    pub compaction: crate::compaction::Settings,
    /// When to retry an answer that failed with a transient error.
    pub retry: crate::auto_retry::Settings,
}

/// How model requests are retried and when a silent one is given up.
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestSettings {
    /// Retries of a transient failure (`--max-retries`).
    pub max_retries: Option<u32>,
    /// Cap on a server-requested retry delay, ms (`--max-retry-delay`).
    pub max_retry_delay_ms: Option<u64>,
    /// Idle timeout, ms, 0 for none (`--idle-timeout`).
    pub idle_timeout_ms: Option<u64>,
    /// Preferred transport (`--transport`).
    pub transport: Option<tern_ai::Transport>,
}

/// Builds the agent and wires the hooks and the session recorder. Fails when the session
/// file is being written by another process.
pub fn build(o: BuildOptions) -> Result<Runtime, UsageError> {
    let gate = Arc::new(PermissionGate::new(o.policy));
    let asker = o.asker;
    let limits = o.limits.clone();
    let (model, thinking) = (o.model, o.thinking);
    // pi records the model and thinking level of a new session, and of a resumed one the
    // ones that differ from what it recorded, so a resume restores them.
    let (provider, model_id, level) = (
        model.provider.clone(),
        model.id.clone(),
        thinking.as_str().to_string(),
    );
    let mut settings = Vec::new();
    let previous = match &o.session {
        SessionSource::Existing(_, loaded) => crate::compaction::run::previous_of(loaded),
        _ => None,
    };
    let recorded = match &o.session {
        SessionSource::Existing(_, loaded) => {
            Some((loaded.model.clone(), loaded.thinking_level.clone()))
        }
        _ => None,
    };
    let (recorded_model, recorded_level) = recorded.unwrap_or_default();
    if recorded_model.as_ref() != Some(&(provider.clone(), model_id.clone())) {
        settings.push(Setting::Model(provider, model_id));
    }
    if recorded_level.as_deref() != Some(level.as_str()) {
        settings.push(Setting::Thinking(level));
    }
    if let Some(name) = o.name.as_deref().map(str::trim) {
        settings.push(Setting::Name(name.to_string()));
    }
    let mut patchable = false;
    let (messages, session_root, session_file) = match o.session {
        SessionSource::None => (Vec::new(), None, SessionFile::in_memory(&o.cwd)),
        SessionSource::New(folder) => (
            Vec::new(),
            Some(folder.clone()),
            SessionFile::create_in(&folder, &o.cwd),
        ),
        SessionSource::NewWithId(folder, id) => (
            Vec::new(),
            Some(folder.clone()),
            SessionFile::create_with_id_in(&folder, &o.cwd, &id),
        ),
        SessionSource::NewAt(path) => (
            Vec::new(),
            path.parent().map(Path::to_path_buf),
            SessionFile::create_at(&path, &o.cwd),
        ),
        SessionSource::Existing(path, loaded) => {
            let mut file = SessionFile::resume(&path, &loaded, &o.cwd);
            file.lock_existing()?;
            // tern patches the prompt of a session it wrote (it holds tern's run records);
            // another writer's prompt (pi's own wording) is left as that writer recorded it.
            let ours = tern_durable::journal::session_file::read_step_records(&path)
                .is_ok_and(|r| !r.is_empty());
            patchable = ours && o.record_prompt_change;
            (loaded.messages, path.parent().map(Path::to_path_buf), file)
        }
    };
    let session_file = session_file.with_secrets(o.secrets);
    let fresh = messages.is_empty();
    let mut messages = messages;
    // pi's records of the prompt: sections by name, a patch of them on a resume.
    let mut resumed_prefix = Vec::new();
    if fresh {
        let decls: Vec<_> = o.tools.iter().map(|t| t.declaration().clone()).collect();
        let leading = crate::system_prompt::record::leading_message(&o.system_prompt, &decls);
        messages.push(Message::from(leading));
    } else if patchable {
        let now = tern_ai::clock::now_ms();
        if let Some(patch) =
            crate::system_prompt::record::resume_patch(&messages, &o.system_prompt, now)
        {
            let patch = Message::from(patch);
            messages.push(patch.clone());
            resumed_prefix.push(patch);
        }
    }
    let stream_options = StreamOptions {
        api_key: o.api_key.clone(),
        temperature: o.temperature,
        session_id: Some(session_file.id().to_string()),
        max_retries: o.requests.max_retries,
        max_retry_delay_ms: o.requests.max_retry_delay_ms,
        idle_timeout_ms: o.requests.idle_timeout_ms,
        transport: o.requests.transport,
        ..Default::default()
    };
    let summarizer = crate::compaction::summary::Summarizer {
        stream_fn: o.stream_fn.clone(),
        options: stream_options.clone(),
    };
    let current = Current::default();
    let hook_run = current.clone();
    let between_turns = crate::compaction::compactor::Slot::default();
    // A model switched to later (RPC `set_model`) finds its provider's `models.json` key.
    let explicit_key = o.api_key.clone();
    let agent = Agent::new(AgentOptions {
        system_prompt: None,
        model: Some(model.into()),
        thinking_level: thinking,
        tools: current.tools(o.tools),
        messages,
        stream_fn: Some(current.stream_fn(o.stream_fn)),
        stream_options,
        // `bashExecution` messages (RPC `bash`) reach the model as pi words them.
        hooks: Hooks::default()
            .convert_to_llm(|m| async move { Ok(crate::user_bash::to_llm(m)) })
            // pi's check before each further request of a run.
            .prepare_next_turn(crate::compaction::compactor::next_turn_hook(
                between_turns.clone(),
            ))
            .get_api_key(move |provider| {
                let key = explicit_key
                    .clone()
                    .or_else(|| crate::models_file::api_key(&provider));
                async move { Ok(key) }
            })
            .before_tool_call(move |ctx, signal| {
                let gate = gate.clone();
                let asker = asker.clone();
                let run = hook_run.get();
                async move {
                    let call = crate::permissions::Call {
                        id: &ctx.tool_call.id,
                        name: &ctx.tool_call.name,
                        args: &ctx.args,
                    };
                    let verdict =
                        crate::permissions::evaluate(&gate, asker, run, call, &signal).await;
                    Ok(verdict.block.then_some(BeforeToolCallResult {
                        block: true,
                        reason: verdict.reason,
                        ..BeforeToolCallResult::default()
                    }))
                }
            }),
        ..Default::default()
    });
    let prefix = if fresh {
        agent.with_messages(|m| {
            m.iter()
                .take_while(|m| matches!(m, Message::System(_)))
                .cloned()
                .collect()
        })
    } else {
        resumed_prefix
    };
    let recorder = Recorder::new(session_file)
        .with_prefix(prefix)
        .on_first_failure(|e| {
            eprintln_redacted!(
                "tern: warning: {e} (the run goes on; pass --no-session to silence this)"
            )
        });
    let mut recorder = recorder;
    for setting in settings {
        recorder.defer(setting);
    }
    let recorder = Arc::new(Mutex::new(recorder));
    let recording = Recorder::attach(&recorder, &agent);
    Ok(Runtime {
        agent,
        limits,
        recorder,
        session_root,
        id_root: o.id_root,
        templates: o.templates,
        skills: o.skills,
        cwd: o.cwd,
        current,
        queueing: Default::default(),
        recording: Mutex::new(Some(recording)),
        inputs: Mutex::new(None),
        memory_journal: Mutex::new(Default::default()),
        compaction: Arc::new(crate::compaction::run::State::new(
            o.compaction,
            summarizer,
            previous,
        )),
        between_turns,
        retry: Arc::new(crate::auto_retry::AutoRetry::new(o.retry)),
    })
}

impl Runtime {
    /// Starts a new session (RPC `new_session`): clears the conversation, keeps the prompt
    /// and tools, and opens a new file.
    pub fn new_session(&self) -> Result<(), String> {
        self.agent.reset().map_err(|e| e.to_string())?;
        let file = match &self.session_root {
            Some(folder) if self.recorder.lock().session().path().is_some() => {
                SessionFile::create_in(folder, &self.cwd)
            }
            _ => SessionFile::in_memory(&self.cwd),
        };
        let prefix = self.agent.with_messages(|m| m.to_vec());
        self.switch_session_id(file.id());
        self.recorder.lock().switch_to(file, prefix);
        *self.memory_journal.lock() = Default::default();
        *self.compaction.previous.lock() = None;
        Ok(())
    }

    /// Continues the session file at `path` (RPC `switch_session`, `fork`, `clone`): its
    /// branch becomes the conversation, after the system prompt, and new entries attach to
    /// its leaf.
    pub fn open_session(&self, path: &Path) -> Result<(), String> {
        let loaded = tern_session::load(path).map_err(|e| e.to_string())?;
        let mut file = SessionFile::resume(path, &loaded, &self.cwd);
        file.lock_existing().map_err(|e| e.to_string())?;
        self.agent.reset().map_err(|e| e.to_string())?;
        let mut messages = self.agent.with_messages(|m| m.to_vec());
        messages.extend(loaded.messages);
        self.agent.set_messages(messages);
        // Nothing to write ahead: the file already holds the branch.
        self.switch_session_id(file.id());
        self.recorder.lock().switch_to(file, Vec::new());
        *self.memory_journal.lock() = Default::default();
        Ok(())
    }

    /// The requests of the next session carry its id; what the providers kept for the
    /// session left is freed (pi's `cleanupSessionResources` when a session is replaced).
    fn switch_session_id(&self, id: &str) {
        let left = self.agent.session_id();
        if left.as_deref() == Some(id) {
            return;
        }
        self.agent.set_session_id(Some(id.to_string()));
        if let Some(left) = left {
            tern_ai::providers::cleanup_session_resources(Some(&left));
        }
    }

    /// The session's journal: its file, or the in-memory session's.
    pub fn journal(&self) -> Arc<dyn tern_durable::Journal> {
        crate::durable::journal_for(&self.recorder, &self.memory_journal.lock())
    }

    /// The session id.
    pub fn session_id(&self) -> String {
        self.recorder.lock().session().id().to_string()
    }

    /// Keeps a command's `bashExecution` message (RPC `bash`, `!cmd`): in the session file,
    /// and at the end of the transcript, for the next prompt to send (unless it is excluded
    /// from the context). Called between runs.
    pub fn keep_user_bash(&self, message: tern_ai::Message) {
        self.recorder.lock().record_message(&message);
        let mut messages = self.agent.with_messages(|m| m.to_vec());
        messages.push(message);
        self.agent.set_messages(messages);
    }

    /// The session file path.
    pub fn session_file(&self) -> Option<String> {
        self.recorder.lock().session().path_string()
    }

    /// `text` expanded when it is `/skill:name args` or a prompt template's `/name args`,
    /// else as it is.
    pub fn expand_template(&self, text: &str) -> String {
        crate::prompt_templates::expand(text, &self.templates, &self.skills)
    }

    /// The command that resumes this session, once its file exists.
    pub fn resume_command(&self) -> Option<String> {
        let rec = self.recorder.lock();
        let file = rec.session().path().filter(|p| p.exists())?;
        Some(crate::session_choice::resume_command(
            file,
            rec.session().id(),
            &self.id_root,
        ))
    }

    /// The session's `session` header line, stamped now (JSON mode prints it first).
    pub fn session_header(&self) -> serde_json::Value {
        self.recorder.lock().session().header()
    }

    /// Aborts the running turn on the user's behalf (the run ends with exit code 130).
    pub fn abort_by_user(&self) {
        self.limits.user_aborted.store(true, Ordering::SeqCst);
        self.agent.abort();
        // Between attempts no request is going: the wait is what to stop.
        self.retry.abort();
    }
}
