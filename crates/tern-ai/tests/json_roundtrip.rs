//! Every message of the reference's conformance traces, read into tern's types and written
//! again, is the same JSON text: same keys, same key order, same number forms (`0`, not
//! `0.0`), no key added (an absent `timestamp`, `usage` or `stopReason` stays absent).
//!
//! The key order compared is the reference's: every message in the traces was built by the
//! reference (its loop, its stream, or the scenario runner) and the traces keep insertion
//! order. What the traces normalized away is explained in `support/traces.rs`.

#[path = "support/traces.rs"]
mod traces;

use serde_json::Value;
use tern_ai::{Message, ToolCall};

fn round_trip(reference: &Value) -> Result<String, String> {
    let message: Message =
        serde_json::from_value(traces::with_durations(reference)).map_err(|e| e.to_string())?;
    let written = serde_json::to_string(&message).map_err(|e| e.to_string())?;
    let parsed: Value = serde_json::from_str(&written).map_err(|e| e.to_string())?;
    Ok(traces::durations_as_markers(&parsed).to_string())
}

#[test]
fn every_trace_message_round_trips_to_the_reference_json_text() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for path in traces::trace_files() {
        let trace = traces::read_trace(&path);
        let mut messages = Vec::new();
        traces::messages_in(&trace, &mut messages);
        for m in messages {
            let expected = m.to_string();
            checked += 1;
            match round_trip(&m) {
                Ok(got) if got == expected => {}
                Ok(got) => failures.push(format!(
                    "{}:\n  reference {expected}\n  tern      {got}",
                    path.display()
                )),
                Err(e) => failures.push(format!("{}: {e}\n  reference {expected}", path.display())),
            }
        }
    }
    traces::assert_all_match(checked, 2000, "messages", &failures);
}

#[test]
fn unknown_fields_survive_on_messages_blocks_and_tool_calls() {
    // Shapes the reference passes through untouched: fields of an extension or a newer
    // provider on the message, on a text block, on an image block and on a tool call.
    let cases = [
        r#"{"role":"user","content":[{"type":"text","text":"a","cacheHint":"long"},{"type":"thinking","thinking":"t","thinkingSignature":"s","step":2},{"type":"image","data":"AA==","mimeType":"image/png","alt":"x"}],"timestamp":3,"source":{"app":"ide"}}"#,
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n","arguments":{},"partialJson":"{}"}],"api":"a","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0.5,"output":1,"cacheRead":0,"cacheWrite":0,"total":1.5}},"stopReason":"toolUse","timestamp":9,"durationMs":4,"thinkingLevel":"off","branch":"fork-1"}"#,
        r#"{"role":"toolResult","toolCallId":"c","toolName":"n","content":[],"isError":false,"timestamp":1,"exitCode":0}"#,
        r#"{"role":"system","content":"p","timestamp":2,"origin":"agents.md"}"#,
    ];
    for text in cases {
        let m: Message = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&m).unwrap(), text);
    }
}

#[test]
fn absent_fields_stay_absent_until_they_are_set() {
    let m: Message = serde_json::from_str(
        r#"{"role":"toolResult","toolCallId":"c","toolName":"n","content":[]}"#,
    )
    .unwrap();
    assert_eq!(
        serde_json::to_string(&m).unwrap(),
        r#"{"role":"toolResult","toolCallId":"c","toolName":"n","content":[]}"#
    );
    let Message::ToolResult(mut r) = m else {
        panic!("not a tool result")
    };
    std::sync::Arc::make_mut(&mut r).is_error = true;
    assert_eq!(
        serde_json::to_string(&Message::ToolResult(r)).unwrap(),
        r#"{"role":"toolResult","toolCallId":"c","toolName":"n","content":[],"isError":true}"#
    );

    let m: Message = serde_json::from_str(r#"{"role":"assistant","content":[]}"#).unwrap();
    let Message::Assistant(mut a) = m else {
        panic!("not an assistant message")
    };
    assert_eq!(a.stop_reason, tern_ai::StopReason::Stop);
    std::sync::Arc::make_mut(&mut a).stop_reason = tern_ai::StopReason::Error;
    assert_eq!(
        serde_json::to_string(&Message::Assistant(a)).unwrap(),
        r#"{"role":"assistant","content":[],"stopReason":"error"}"#
    );
}

#[test]
fn a_tool_call_alone_carries_its_type_tag() {
    // As in the reference's `toolcall_end.toolCall`, which is the content block itself.
    let call = ToolCall {
        id: "c1".into(),
        name: "read".into(),
        arguments: serde_json::json!({"path": "a"}),
        extra: None,
    };
    assert_eq!(
        serde_json::to_string(&call).unwrap(),
        r#"{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a"}}"#
    );
    let back: ToolCall = serde_json::from_str(&serde_json::to_string(&call).unwrap()).unwrap();
    assert_eq!(back, call);
    assert!(back.extra.is_none());
}

#[test]
fn messages_stay_as_small_as_before() {
    // The extra fields live in boxes allocated only when needed: a message or a block gains
    // at most one pointer (none where an `extra` box already existed).
    use std::mem::size_of;
    assert_eq!(size_of::<Message>(), 16);
    assert!(size_of::<tern_ai::ContentBlock>() <= 64);
    assert!(size_of::<tern_ai::AssistantMessage>() <= 328);
    assert!(size_of::<ToolCall>() <= 128);
    assert!(size_of::<tern_ai::ToolResultMessage>() <= 200);
    assert!(size_of::<tern_ai::SystemMessage>() <= 104);
    assert!(size_of::<tern_ai::UserMessage>() <= 48);
}
