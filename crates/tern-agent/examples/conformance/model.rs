//! The scripted model (FORMAT.md 1.4): one scripted response per provider request.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context as TaskContext, Waker};

use serde_json::{json, Map, Value};
use tern_ai::{
    assistant_stream, AssistantMessage, AssistantMessageEvent, AssistantMessageEventSender,
    ContentBlock, Context, Model, PartialMessage, StopReason, StreamFn, StreamOptions, TextContent,
    ThinkingContent, ToolCall,
};
use tokio_util::sync::CancellationToken;

use super::norm::{js_stringify, norm_of};
use super::spec::ResponseSpec;

/// The model object the reference runner builds for an id.
pub fn make_model(id: &str) -> Model {
    let mut m = Model::new(id, "scripted", "scripted", "");
    m.reasoning = true;
    m.input = vec!["text".into()];
    m.context_window = 100_000;
    m.max_tokens = 8192;
    m
}

/// What the scripted model needs from the runner driving it: the scenario's responses and
/// the trace. The in-process harness is one; a runner whose model runs elsewhere (a worker)
/// is another.
pub trait Script: Send + Sync {
    /// Counts a provider request and takes the next scripted response.
    fn next_request(&self) -> (u64, Option<Arc<ResponseSpec>>);
    /// Appends an entry to the trace.
    fn push(&self, entry: Value);
}

pub struct ScriptedModel {
    pub script: Weak<dyn Script>,
}

impl StreamFn for ScriptedModel {
    fn stream(
        &self,
        model: &Model,
        context: Context,
        options: &StreamOptions,
    ) -> tern_ai::StreamStart {
        let Some(h) = self.script.upgrade() else {
            return Err("scripted model used after the scenario ended".into());
        };
        let (n, spec) = h.next_request();
        let mut entry = Map::new();
        entry.insert("kind".into(), json!("request"));
        entry.insert("n".into(), json!(n));
        entry.insert("model".into(), json!(model.id));
        entry.insert(
            "thinkingLevel".into(),
            json!(options.reasoning.map(|l| l.as_str()).unwrap_or("off")),
        );
        entry.insert("messages".into(), norm_of(context.messages.as_slice()));
        if let Some(recorded) = recorded_options(options) {
            entry.insert("options".into(), recorded);
        }
        h.push(Value::Object(entry));
        if let Some(message) = spec.as_ref().and_then(|s| s.throw.clone()) {
            return Err(message.into());
        }
        let (tx, rx) = assistant_stream();
        start_now(produce(tx, spec, model.clone(), options.signal.clone(), n));
        Ok(rx)
    }
}

/// The request options the trace records (FORMAT.md 2.3), `None` when none is set.
fn recorded_options(o: &StreamOptions) -> Option<Value> {
    let mut m = Map::new();
    if let Some(id) = &o.session_id {
        m.insert("sessionId".into(), json!(id));
    }
    if let Some(n) = o.max_tokens {
        m.insert("maxTokens".into(), json!(n));
    }
    if let Some(t) = o.temperature {
        m.insert("temperature".into(), json!(t));
    }
    if let Some(ms) = o.max_retry_delay_ms {
        m.insert("maxRetryDelayMs".into(), json!(ms));
    }
    if let Some(b) = &o.thinking_budgets {
        let mut bm = Map::new();
        for (k, v) in [
            ("minimal", b.minimal),
            ("low", b.low),
            ("medium", b.medium),
            ("high", b.high),
        ] {
            if let Some(v) = v {
                bm.insert(k.into(), json!(v));
            }
        }
        m.insert("thinkingBudgets".into(), Value::Object(bm));
    }
    (!m.is_empty()).then_some(Value::Object(m))
}

/// Runs a producer synchronously up to its first wait (like an un-awaited async JS
/// function), then lets the runtime drive the rest.
fn start_now(fut: impl Future<Output = ()> + Send + 'static) {
    let mut fut: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(fut);
    let mut cx = TaskContext::from_waker(Waker::noop());
    if fut.as_mut().poll(&mut cx).is_pending() {
        tokio::spawn(fut);
    }
}

