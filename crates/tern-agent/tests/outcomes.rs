//! Every way a run ends, as `prompt` and `continue_run` report it in their [`RunOutcome`]:
//! each test drives a real agent over the scripted model and checks the ending, the new
//! messages and the usage totals against the transcript.

use std::time::Duration;

use serde_json::json;
use tern_agent::hooks::{BeforeToolCallResult, TurnDecision};
use tern_agent::{
    Agent, AgentEvent, AgentOptions, AgentTool, RunEnding, RunOutcome, StopCause, ToolResult,
};
use tern_ai::faux::{FauxModel, FauxResponse};
use tern_ai::{ContentBlock, Cost, Message, Model, StopReason, Usage};

fn usage(input: u64, output: u64, cost: f64) -> Usage {
    Usage {
        input,
        output,
        total_tokens: input + output,
        cost: Cost {
            total: cost,
            ..Cost::default()
        },
        ..Usage::default()
    }
}

fn agent(responses: Vec<FauxResponse>) -> tern_agent::AgentBuilder {
    Agent::builder(Model::default(), FauxModel::new(responses))
}

fn echo_tool(terminate: bool) -> AgentTool {
    AgentTool::dynamic(
        "echo",
        "Echo.",
        json!({"type": "object", "properties": {}}),
        move |_| async move {
            Ok(ToolResult {
                terminate: terminate.then_some(true),
                ..ToolResult::text("echoed")
            })
        },
    )
}

/// An agent whose model calls `echo` once (terminating the run when `terminate`), then
/// answers `answer` if asked again.
fn echo_call_then(answer: &str, terminate: bool) -> tern_agent::AgentBuilder {
    agent(vec![
        FauxResponse::tool_call("c1", "echo", json!({})),
        FauxResponse::text(answer),
    ])
    .tool(echo_tool(terminate))
}

fn roles(outcome: &RunOutcome) -> Vec<&str> {
    outcome.messages.iter().map(Message::role).collect()
}

/// The outcome's messages are the transcript's tail.
fn assert_tail(agent: &Agent, outcome: &RunOutcome) {
    let transcript = agent.state().messages;
    let tail = &transcript[transcript.len() - outcome.messages.len()..];
    assert_eq!(tail, outcome.messages.as_slice());
}

#[tokio::test]
async fn a_plain_answer_completes_and_sums_usage() {
    let mut first = FauxResponse::tool_call("c1", "echo", json!({}));
    first.usage = usage(10, 2, 0.5);
    let mut second = FauxResponse::text("done");
    second.usage = usage(20, 3, 0.25);
    let agent = agent(vec![first, second]).tool(echo_tool(false)).build();
    let outcome = agent.prompt("go").await.unwrap();
    assert_eq!(outcome.ending, RunEnding::Completed);
    assert!(outcome.is_completed());
    assert_eq!(
        roles(&outcome),
        ["user", "assistant", "toolResult", "assistant"]
    );
    assert_eq!(outcome.final_text().as_deref(), Some("done"));
    assert_eq!(outcome.usage.input, 30);
    assert_eq!(outcome.usage.output, 5);
    assert_eq!(outcome.usage.total_tokens, 35);
    assert_eq!(outcome.usage.cost.total, 0.75);
    assert_tail(&agent, &outcome);
}

#[tokio::test]
async fn a_provider_error_fails_with_its_message() {
    let agent = agent(vec![FauxResponse::error("HTTP 500: overloaded")]).build();
    let outcome = agent.prompt("go").await.unwrap();
    assert_eq!(
        outcome.ending,
        RunEnding::Failed("HTTP 500: overloaded".into())
    );
    assert_eq!(roles(&outcome), ["user", "assistant"]);
    assert_eq!(
        agent.error_message().as_deref(),
        Some("HTTP 500: overloaded")
    );
    assert_tail(&agent, &outcome);
}

#[tokio::test]
async fn a_failing_hook_fails_the_run_with_its_error() {
    let agent = agent(vec![FauxResponse::text("hi")])
        .finish_turn(|_turn, _signal| async { Err("hook broke".into()) })
        .build();
    let outcome = agent.prompt("go").await.unwrap();
    assert_eq!(outcome.ending, RunEnding::Failed("hook broke".into()));
    // The prompt, the answer, and the failure message the agent records.
    assert_eq!(roles(&outcome), ["user", "assistant", "assistant"]);
    let failure = outcome.final_message().unwrap();
    assert_eq!(failure.stop_reason, StopReason::Error);
    assert_tail(&agent, &outcome);
}

