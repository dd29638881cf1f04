//! Streaming LLM providers, one per wire API:
//! [`openai-completions`](openai_completions), [`openai-responses`](openai_responses),
//! [`anthropic-messages`](anthropic) and [`google-generative-ai`](google).
//!
//! Each provider turns a [`Model`], a transcript ([`Context`]) and [`StreamOptions`] into an
//! HTTP request, parses the response incrementally and reports the assistant-message events.
//! Failures are values: the stream ends with an `error` event and a message whose
//! `stopReason` is `error` or `aborted`.
//!
//! [`stream`] picks the provider from `model.api` and returns an
//! [`AssistantMessageEventStream`]; [`run`] drives a provider to completion with a custom
//! [`EventSink`] (tests and the replay example record events at emission time this way).

pub mod anthropic;
pub mod catalog;
pub mod cost;
pub mod google;
pub mod http;
pub mod openai_completions;
pub mod openai_responses;
pub mod overflow;
pub mod replay;
pub mod retry;
pub mod transform;
mod typed_json;

use std::sync::Arc;

use serde_json::Value;

use crate::clock::now_ms;
use crate::event::{AssistantMessageEvent, Delta, PartialMessage};
use crate::message::{AssistantMessage, ContentBlock, StopReason, ThinkingLevel, Usage};
use crate::model::Model;
use crate::stream::{assistant_stream, AssistantMessageEventSender, AssistantMessageEventStream};
use crate::stream_fn::{BoxError, Context, StreamFn, StreamOptions};

pub use overflow::is_context_overflow;

/// Where a provider reports its events. The partial message in each event is the shared
/// handle the provider updates in place; a sink that needs the state at emission time reads
/// it inside [`emit`](EventSink::emit).
pub trait EventSink: Send {
    /// Receives one event, in order.
    fn emit(&mut self, event: AssistantMessageEvent);
}

impl EventSink for AssistantMessageEventSender {
    fn emit(&mut self, event: AssistantMessageEvent) {
        self.push(event);
    }
}

/// The wire APIs with a built-in provider.
pub const APIS: [&str; 4] = [
    "openai-completions",
    "openai-responses",
    "anthropic-messages",
    "google-generative-ai",
];

/// Runs the provider of `model.api` to completion, reporting to `sink`. Unknown APIs end
/// with an `error` event.
pub async fn run(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    sink: &mut dyn EventSink,
) {
    match model.api.as_str() {
        "openai-completions" => openai_completions::run(model, context, options, sink).await,
        "openai-responses" => openai_responses::run(model, context, options, sink).await,
        "anthropic-messages" => anthropic::run(model, context, options, sink).await,
        "google-generative-ai" => google::run(model, context, options, sink).await,
        other => {
            let mut out = Output::new(model, sink);
            out.fail(
                format!("No API provider registered for api: {other}"),
                false,
            );
        }
    }
}

/// Maps a response body already in memory to events, as the provider of `model.api` would
/// map a `200` streaming response made of these chunks: no request, no network. The entry
/// point of the provider fuzz targets and of body-level tests.
pub async fn map_body(
    model: &Model,
    options: &StreamOptions,
    chunks: Vec<bytes::Bytes>,
    sink: &mut dyn EventSink,
) {
    let mut out = Output::new(model, sink);
    let body = http::Body::Chunks(chunks.into());
    match model.api.as_str() {
        "openai-completions" => openai_completions::read_body(model, options, &mut out, body).await,
        "openai-responses" => openai_responses::read_body(model, options, &mut out, body).await,
        "anthropic-messages" => anthropic::read_body(model, options, &mut out, body).await,
        "google-generative-ai" => google::read_body(model, options, &mut out, body).await,
        other => out.fail(
            format!("No API provider registered for api: {other}"),
            false,
        ),
    }
}

/// Starts the provider of `model.api` on the current tokio runtime and returns its stream.
pub fn stream(
    model: &Model,
    context: Context,
    options: StreamOptions,
) -> AssistantMessageEventStream {
    let (mut tx, rx) = assistant_stream();
    let model = model.clone();
    tokio::spawn(async move {
        run(&model, &context, &options, &mut tx).await;
        tx.end(None);
    });
    rx
}

