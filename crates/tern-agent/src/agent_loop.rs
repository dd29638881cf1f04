//! The low-level agent loop: turns of (pending messages → request → tool calls) until the
//! model stops, steering and follow-up messages included.
//!
//! ```
//! use std::sync::Arc;
//! use tern_agent::{run_agent_loop, AgentContext, AgentEvent, AgentLoopConfig};
//! use tern_ai::faux::{FauxModel, FauxResponse};
//! use tern_ai::{Message, Model};
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let model = Arc::new(FauxModel::new(vec![FauxResponse::text("4")]));
//! let sink = |e: AgentEvent| async move { eprintln!("{}", e.kind()) };
//! let new = run_agent_loop(
//!     vec![Message::user_text("2+2?")],
//!     AgentContext::default(),
//!     AgentLoopConfig::new(Model::default()),
//!     &sink,
//!     Default::default(),
//!     model,
//! )
//! .await
//! .unwrap();
//! assert_eq!(new.len(), 2);
//! # });
//! ```

use std::sync::Arc;

use futures::FutureExt;
use tern_ai::cow::make_mut;
use tern_ai::{
    AssistantMessage, AssistantMessageEvent, BoxError, Context, EventSender, EventStream, Message,
    PartialMessage, StopReason, StreamEvent, StreamFn, ThinkingLevel,
};
use tokio_util::sync::CancellationToken;

use crate::config::{reasoning_of, AgentContext, AgentLoopConfig, MessageSource};
use crate::error::AgentError;
use crate::events::{AgentEvent, EventSink};
use crate::hooks::{PrepareRequestContext, TurnContext, TurnDecision};
use crate::outcome::{ending_of, RunEnding, StopCause};
use crate::partials::ResponsePartials;
use crate::tool_declarations::TranscriptIndex;
use crate::tool_exec::{execute_tool_calls, fail_truncated};

impl StreamEvent for AgentEvent {
    type Output = Vec<Message>;
    fn completes(&self) -> Option<Vec<Message>> {
        match self {
            AgentEvent::AgentEnd { messages } => Some(messages.clone()),
            _ => None,
        }
    }
}

/// The event stream of [`agent_loop`]: ends at `agent_end`; its result is the new messages.
pub type AgentEventStream = EventStream<AgentEvent>;

#[derive(Clone)]
struct ChannelSink(Arc<EventSender<AgentEvent>>);

impl EventSink for ChannelSink {
    async fn emit(&self, event: AgentEvent) {
        self.0.push(event);
    }
}

/// Starts a loop with new prompt messages and returns its event stream (runs on a spawned
/// task; needs a tokio runtime). A failing hook ends the stream without `agent_end`.
pub fn agent_loop(
    prompts: Vec<Message>,
    context: AgentContext,
    config: AgentLoopConfig,
    signal: CancellationToken,
    stream_fn: Arc<dyn StreamFn>,
) -> AgentEventStream {
    let (tx, rx) = tern_ai::event_stream();
    tokio::spawn(async move {
        let sink = ChannelSink(Arc::new(tx));
        let result = run_agent_loop(prompts, context, config, &sink, signal, stream_fn).await;
        sink.0.end(result.ok());
    });
    rx
}

/// Continues a loop from `context` without a new message. Fails at once when the context
/// is empty or ends with an assistant message.
pub fn agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    signal: CancellationToken,
    stream_fn: Arc<dyn StreamFn>,
) -> Result<AgentEventStream, AgentError> {
    check_continuable(&context)?;
    let (tx, rx) = tern_ai::event_stream();
    tokio::spawn(async move {
        let sink = ChannelSink(Arc::new(tx));
        let result = run_agent_loop_continue(context, config, &sink, signal, stream_fn).await;
        sink.0.end(result.ok());
    });
    Ok(rx)
}

fn check_continuable(context: &AgentContext) -> Result<(), AgentError> {
    match context.messages.last() {
        None => Err(AgentError::EmptyContext),
        Some(Message::Assistant(_)) => Err(AgentError::CannotContinueFrom("assistant".into())),
        Some(_) => Ok(()),
    }
}

