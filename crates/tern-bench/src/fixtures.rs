//! The common fixtures of WORKLOADS.md §0: the model, the tools, the scripted stream function
//! (built like a provider: one shared [`PartialMessage`] updated in place, every event carrying
//! a clone of the handle) and the loop script `L(T)`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tern_agent::{Agent, AgentOptions, AgentTool, ToolResult};
use tern_ai::clock::now_ms;
use tern_ai::{
    assistant_stream, AssistantMessage, AssistantMessageEvent, AssistantMessageEventStream,
    ContentBlock, Context, Delta, Model, ModelCost, Name, PartialMessage, StopReason, StreamFn,
    StreamOptions, ToolCall, Usage,
};

/// The system prompt of every agent (26 bytes).
pub const SYSTEM_PROMPT: &str = "You are a benchmark agent.";

/// The model object of §0.2 with the given base URL.
pub fn bench_model_at(base_url: &str) -> Model {
    Model {
        id: "bench-model".into(),
        name: "bench-model".into(),
        api: "openai-completions".into(),
        provider: "bench".into(),
        base_url: base_url.into(),
        reasoning: false,
        input: vec!["text".into()],
        cost: ModelCost::default(),
        context_window: 128_000,
        max_tokens: 4096,
        ..Model::default()
    }
}

/// The model object of §0.2 (never contacted by W1–W5 and W7).
pub fn bench_model() -> Model {
    bench_model_at("http://127.0.0.1:9/v1")
}

/// [`bench_model`] as one object shared by every agent, like the reference scripts' `MODEL`.
pub fn shared_bench_model() -> Arc<Model> {
    static MODEL: std::sync::OnceLock<Arc<Model>> = std::sync::OnceLock::new();
    MODEL.get_or_init(|| Arc::new(bench_model())).clone()
}

/// The parameter schema of `noop` and `sleep`.
pub fn n_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": false
    })
}

/// The `noop` tool: returns `ok` at once (an already-resolved future), `details: {}`.
pub fn noop_tool() -> AgentTool {
    AgentTool::dynamic("noop", "Does nothing.", n_schema(), |_call| {
        std::future::ready(Ok(
            ToolResult::text("ok").with_details(Value::Object(Map::new()))
        ))
    })
}

/// The `sleep` tool (W3): waits `ms` on the tokio timer, then returns `slept`.
pub fn sleep_tool(ms: u64) -> AgentTool {
    AgentTool::dynamic("sleep", "Sleeps.", n_schema(), move |_call| async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(ToolResult::text("slept").with_details(Value::Object(Map::new())))
    })
}

/// One content block of a scripted response.
#[derive(Clone, Debug)]
pub enum Block {
    /// A text block: `delta` appended `repeat` times, one `text_delta` each.
    Text {
        /// The delta string.
        delta: String,
        /// How many deltas.
        repeat: usize,
    },
    /// A tool call with its arguments (one `toolcall_delta` with the arguments' JSON).
    ToolCall {
        /// Call id.
        id: Name,
        /// Tool name.
        name: Name,
        /// Arguments.
        args: Value,
    },
}

