//! Record/replay: a recorded run replays as identical, and each kind of change to the agent
//! is reported at the first place it shows.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::*;
use serde_json::json;
use tern_agent::{Agent, AgentOptions, AgentTool, Replay};
use tern_ai::{Model, StreamFn};
use tern_durable::{
    replay, Divergence, DurableRun, Journal, MemoryJournal, Record, ReplayReport, RunEnd, Step,
};

const SYSTEM: &str = "You count things.";

fn build(
    run: &DurableRun,
    stream_fn: Arc<dyn StreamFn>,
    dir: &Path,
    system: &str,
    safe: AgentTool,
) -> Agent {
    Agent::new(AgentOptions {
        model: Some(Arc::new(Model::default())),
        system_prompt: Some(system.to_string()),
        stream_fn: Some(stream_fn),
        tools: vec![
            run.tool(safe),
            run.tool(counting_tool(dir, "never_count", Replay::Never)),
        ],
        ..Default::default()
    })
}

async fn record(dir: &Path) -> Vec<Record> {
    record_from(dir, Arc::new(scripted_server())).await
}

/// The journal of a run whose model is `upstream`.
async fn record_from(dir: &Path, upstream: Arc<dyn StreamFn>) -> Vec<Record> {
    let journal = Arc::new(MemoryJournal::default());
    let (run, prompt) = start_go(journal.clone()).await;
    let safe = counting_tool(dir, "safe_count", Replay::Safe);
    let a = build(&run, run.model(upstream), dir, SYSTEM, safe);
    a.prompt_messages(prompt).await.expect("run");
    run.finish(RunEnd::Completed).await.expect("finish");
    journal.records().expect("records")
}

async fn replay_with(
    records: Vec<Record>,
    dir: &Path,
    system: &str,
    safe: AgentTool,
) -> ReplayReport {
    replay(records, &[], |run, stream_fn| {
        build(run, stream_fn, dir, system, safe)
    })
    .await
    .expect("replayable")
}

/// The replay of `records` by the agent that recorded them.
async fn replay_unchanged(records: Vec<Record>, dir: &Path) -> ReplayReport {
    let safe = counting_tool(dir, "safe_count", Replay::Safe);
    replay_with(records, dir, SYSTEM, safe).await
}

#[tokio::test]
async fn a_recorded_run_replays_as_identical_without_running_anything() {
    let dir = tempfile::tempdir().expect("dir");
    let records = record(dir.path()).await;
    let (safe, never) = (
        effects(dir.path(), "safe_count"),
        effects(dir.path(), "never_count"),
    );
    assert_eq!((safe, never), (1, 2), "the recording ran each call once");
    let report = replay_unchanged(records, dir.path()).await;
    assert_eq!(report, ReplayReport::Identical);
    assert_eq!(report.to_string(), "identical");
    assert_eq!(
        effects(dir.path(), "never_count"),
        2,
        "no tool ran in the replay"
    );
}

#[tokio::test]
async fn each_change_is_reported_at_its_first_divergence() {
    let dir = tempfile::tempdir().expect("dir");
    let records = record(dir.path()).await;
    let safe = || counting_tool(dir.path(), "safe_count", Replay::Safe);

    let changed_schema = AgentTool::dynamic(
        "safe_count",
        "Count.",
        json!({"type": "object", "properties": {"by": {"type": "integer"}}}),
        |_c| async { Ok(tern_agent::ToolResult::text("counted")) },
    )
    .with_replay(Replay::Safe);
    let report = replay_with(records.clone(), dir.path(), SYSTEM, changed_schema).await;
    assert_eq!(
        report,
        ReplayReport::Diverged(Divergence::Tools { request: 1 })
    );

    let report = replay_with(records.clone(), dir.path(), "You count, carefully.", safe()).await;
    assert_eq!(
        report,
        ReplayReport::Diverged(Divergence::SystemPrompt { request: 1 })
    );
    assert!(report.to_string().contains("system prompt"), "{report}");

    // The recording started the first batch's calls in the other order.
    let mut reordered = records.clone();
    let intents: Vec<usize> = reordered
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r.step, Step::ToolIntent { .. }))
        .map(|(i, _)| i)
        .collect();
    reordered.swap(intents[0], intents[1]);
    let report = replay_with(reordered, dir.path(), SYSTEM, safe()).await;
    assert_eq!(
        report,
        ReplayReport::Diverged(Divergence::ToolCallOrder {
            index: 1,
            recorded: "c2".into(),
            now: "c1".into(),
        })
    );
}