/// Runs a loop with new prompt messages, awaiting `sink` for every event. Returns the
/// messages the run added.
pub async fn run_agent_loop<S: EventSink + Clone + 'static>(
    prompts: Vec<Message>,
    context: AgentContext,
    config: AgentLoopConfig,
    sink: &S,
    signal: CancellationToken,
    stream_fn: Arc<dyn StreamFn>,
) -> Result<Vec<Message>, AgentError> {
    let run = Run::new(request_options(config, &signal), signal, stream_fn);
    Ok(run_prompts(prompts, context, run, sink).await?.0)
}

/// Continues a loop from `context`, awaiting `sink` for every event.
pub async fn run_agent_loop_continue<S: EventSink + Clone + 'static>(
    context: AgentContext,
    config: AgentLoopConfig,
    sink: &S,
    signal: CancellationToken,
    stream_fn: Arc<dyn StreamFn>,
) -> Result<Vec<Message>, AgentError> {
    let run = Run::new(request_options(config, &signal), signal, stream_fn);
    Ok(run_continue(context, run, sink).await?.0)
}

/// Room a run's message lists get up front: a short run (a prompt and a few turns) then
/// appends without growing them step by step.
pub(crate) const RUN_ROOM: usize = 8;

/// [`run_agent_loop`], also telling how the run ended.
pub(crate) async fn run_prompts<S: EventSink + Clone + 'static>(
    prompts: Vec<Message>,
    context: AgentContext,
    mut run: Run,
    sink: &S,
) -> Result<(Vec<Message>, RunEnding), AgentError> {
    // One index for the whole run: the initial declaration and every turn's.
    let initial = run.index.declare_tool_changes(&context, prompts);
    let mut current = context;
    let messages = make_mut(&mut current.messages);
    messages.reserve(initial.len() + RUN_ROOM);
    messages.extend(initial.iter().cloned());
    emit_start(sink).await;
    for m in &initial {
        emit_message(sink, m).await;
    }
    let mut new_messages = initial;
    new_messages.reserve(RUN_ROOM);
    let ending = run_loop(current, &mut new_messages, run, sink).await?;
    Ok((new_messages, ending))
}

/// [`run_agent_loop_continue`], also telling how the run ended.
pub(crate) async fn run_continue<S: EventSink + Clone + 'static>(
    context: AgentContext,
    run: Run,
    sink: &S,
) -> Result<(Vec<Message>, RunEnding), AgentError> {
    check_continuable(&context)?;
    emit_start(sink).await;
    let mut new_messages = Vec::with_capacity(RUN_ROOM);
    let ending = run_loop(context, &mut new_messages, run, sink).await?;
    Ok((new_messages, ending))
}

async fn emit_start<S: EventSink + Clone + 'static>(sink: &S) {
    sink.emit(AgentEvent::AgentStart).await;
    sink.emit(AgentEvent::TurnStart).await;
}

async fn emit_message<S: EventSink + Clone + 'static>(sink: &S, m: &Message) {
    sink.emit(AgentEvent::MessageStart { message: m.clone() })
        .await;
    sink.emit(AgentEvent::MessageEnd { message: m.clone() })
        .await;
}

async fn poll(source: &Option<MessageSource>) -> Vec<Message> {
    match source {
        Some(f) => f().await,
        None => Vec::new(),
    }
}

fn apply_level(
    current: Option<ThinkingLevel>,
    update: Option<ThinkingLevel>,
) -> Option<ThinkingLevel> {
    match update {
        None => current,
        Some(level) => reasoning_of(level),
    }
}

/// What a run carries from turn to turn besides its transcript.
pub(crate) struct Run {
    index: TranscriptIndex,
    /// Boxed: the configuration is over a kilobyte, and every future the run's state passes
    /// through (`run_prompts`, `run_loop`) would otherwise hold it, and be copied with it.
    config: Box<AgentLoopConfig>,
    signal: CancellationToken,
    stream_fn: Arc<dyn StreamFn>,
}

/// `config` with the options every request of the run is lent: the run's signal and the
/// configured reasoning level.
pub(crate) fn request_options(
    mut config: AgentLoopConfig,
    signal: &CancellationToken,
) -> AgentLoopConfig {
    config.stream_options.signal = signal.clone();
    config.stream_options.reasoning = config.reasoning;
    config
}

