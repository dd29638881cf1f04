//! Differential test of the openai-completions chunk mapper: the typed chunk read, the
//! `Value` read, and the `Value` handler from before the typed read (kept here as the oracle,
//! written over the mapper's steps) give the same events, outcomes and final message for
//! hand-picked and generated chunks.

use proptest::prelude::*;
use serde_json::Value;
use tern_ai::providers::js_json::{compact, json_truthy};
use tern_ai::providers::testing::CompletionsChunks;
use tern_ai::providers::ProviderSink;
use tern_ai::{AssistantMessageEvent, Model};

/// The model id of every run (a chunk naming another model sets `responseModel`).
const MODEL_ID: &str = "m";

/// Records each event as it reads at emission time.
struct Record(Vec<String>);

impl ProviderSink for Record {
    fn emit(&mut self, event: AssistantMessageEvent) {
        self.0.push(format!("{event:?}"));
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Path {
    /// The mapper as it is: the typed read when it accepts the chunk.
    Current,
    /// Every chunk through `Value`.
    Fallback,
    /// The handler from before the typed read.
    Legacy,
}

/// The events, per-chunk outcomes and final message of `chunks` taken down one path.
fn run(chunks: &[String], provider: &str, path: Path) -> Vec<String> {
    let model = Model {
        provider: provider.into(),
        id: MODEL_ID.into(),
        ..Model::default()
    };
    let mut sink = Record(Vec::new());
    let mut mapper = CompletionsChunks::new(&model, &mut sink);
    let mut outcomes = Vec::new();
    for c in chunks {
        let r = match path {
            Path::Current => mapper.process(c),
            Path::Fallback => mapper.process_as_value(c),
            Path::Legacy => legacy_process_event(c, &mut mapper),
        };
        outcomes.push(match r {
            Ok(true) => "continue".to_string(),
            Ok(false) => "stop".to_string(),
            Err(m) => format!("error {m}"),
        });
    }
    outcomes.push(format!("{:?}", mapper.message()));
    drop(mapper);
    sink.0.extend(outcomes);
    sink.0
}

/// The record handling from before the typed read.
fn legacy_process_event(data: &str, mapper: &mut CompletionsChunks<'_>) -> Result<bool, String> {
    if data.starts_with("[DONE]") {
        return Ok(false);
    }
    let value: Value = serde_json::from_str(data)
        .map_err(|_| "Error reading response: malformed server-sent event JSON.".to_string())?;
    if let Some(e) = value.get("error").filter(|e| json_truthy(e)) {
        let msg = match e.get("message") {
            Some(Value::String(m)) if !m.is_empty() => m.clone(),
            Some(m) if json_truthy(m) => compact(m),
            _ => compact(e),
        };
        return Err(msg);
    }
    legacy_handle_chunk(&value, mapper);
    Ok(true)
}

/// The `Value` handler from before the typed read: what it read from a chunk, in its order.
fn legacy_handle_chunk(chunk: &Value, mapper: &mut CompletionsChunks<'_>) {
    if !chunk.is_object() {
        return;
    }
    mapper.update(|m| {
        if m.response_id.as_deref().is_none_or(str::is_empty) {
            if let Some(id) = chunk.get("id").and_then(Value::as_str) {
                m.response_id = Some(id.to_string());
            }
        }
        if let Some(cm) = chunk.get("model").and_then(Value::as_str) {
            if !cm.is_empty()
                && cm != MODEL_ID
                && m.extra()
                    .response_model
                    .as_deref()
                    .is_none_or(str::is_empty)
            {
                m.extra_mut().response_model = Some(cm.to_string());
            }
        }
    });
    let usage = chunk.get("usage").filter(|u| u.is_object());
    if let Some(u) = usage {
        mapper.usage(u);
    }
    let Some(choice) = chunk
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    else {
        return;
    };
    if usage.is_none() {
        if let Some(u) = choice.get("usage").filter(|u| u.is_object()) {
            mapper.usage(u);
        }
    }
    if let Some(fr) = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        mapper.finish_reason(fr);
    }
    let Some(delta) = choice.get("delta").filter(|d| d.is_object()) else {
        return;
    };
    let found = ["reasoning_content", "reasoning", "reasoning_text"]
        .into_iter()
        .find(|f| {
            delta
                .get(*f)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
        });
    if let Some(field) = found {
        let text = delta.get(field).and_then(Value::as_str).unwrap_or("");
        mapper.reasoning_text(field, text);
    }
    if let Some(details) = delta.get("reasoning_details").and_then(Value::as_array) {
        for d in details {
            mapper.reasoning_detail(d);
        }
    }
    if let Some(text) = delta
        .get("content")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        mapper.content(text);
    }
    if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
        for call in calls {
            let function = call.get("function");
            mapper.tool_call(
                call.get("index").and_then(Value::as_i64),
                text_field(Some(call), "id"),
                text_field(function, "name"),
                text_field(function, "arguments"),
            );
        }
    }
}

