//! `--temporal HOST:PORT`: the session runs on a Temporal cluster instead of in this process.
//!
//! - `tern worker --temporal HOST:PORT [flags]` hosts session workflows and runs their model
//!   requests and tool calls with this command line's model, tools and permission flags.
//! - `tern --temporal HOST:PORT -p "..."` (or `--mode json`) starts a session's workflow, or
//!   attaches to one with `--temporal-session ID`, sends each prompt (every message argument,
//!   `@file` inputs with the first) once the one before it settled, and prints the events as
//!   a local run would, until the session is idle.
//! - `tern --temporal HOST:PORT --mode rpc` speaks pi's RPC protocol on stdin and stdout
//!   with the session's workflow behind it (`modes::rpc::temporal`).
//!
//! The permission policy is applied on the worker, in the tool activity: nobody can be asked
//! there, so a call the policy would ask about is refused with a message naming `--allow`.

use std::sync::Arc;

use serde_json::Value;
use tern_agent::{AgentTool, ToolCallInput};
use tern_ai::{Message, Model, StreamFn, ThinkingLevel, ToolDeclaration};
use tern_temporal::live::LiveListener;
use tern_temporal::{AgentActivities, SessionHandle, SessionInput, Sessions, ToolSpec};
use tern_tools::policy::{Decision, Policy};

use crate::exit;
use crate::secrets::{eprintln_redacted, redact};

/// Where sessions run.
pub struct Target {
    /// `HOST:PORT` of the Temporal frontend.
    pub address: String,
    /// The namespace.
    pub namespace: String,
    /// The task queue workers poll.
    pub task_queue: String,
    /// Where this command listens for live events (`--temporal-live`; `None`: off).
    pub live: Option<String>,
}

/// Listens where `target` says and subscribes `session` there, so its model requests'
/// events arrive while they stream; `None` when off, or when that fails (said on stderr:
/// the events then arrive as each request completes).
pub(crate) async fn live_listener(
    target: &Target,
    session: &SessionHandle,
) -> Option<LiveListener> {
    let address = target.live.as_deref()?;
    let listener = match LiveListener::bind(address).await {
        Ok(l) => l,
        Err(e) => {
            eprintln_redacted!(
                "tern: cannot listen for live events on {address} ({e}); events arrive as each \
                 model request completes"
            );
            return None;
        }
    };
    if let Err(e) = session.subscribe_live(listener.target()).await {
        eprintln_redacted!("tern: live events are off: {e}");
        return None;
    }
    Some(listener)
}

/// Takes `live`'s address off `session`'s subscribers.
pub(crate) async fn drop_live(session: &SessionHandle, live: Option<LiveListener>) {
    if let Some(l) = live {
        // A session that ended, or a cluster gone, has nobody left to tell.
        let _ = session.unsubscribe_live(l.target()).await;
    }
}

/// What the command line resolved: the model, the tools and how they are governed.
pub struct Setup {
    pub stream_fn: Arc<dyn StreamFn>,
    pub model: Model,
    pub api_key: Option<String>,
    pub temperature: Option<f64>,
    pub tools: Vec<AgentTool>,
    pub policy: Policy,
    pub system_prompt: String,
    pub thinking: ThinkingLevel,
}

/// A tool that checks the policy before it runs (on the worker).
fn gated(tool: AgentTool, policy: Arc<Policy>) -> AgentTool {
    let inner = tool.clone();
    tool.with_execute(move |input: ToolCallInput| {
        let (inner, policy) = (inner.clone(), policy.clone());
        async move {
            match policy.check(inner.name(), &input.args) {
                Decision::Allow => inner.execute(input).await,
                Decision::Deny(reason) => Err(reason.into()),
                Decision::Ask(_) => Err(format!(
                    "This {} call needs approval, and a worker has nobody to ask: start the \
                     worker with --allow {} to let it run",
                    inner.name(),
                    inner.name()
                )
                .into()),
            }
        }
    })
}

/// `tern worker --temporal ...`: runs until killed.
pub async fn run_worker(target: &Target, setup: Setup) -> i32 {
    let policy = Arc::new(setup.policy);
    let tools = setup
        .tools
        .into_iter()
        .map(|t| gated(t, policy.clone()))
        .collect();
    let activities = AgentActivities::new(setup.stream_fn, tools)
        .with_api_key(setup.api_key)
        .with_temperature(setup.temperature);
    let built = async {
        let client = tern_temporal::connect_client(&target.address, &target.namespace).await?;
        let runtime = tern_temporal::runtime()?;
        let worker = tern_temporal::build_worker(&runtime, client, &target.task_queue, activities)?;
        Ok::<_, tern_temporal::Error>((runtime, worker))
    };
    let (_runtime, mut worker) = match built.await {
        Ok(w) => w,
        Err(e) => {
            eprintln_redacted!("tern: {e}");
            return exit::ERROR;
        }
    };
    eprintln_redacted!(
        "tern: worker on task queue `{}` of {} (namespace {})",
        target.task_queue,
        target.address,
        target.namespace
    );
    match worker.run().await {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln_redacted!("tern: the worker stopped: {e}");
            exit::ERROR
        }
    }
}

