//! The event listener that opens and closes the spans of a run.

use std::time::Instant;

use parking_lot::Mutex;
use tern_agent::{Agent, AgentEvent, Subscription};
use tern_ai::{AssistantMessage, Message, StopReason};
use tracing::field::Empty;
use tracing::Span;

/// What the spans record.
#[derive(Clone, Debug)]
pub struct TraceOptions {
    /// `gen_ai.agent.name`, and the `{agent}` of the root span's name.
    pub agent_name: String,
    /// Also record prompts, answers, tool arguments and results (`gen_ai.input.messages`,
    /// `gen_ai.output.messages`, `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`).
    /// Off by default: contents may be private.
    pub record_content: bool,
    /// Also open pi-telemetry's `pi.ai.request` span (its `provider`, `api`, `model`,
    /// `reasoning`, `stop`, `usage.*`, `cost.total`, `response.id` attributes) under each
    /// `chat` span.
    pub pi_spans: bool,
}

impl TraceOptions {
    /// Spans for the agent `agent_name`, without contents or pi spans.
    pub fn new(agent_name: impl Into<String>) -> Self {
        TraceOptions {
            agent_name: agent_name.into(),
            record_content: false,
            pi_spans: false,
        }
    }
}

/// The open spans of the current run.
#[derive(Default)]
struct Run {
    agent: Option<Span>,
    chat: Option<(Span, Option<Span>, Instant)>,
    tools: Vec<(tern_ai::Name, Span)>,
    /// The model and reasoning level the run started with (read once: the state is a copy).
    model: Option<(tern_ai::Model, Option<String>)>,
    #[cfg(feature = "otel")]
    instruments: Option<std::sync::Arc<crate::metrics::Instruments>>,
    input_tokens: u64,
    output_tokens: u64,
}

/// Traces every run of `agent` until the subscription is dropped.
pub fn attach(agent: &Agent, options: TraceOptions) -> Subscription {
    let run = Mutex::new(Run {
        #[cfg(feature = "otel")]
        instruments: Some(std::sync::Arc::new(crate::metrics::Instruments::new())),
        ..Run::default()
    });
    let model_of = agent.clone();
    agent.subscribe_sync(move |event| {
        let mut run = run.lock();
        on_event(&mut run, &options, &model_of, event);
    })
}

fn on_event(run: &mut Run, o: &TraceOptions, agent: &Agent, event: &AgentEvent) {
    match event {
        AgentEvent::AgentStart => {
            let state = agent.state();
            let reasoning = serde_json::to_value(state.thinking_level)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .filter(|l| l != "off");
            let model = state.model;
            *run = Run {
                #[cfg(feature = "otel")]
                instruments: run.instruments.take(),
                ..Run::default()
            };
            run.agent = Some(tracing::info_span!(
                target: "tern::agent",
                parent: None,
                "invoke_agent",
                otel.name = format!("invoke_agent {}", o.agent_name),
                otel.kind = "internal",
                gen_ai.operation.name = "invoke_agent",
                gen_ai.agent.name = o.agent_name.as_str(),
                gen_ai.provider.name = model.provider.as_str(),
                gen_ai.request.model = model.id.as_str(),
                gen_ai.usage.input_tokens = Empty,
                gen_ai.usage.output_tokens = Empty,
                "error.type" = Empty,
                otel.status_code = Empty,
                otel.status_description = Empty,
            ));
            run.model = Some((model, reasoning));
        }
        AgentEvent::TurnStart => {
            let Some((model, reasoning)) = run.model.clone() else {
                return;
            };
            let parent = run.agent.as_ref().and_then(Span::id);
            let chat = tracing::info_span!(
                target: "tern::agent",
                parent: parent,
                "chat",
                otel.name = format!("chat {}", model.id),
                otel.kind = "client",
                gen_ai.operation.name = "chat",
                gen_ai.provider.name = model.provider.as_str(),
                gen_ai.request.model = model.id.as_str(),
                gen_ai.response.id = Empty,
                gen_ai.response.model = Empty,
                gen_ai.response.finish_reasons = Empty,
                gen_ai.usage.input_tokens = Empty,
                gen_ai.usage.output_tokens = Empty,
                gen_ai.usage.cache_read.input_tokens = Empty,
                gen_ai.usage.cache_creation.input_tokens = Empty,
                gen_ai.usage.reasoning.output_tokens = Empty,
                gen_ai.input.messages = Empty,
                gen_ai.output.messages = Empty,
                "error.type" = Empty,
                otel.status_code = Empty,
                otel.status_description = Empty,
            );
            if o.record_content {
                let messages =
                    agent.with_messages(|m| serde_json::to_string(m).unwrap_or_default());
                chat.record("gen_ai.input.messages", messages.as_str());
            }
            let pi = o.pi_spans.then(|| {
                tracing::info_span!(
                    target: "tern::agent",
                    parent: chat.id(),
                    "pi.ai.request",
                    provider = model.provider.as_str(),
                    api = model.api.as_str(),
                    model = model.id.as_str(),
                    reasoning = Empty,
                    stop = Empty,
                    usage.input = Empty,
                    usage.output = Empty,
                    usage.cache_read = Empty,
                    usage.cache_write = Empty,
                    cost.total = Empty,
                    response.id = Empty,
                    otel.status_code = Empty,
                    otel.status_description = Empty,
                )
            });
            if let (Some(pi), Some(level)) = (&pi, &reasoning) {
                pi.record("reasoning", level.as_str());
            }
            run.chat = Some((chat, pi, Instant::now()));
        }
        AgentEvent::MessageEnd {
            message: Message::Assistant(m),
        } => {
            if let Some((chat, pi, started)) = run.chat.take() {
                finish_chat(run, o, &chat, pi.as_ref(), m);
                #[cfg(feature = "otel")]
                if let (Some(i), Some((model, _))) = (&run.instruments, &run.model) {
                    let error = (m.stop_reason == StopReason::Error).then_some("provider_error");
                    i.record_chat(&model.provider, &model.id, m, started.elapsed(), error);
                }
                #[cfg(not(feature = "otel"))]
                let _ = started;
            }
        }
        AgentEvent::ToolExecutionStart { tool_call } => {
            let parent = run.agent.as_ref().and_then(Span::id);
            let span = tracing::info_span!(
                target: "tern::agent",
                parent: parent,
                "execute_tool",
                otel.name = format!("execute_tool {}", tool_call.name),
                otel.kind = "internal",
                gen_ai.operation.name = "execute_tool",
                gen_ai.tool.name = tool_call.name.as_str(),
                gen_ai.tool.call.id = tool_call.id.as_str(),
                "gen_ai.tool.type" = "function",
                gen_ai.tool.call.arguments = Empty,
                gen_ai.tool.call.result = Empty,
                "error.type" = Empty,
                otel.status_code = Empty,
                otel.status_description = Empty,
            );
            if o.record_content {
                span.record(
                    "gen_ai.tool.call.arguments",
                    serde_json::to_string(&tool_call.arguments)
                        .unwrap_or_default()
                        .as_str(),
                );
            }
            run.tools.push((tool_call.id.clone(), span));
        }
        AgentEvent::ToolExecutionEnd {
            tool_call,
            result,
            is_error,
            ..
        } => {
            let Some(at) = run.tools.iter().position(|(id, _)| *id == tool_call.id) else {
                return;
            };
            let (_, span) = run.tools.remove(at);
            if o.record_content {
                span.record(
                    "gen_ai.tool.call.result",
                    serde_json::to_string(result.content())
                        .unwrap_or_default()
                        .as_str(),
                );
            }
            if *is_error {
                span.record("error.type", "tool_error");
                span.record("otel.status_code", "ERROR");
            }
        }
        AgentEvent::AgentEnd { .. } => {
            if let Some(span) = run.agent.take() {
                span.record("gen_ai.usage.input_tokens", int(run.input_tokens));
                span.record("gen_ai.usage.output_tokens", int(run.output_tokens));
            }
            *run = Run {
                #[cfg(feature = "otel")]
                instruments: run.instruments.take(),
                ..Run::default()
            };
        }
        _ => {}
    }
}