/// Answers as `inner` does, with the response's `start` pushed twice (as Bedrock streams a
/// repeated `messageStart`).
struct StartsTwice(Arc<dyn StreamFn>);

impl StreamFn for StartsTwice {
    fn stream(
        &self,
        model: &Model,
        context: tern_ai::Context,
        options: &tern_ai::StreamOptions,
    ) -> tern_ai::StreamStart {
        use tern_ai::AssistantMessageEvent as E;
        let mut upstream = self.0.stream(model, context, options)?;
        let (tx, rx) = tern_ai::assistant_stream();
        let forward = async move {
            while let Some(event) = upstream.next().await {
                if let E::Start { partial } = &event {
                    tx.push(E::Start {
                        partial: partial.clone(),
                    });
                }
                tx.push(event);
            }
        };
        Ok(rx.driven_by(forward))
    }
}

/// The requests a run of "go" sends when every response starts twice, without a journal (the
/// plain loop, whose handling of a repeated `start` the conformance scenarios pin) and with
/// one: the journal's records and the requests.
#[tokio::test]
async fn a_response_that_starts_twice_leaves_its_partial_in_the_next_request_as_without_a_journal()
{
    let dir = tempfile::tempdir().expect("dir");
    let plain = scripted_server();
    let a = Agent::new(AgentOptions {
        model: Some(Arc::new(Model::default())),
        system_prompt: Some(SYSTEM.to_string()),
        stream_fn: Some(Arc::new(StartsTwice(Arc::new(plain.clone())))),
        tools: vec![
            counting_tool(dir.path(), "safe_count", Replay::Safe),
            counting_tool(dir.path(), "never_count", Replay::Never),
        ],
        ..Default::default()
    });
    a.prompt_messages(vec![tern_ai::Message::user_text("go")])
        .await
        .expect("run");
    let expected: Vec<_> = plain.requests().iter().map(|r| shape(r)).collect();
    let roles: Vec<_> = expected[1].iter().map(|m| m.0.as_str()).collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "assistant",
            "toolResult",
            "toolResult"
        ],
        "the first response's partial stays in the plain loop's context"
    );

    let durable = scripted_server();
    let records = record_from(dir.path(), Arc::new(StartsTwice(Arc::new(durable.clone())))).await;
    let sent: Vec<_> = durable.requests().iter().map(|r| shape(r)).collect();
    assert_eq!(
        sent, expected,
        "a durable run sends the plain loop's requests"
    );

    // Killed after the first response: recovery serves it from the journal, and the next
    // request, sent live, is the plain loop's again.
    let (run, prompt) = cut_and_recover(&records, |s| matches!(s, Step::ModelOutcome { .. }));
    let after = scripted_server();
    let safe = counting_tool(dir.path(), "safe_count", Replay::Safe);
    let upstream = Arc::new(StartsTwice(Arc::new(after.clone())));
    let a = build(&run, run.model(upstream), dir.path(), SYSTEM, safe);
    a.prompt_messages(prompt).await.expect("recovered run");
    let sent: Vec<_> = after.requests().iter().map(|r| shape(r)).collect();
    assert_eq!(sent, expected[1..], "the recovered run's live requests");
}

#[tokio::test]
async fn a_response_that_starts_twice_replays_as_identical() {
    let dir = tempfile::tempdir().expect("dir");
    let upstream = StartsTwice(Arc::new(scripted_server()));
    let records = record_from(dir.path(), Arc::new(upstream)).await;
    let report = replay_unchanged(records, dir.path()).await;
    assert_eq!(report, ReplayReport::Identical);
}
