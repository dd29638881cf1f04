//! Permission answers as steps: a question is journaled before it is asked and the answer
//! before it takes effect; a recovery uses the recorded answer without asking again, a
//! replay reproduces it, and a hook that now decides without asking is a divergence.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::*;
use serde_json::{json, Value};
use tern_agent::hooks::BeforeToolCallResult;
use tern_agent::{Agent, AgentOptions, Hooks, Replay};
use tern_ai::{Message, Model, StreamFn};
use tern_durable::{
    replay, Divergence, DurableRun, Journal, MemoryJournal, Record, ReplayReport, RunEnd, Step,
};

/// How the hook decides `never_count` calls: by asking (the answer counted), or by policy.
#[derive(Clone, Copy)]
enum Hook {
    Ask(bool),
    AllowWithoutAsking,
}

fn agent_with_hook(
    run: &DurableRun,
    stream_fn: Arc<dyn StreamFn>,
    dir: &Path,
    hook: Hook,
    asked: Arc<AtomicUsize>,
) -> Agent {
    let decider = run.clone();
    Agent::new(AgentOptions {
        model: Some(Arc::new(Model::default())),
        stream_fn: Some(stream_fn),
        tools: vec![
            run.tool(counting_tool(dir, "safe_count", Replay::Safe)),
            run.tool(counting_tool(dir, "never_count", Replay::Never)),
        ],
        hooks: Hooks::default().before_tool_call(move |ctx, _signal| {
            let run = decider.clone();
            let asked = asked.clone();
            async move {
                if ctx.tool_call.name != "never_count" {
                    return Ok(None);
                }
                let allowed = match hook {
                    Hook::Ask(answer) => {
                        let question = json!({"tool": ctx.tool_call.name, "prompt": "Allow?"});
                        let person = async move {
                            asked.fetch_add(1, Ordering::SeqCst);
                            Value::Bool(answer)
                        };
                        let id = &ctx.tool_call.id;
                        let v = run.decide("permission", id, question, person).await;
                        v.map_err(|e| e.to_string())?.as_bool().unwrap_or(false)
                    }
                    Hook::AllowWithoutAsking => {
                        run.decided_without_asking("permission", &ctx.tool_call.id, "allows");
                        true
                    }
                };
                Ok((!allowed).then(|| BeforeToolCallResult {
                    block: true,
                    reason: Some("declined".into()),
                    ..Default::default()
                }))
            }
        }),
        ..Default::default()
    })
}

async fn record(dir: &Path) -> (Vec<Record>, usize) {
    let journal = Arc::new(MemoryJournal::default());
    let (run, prompt) = start_go(journal.clone()).await;
    let asked = Arc::new(AtomicUsize::new(0));
    let stream_fn = run.model(Arc::new(scripted_server()));
    let a = agent_with_hook(&run, stream_fn, dir, Hook::Ask(true), asked.clone());
    a.prompt_messages(prompt).await.expect("run");
    run.finish(RunEnd::Completed).await.expect("finish");
    (
        journal.records().expect("records"),
        asked.load(Ordering::SeqCst),
    )
}

#[tokio::test]
async fn each_answer_is_journaled_between_its_question_and_the_call() {
    let dir = tempfile::tempdir().expect("dir");
    let (records, asked) = record(dir.path()).await;
    assert_eq!(asked, 2, "two never_count calls, each asked once");
    let kinds: Vec<&str> = records
        .iter()
        .filter_map(|r| match &r.step {
            Step::DecisionIntent { tool_call_id, .. } if tool_call_id == "c2" => Some("question"),
            Step::Decision { id, .. } if id.ends_with(":d:c2") => Some("answer"),
            Step::ToolIntent { tool_call_id, .. } if tool_call_id == "c2" => Some("call"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["question", "answer", "call"]);
}

#[tokio::test]
async fn a_recovered_run_uses_the_recorded_answer_without_asking() {
    let dir = tempfile::tempdir().expect("dir");
    let (records, _) = record(dir.path()).await;
    // Cut right after the first answer: the call it allowed never started.
    let (run, prompt) = cut_and_recover(&records, |s| matches!(s, Step::Decision { .. }));
    let asked = Arc::new(AtomicUsize::new(0));
    // Were it asked, the answer would be no.
    let stream_fn = run.model(Arc::new(scripted_server()));
    let a = agent_with_hook(&run, stream_fn, dir.path(), Hook::Ask(false), asked.clone());
    let out = a.prompt_messages(prompt).await.expect("run");
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "only the call the recording never asked about (c3) was asked"
    );
    let c2 = out
        .messages
        .iter()
        .find_map(|m| match m {
            Message::ToolResult(t) if t.tool_call_id == "c2" => Some(t.clone()),
            _ => None,
        })
        .expect("c2's result");
    assert!(!c2.is_error, "the recorded yes let it run: {c2:?}");
}

#[tokio::test]
async fn a_replay_reproduces_the_answers_and_reports_a_changed_hook() {
    let dir = tempfile::tempdir().expect("dir");
    let (records, _) = record(dir.path()).await;
    let asked = Arc::new(AtomicUsize::new(0));
    let report = replay(records.clone(), &[], |run, stream_fn| {
        agent_with_hook(run, stream_fn, dir.path(), Hook::Ask(false), asked.clone())
    })
    .await
    .expect("replayable");
    assert_eq!(report, ReplayReport::Identical);
    assert_eq!(asked.load(Ordering::SeqCst), 0, "a replay asks nobody");

    let report = replay(records, &[], |run, stream_fn| {
        agent_with_hook(
            run,
            stream_fn,
            dir.path(),
            Hook::AllowWithoutAsking,
            asked.clone(),
        )
    })
    .await
    .expect("replayable");
    let ReplayReport::Diverged(Divergence::HookDecision {
        hook,
        call_id,
        detail,
    }) = &report
    else {
        panic!("expected a hook divergence, got {report}");
    };
    assert_eq!((hook.as_str(), call_id.as_str()), ("permission", "c2"));
    assert!(detail.contains("allows without asking"), "{detail}");
    assert!(report.to_string().contains("hook's decision"), "{report}");
}