fn finish_chat(
    run: &mut Run,
    o: &TraceOptions,
    chat: &Span,
    pi: Option<&Span>,
    m: &AssistantMessage,
) {
    let u = &m.usage;
    // GenAI's input tokens include the cached ones; tern's (pi's) `input` does not.
    let input = u.input + u.cache_read + u.cache_write;
    run.input_tokens += input;
    run.output_tokens += u.output;
    if let Some(id) = &m.response_id {
        chat.record("gen_ai.response.id", id.as_str());
    }
    chat.record("gen_ai.response.model", m.model.as_str());
    let stop = serde_json::to_value(m.stop_reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    chat.record(
        "gen_ai.response.finish_reasons",
        format!("[\"{stop}\"]").as_str(),
    );
    chat.record("gen_ai.usage.input_tokens", int(input));
    chat.record("gen_ai.usage.output_tokens", int(u.output));
    chat.record("gen_ai.usage.cache_read.input_tokens", int(u.cache_read));
    chat.record(
        "gen_ai.usage.cache_creation.input_tokens",
        int(u.cache_write),
    );
    if let Some(r) = u.reasoning {
        chat.record("gen_ai.usage.reasoning.output_tokens", int(r));
    }
    if o.record_content {
        chat.record(
            "gen_ai.output.messages",
            serde_json::to_string(&m.content)
                .unwrap_or_default()
                .as_str(),
        );
    }
    let failed = m.stop_reason == StopReason::Error;
    if failed {
        // Bounded like pi's: the message may hold anything the provider sent.
        let message: String = m
            .error_message
            .as_deref()
            .unwrap_or("")
            .chars()
            .take(500)
            .collect();
        for span in [Some(chat), run.agent.as_ref()].into_iter().flatten() {
            span.record("error.type", "provider_error");
            span.record("otel.status_code", "ERROR");
            span.record("otel.status_description", message.as_str());
        }
    }
    if let Some(pi) = pi {
        pi.record("stop", stop.as_str());
        pi.record("usage.input", int(u.input));
        pi.record("usage.output", int(u.output));
        pi.record("usage.cache_read", int(u.cache_read));
        pi.record("usage.cache_write", int(u.cache_write));
        pi.record("cost.total", u.cost.total);
        if let Some(id) = &m.response_id {
            pi.record("response.id", id.as_str());
        }
        if failed {
            pi.record("otel.status_code", "ERROR");
        }
    }
}

/// Token counts as OpenTelemetry integers (the bridge writes a `u64` as a string).
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
