//! `PackedTranscript` gives back exactly the messages it was given: every message shape
//! (all block kinds, every optional field, unknown fields, absent fields, custom roles,
//! unicode, extreme numbers), generated at random, decodes equal (`==`) and to the same JSON
//! text; so do all messages of the reference's conformance traces, packed as one transcript.

#[path = "support/traces.rs"]
mod traces;

use std::sync::Arc;

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use serde_json::{Map, Number, Value};
use tern_ai::message::{
    Absent, AssistantExtra, MessageExtra, PackError, PackedTranscript, ToolReference,
};
use tern_ai::{
    AssistantMessage, Content, ContentBlock, Cost, CustomMessage, ImageContent, Message, Name,
    StopReason, SystemMessage, TextContent, ThinkingContent, ThinkingLevel, ToolCall,
    ToolCallExtra, ToolDeclaration, ToolResultMessage, Usage, UserMessage,
};

/// Texts: empty, ASCII, and any Unicode scalar (multi-byte, control characters, emoji).
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-z_.:-]{1,12}",
        "\\PC{0,40}",
        any::<String>(),
    ]
}

/// Short names that repeat across messages (so the name table is exercised), or any text
/// (long ones are stored inline).
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "openai-completions",
            "anthropic",
            "noop",
            "",
            "模型-ü"
        ])
        .prop_map(str::to_string),
        text(),
        "[a-z]{60,80}",
    ]
}

/// A finite float (NaN is not a JSON number), negative zero and subnormals included.
fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(-0.0),
        Just(f64::MAX),
        Just(f64::MIN_POSITIVE),
        Just(5e-324),
        any::<f64>().prop_filter("finite", |f| f.is_finite()),
    ]
}

fn json() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(|n| Value::Number(n.into())),
        any::<i64>().prop_map(|n| Value::Number(n.into())),
        float().prop_map(|f| Value::Number(Number::from_f64(f).unwrap())),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..5).prop_map(Value::Array),
            vec((text(), inner), 0..5).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
    .boxed()
}

fn object() -> impl Strategy<Value = Map<String, Value>> {
    vec((text(), json()), 0..4).prop_map(|kv| kv.into_iter().collect())
}

fn fields() -> impl Strategy<Value = Option<Box<Map<String, Value>>>> {
    option::of(object().prop_map(Box::new))
}

fn absent() -> impl Strategy<Value = Absent> {
    vec(
        prop::sample::select(vec![
            Absent::TIMESTAMP,
            Absent::STOP_REASON,
            Absent::USAGE,
            Absent::IS_ERROR,
        ]),
        0..4,
    )
    .prop_map(|fs| {
        let mut a = Absent::default();
        fs.into_iter().for_each(|f| a.insert(f));
        a
    })
}

fn message_extra() -> BoxedStrategy<Option<Box<MessageExtra>>> {
    option::of(
        (object(), absent()).prop_map(|(fields, absent)| Box::new(MessageExtra { fields, absent })),
    )
    .boxed()
}

fn tool_call() -> BoxedStrategy<ToolCall> {
    let extra = (
        option::of(text()),
        option::of(name()),
        option::of(text()),
        object(),
    )
        .prop_map(
            |(thought_signature, namespace, arguments_error, fields)| ToolCallExtra {
                thought_signature,
                namespace,
                arguments_error,
                fields,
            },
        );
    (text(), name(), json(), option::of(extra))
        .prop_map(|(id, name, arguments, extra)| ToolCall {
            id: Name::unique(&id),
            name: name.into(),
            arguments,
            extra: extra.map(Box::new),
        })
        .boxed()
}

fn block() -> BoxedStrategy<ContentBlock> {
    prop_oneof![
        (text(), option::of(text()), fields()).prop_map(|(text, text_signature, extra)| {
            ContentBlock::Text(TextContent {
                text,
                text_signature,
                extra,
            })
        }),
        (
            text(),
            option::of(text()),
            option::of(any::<bool>()),
            fields()
        )
            .prop_map(|(thinking, thinking_signature, redacted, extra)| {
                ContentBlock::Thinking(ThinkingContent {
                    thinking,
                    thinking_signature,
                    redacted,
                    extra,
                })
            }),
        (text(), name(), fields()).prop_map(|(data, mime_type, extra)| {
            ContentBlock::Image(ImageContent {
                data,
                mime_type,
                extra,
            })
        }),
        tool_call().prop_map(ContentBlock::tool_call),
    ]
    .boxed()
}