impl Run {
    /// A run of `config`, whose `stream_options` carry `signal` already (see
    /// [`request_options`]): the requests borrow them.
    pub(crate) fn new(
        config: AgentLoopConfig,
        signal: CancellationToken,
        stream_fn: Arc<dyn StreamFn>,
    ) -> Self {
        Run {
            index: TranscriptIndex::default(),
            config: Box::new(config),
            signal,
            stream_fn,
        }
    }
}

async fn run_loop<S: EventSink + Clone + 'static>(
    mut current: AgentContext,
    new_messages: &mut Vec<Message>,
    run: Run,
    sink: &S,
) -> Result<RunEnding, AgentError> {
    let Run {
        mut index,
        mut config,
        signal,
        stream_fn,
    } = run;
    let mut turn_done = false;
    // The last completed turn, kept only when a hook will read it.
    let mut last_turn: Option<TurnContext> = None;
    let mut explicit_continuation = false;
    // How the run ends if it stops after the latest turn.
    let mut ending = RunEnding::Completed;
    let mut pending = poll(&config.get_steering_messages).await;

    loop {
        let mut has_more_tool_calls = true;
        while has_more_tool_calls || !pending.is_empty() {
            let mut prepared = Vec::new();
            if turn_done {
                if let (Some(hook), Some(turn)) =
                    (&config.hooks.prepare_next_turn, last_turn.take())
                {
                    if let Some(update) = hook(turn, signal.clone()).await? {
                        if let Some(c) = update.context {
                            current = c;
                            index.invalidate();
                        }
                        prepared = update.messages.unwrap_or_default();
                        if let Some(m) = update.model {
                            config.model = Arc::new(m);
                        }
                        config.reasoning = apply_level(config.reasoning, update.thinking_level);
                    }
                }
                // Preparation can take long: pick up steering queued meanwhile, unless the
                // earlier poll already delivered (one-at-a-time must not deliver two).
                if pending.is_empty() {
                    pending = poll(&config.get_steering_messages).await;
                }
                sink.emit(AgentEvent::TurnStart).await;
            }

            prepared.append(&mut pending);
            for m in index.declare_tool_changes(&current, prepared) {
                emit_message(sink, &m).await;
                make_mut(&mut current.messages).push(m.clone());
                new_messages.push(m);
            }

            if let Some(hook) = &config.hooks.prepare_request {
                let update = hook(
                    PrepareRequestContext {
                        context: current.clone(),
                        model: tern_ai::Model::clone(&config.model),
                        thinking_level: config.reasoning.unwrap_or(ThinkingLevel::Off),
                    },
                    signal.clone(),
                )
                .await?;
                if let Some(update) = update {
                    if let Some(c) = update.context {
                        current = c;
                        index.invalidate();
                    }
                    if let Some(m) = update.model {
                        config.model = Arc::new(m);
                    }
                    config.reasoning = apply_level(config.reasoning, update.thinking_level);
                }
            }

            let message = stream_assistant_response(
                &mut current,
                &mut index,
                &config,
                &signal,
                sink,
                &stream_fn,
            )
            .await?;
            new_messages.push(Message::from(message.clone()));

            if let Some(failed) = ending_of(&message) {
                let end = end_failed_turn(message, &current, new_messages, &config, &signal, sink);
                end.boxed().await?;
                return Ok(failed);
            }

            let mut tool_results = Vec::new();
            has_more_tool_calls = false;
            ending = RunEnding::Completed;
            if message.tool_calls().next().is_none() && message.stop_reason == StopReason::Length {
                ending = RunEnding::Stopped(StopCause::OutputLimit);
            }
            if message.tool_calls().next().is_some() {
                // A `length` stop may have cut any call's arguments: run none of them.
                let batch = if message.stop_reason == StopReason::Length {
                    fail_truncated(&message, sink).boxed().await
                } else {
                    execute_tool_calls(
                        &current,
                        &message,
                        config.tool_execution,
                        &config.hooks,
                        &signal,
                        sink,
                    )
                    .await
                };
                has_more_tool_calls = !batch.terminate;
                if batch.terminate {
                    ending = RunEnding::Stopped(StopCause::ToolsTerminated);
                }
                tool_results = batch.messages;
                let msgs = make_mut(&mut current.messages);
                // Room for a large batch at once rather than in doublings.
                msgs.reserve(tool_results.len());
                new_messages.reserve(tool_results.len());
                for r in &tool_results {
                    msgs.push(Message::from(r.clone()));
                    new_messages.push(Message::from(r.clone()));
                }
            }

            turn_done = true;
            if config.hooks.prepare_next_turn.is_some() {
                last_turn = Some(turn_context(
                    &message,
                    &tool_results,
                    &current,
                    new_messages,
                ));
            }
            let decision = match &config.hooks.finish_turn {
                Some(hook) => {
                    let turn = turn_context(&message, &tool_results, &current, new_messages);
                    hook(turn, signal.clone()).await?
                }
                None => None,
            };
            sink.emit(AgentEvent::TurnEnd {
                message: Message::Assistant(message),
                tool_results,
            })
            .await;
            if decision == Some(TurnDecision::End) {
                sink.emit(AgentEvent::AgentEnd {
                    messages: new_messages.clone(),
                })
                .await;
                return Ok(RunEnding::Stopped(StopCause::FinishTurn));
            }
            explicit_continuation = decision == Some(TurnDecision::Continue);
            pending = poll(&config.get_steering_messages).await;
            if has_more_tool_calls || !pending.is_empty() {
                explicit_continuation = false;
            }
        }

        // The agent would stop here: follow-ups first, then an explicit continuation.
        let follow_ups = poll(&config.get_follow_up_messages).await;
        if !follow_ups.is_empty() {
            explicit_continuation = false;
            pending = follow_ups;
            continue;
        }
        if explicit_continuation {
            explicit_continuation = false;
            continue;
        }
        break;
    }
    sink.emit(AgentEvent::AgentEnd {
        messages: new_messages.clone(),
    })
    .await;
    Ok(ending)
}