async fn sleep_ms(ms: f64) {
    if ms > 0.0 {
        tokio::time::sleep(std::time::Duration::from_secs_f64(ms / 1000.0)).await;
    }
}

/// The producing end as the scenario shapes it: with `streamThrow`, iterating the stream
/// fails in place of event `throwAfterEvents + 1` (or of its end).
struct Out {
    tx: AssistantMessageEventSender,
    throw: Option<(String, usize)>,
    pushed: AtomicUsize,
}

impl Out {
    fn push(&self, event: AssistantMessageEvent) {
        if let Some((message, limit)) = &self.throw {
            if self.pushed.fetch_add(1, Ordering::SeqCst) >= *limit {
                self.tx.fail(message.clone());
                return;
            }
        }
        self.tx.push(event);
    }

    fn end(&self, result: AssistantMessage) {
        match &self.throw {
            Some((message, _)) => self.tx.fail(message.clone()),
            None => self.tx.end(Some(result)),
        }
    }
}

fn finish(out: &Out, message: AssistantMessage) {
    let reason = message.stop_reason;
    if matches!(reason, StopReason::Error | StopReason::Aborted) {
        out.push(AssistantMessageEvent::Error {
            reason,
            error: Arc::new(message),
        });
    } else {
        out.push(AssistantMessageEvent::Done {
            reason,
            message: Arc::new(message),
        });
    }
}

/// Splits text into chunks of `size` code points; one chunk when `size` is 0; none for "".
fn chunks(text: &str, size: usize) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    if size == 0 {
        return vec![text.to_string()];
    }
    let cps: Vec<char> = text.chars().collect();
    cps.chunks(size).map(|c| c.iter().collect()).collect()
}

enum Kind {
    Text,
    Thinking,
    ToolCall,
}