fn content() -> BoxedStrategy<Content> {
    prop_oneof![
        text().prop_map(Content::Text),
        vec(block(), 0..4).prop_map(Content::Blocks),
    ]
    .boxed()
}

fn usage() -> BoxedStrategy<Usage> {
    let counts = (
        any::<u64>(),
        any::<u64>(),
        prop_oneof![Just(0u64), any::<u64>()],
        prop_oneof![Just(0u64), any::<u64>()],
        option::of(any::<u64>()),
        option::of(any::<u64>()),
        any::<u64>(),
    );
    let cost = (
        float(),
        float(),
        float(),
        float(),
        float(),
        option::of(any::<bool>()),
    )
        .prop_map(
            |(input, output, cache_read, cache_write, total, total_from_provider)| Cost {
                input,
                output,
                cache_read,
                cache_write,
                total,
                total_from_provider,
            },
        );
    prop_oneof![
        Just(Usage::default()),
        (counts, cost).prop_map(|((i, o, cr, cw, cw1h, r, t), cost)| Usage {
            input: i,
            output: o,
            cache_read: cr,
            cache_write: cw,
            cache_write_1h: cw1h,
            reasoning: r,
            total_tokens: t,
            cost,
        }),
    ]
    .boxed()
}

fn stop_reason() -> impl Strategy<Value = StopReason> {
    prop::sample::select(vec![
        StopReason::Pending,
        StopReason::Stop,
        StopReason::Length,
        StopReason::ToolUse,
        StopReason::Error,
        StopReason::Aborted,
        StopReason::Deferred,
    ])
}

fn thinking_level() -> impl Strategy<Value = ThinkingLevel> {
    prop::sample::select(ThinkingLevel::ALL.to_vec())
}

/// Timestamps near one another (the usual case: small differences) or anywhere.
fn timestamp() -> impl Strategy<Value = u64> {
    prop_oneof![
        (0u64..10_000).prop_map(|d| 1_700_000_000_000 + d),
        any::<u64>(),
        Just(0),
        Just(u64::MAX),
    ]
}

fn assistant() -> BoxedStrategy<AssistantMessage> {
    let extra = (
        option::of(name()),
        option::of(name()),
        option::of(json()),
        option::of(json()),
        option::of(any::<bool>()),
        object(),
        absent(),
    )
        .prop_map(
            |(
                response_model,
                provider_thinking_level,
                diagnostics,
                deferred,
                end_turn,
                fields,
                absent,
            )| {
                AssistantExtra {
                    response_model,
                    provider_thinking_level,
                    diagnostics,
                    deferred,
                    end_turn,
                    fields,
                    absent,
                }
            },
        );
    (
        (
            vec(block(), 0..4),
            name(),
            name(),
            name(),
            option::of(text()),
        ),
        (option::of(thinking_level()), usage(), stop_reason()),
        (
            option::of(text()),
            option::of(text()),
            timestamp(),
            option::of(any::<u64>()),
        ),
        option::of(extra),
    )
        .prop_map(
            |(
                (content, api, provider, model, response_id),
                (thinking_level, usage, stop_reason),
                (error_message, raw_stop_reason, timestamp, duration_ms),
                extra,
            )| AssistantMessage {
                content,
                api: api.into(),
                provider: provider.into(),
                model: model.into(),
                response_id,
                thinking_level,
                usage: usage.into(),
                stop_reason,
                error_message,
                raw_stop_reason,
                timestamp,
                duration_ms,
                extra: extra.map(Box::new),
            },
        )
        .boxed()
}

fn tool_result() -> BoxedStrategy<ToolResultMessage> {
    (
        (text(), name(), vec(block(), 0..3), option::of(json())),
        (
            option::of(usage().prop_map(Box::new)),
            option::of(json().prop_map(Box::new)),
        ),
        (
            any::<bool>(),
            option::of(any::<u64>()),
            timestamp(),
            message_extra(),
        ),
    )
        .prop_map(
            |(
                (tool_call_id, tool_name, content, details),
                (usage, nested_calls),
                (is_error, duration_ms, timestamp, extra),
            )| ToolResultMessage {
                tool_call_id: Name::unique(&tool_call_id),
                tool_name: tool_name.into(),
                content,
                details,
                usage,
                nested_calls,
                is_error,
                duration_ms,
                timestamp,
                extra,
            },
        )
        .boxed()
}