/// Ends a turn whose response failed or was aborted, and the run with it: out of line (the
/// caller boxes it), as few turns end so.
async fn end_failed_turn<S: EventSink + Clone + 'static>(
    message: Arc<AssistantMessage>,
    current: &AgentContext,
    new_messages: &[Message],
    config: &AgentLoopConfig,
    signal: &CancellationToken,
    sink: &S,
) -> Result<(), AgentError> {
    if let Some(hook) = &config.hooks.finish_turn {
        // The decision is ignored: an error or abort always ends the run.
        let turn = turn_context(&message, &[], current, new_messages);
        hook(turn, signal.clone()).await?;
    }
    sink.emit(AgentEvent::TurnEnd {
        message: Message::from(message),
        tool_results: Vec::new(),
    })
    .await;
    sink.emit(AgentEvent::AgentEnd {
        messages: new_messages.to_vec(),
    })
    .await;
    Ok(())
}

/// Puts the messages of the partials that a repeated `start` left behind into the context,
/// before the final message; out of line, as almost no response starts twice.
#[cold]
fn restarted_partials(messages: &mut Vec<Message>, restarted: &[PartialMessage]) {
    messages.extend(restarted.iter().map(|p| Message::Assistant(p.shared())));
}

fn turn_context(
    message: &Arc<AssistantMessage>,
    tool_results: &[Arc<tern_ai::ToolResultMessage>],
    current: &AgentContext,
    new_messages: &[Message],
) -> TurnContext {
    TurnContext {
        message: message.clone(),
        tool_results: tool_results.to_vec(),
        context: current.clone(),
        new_messages: new_messages.to_vec(),
    }
}

/// The request messages by default: system, user, assistant and tool results; custom roles
/// are dropped. Shares the input when nothing is dropped.
pub fn default_convert_to_llm(messages: Arc<Vec<Message>>) -> Arc<Vec<Message>> {
    if messages.iter().all(|m| !matches!(m, Message::Custom(_))) {
        return messages;
    }
    Arc::new(
        messages
            .iter()
            .filter(|m| !matches!(m, Message::Custom(_)))
            .cloned()
            .collect(),
    )
}

