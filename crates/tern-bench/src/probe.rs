//! Micro-measurements of the suspected hot spots, one operation at a time, with the public
//! APIs of tern-ai and tern-agent (`tern-bench probe`). Each figure is the median thread-CPU
//! ns per operation over several batches. They price what the profiles attribute to each function,
//! and what a proposed change would save.

use std::hint::black_box;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};
use tern_agent::default_convert_to_llm;
use tern_ai::schema::validate_tool_arguments;
use tern_ai::sse::SseDecoder;
use tern_ai::transcript::{create_initial_system_message, get_current_tools};
use tern_ai::{AssistantMessageEvent, Message, PartialMessage, ToolDeclaration};

use crate::fixtures::{n_schema, noop_tool, SYSTEM_PROMPT};
use crate::util::median;
use crate::workloads::w5_transcript;

/// CPU time of this thread, ns (so that preemption on a loaded machine does not count).
fn thread_cpu_ns() -> f64 {
    // SAFETY: clock_gettime fills the zeroed timespec it is given.
    unsafe {
        let mut t: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t);
        t.tv_sec as f64 * 1e9 + t.tv_nsec as f64
    }
}

/// Median thread-CPU ns per call of `f` (`n` calls per batch, 7 batches).
fn ns_per(n: usize, mut f: impl FnMut(usize)) -> f64 {
    let mut v = Vec::new();
    for _ in 0..7 {
        let t = thread_cpu_ns();
        for i in 0..n {
            f(i);
        }
        v.push((thread_cpu_ns() - t) / n as f64);
    }
    median(&v)
}

/// A W1 transcript of `len` messages after the system message (user, then assistant/toolResult
/// pairs), built from the W5 shapes.
fn transcript(len: usize) -> Vec<Message> {
    let decls = vec![noop_tool().declaration().clone()];
    let mut m = vec![Message::from(
        create_initial_system_message(Some(SYSTEM_PROMPT), &decls).expect("system"),
    )];
    let src = w5_transcript(0);
    m.extend(src.iter().cycle().take(len).cloned());
    m
}

/// Typed view of one OpenAI chat-completions chunk: what a typed parser would read.
#[derive(Deserialize)]
#[allow(dead_code)]
struct Chunk<'a> {
    #[serde(borrow)]
    id: Option<&'a str>,
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    usage: Option<Value>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Choice<'a> {
    index: u32,
    #[serde(borrow)]
    delta: Option<Delta<'a>>,
    finish_reason: Option<&'a str>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Delta<'a> {
    role: Option<&'a str>,
    #[serde(borrow)]
    content: Option<std::borrow::Cow<'a, str>>,
}