/// `v[k]` when it is a string.
fn text_field<'v>(v: Option<&'v Value>, k: &str) -> Option<&'v str> {
    v.and_then(|v| v.get(k)).and_then(Value::as_str)
}

fn assert_same(chunks: &[String]) {
    // The one-pass scan, where it takes a chunk, reads what the serde typed read reads.
    for c in chunks {
        CompletionsChunks::scan_takes(c);
    }
    for provider in ["openai", "opencode-go", "openrouter"] {
        let legacy = run(chunks, provider, Path::Legacy);
        assert_eq!(run(chunks, provider, Path::Fallback), legacy, "{chunks:?}");
        assert_eq!(run(chunks, provider, Path::Current), legacy, "{chunks:?}");
    }
}

#[test]
fn tricky_chunks_give_the_same_events_on_every_path() {
    let deep = format!(
        r#"{{"choices":[{{"delta":{{"content":"x"}}}}],"deep":{}0{}}}"#,
        "[".repeat(130),
        "]".repeat(130)
    );
    let chunks: Vec<String> = [
        r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        r#"{"id":"","model":"","choices":[{"delta":{"content":"a \"quoted\" \u00e9\n\ud83d\ude00 line"}}]}"#,
        r#"{"id":"c2","model":"m","choices":[{"delta":{"con\u0074ent":"escaped key","content":null}}]}"#,
        r#"{"choices":[{"delta":{"content":"dup","content":"last wins"}}],"unknown":{"a":[1,2,{"b":null}]}}"#,
        r#"{"choices":[{"delta":{"reasoning_content":"","reasoning":"think","reasoning_text":"x"}}]}"#,
        r#"{"choices":[{"delta":{"reasoning_details":[{"type":"reasoning.text","text":"r","signature":null,"index":0},{"type":"reasoning.text","text":"s","id":"d1","format":"f"},{"type":"bogus"}]}}]}"#,
        r#"{"choices":[{"delta":{"reasoning_details":[{"type":"reasoning.encrypted","id":"e","data":"zz"}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read","arguments":""}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}},{"index":1,"id":"call_2","function":{"name":"ls"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.txt\"}"}},{"id":"call_2","function":{"arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":-3,"id":"","function":null},{"index":2,"function":{}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":1.0},{"index":18446744073709551615}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[7,"x",null,[1]]}}]}"#,
        r#"{"choices":[{"delta":{"content":5,"reasoning":["no"]},"finish_reason":7}]}"#,
        r#"{"choices":[{"delta":"text","usage":{"prompt_tokens":3}}]}"#,
        r#"{"choices":[[1,2]],"model":null,"id":5}"#,
        r#"{"choices":{"0":{}},"usage":"none"}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":20.7,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2},"cost":0.5}}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"tool_calls","usage":{"prompt_tokens":1e2}}],"usage":null}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"content_filter"}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":""}],"error":null}"#,
        r#"{"error":false,"choices":[{"delta":{"content":"not an error"}}]}"#,
        r#"{"error":{"message":"boom","code":1}}"#,
        r#"{"error":{"code":1}}"#,
        &deep,
        r#"{"choices":[{"delta":{"content":"x"}}],"n":1e400}"#,
        r#"{"choices":[{"delta":{"content":"x"}}],"s":"\ud800"}"#,
        r#"{"choices":[{"delta":{"content":"x"}}],}"#,
        r#"{"choices":[{"delta":{"content":"x"}}]} trailing"#,
        r#"[{"choices":[{"delta":{"content":"x"}}]}]"#,
        r#""just a string""#,
        "[DONE]",
        r#"{"choices":[{"delta":{"content":"after done"}}]}"#,
    ]
    .iter()
    .map(|c| c.to_string())
    .collect();
    // Each alone, and all in sequence (state carries over from chunk to chunk).
    for c in &chunks {
        assert_same(std::slice::from_ref(c));
    }
    assert_same(&chunks);
    // The usual chunks take the typed read; the odd ones are left to `Value`.
    for i in [0, 1, 2, 3, 4, 5, 7, 8, 10, 17, 18, 20] {
        assert!(
            CompletionsChunks::typed_read_accepts(&chunks[i]),
            "{}",
            chunks[i]
        );
    }
    // The one-pass scan takes the plainest of them.
    for i in [0, 3, 7, 8, 9, 10, 20] {
        assert!(CompletionsChunks::scan_takes(&chunks[i]), "{}", chunks[i]);
    }
    for i in [11, 12, 13, 14, 15, 16, 21, 22] {
        assert!(
            !CompletionsChunks::typed_read_accepts(&chunks[i]),
            "{}",
            chunks[i]
        );
    }
}