async fn stream_assistant_response<S: EventSink + Clone + 'static>(
    current: &mut AgentContext,
    index: &mut TranscriptIndex,
    config: &AgentLoopConfig,
    signal: &CancellationToken,
    sink: &S,
    stream_fn: &Arc<dyn StreamFn>,
) -> Result<Arc<AssistantMessage>, AgentError> {
    let mut messages = current.messages.clone();
    if let Some(t) = &config.hooks.transform_context {
        messages = t(messages, signal.clone()).await?;
    }
    let llm = match &config.hooks.convert_to_llm {
        Some(c) => c(messages).await?,
        // Without a transform the request is the transcript itself, and the index knows
        // whether it holds custom messages: no scan, no copy.
        None if config.hooks.transform_context.is_none() && !index.has_custom(current) => messages,
        None => default_convert_to_llm(messages),
    };
    let hooked_key = match &config.hooks.get_api_key {
        Some(g) => g(config.model.provider.clone()).await?,
        None => None,
    }
    .filter(|k| !k.is_empty());
    // The run's options as they are, lent, unless this request's differ from them (a hooked
    // key, or a level changed since the run began); they carry the run's signal.
    let changed;
    let options = match hooked_key {
        None if config.stream_options.reasoning == config.reasoning => &config.stream_options,
        key => {
            let mut o = config.stream_options.with_signal(signal.clone());
            o.reasoning = config.reasoning;
            if key.is_some() {
                o.api_key = key;
            }
            changed = o;
            &changed
        }
    };
    let mut stream = stream_fn
        .stream(&config.model, Context { messages: llm }, options)
        .map_err(AgentError::from)?;

    // The message the events build, as the reference's `partialMessage`, and the partials a
    // later `start` left behind: the reference puts the partial into the context at every
    // `start` and replaces only the last one with the final message.
    let mut partials = ResponsePartials::default();
    let mut last = None;
    while let Some(event) = stream.next().await {
        match event {
            AssistantMessageEvent::Start { partial: p } => {
                // The message as it is now, shared: an update after this copies it first.
                let message = Message::Assistant(p.shared());
                partials.start(p);
                sink.emit(AgentEvent::MessageStart { message }).await;
            }
            // The final event carries the result: take it rather than copy it out of the
            // stream again (a long answer is megabytes).
            AssistantMessageEvent::Done { message, .. }
            | AssistantMessageEvent::Error { error: message, .. } => {
                last = Some(message);
                break;
            }
            event => {
                if partials.update(&event) {
                    sink.emit(AgentEvent::MessageUpdate {
                        assistant_message_event: event,
                    })
                    .await;
                }
            }
        }
    }
    let mut message = match last {
        Some(m) => m,
        None => {
            // A stream function that failed part-way fails the run, as one that failed at once.
            if let Some(error) = stream.failure() {
                return Err(AgentError::from(BoxError::from(error)));
            }
            stream.result().await
        }
    };
    // The stream's result slot shares the message: drop it so that recording the requested
    // level, whichever stream function answered, changes the message in place.
    drop(stream);
    let level = Some(config.reasoning.unwrap_or(ThinkingLevel::Off));
    if message.thinking_level != level {
        let record = |m: &mut AssistantMessage| m.thinking_level = level;
        message = match partials.current() {
            // `done` shares the message the events built (a provider's does): the level is
            // recorded on that message, as the reference assigns it to the same object, and
            // in place unless a listener still holds an earlier share.
            Some(p) => p.update_shared(message, record),
            None => {
                record(make_mut(&mut message));
                message
            }
        };
    }
    let messages = make_mut(&mut current.messages);
    if !partials.left().is_empty() {
        // Read now, as the reference's context holds the objects themselves: a provider's
        // one partial shows its final state.
        restarted_partials(messages, partials.left());
    }
    messages.push(Message::Assistant(message.clone()));
    if !partials.is_started() {
        sink.emit(AgentEvent::MessageStart {
            message: Message::Assistant(message.clone()),
        })
        .await;
    }
    sink.emit(AgentEvent::MessageEnd {
        message: Message::Assistant(message.clone()),
    })
    .await;
    Ok(message)
}