/// Runs every probe and returns one JSON object of ns-per-operation figures.
pub fn probe() -> Value {
    let schema = n_schema();
    let decl = noop_tool().declaration().clone();
    let args: Vec<Value> = (0..1000).map(|k| json!({ "n": k })).collect();

    // Argument validation: the schema is compiled on every call.
    let validate = ns_per(20_000, |i| {
        black_box(validate_tool_arguments("noop", &schema, &args[i % 1000], None).is_ok());
    });
    let json_args_clone = ns_per(100_000, |i| {
        black_box(args[i % 1000].clone());
    });

    // Tool declarations: a deep clone (schema is an IndexMap tree) and the transcript scan.
    let decl_clone = ns_per(100_000, |_| {
        black_box(decl.clone());
    });
    let t200 = transcript(200);
    let t2000 = transcript(2000);
    let tools_200 = ns_per(2000, |_| {
        black_box(get_current_tools(t200.iter()));
    });
    let tools_2000 = ns_per(500, |_| {
        black_box(get_current_tools(t2000.iter()));
    });
    let a200 = Arc::new(t200.clone());
    let a2000 = Arc::new(t2000.clone());
    let convert_200 = ns_per(5000, |_| {
        black_box(default_convert_to_llm(a200.clone()));
    });
    let convert_2000 = ns_per(1000, |_| {
        black_box(default_convert_to_llm(a2000.clone()));
    });

    // Per-event pieces: the listener-list snapshot the Agent sink takes on every event, an
    // `Arc<AgentEvent>` box per event for async listeners, a delta `String`, the partial
    // message lock, the event size.
    type L = Arc<dyn Fn(&Value) + Send + Sync>;
    let listeners: Vec<(u64, L)> = vec![(
        1,
        Arc::new(|v: &Value| {
            black_box(v);
        }),
    )];
    let lock = parking_lot::Mutex::new(listeners);
    let snapshot = ns_per(1_000_000, |_| {
        let ls: Vec<L> = lock.lock().iter().map(|(_, l)| l.clone()).collect();
        black_box(ls);
    });
    let delta_string = ns_per(1_000_000, |_| {
        black_box(String::from("abcdefg "));
    });
    let partial = PartialMessage::default();
    let partial_update = ns_per(1_000_000, |_| {
        partial.update(|m| black_box(m.content.len()));
    });
    let arc_box_event = ns_per(1_000_000, |i| {
        black_box(Arc::new((i, [0u64; 8])));
    });

    // W6 chunk parsing: `serde_json::Value` (IndexMap with SipHash, `preserve_order`) against
    // a typed, borrowing chunk struct, and the SSE decoder alone.
    let h = r#"{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","choices":"#;
    let lines: Vec<String> = (0..1000)
        .map(|i| {
            format!(
                r#"{h}[{{"index":0,"delta":{{"content":"t{:06} "}},"finish_reason":null}}]}}"#,
                i
            )
        })
        .collect();
    let parse_value = ns_per(50_000, |i| {
        let v: Value = serde_json::from_str(&lines[i % 1000]).expect("json");
        black_box(v);
    });
    let parse_typed = ns_per(50_000, |i| {
        let c: Chunk = serde_json::from_str(&lines[i % 1000]).expect("json");
        black_box(c);
    });
    let mut body = Vec::new();
    for l in &lines {
        body.extend_from_slice(b"data: ");
        body.extend_from_slice(l.as_bytes());
        body.extend_from_slice(b"\n\n");
    }
    let sse_per_chunk = {
        let mut v = Vec::new();
        for _ in 0..7 {
            let mut d = SseDecoder::new();
            let t = thread_cpu_ns();
            for _ in 0..20 {
                for piece in body.chunks(65_536) {
                    // The bench body has no over-long line; a failure would only end early.
                    let _ = d.feed(piece, &mut |e| {
                        black_box(e);
                    });
                }
            }
            v.push((thread_cpu_ns() - t) / (20 * lines.len()) as f64);
        }
        median(&v)
    };

    json!({
        "workload": "probe",
        "ns_validate_tool_arguments_noop": validate,
        "ns_json_args_clone": json_args_clone,
        "ns_tool_declaration_clone": decl_clone,
        "ns_get_current_tools_201_msgs": tools_200,
        "ns_get_current_tools_2001_msgs": tools_2000,
        "ns_get_current_tools_per_msg": (tools_2000 - tools_200) / 1800.0,
        "ns_default_convert_to_llm_201_msgs": convert_200,
        "ns_default_convert_to_llm_2001_msgs": convert_2000,
        "ns_listener_snapshot_vec_1_listener": snapshot,
        "ns_delta_string_alloc_free": delta_string,
        "ns_partial_message_lock_update": partial_update,
        "ns_arc_box_72_bytes": arc_box_event,
        "bytes_assistant_message_event": std::mem::size_of::<AssistantMessageEvent>(),
        "bytes_agent_event": std::mem::size_of::<tern_agent::AgentEvent>(),
        "bytes_tool_declaration": std::mem::size_of::<ToolDeclaration>(),
        "ns_w6_chunk_parse_value": parse_value,
        "ns_w6_chunk_parse_typed_borrowed": parse_typed,
        "ns_w6_sse_decode_per_chunk": sse_per_chunk,
        "impl": "tern",
    })
}