fn object(fields: &[(String, String)]) -> String {
    let body: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
    format!("{{{}}}", body.join(","))
}

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "id",
        "model",
        "usage",
        "choices",
        "error",
        "delta",
        "finish_reason",
        "content",
        "reasoning",
        "reasoning_details",
        "tool_calls",
        "index",
        "function",
        "name",
        "arguments",
        "type",
        "text",
        "message",
        "con\\u0074ent",
        "x",
    ])
    .prop_map(str::to_string)
}

/// Any JSON text, with some values `Value` rejects (out-of-range number, lone surrogate).
fn any_json() -> BoxedStrategy<String> {
    let good = pick(vec![
        "null",
        "true",
        "0",
        "-7",
        "2.5",
        r#""""#,
        r#""x""#,
        r#""a\"b\\c\u00e9\n""#,
        r#""\ud83d\ude00""#,
        r#""stop""#,
    ]);
    let bad = pick(vec!["1e400", "18446744073709551616", r#""\ud800""#]);
    let leaf = prop_oneof![12 => good, 1 => bad];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec((key(), inner), 0..3).prop_map(|kv| object(&kv)),
        ]
    })
    .boxed()
}

/// An object with some of `fields`, each usually of its expected shape and sometimes
/// any value, plus unknown fields, in a random order, sometimes with a key repeated.
fn shaped(fields: Vec<(&'static str, BoxedStrategy<String>)>) -> BoxedStrategy<String> {
    let known: Vec<_> = fields
        .into_iter()
        .map(|(k, s)| {
            let v = prop_oneof![15 => s, 1 => any_json()];
            prop::option::weighted(0.8, v).prop_map(move |v| v.map(|v| (k.to_string(), v)))
        })
        .collect();
    let noise = prop::collection::vec((key(), any_json()), 0..2);
    (known, noise, any::<u64>())
        .prop_map(|(known, noise, seed)| {
            let mut all: Vec<(String, String)> = known.into_iter().flatten().collect();
            all.extend(noise);
            let n = all.len().max(1) as u64;
            all.rotate_left((seed % n) as usize);
            if seed % 5 == 0 && !all.is_empty() {
                all.push(all[0].clone());
            }
            object(&all)
        })
        .boxed()
}

fn pick(options: Vec<&'static str>) -> BoxedStrategy<String> {
    prop::sample::select(options)
        .prop_map(str::to_string)
        .boxed()
}

fn string() -> BoxedStrategy<String> {
    prop_oneof![
        Just(r#""""#.to_string()),
        "[a-z \\\\\"é{}]{0,5}".prop_map(|s| serde_json::to_string(&s).unwrap_or_default()),
        Just(r#""\u0041\n""#.to_string()),
    ]
    .boxed()
}

fn list(item: BoxedStrategy<String>) -> BoxedStrategy<String> {
    prop::collection::vec(item, 0..3)
        .prop_map(|v| format!("[{}]", v.join(",")))
        .boxed()
}

/// Chunk-shaped JSON texts.
fn chunk() -> BoxedStrategy<String> {
    let int = || pick(vec!["0", "1", "-1", "1.0", "3"]);
    let function = shaped(vec![("name", string()), ("arguments", string())]);
    let call = shaped(vec![
        ("index", int()),
        ("id", string()),
        ("function", function),
    ]);
    let detail = shaped(vec![
        (
            "type",
            pick(vec![
                r#""reasoning.text""#,
                r#""reasoning.summary""#,
                r#""reasoning.encrypted""#,
                r#""other""#,
            ]),
        ),
        ("text", string()),
        ("summary", string()),
        ("data", string()),
        ("signature", string()),
        ("id", string()),
        ("index", int()),
    ]);
    let delta = shaped(vec![
        ("content", string()),
        ("reasoning_content", string()),
        ("reasoning", string()),
        ("reasoning_text", string()),
        ("reasoning_details", list(detail)),
        ("tool_calls", list(call)),
    ]);
    let usage = || shaped(vec![("prompt_tokens", int()), ("completion_tokens", int())]);
    let finish = pick(vec![
        r#""stop""#,
        r#""length""#,
        r#""tool_calls""#,
        r#""weird""#,
        "null",
    ]);
    let choice = shaped(vec![
        ("delta", delta),
        ("finish_reason", finish),
        ("usage", usage()),
    ]);
    shaped(vec![
        ("id", string()),
        ("model", string()),
        ("choices", list(choice)),
        ("usage", usage()),
        (
            "error",
            prop_oneof![8 => pick(vec!["null"]), 1 => pick(vec!["false", r#"{"message":"e"}"#])]
                .boxed(),
        ),
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]
    #[test]
    fn generated_chunks_give_the_same_events_on_every_path(
        chunks in prop::collection::vec(chunk(), 1..5)
    ) {
        assert_same(&chunks);
    }

    #[test]
    fn chunks_that_differ_only_in_their_text_give_the_same_events(
        shape in 0usize..3,
        texts in prop::collection::vec("[a-z\"\\\\\t é]{0,4}", 1..6),
    ) {
        // The bytes around one text field repeat, as in a real stream (the mapper then
        // reads them from its template of the previous chunk).
        let shapes = [
            r#"{"id":"c","object":"o","created":1,"model":"m2","choices":[{"index":0,"delta":{"content":"@@"},"finish_reason":null}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"@@"},"finish_reason":"stop"}],"id":"x\"y"}"#,
            r#"{"choices":[{"delta":{"role":"assistant","reasoning":"@@","content":null}}],"model":"m"}"#,
        ];
        let chunks: Vec<String> = texts.iter().map(|t| shapes[shape].replace("@@", t)).collect();
        assert_same(&chunks);
    }

    #[test]
    fn generated_chunks_with_whitespace_read_the_same(
        chunks in prop::collection::vec(chunk(), 1..3),
        seed in any::<u64>(),
    ) {
        // Whitespace where JSON allows it (and, harmlessly, inside some strings), and
        // sometimes a control character where it does not.
        let spaced: Vec<String> = chunks
            .iter()
            .map(|c| {
                let mut out = String::new();
                for (i, ch) in c.chars().enumerate() {
                    out.push(ch);
                    if matches!(ch, ',' | ':' | '{' | '[') {
                        out.push_str([" ", "\n", "\t\r", ""][(seed as usize + i) % 4]);
                    }
                }
                if seed % 7 == 0 {
                    out = out.replacen('a', "\u{1}", 1);
                }
                out
            })
            .collect();
        assert_same(&spaced);
    }
}