/// The built-in providers as a [`StreamFn`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Providers;

impl StreamFn for Providers {
    fn stream(
        &self,
        model: &Model,
        context: Context,
        options: StreamOptions,
    ) -> Result<AssistantMessageEventStream, BoxError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err("the built-in providers need a tokio runtime".into());
        }
        Ok(stream(model, context, options))
    }
}

/// Sends `req`; when that fails, ends `out` with the failure's text (`status_message` words
/// HTTP error statuses) and returns `None`.
pub(crate) async fn send_or_fail(
    req: &http::HttpRequest,
    options: &StreamOptions,
    out: &mut Output<'_>,
    sdk_message: &(dyn Fn(&http::HttpFailure) -> String + Sync),
    status_message: impl Fn(&http::HttpFailure) -> String,
) -> Option<reqwest::Response> {
    match http::send(req, options, sdk_message).await {
        Ok(r) => Some(r),
        Err(e) => {
            let (msg, aborted) = match e {
                http::SendError::Status(f) => (status_message(&f), false),
                http::SendError::Network(m) | http::SendError::Message(m) => (m, false),
                http::SendError::Aborted => ("Request was aborted".to_string(), true),
            };
            out.fail(msg, aborted || options.signal.is_cancelled());
            None
        }
    }
}

/// The message being built plus the sink: every provider reports through this, so event
/// order and failure shape are the same everywhere.
pub(crate) struct Output<'a> {
    pub partial: PartialMessage,
    sink: &'a mut dyn EventSink,
}

impl<'a> Output<'a> {
    pub fn new(model: &Model, sink: &'a mut dyn EventSink) -> Self {
        let message = AssistantMessage {
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            stop_reason: StopReason::Pending,
            timestamp: now_ms(),
            ..AssistantMessage::default()
        };
        Output {
            partial: PartialMessage::new(message),
            sink,
        }
    }

    pub fn update<R>(&self, f: impl FnOnce(&mut AssistantMessage) -> R) -> R {
        self.partial.update(f)
    }

    pub fn with<R>(&self, f: impl FnOnce(&AssistantMessage) -> R) -> R {
        self.partial.with(f)
    }

    fn emit(&mut self, event: AssistantMessageEvent) {
        self.sink.emit(event);
    }

    pub fn start(&mut self) {
        let partial = self.partial.clone();
        self.emit(AssistantMessageEvent::Start { partial });
    }

    pub fn len(&self) -> usize {
        self.with(|m| m.content.len())
    }

    /// Appends a block and emits its `*_start`; returns its content index.
    pub fn push_block(&mut self, block: ContentBlock) -> usize {
        let kind = match &block {
            ContentBlock::Text(_) => 0,
            ContentBlock::Thinking(_) => 1,
            _ => 2,
        };
        let index = self.update(|m| {
            m.content.push(block);
            m.content.len() - 1
        });
        let partial = self.partial.clone();
        self.emit(match kind {
            0 => AssistantMessageEvent::TextStart {
                content_index: index,
                partial,
            },
            1 => AssistantMessageEvent::ThinkingStart {
                content_index: index,
                partial,
            },
            _ => AssistantMessageEvent::ToolcallStart {
                content_index: index,
                partial,
            },
        });
        index
    }

    /// Appends text to a text or thinking block and emits the matching delta.
    pub fn append_text(&mut self, index: usize, delta: &str) {
        let is_thinking = self.update(|m| match m.content.get_mut(index) {
            Some(ContentBlock::Text(t)) => {
                t.text.push_str(delta);
                Some(false)
            }
            Some(ContentBlock::Thinking(t)) => {
                t.thinking.push_str(delta);
                Some(true)
            }
            _ => None,
        });
        let partial = self.partial.clone();
        match is_thinking {
            Some(false) => self.emit(AssistantMessageEvent::TextDelta {
                content_index: index,
                delta: delta.into(),
                partial,
            }),
            Some(true) => self.emit(AssistantMessageEvent::ThinkingDelta {
                content_index: index,
                delta: delta.into(),
                partial,
            }),
            None => {}
        }
    }