async fn produce(
    tx: AssistantMessageEventSender,
    spec: Option<Arc<ResponseSpec>>,
    model: Model,
    signal: CancellationToken,
    n: u64,
) {
    let out = Out {
        tx,
        throw: spec
            .as_ref()
            .and_then(|s| s.stream_throw.clone().map(|m| (m, s.throw_after_events))),
        pushed: AtomicUsize::new(0),
    };
    let base = AssistantMessage {
        content: Vec::new(),
        api: model.api.as_str().into(),
        provider: model.provider.as_str().into(),
        model: model.id.as_str().into(),
        usage: spec
            .as_ref()
            .map(|s| s.usage.clone())
            .unwrap_or_default()
            .into(),
        stop_reason: StopReason::Pending,
        timestamp: tern_ai::clock::now_ms(),
        ..AssistantMessage::default()
    };
    let Some(spec) = spec else {
        finish(
            &out,
            AssistantMessage {
                stop_reason: StopReason::Error,
                error_message: Some(format!("No scripted response for request {n}")),
                ..base
            },
        );
        return;
    };
    let final_message = AssistantMessage {
        content: spec.content.clone(),
        stop_reason: spec.stop_reason,
        error_message: spec.error_message.clone(),
        ..base.clone()
    };
    let mut partial = base;
    let snapshot = |p: &AssistantMessage| PartialMessage::new(p.clone());
    let aborted = |p: &AssistantMessage| AssistantMessage {
        stop_reason: StopReason::Aborted,
        error_message: Some("Request was aborted".into()),
        ..p.clone()
    };

    sleep_ms(spec.start_delay_ms).await;
    if signal.is_cancelled() {
        return finish(&out, aborted(&partial));
    }
    if spec.final_only {
        return finish_final(&out, &spec, final_message);
    }
    out.push(AssistantMessageEvent::Start {
        partial: snapshot(&partial),
    });
    // Another `start` before the blocks `restartBefore` lists.
    let restart = |index: usize, partial: &AssistantMessage| {
        for _ in spec.restart_before.iter().filter(|&&i| i == index) {
            out.push(AssistantMessageEvent::Start {
                partial: snapshot(partial),
            });
        }
    };
    for (index, block) in spec.content.iter().enumerate() {
        restart(index, &partial);
        let content_index = tern_ai::event::content_index(index);
        let (kind, text) = match block {
            ContentBlock::Text(t) => {
                partial
                    .content
                    .push(ContentBlock::Text(TextContent::default()));
                (Kind::Text, t.text.clone())
            }
            ContentBlock::Thinking(t) => {
                partial
                    .content
                    .push(ContentBlock::Thinking(ThinkingContent::default()));
                (Kind::Thinking, t.thinking.clone())
            }
            ContentBlock::ToolCall(c) => {
                partial.content.push(ContentBlock::tool_call(ToolCall {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: Value::Object(Map::new()),
                    ..ToolCall::default()
                }));
                (Kind::ToolCall, js_stringify(&c.arguments))
            }
            // Rejected when the scenario is parsed.
            ContentBlock::Image(_) => continue,
        };
        let start = match kind {
            Kind::Text => AssistantMessageEvent::TextStart {
                content_index,
                partial: snapshot(&partial),
            },
            Kind::Thinking => AssistantMessageEvent::ThinkingStart {
                content_index,
                partial: snapshot(&partial),
            },
            Kind::ToolCall => AssistantMessageEvent::ToolcallStart {
                content_index,
                partial: snapshot(&partial),
            },
        };
        out.push(start);
        for chunk in chunks(&text, spec.chunk_size) {
            sleep_ms(spec.delay_ms).await;
            if signal.is_cancelled() {
                return finish(&out, aborted(&partial));
            }
            let event = match kind {
                Kind::Text => {
                    if let Some(ContentBlock::Text(t)) = partial.content.get_mut(index) {
                        t.text.push_str(&chunk);
                    }
                    AssistantMessageEvent::TextDelta {
                        content_index,
                        delta: chunk.into(),
                        partial: snapshot(&partial),
                    }
                }
                Kind::Thinking => {
                    if let Some(ContentBlock::Thinking(t)) = partial.content.get_mut(index) {
                        t.thinking.push_str(&chunk);
                    }
                    AssistantMessageEvent::ThinkingDelta {
                        content_index,
                        delta: chunk.into(),
                        partial: snapshot(&partial),
                    }
                }
                Kind::ToolCall => AssistantMessageEvent::ToolcallDelta {
                    content_index,
                    delta: chunk.into(),
                    partial: snapshot(&partial),
                },
            };
            out.push(event);
        }
        let end = match (kind, block) {
            (Kind::ToolCall, ContentBlock::ToolCall(c)) => {
                partial.content[index] = block.clone();
                AssistantMessageEvent::ToolcallEnd {
                    content_index,
                    tool_call: c.clone(),
                    partial: snapshot(&partial),
                }
            }
            (Kind::Thinking, _) => AssistantMessageEvent::ThinkingEnd {
                content_index,
                content: text.into(),
                partial: snapshot(&partial),
            },
            _ => AssistantMessageEvent::TextEnd {
                content_index,
                content: text.into(),
                partial: snapshot(&partial),
            },
        };
        out.push(end);
    }
    restart(spec.content.len(), &partial);
    sleep_ms(spec.end_delay_ms).await;
    if signal.is_cancelled() {
        return finish(&out, aborted(&partial));
    }
    finish_final(&out, &spec, final_message);
}

/// Ends with the scripted final message: a `done`/`error` event, or with `noTerminal` the
/// stream's end carrying the result.
fn finish_final(out: &Out, spec: &ResponseSpec, message: AssistantMessage) {
    if spec.no_terminal {
        out.end(message);
    } else {
        finish(out, message);
    }
}