fn new_session_input(setup: &Setup) -> SessionInput {
    let decls: Vec<Arc<ToolDeclaration>> = setup
        .tools
        .iter()
        .map(|t| t.declaration().clone())
        .collect();
    let messages =
        tern_ai::transcript::create_initial_system_message(Some(&setup.system_prompt), &decls)
            .map(Message::from)
            .into_iter()
            .collect();
    SessionInput {
        model: setup.model.clone(),
        reasoning: (setup.thinking != ThinkingLevel::Off).then_some(setup.thinking),
        messages,
        tools: setup.tools.iter().map(ToolSpec::of).collect(),
        ..SessionInput::default()
    }
}

fn print_line(v: &Value) {
    println!("{}", redact(&v.to_string()));
}

/// `tern --temporal ... -p "..."`: the prompts through the session's workflow, in order,
/// each once the one before it has settled.
pub async fn run_client(
    target: &Target,
    setup: Setup,
    resume: Option<String>,
    prompts: Vec<Message>,
    json: bool,
) -> i32 {
    match client(target, setup, resume, prompts, json).await {
        Ok(code) => code,
        Err(e) => {
            eprintln_redacted!("tern: {e}");
            exit::ERROR
        }
    }
}

/// Attaches to the session `resume`, or starts a new one with the command line's model,
/// tools and system prompt (its id said on stderr, with the flags that continue it).
pub(crate) async fn open_session(
    target: &Target,
    setup: &Setup,
    resume: Option<String>,
) -> Result<SessionHandle, tern_temporal::Error> {
    let sessions =
        Sessions::connect(&target.address, &target.namespace, &target.task_queue).await?;
    Ok(match resume {
        Some(id) => sessions.attach(&id),
        None => {
            let id = format!("tern-{}-{}", tern_ai::clock::now_ms(), std::process::id());
            let s = sessions.start(&id, new_session_input(setup)).await?;
            eprintln_redacted!(
                "tern: session {id} on {} (continue it with --temporal {} --temporal-session {id})",
                target.address,
                target.address
            );
            s
        }
    })
}

async fn client(
    target: &Target,
    setup: Setup,
    resume: Option<String>,
    prompts: Vec<Message>,
    json: bool,
) -> Result<i32, tern_temporal::Error> {
    let session = open_session(target, &setup, resume).await?;
    // Live events matter where events are printed.
    let mut live = match json {
        true => live_listener(target, &session).await,
        false => None,
    };
    let mut last_assistant = None;
    for prompt in prompts {
        let offset = session.state().await?.event_count;
        session.prompt(vec![prompt]).await?;
        let each = |event: &Value| {
            if json {
                print_line(event);
            }
            if event["type"] == "message_end" && event["message"]["role"] == "assistant" {
                last_assistant = Some(event["message"].clone());
            }
        };
        match live.as_mut() {
            Some(l) => session.follow_live(offset, l, each).await?,
            None => session.follow(offset, each).await?,
        };
        // As a local run: the first prompt that fails or is aborted ends the command.
        let stopped = last_assistant
            .as_ref()
            .and_then(|m| m["stopReason"].as_str())
            .is_some_and(|r| r == "error" || r == "aborted");
        if stopped {
            break;
        }
    }
    drop_live(&session, live).await;
    let Some(message) = last_assistant else {
        return Ok(exit::OK);
    };
    match message["stopReason"].as_str() {
        Some("error") => {
            let why = message["errorMessage"].as_str().unwrap_or("unknown error");
            eprintln_redacted!("tern: the model request failed: {why}");
            Ok(exit::ERROR)
        }
        Some("aborted") => {
            eprintln_redacted!("tern: aborted");
            Ok(exit::ABORTED)
        }
        _ => {
            if !json {
                let text: Vec<&str> = message["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|b| b["type"] == "text")
                    .filter_map(|b| b["text"].as_str())
                    .collect();
                println!("{}", redact(&text.concat()));
            }
            Ok(exit::OK)
        }
    }
}