fn system(decls: Vec<Arc<ToolDeclaration>>) -> BoxedStrategy<SystemMessage> {
    (
        content(),
        option::of(object().prop_map(Box::new)),
        option::of(prop::sample::subsequence(decls.clone(), 0..=decls.len())),
        option::of(vec(name().prop_map(|name| ToolReference { name }), 0..3)),
        timestamp(),
        message_extra(),
    )
        .prop_map(
            |(content, sections, tools_added, tools_removed, timestamp, extra)| SystemMessage {
                content,
                sections,
                tools_added,
                tools_removed,
                timestamp,
                extra,
            },
        )
        .boxed()
}

fn custom() -> BoxedStrategy<CustomMessage> {
    ("[a-z]{1,8}", object())
        .prop_map(|(role, mut fields)| {
            fields.shift_remove("role");
            let mut m = Map::new();
            m.insert("role".into(), Value::String(format!("x-{role}")));
            m.extend(fields);
            CustomMessage(m)
        })
        .boxed()
}

fn declarations() -> Vec<Arc<ToolDeclaration>> {
    ["read", "write", "noop"]
        .into_iter()
        .map(|n| {
            Arc::new(ToolDeclaration {
                name: n.into(),
                description: format!("The {n} tool."),
                parameters: serde_json::json!({"type": "object", "properties": {"p": {"type": "string"}}}),
                constrained_sampling: None,
            })
        })
        .collect()
}

fn message() -> BoxedStrategy<Message> {
    prop_oneof![
        system(declarations()).prop_map(Message::from),
        (content(), timestamp(), message_extra()).prop_map(|(content, timestamp, extra)| {
            Message::from(UserMessage {
                content,
                timestamp,
                extra,
            })
        }),
        assistant().prop_map(Message::from),
        tool_result().prop_map(Message::from),
        custom().prop_map(Message::from),
    ]
    .boxed()
}

fn json_text(m: &Message) -> String {
    serde_json::to_string(m).expect("a message serializes")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn every_message_decodes_to_itself(messages in vec(message(), 0..12)) {
        let packed = PackedTranscript::from(&messages[..]);
        prop_assert_eq!(packed.len(), messages.len());
        for (i, m) in messages.iter().enumerate() {
            let back = packed.get(i).expect("a message this transcript packed decodes");
            prop_assert_eq!(&back, m);
            prop_assert_eq!(json_text(&back), json_text(m));
        }
        prop_assert_eq!(
            packed.get(messages.len()),
            Err(PackError::OutOfRange { index: messages.len(), len: messages.len() })
        );
    }

    #[test]
    fn appending_after_a_decode_gives_the_same_transcript(
        first in vec(message(), 0..6),
        more in vec(message(), 0..6),
    ) {
        let mut packed = PackedTranscript::from(&first[..]);
        let decoded = packed.to_vec().expect("decodes");
        packed.extend(&more);
        let mut all = decoded;
        all.extend(more.iter().cloned());
        prop_assert_eq!(packed.to_vec().expect("decodes"), all.clone());
        let again: PackedTranscript = all.iter().cloned().collect();
        prop_assert_eq!(again.encoded_len(), packed.encoded_len());
    }
}

#[test]
fn exact_numbers_at_the_edges() {
    // Built by hand: the extremes every numeric field can hold.
    let call = ToolCall {
        id: "c".into(),
        name: "n".into(),
        arguments: serde_json::json!({
            "max": u64::MAX, "min": i64::MIN, "neg": -1, "zero": 0, "f": 0.1,
            "negzero": -0.0, "big": 1e308, "tiny": 5e-324, "int_float": 2.0
        }),
        extra: None,
    };
    let usage = Usage {
        input: u64::MAX,
        output: 1,
        cache_write_1h: Some(0),
        reasoning: Some(u64::MAX),
        total_tokens: u64::MAX,
        cost: Cost {
            input: -0.0,
            output: f64::MIN_POSITIVE,
            total: 1e-300,
            ..Cost::default()
        },
        ..Usage::default()
    };
    let m = Message::from(AssistantMessage {
        content: vec![ContentBlock::tool_call(call)],
        usage: usage.clone().into(),
        timestamp: u64::MAX,
        duration_ms: Some(u64::MAX),
        ..AssistantMessage::default()
    });
    let first = Message::from(UserMessage {
        content: "héllo 🌍 \u{0}".into(),
        timestamp: 0,
        extra: None,
    });
    let packed = PackedTranscript::from(vec![first.clone(), m.clone()]);
    assert_eq!(packed.get(0).unwrap(), first);
    let back = packed.get(1).unwrap();
    assert_eq!(back, m);
    let a = back.as_assistant().unwrap();
    assert_eq!(a.timestamp, u64::MAX);
    assert_eq!(a.usage.cost.input.to_bits(), (-0.0f64).to_bits());
    let args = &a.tool_calls().next().unwrap().arguments;
    assert!(args["int_float"].is_f64() && args["max"].is_u64() && args["min"].is_i64());
    assert_eq!(
        args["negzero"].as_f64().unwrap().to_bits(),
        (-0.0f64).to_bits()
    );
    assert_eq!(json_text(&back), json_text(&m));
}