    /// Emits the text or thinking delta of a block the caller already extended.
    pub fn emit_delta(&mut self, index: usize, delta: &str) {
        let is_thinking =
            self.with(|m| matches!(m.content.get(index), Some(ContentBlock::Thinking(_))));
        let partial = self.partial.clone();
        let delta = Delta::from(delta);
        self.emit(if is_thinking {
            AssistantMessageEvent::ThinkingDelta {
                content_index: index,
                delta,
                partial,
            }
        } else {
            AssistantMessageEvent::TextDelta {
                content_index: index,
                delta,
                partial,
            }
        });
    }

    /// Emits a `toolcall_delta` after the caller updated the block's arguments.
    pub fn tool_delta(&mut self, index: usize, delta: &str) {
        let partial = self.partial.clone();
        self.emit(AssistantMessageEvent::ToolcallDelta {
            content_index: index,
            delta: delta.into(),
            partial,
        });
    }

    /// Sets a tool call's partial arguments.
    pub fn set_tool_arguments(&self, index: usize, args: Value) {
        self.update(|m| {
            if let Some(ContentBlock::ToolCall(c)) = m.content.get_mut(index) {
                Arc::make_mut(c).arguments = args;
            }
        });
    }

    /// Emits the `*_end` event of a block as it is now.
    pub fn end_block(&mut self, index: usize) {
        let block = self.with(|m| m.content.get(index).cloned());
        let partial = self.partial.clone();
        match block {
            Some(ContentBlock::Text(t)) => self.emit(AssistantMessageEvent::TextEnd {
                content_index: index,
                content: t.text,
                partial,
            }),
            Some(ContentBlock::Thinking(t)) => self.emit(AssistantMessageEvent::ThinkingEnd {
                content_index: index,
                content: t.thinking,
                partial,
            }),
            Some(ContentBlock::ToolCall(c)) => self.emit(AssistantMessageEvent::ToolcallEnd {
                content_index: index,
                tool_call: c,
                partial,
            }),
            _ => {}
        }
    }

    /// Finalizes a tool call's arguments from the full text and emits `toolcall_end`.
    pub fn finish_tool_call(
        &mut self,
        index: usize,
        args: &crate::json_parse::ToolCallArgumentsStream,
    ) {
        let (value, error) = args.finish();
        self.update(|m| {
            if let Some(ContentBlock::ToolCall(c)) = m.content.get_mut(index) {
                let c = Arc::make_mut(c);
                c.arguments = value;
                if error.is_some() || c.extra.is_some() {
                    c.extra_mut().arguments_error = error;
                }
            }
        });
        self.end_block(index);
    }

    pub fn set_usage(&self, usage: Usage) {
        self.update(|m| m.usage = usage);
    }

    /// Ends with `done`.
    pub fn done(&mut self) {
        let message = self.partial.snapshot();
        let reason = message.stop_reason;
        self.emit(AssistantMessageEvent::Done {
            reason,
            message: Arc::new(message),
        });
    }

    /// Ends with `error`: `stopReason` becomes `aborted` or `error` with `message`.
    pub fn fail(&mut self, message: String, aborted: bool) {
        let reason = if aborted {
            StopReason::Aborted
        } else {
            StopReason::Error
        };
        self.update(|m| {
            m.stop_reason = reason;
            m.error_message = Some(message);
        });
        let error = self.partial.snapshot();
        self.emit(AssistantMessageEvent::Error {
            reason,
            error: Arc::new(error),
        });
    }
}

/// Whether the content has a tool call.
pub(crate) fn has_tool_call(m: &AssistantMessage) -> bool {
    m.content
        .iter()
        .any(|b| matches!(b, ContentBlock::ToolCall(_)))
}

/// A field of `model.compat`, if set.
pub(crate) fn compat<'m>(model: &'m Model, key: &str) -> Option<&'m Value> {
    model
        .extra
        .get("compat")
        .and_then(|c| c.get(key))
        .filter(|v| !v.is_null())
}