/// Builds one scripted response into a fresh assistant-message stream, synchronously, the
/// way a provider does (§0.4): one shared partial message, updated in place, every event
/// carrying a clone of its handle; `start`, per block `*_start`/`*_delta`…/`*_end`, `done`.
pub fn scripted_response(
    blocks: impl IntoIterator<Item = Block>,
    stop_reason: StopReason,
) -> AssistantMessageEventStream {
    use AssistantMessageEvent as E;
    let (tx, rx) = assistant_stream();
    let partial = PartialMessage::new(AssistantMessage {
        content: Vec::new(),
        api: "openai-completions".into(),
        provider: "bench".into(),
        model: "bench-model".into(),
        usage: Usage::default().into(),
        stop_reason,
        timestamp: now_ms(),
        ..AssistantMessage::default()
    });
    tx.push(E::Start {
        partial: partial.clone(),
    });
    for b in blocks {
        match b {
            Block::Text { delta, repeat } => {
                let idx = partial.update(|m| {
                    m.content.push(ContentBlock::text(""));
                    m.content.len() - 1
                });
                // The block at once, as a provider pushes the records of one network read:
                // the partial takes the whole text in one update and the queue takes the
                // events in one lock. The stream is pre-filled, so its consumer sees the
                // same partial either way.
                let content = partial.update(|m| match &mut m.content[idx] {
                    ContentBlock::Text(t) => {
                        // The text the deltas add up to (`str::repeat` copies in doubling
                        // steps, not once per delta).
                        t.text = delta.repeat(repeat);
                        Box::<str>::from(t.text.as_str())
                    }
                    _ => Box::default(),
                });
                let index = tern_ai::event::content_index(idx);
                tx.push(E::TextStart {
                    content_index: index,
                    partial: partial.clone(),
                });
                let d = Delta::from(delta.as_str());
                tx.push_all((0..repeat).map(|_| E::TextDelta {
                    content_index: index,
                    delta: d.clone(),
                    partial: partial.clone(),
                }));
                tx.push(E::TextEnd {
                    content_index: index,
                    content,
                    partial: partial.clone(),
                });
            }
            Block::ToolCall { id, name, args } => {
                // The script's values move into the message, as the reference assigns them.
                let delta = json_delta(&args);
                let idx = partial.update(|m| {
                    m.content.push(ContentBlock::tool_call(ToolCall {
                        id,
                        name,
                        arguments: Value::Object(Map::new()),
                        ..ToolCall::default()
                    }));
                    m.content.len() - 1
                });
                let call = partial.update(|m| match &mut m.content[idx] {
                    ContentBlock::ToolCall(c) => {
                        tern_ai::cow::make_mut(c).arguments = args;
                        c.clone()
                    }
                    _ => unreachable!("block {idx} is a tool call"),
                });
                // The block's events in one lock, as for a text block above.
                let index = tern_ai::event::content_index(idx);
                tx.push_all([
                    E::ToolcallStart {
                        content_index: index,
                        partial: partial.clone(),
                    },
                    E::ToolcallDelta {
                        content_index: index,
                        delta,
                        partial: partial.clone(),
                    },
                    E::ToolcallEnd {
                        content_index: index,
                        tool_call: call,
                        partial: partial.clone(),
                    },
                ]);
            }
        }
    }
    // Stamped first, so that the done shares the message the events built, as a provider's.
    partial.update(|m| tx.time_message(m));
    tx.push(E::Done {
        reason: stop_reason,
        message: partial.shared(),
    });
    rx
}

/// `JSON.stringify(args)` as a delta. A short text is written on the stack and copied once
/// into the delta (inline up to 15 bytes), as a provider's delta comes from its read buffer.
fn json_delta(args: &Value) -> Delta {
    let mut text = StackText {
        buf: [0; 24],
        len: 0,
    };
    if serde_json::to_writer(&mut text, args).is_ok() {
        if let Ok(text) = std::str::from_utf8(&text.buf[..text.len]) {
            return Delta::from(text);
        }
    }
    Delta::from(serde_json::to_string(args).unwrap_or_default())
}

/// A short text written on the stack: a write that does not fit fails (`json_delta` then
/// writes to the heap). Simpler than a `Cursor`, whose `write_all` loops over `write`.
struct StackText {
    buf: [u8; 24],
    len: usize,
}

impl std::io::Write for StackText {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.write_all(bytes).map(|()| bytes.len())
    }

    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let end = self.len + bytes.len();
        let room = self
            .buf
            .get_mut(self.len..end)
            .ok_or(std::io::ErrorKind::WriteZero)?;
        room.copy_from_slice(bytes);
        self.len = end;
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The tool-call block `(id: "call_<k>", name, args: {"n": k})` of the scripts.
pub fn call_block(name: &str, k: usize) -> Block {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(k).as_bytes();
    // Built on the stack and copied once into the id, as a provider copies it from the wire.
    let mut id = [0u8; 25];
    id[..5].copy_from_slice(b"call_");
    id[5..5 + digits.len()].copy_from_slice(digits);
    let id = Name::unique(std::str::from_utf8(&id[..5 + digits.len()]).unwrap_or("call_"));
    let mut args = Map::with_capacity(1);
    args.insert("n".to_string(), Value::from(k));
    Block::ToolCall {
        id,
        name: name.into(),
        args: Value::Object(args),
    }
}