#[tokio::test]
async fn abort_ends_the_run_as_aborted() {
    let model = FauxModel::new(vec![FauxResponse::text("a long answer, streamed slowly")])
        .streaming(1, Duration::from_millis(20));
    let agent = Agent::builder(Model::default(), model).build();
    let handle = agent.clone();
    agent.subscribe_sync(move |e| {
        if matches!(e, AgentEvent::MessageUpdate { .. }) {
            handle.abort();
        }
    });
    let outcome = tokio::time::timeout(Duration::from_secs(10), agent.prompt("go"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome.ending, RunEnding::Aborted);
    assert_eq!(
        outcome.final_message().map(|m| m.stop_reason),
        Some(StopReason::Aborted)
    );
    assert_tail(&agent, &outcome);
}

#[tokio::test]
async fn a_terminating_tool_result_stops_the_run() {
    let agent = echo_call_then("never asked", true).build();
    let outcome = agent.prompt("go").await.unwrap();
    assert_eq!(
        outcome.ending,
        RunEnding::Stopped(StopCause::ToolsTerminated)
    );
    assert_eq!(roles(&outcome), ["user", "assistant", "toolResult"]);
    assert_tail(&agent, &outcome);
}

#[tokio::test]
async fn a_terminating_block_stops_the_run() {
    let agent = echo_call_then("never asked", false)
        .before_tool_call(|_ctx, _signal| async {
            Ok(Some(BeforeToolCallResult {
                terminate: true,
                ..BeforeToolCallResult::block("not now")
            }))
        })
        .build();
    let outcome = agent.prompt("go").await.unwrap();
    assert_eq!(
        outcome.ending,
        RunEnding::Stopped(StopCause::ToolsTerminated)
    );
    let Some(Message::ToolResult(result)) = outcome.messages.last() else {
        panic!("the run should end with the blocked call's result");
    };
    assert!(result.is_error);
}

#[tokio::test]
async fn steering_after_a_terminating_batch_runs_on_to_completion() {
    let agent = echo_call_then("steered answer", true).build();
    let handle = agent.clone();
    agent.subscribe_sync(move |e| {
        if matches!(e, AgentEvent::ToolExecutionEnd { .. }) {
            handle.steer(Message::user_text("one more thing"));
        }
    });
    let outcome = agent.prompt("go").await.unwrap();
    assert_eq!(outcome.ending, RunEnding::Completed);
    assert_eq!(outcome.final_text().as_deref(), Some("steered answer"));
}

#[tokio::test]
async fn finish_turn_end_stops_the_run() {
    let agent = echo_call_then("never asked", false)
        .finish_turn(|_turn, _signal| async { Ok(Some(TurnDecision::End)) })
        .build();
    let outcome = agent.prompt("go").await.unwrap();
    assert_eq!(outcome.ending, RunEnding::Stopped(StopCause::FinishTurn));
    assert_eq!(roles(&outcome), ["user", "assistant", "toolResult"]);
}

#[tokio::test]
async fn the_output_token_limit_stops_the_run() {
    let cut = FauxResponse {
        content: vec![ContentBlock::text("half an ans")],
        stop_reason: StopReason::Length,
        ..FauxResponse::default()
    };
    let outcome = agent(vec![cut]).build().prompt("go").await.unwrap();
    assert_eq!(outcome.ending, RunEnding::Stopped(StopCause::OutputLimit));
}

#[tokio::test]
async fn continue_reports_only_the_messages_it_added() {
    let agent = agent(vec![FauxResponse::text("answer")])
        .messages(vec![Message::user_text("question")])
        .build();
    let outcome = agent.continue_run().await.unwrap();
    assert_eq!(outcome.ending, RunEnding::Completed);
    assert_eq!(roles(&outcome), ["assistant"]);
    assert_eq!(agent.message_count(), 2);
}

#[tokio::test]
async fn an_agent_without_a_stream_function_says_how_to_give_it_one() {
    let agent = Agent::new(AgentOptions::default());
    let outcome = agent.prompt("go").await.unwrap();
    assert_eq!(
        outcome.ending,
        RunEnding::Failed(tern_agent::agent::NO_STREAM_FN.into())
    );
    assert!(!tern_agent::agent::NO_STREAM_FN.contains("setDefaultStreamFn"));
}

#[tokio::test]
async fn a_busy_agent_is_an_error_not_an_outcome() {
    let model = FauxModel::new(vec![FauxResponse::text("slow answer")])
        .streaming(1, Duration::from_millis(10));
    let agent = Agent::builder(Model::default(), model).build();
    let running = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("first").await }
    });
    while !agent.is_streaming() {
        tokio::task::yield_now().await;
    }
    let busy = agent.prompt("second").await;
    assert!(matches!(
        busy,
        Err(tern_agent::AgentError::PromptWhileRunning)
    ));
    let first = running.await.unwrap().unwrap();
    assert_eq!(first.ending, RunEnding::Completed);
}
