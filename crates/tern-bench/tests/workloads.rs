//! Correctness of every workload at small sizes: event counts, transcript lengths and final
//! text lengths (each workload function checks its own arithmetic and returns `Err` on a
//! mismatch; these tests also assert the reported fields). No timing assertions.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tern_agent::AgentEvent;
use tern_ai::{AssistantMessageEvent, Context, Message, StreamFn, StreamOptions};
use tern_bench::fixtures::*;
use tern_bench::workloads::*;

#[test]
fn scripted_tool_call_response_has_five_events_and_one_shared_partial() {
    rt(0).block_on(async {
        let script = LoopScript::new(3);
        let mut s = script
            .stream(
                &bench_model(),
                Context::default(),
                &StreamOptions::default(),
            )
            .unwrap();
        let mut kinds = Vec::new();
        let mut partials = Vec::new();
        while let Some(e) = s.next().await {
            kinds.push(e.kind());
            if let Some(p) = e.partial() {
                partials.push(p.clone());
            }
            if let AssistantMessageEvent::ToolcallDelta { delta, .. } = &e {
                assert_eq!(delta, r#"{"n":0}"#);
            }
        }
        assert_eq!(
            kinds,
            [
                "start",
                "toolcall_start",
                "toolcall_delta",
                "toolcall_end",
                "done"
            ]
        );
        assert!(partials.windows(2).all(|w| w[0].ptr_eq(&w[1])));
        let m = s.result().await;
        let call = m.tool_calls().next().unwrap();
        assert_eq!((call.id.as_str(), call.name.as_str()), ("call_0", "noop"));
        assert_eq!(call.arguments, serde_json::json!({"n": 0}));
    });
}

#[test]
fn scripted_text_response_has_r_plus_4_events() {
    rt(0).block_on(async {
        let mut s = text_response(W2_DELTA, 50);
        let mut n = 0;
        while s.next().await.is_some() {
            n += 1;
        }
        assert_eq!(n, 54);
        assert_eq!(s.result().await.text().len(), 400);
    });
}

#[test]
fn loop_script_event_sequence_matches_the_arithmetic() {
    rt(0).block_on(async {
        let script = Arc::new(LoopScript::new(3));
        let agent = bench_agent(vec![noop_tool()], script.clone());
        let kinds = Arc::new(Mutex::new(Vec::new()));
        let k2 = kinds.clone();
        agent.subscribe_sync(move |e| k2.lock().unwrap().push(e.kind()));
        agent.prompt("go").await.unwrap();
        let kinds = kinds.lock().unwrap().clone();
        assert_eq!(kinds.len(), loop_events(3));
        assert_eq!(kinds.len(), 33);
        let tool_turn = [
            "message_start",
            "message_update",
            "message_update",
            "message_update",
            "message_end",
            "tool_execution_start",
            "tool_execution_end",
            "message_start",
            "message_end",
            "turn_end",
            "turn_start",
        ];
        assert_eq!(
            &kinds[..4],
            ["agent_start", "turn_start", "message_start", "message_end"]
        );
        assert_eq!(&kinds[4..15], tool_turn);
        assert_eq!(&kinds[15..26], tool_turn);
        assert_eq!(kinds.last(), Some(&"agent_end"));
        assert_eq!(agent.message_count(), 7);
        assert_eq!(script.calls(), 3);
        assert_eq!(last_text(&agent), "done");
        // The transcript: system, user, (assistant, toolResult) x 2, assistant.
        let roles: Vec<String> =
            agent.with_messages(|m| m.iter().map(|m| m.role().to_string()).collect());
        assert_eq!(
            roles,
            [
                "system",
                "user",
                "assistant",
                "toolResult",
                "assistant",
                "toolResult",
                "assistant"
            ]
        );
        agent.with_messages(|m| {
            let Message::ToolResult(r) = &m[3] else {
                panic!()
            };
            assert_eq!(r.tool_call_id, "call_0");
            assert_eq!(tern_ai::content_text(&r.content, ""), "ok");
        });
    });
}

#[test]
fn async_listener_sees_the_same_events() {
    rt(0).block_on(async {
        let agent = bench_agent(vec![noop_tool()], Arc::new(LoopScript::new(5)));
        let n = Arc::new(AtomicUsize::new(0));
        let n2 = n.clone();
        agent.subscribe(move |e: Arc<AgentEvent>, _| {
            let n2 = n2.clone();
            async move {
                let _ = e.kind();
                n2.fetch_add(1, Ordering::Relaxed);
            }
        });
        agent.prompt("go").await.unwrap();
        assert_eq!(n.load(Ordering::Relaxed), loop_events(5));
        assert_eq!(agent.message_count(), 11);
    });
}

#[test]
fn w1_small() {
    let v = w1(&W1Params {
        turns: 20,
        warmup: 1,
        reps: 2,
        async_listener: true,
        telemetry: true,
    })
    .unwrap();
    assert_eq!(v["events_per_prompt"], 4 + 11 * 19 + 7);
    assert_eq!(v["prompt_ms_all"].as_array().unwrap().len(), 2);
    // The telemetry runs check their transcripts and events as the plain one does.
    assert!(v["telemetry_off_us_per_turn"].as_f64().unwrap() > 0.0);
    assert!(v["telemetry_no_exporter_us_per_turn"].as_f64().unwrap() > 0.0);
}

#[test]
fn w2_small() {
    let v = w2(&W2Params {
        deltas: 1000,
        warmup: 1,
        reps: 2,
    })
    .unwrap();
    assert_eq!(v["agent_events"], 1010);
}

#[test]
fn w3_small() {
    let v = w3(&W3Params {
        tools: 8,
        sleep_ms: 2,
        warmup: 0,
        reps: 2,
    })
    .unwrap();
    assert_eq!(
        v["events_per_prompt"],
        4 + (1 + 24 + 1 + 8 + 8 + 16 + 1 + 1) + 7
    );
}

#[test]
fn w3_default_event_count_is_463() {
    let v = w3(&W3Params {
        tools: 64,
        sleep_ms: 1,
        warmup: 0,
        reps: 1,
    })
    .unwrap();
    assert_eq!(v["events_per_prompt"], 463);
}

#[test]
fn w4_small_both_runtimes() {
    for threads in [0, 2] {
        let v = w4(&W4Params {
            agents: 50,
            turns: 3,
            threads,
        })
        .unwrap();
        assert_eq!(v["events_total"], 50 * 33);
    }
}

#[test]
fn w5_transcript_shape() {
    let t = w5_transcript(12);
    assert_eq!(t.len(), 100);
    assert_eq!(w5_text(12, 3, 256).len(), 256);
    assert!(w5_text(12, 3, 256).starts_with("12.3:xx"));
    let v = w5(&W5Params { agents: 20 }).unwrap();
    assert_eq!(v["raw_text_bytes_per_agent"], 48_000);
}

#[test]
fn w6_delta_text() {
    assert_eq!(w6_delta(42), "t000042 ");
    assert_eq!(w6_delta(199_999), "t199999 ");
    assert_eq!(w6_delta(1_000_001), "t000001 ");
}

/// W6 against the reference server, when it is available (set `TERN_BENCH_W6_SERVER` to the
/// path of `w6-server.mjs` in a directory where `npm ci` ran).
#[test]
fn w6_small_against_reference_server() {
    let Ok(server) = std::env::var("TERN_BENCH_W6_SERVER") else {
        eprintln!("skipped: TERN_BENCH_W6_SERVER not set");
        return;
    };
    let v = w6(&W6Params {
        chunks: 2000,
        warmup: 0,
        reps: 1,
        agent_reps: 1,
        server: server.into(),
        mt_threads: 2,
    })
    .unwrap();
    assert_eq!(v["chunks"], 2000);
}

#[test]
fn w7_once_gives_hello_and_11_events() {
    let (text, events) = rt(0).block_on(w7_once()).unwrap();
    assert_eq!(text, "hello");
    assert_eq!(events, 11);
}