/// A one-block text response (`delta` × `repeat`), stopReason `stop`.
pub fn text_response(delta: &str, repeat: usize) -> AssistantMessageEventStream {
    scripted_response(
        [Block::Text {
            delta: delta.to_string(),
            repeat,
        }],
        StopReason::Stop,
    )
}

/// The loop script `L(T)` (§0.4): call `k < T−1` is one `noop` call `call_<k>` with
/// `{"n":k}` (`toolUse`), call `T−1` is the text `done` (`stop`). [`reset`](Self::reset)
/// before each prompt.
#[derive(Debug)]
pub struct LoopScript {
    turns: usize,
    k: AtomicUsize,
}

impl LoopScript {
    /// A script of `turns` responses.
    pub fn new(turns: usize) -> Self {
        LoopScript {
            turns,
            k: AtomicUsize::new(0),
        }
    }

    /// Sets the call counter back to 0.
    pub fn reset(&self) {
        self.k.store(0, Ordering::Relaxed);
    }

    /// Calls made since the last reset.
    pub fn calls(&self) -> usize {
        self.k.load(Ordering::Relaxed)
    }
}

impl StreamFn for LoopScript {
    fn stream(
        &self,
        _model: &Model,
        _context: Context,
        _options: &StreamOptions,
    ) -> tern_ai::StreamStart {
        let k = self.k.fetch_add(1, Ordering::Relaxed);
        if k + 1 < self.turns {
            Ok(scripted_response(
                [call_block("noop", k)],
                StopReason::ToolUse,
            ))
        } else {
            Ok(text_response("done", 1))
        }
    }
}

/// The W2 script: one text block of `delta` × `repeat`, every call.
#[derive(Debug, Clone)]
pub struct TextScript {
    /// The delta string.
    pub delta: String,
    /// Deltas per response.
    pub repeat: usize,
}

impl StreamFn for TextScript {
    fn stream(
        &self,
        _model: &Model,
        _context: Context,
        _options: &StreamOptions,
    ) -> tern_ai::StreamStart {
        Ok(text_response(&self.delta, self.repeat))
    }
}

/// The W3 script: response 0 is `n` parallel `sleep` calls, response 1 the text `done`.
#[derive(Debug)]
pub struct ParallelScript {
    n: usize,
    k: AtomicUsize,
}

impl ParallelScript {
    /// A script whose first response calls `sleep` `n` times.
    pub fn new(n: usize) -> Self {
        ParallelScript {
            n,
            k: AtomicUsize::new(0),
        }
    }

    /// Sets the call counter back to 0.
    pub fn reset(&self) {
        self.k.store(0, Ordering::Relaxed);
    }
}

impl StreamFn for ParallelScript {
    fn stream(
        &self,
        _model: &Model,
        _context: Context,
        _options: &StreamOptions,
    ) -> tern_ai::StreamStart {
        if self.k.fetch_add(1, Ordering::Relaxed) == 0 {
            let blocks = (0..self.n).map(|i| call_block("sleep", i));
            Ok(scripted_response(blocks, StopReason::ToolUse))
        } else {
            Ok(text_response("done", 1))
        }
    }
}

/// An agent of §0.1: the benchmark system prompt and model, parallel tools, no hooks.
pub fn bench_agent(tools: Vec<AgentTool>, stream_fn: Arc<dyn StreamFn>) -> Agent {
    Agent::new(AgentOptions {
        system_prompt: Some(SYSTEM_PROMPT.into()),
        model: Some(shared_bench_model()),
        tools,
        stream_fn: Some(stream_fn),
        ..AgentOptions::default()
    })
}

/// The text of the last message of the agent's transcript (empty if not an assistant).
pub fn last_text(agent: &Agent) -> String {
    agent.with_messages(|m| {
        m.last()
            .and_then(|m| m.as_assistant())
            .map(|a| a.text())
            .unwrap_or_default()
    })
}

/// Agent events of one `L(T)` prompt: `4 + 11(T−1) + 7` (§0.5).
pub fn loop_events(turns: usize) -> usize {
    4 + 11 * (turns - 1) + 7
}
