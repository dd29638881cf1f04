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

/// Answers as `inner` does, with each response's `start` pushed twice, as Bedrock streams a
/// repeated `messageStart`: either forwarding `inner`'s events (whose final message is not
/// the partial's), or as a provider does, with one partial that the final event shares.
struct StartsTwice {
    inner: Arc<dyn StreamFn>,
    one_partial: bool,
}

impl StreamFn for StartsTwice {
    fn stream(
        &self,
        model: &Model,
        context: tern_ai::Context,
        options: &tern_ai::StreamOptions,
    ) -> tern_ai::StreamStart {
        use tern_ai::AssistantMessageEvent as E;
        let mut upstream = self.inner.stream(model, context, options)?;
        let (tx, rx) = tern_ai::assistant_stream();
        let one_partial = self.one_partial;
        let forward = async move {
            let mut own = None;
            while let Some(event) = upstream.next().await {
                match (&event, one_partial) {
                    (E::Start { partial }, false) => tx.push(E::Start {
                        partial: partial.clone(),
                    }),
                    (E::Start { partial }, true) => {
                        let p = tern_ai::PartialMessage::new(partial.snapshot());
                        tx.push(E::Start { partial: p.clone() });
                        tx.push(E::Start { partial: p.clone() });
                        own = Some(p);
                        continue;
                    }
                    (E::Done { reason, .. }, true) => {
                        let message = upstream.result().await;
                        if let Some(p) = &own {
                            p.update(|m| *m = (*message).clone());
                            tx.push(E::Done {
                                reason: *reason,
                                message: p.shared(),
                            });
                        }
                        break;
                    }
                    (_, true) => continue,
                    _ => {}
                }
                tx.push(event);
            }
        };
        Ok(rx.driven_by(forward))
    }
}

/// The digest of each request `server` was sent (all but the times).
fn sent(server: &tern_testkit::agent::ScriptFn) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|r| tern_durable::context_digest(r))
        .collect()
}

/// A run of "go" whose responses all start twice sends the same requests without a journal
/// (the plain loop, whose handling of a repeated `start` the conformance scenarios pin),
/// with one, and recovered from one.
#[tokio::test]
async fn a_response_that_starts_twice_leaves_its_partial_in_the_next_request_as_without_a_journal()
{
    for one_partial in [false, true] {
        let starts_twice = |server: &tern_testkit::agent::ScriptFn| -> Arc<dyn StreamFn> {
            Arc::new(StartsTwice {
                inner: Arc::new(server.clone()),
                one_partial,
            })
        };
        let dir = tempfile::tempdir().expect("dir");
        let plain = scripted_server();
        let a = Agent::new(AgentOptions {
            model: Some(Arc::new(Model::default())),
            system_prompt: Some(SYSTEM.to_string()),
            stream_fn: Some(starts_twice(&plain)),
            tools: vec![
                counting_tool(dir.path(), "safe_count", Replay::Safe),
                counting_tool(dir.path(), "never_count", Replay::Never),
            ],
            ..Default::default()
        });
        a.prompt_messages(vec![tern_ai::Message::user_text("go")])
            .await
            .expect("run");
        let expected = sent(&plain);
        let second = &plain.requests()[1];
        let roles: Vec<_> = second.iter().map(|m| m.role()).collect();
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
        let stop = |m: &tern_ai::Message| match m {
            tern_ai::Message::Assistant(a) => Some(a.stop_reason),
            _ => None,
        };
        assert_eq!(
            (stop(&second[2]) == stop(&second[3])),
            one_partial,
            "one partial shows the final message; the faux stream's own shows it pending"
        );

        let durable = scripted_server();
        let records = record_from(dir.path(), starts_twice(&durable)).await;
        assert_eq!(
            sent(&durable),
            expected,
            "a durable run sends the plain loop's requests (one partial: {one_partial})"
        );

        // Killed after the first response: recovery serves it from the journal, and the next
        // request, sent live, is the plain loop's again.
        let (run, prompt) = cut_and_recover(&records, |s| matches!(s, Step::ModelOutcome { .. }));
        let after = scripted_server();
        let safe = counting_tool(dir.path(), "safe_count", Replay::Safe);
        let a = build(
            &run,
            run.model(starts_twice(&after)),
            dir.path(),
            SYSTEM,
            safe,
        );
        a.prompt_messages(prompt).await.expect("recovered run");
        assert_eq!(
            sent(&after),
            expected[1..],
            "the recovered run's live requests (one partial: {one_partial})"
        );
        let report = replay_unchanged(records, dir.path()).await;
        assert_eq!(
            report,
            ReplayReport::Identical,
            "one partial: {one_partial}"
        );
    }
}