/// `model.thinkingLevelMap[level]`: `None` when absent, `Some(Value::Null)` when explicitly
/// unsupported.
pub(crate) fn thinking_level_map<'m>(model: &'m Model, level: &str) -> Option<&'m Value> {
    model
        .extra
        .get("thinkingLevelMap")
        .and_then(|m| m.get(level))
}

const LEVELS: [ThinkingLevel; 7] = [
    ThinkingLevel::Off,
    ThinkingLevel::Minimal,
    ThinkingLevel::Low,
    ThinkingLevel::Medium,
    ThinkingLevel::High,
    ThinkingLevel::Xhigh,
    ThinkingLevel::Max,
];

/// The levels a model supports (the reference's `getSupportedThinkingLevels`).
pub fn supported_thinking_levels(model: &Model) -> Vec<ThinkingLevel> {
    if !model.reasoning {
        return vec![ThinkingLevel::Off];
    }
    LEVELS
        .iter()
        .copied()
        .filter(|l| {
            let mapped = thinking_level_map(model, l.as_str());
            if mapped.is_some_and(Value::is_null) {
                return false;
            }
            if matches!(l, ThinkingLevel::Xhigh | ThinkingLevel::Max) {
                return mapped.is_some();
            }
            true
        })
        .collect()
}

/// The nearest supported level, preferring higher ones (`clampThinkingLevel`).
pub fn clamp_thinking_level(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    let available = supported_thinking_levels(model);
    if available.contains(&level) {
        return level;
    }
    let idx = LEVELS.iter().position(|l| *l == level).unwrap_or(0);
    for l in &LEVELS[idx..] {
        if available.contains(l) {
            return *l;
        }
    }
    for l in LEVELS[..idx].iter().rev() {
        if available.contains(l) {
            return *l;
        }
    }
    available.first().copied().unwrap_or(ThinkingLevel::Off)
}

/// The requested reasoning level after clamping; `None` for off.
pub(crate) fn reasoning_effort(model: &Model, options: &StreamOptions) -> Option<ThinkingLevel> {
    let level = options.reasoning?;
    if level == ThinkingLevel::Off {
        return None;
    }
    let clamped = clamp_thinking_level(model, level);
    (clamped != ThinkingLevel::Off).then_some(clamped)
}

/// `options.maxTokens` or the model's, clamped to what fits the context window after a rough
/// estimate of the prompt (the reference's `clampMaxTokensToContext`).
pub(crate) fn resolve_max_tokens(model: &Model, context: &Context, options: &StreamOptions) -> u64 {
    let requested = options.max_tokens.unwrap_or(model.max_tokens);
    let window = model.context_window as i64;
    if window <= 0 {
        return requested.max(1);
    }
    let input = transform::estimate_tokens(&context.messages) as i64;
    let margin = 4096i64.max(((input as f64) * 0.15).ceil() as i64);
    let mut room = window - input - margin;
    if room < 32768 {
        room = 32768i64.min(window - input - 4096);
    }
    (requested as i64).min(room.max(1)).max(0) as u64
}

/// The API key: the option, else the environment (see [`catalog::env_api_key`]).
pub(crate) fn api_key(model: &Model, options: &StreamOptions) -> Option<String> {
    options
        .api_key
        .clone()
        .filter(|k| !k.is_empty())
        .or_else(|| catalog::env_api_key(&model.provider))
}

/// Model and option headers merged into `headers` (later wins; `null` removes).
pub(crate) fn merge_headers(
    headers: &mut Vec<(String, String)>,
    extra: Option<&serde_json::Map<String, Value>>,
) {
    let Some(extra) = extra else { return };
    for (k, v) in extra {
        headers.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
        match v {
            Value::String(s) => headers.push((k.clone(), s.clone())),
            Value::Null => {}
            other => headers.push((k.clone(), other.to_string())),
        }
    }
}

/// Compact JSON text of a value (`JSON.stringify`).
pub(crate) fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}