#[test]
fn shared_tool_declarations_stay_shared() {
    let decls = declarations();
    let system = Message::from(SystemMessage {
        content: "p".into(),
        tools_added: Some(decls.clone()),
        ..SystemMessage::default()
    });
    let packed = PackedTranscript::from(vec![system.clone(), system]);
    for i in 0..2 {
        let back = packed.get(i).unwrap();
        let added = back.as_system().unwrap().tools_added.as_ref().unwrap();
        assert!(added.iter().zip(&decls).all(|(a, b)| Arc::ptr_eq(a, b)));
    }
}

#[test]
fn a_value_too_deep_for_the_buffer_is_kept_as_it_is() {
    let mut deep = Value::Null;
    for _ in 0..300 {
        deep = Value::Array(vec![deep]);
    }
    let m = Message::from(ToolResultMessage {
        tool_call_id: "c".into(),
        details: Some(deep),
        ..ToolResultMessage::default()
    });
    let after = Message::user_text("next");
    let packed = PackedTranscript::from(vec![m.clone(), after.clone()]);
    assert_eq!(packed.get(0).unwrap(), m);
    assert_eq!(packed.get(1).unwrap(), after);
}

#[test]
fn a_w5_message_costs_a_few_bytes_beyond_its_text() {
    // The shapes of WORKLOADS.md W5: texts of 256/128/1024/512 bytes, zero usage, one call.
    let assistant = |content, stop_reason| AssistantMessage {
        content,
        api: "openai-completions".into(),
        provider: "bench".into(),
        model: "bench-model".into(),
        stop_reason,
        timestamp: 1_700_000_000_000,
        ..AssistantMessage::default()
    };
    let mut messages = Vec::new();
    for c in 0..25 {
        messages.push(Message::from(UserMessage {
            content: Content::Blocks(vec![ContentBlock::text("u".repeat(256))]),
            timestamp: 1_700_000_000_000,
            extra: None,
        }));
        messages.push(Message::from(assistant(
            vec![
                ContentBlock::text("a".repeat(128)),
                ContentBlock::tool_call(ToolCall {
                    id: Name::unique(&format!("call_{c}")),
                    name: "noop".into(),
                    arguments: serde_json::json!({ "n": c }),
                    extra: None,
                }),
            ],
            StopReason::ToolUse,
        )));
        messages.push(Message::from(ToolResultMessage {
            tool_call_id: Name::unique(&format!("call_{c}")),
            tool_name: "noop".into(),
            content: vec![ContentBlock::text("r".repeat(1024))],
            details: Some(Value::Object(Map::new())),
            timestamp: 1_700_000_000_000,
            ..ToolResultMessage::default()
        }));
        messages.push(Message::from(assistant(
            vec![ContentBlock::text("s".repeat(512))],
            StopReason::Stop,
        )));
    }
    let packed = PackedTranscript::from(&messages[..]);
    let beyond_text = packed.encoded_len() - 25 * (256 + 128 + 1024 + 512);
    // 25 cycles of 4 messages: about 12 bytes per message, ids and JSON included.
    assert!(
        beyond_text <= 100 * 16,
        "{beyond_text} bytes beyond the text"
    );
    assert_eq!(packed.to_vec().unwrap(), messages);
}

#[test]
fn every_trace_message_packs_to_the_same_json_text() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for path in traces::trace_files() {
        let trace = traces::read_trace(&path);
        let mut values = Vec::new();
        traces::messages_in(&trace, &mut values);
        let messages: Vec<Message> = values
            .iter()
            .map(|v| serde_json::from_value(traces::with_durations(v)).expect("a trace message"))
            .collect();
        let packed = PackedTranscript::from(&messages[..]);
        for (i, m) in messages.iter().enumerate() {
            checked += 1;
            match packed.get(i) {
                Ok(back) if json_text(&back) == json_text(m) && back == *m => {}
                Ok(back) => failures.push(format!(
                    "{}: message {i}\n  before {}\n  after  {}",
                    path.display(),
                    json_text(m),
                    json_text(&back)
                )),
                Err(e) => failures.push(format!("{}: {e}", path.display())),
            }
        }
    }
    traces::assert_all_match(checked, 2000, "messages", &failures);
}
