//! Budgets: each limit ends a scripted run with a wrap-up turn whose request has no tools
//! and carries the budget notice; the run says which limit ended it.

mod common;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tern_agent::{Agent, AgentOptions, AgentTool, Replay, ToolResult};
use tern_ai::faux::FauxResponse;
use tern_ai::transcript::get_current_tools;
use tern_ai::{Cost, Message, Model, Usage};
use tern_durable::{
    budget_notice, Budget, Budgets, DurableRun, Journal, JournalError, Limit, MemoryJournal,
    RunEnd, Spent, Step,
};
use tern_testkit::agent::ScriptFn;

use common::cut_and_recover;

/// Calls the tool while it has tools, answers in text when it has none; every response
/// costs 100 tokens and one cent. Keeps each request's messages.
fn greedy() -> ScriptFn {
    ScriptFn::new(|n, messages| {
        let mut response = if get_current_tools(messages.iter()).is_empty() {
            FauxResponse::text("Here is what I have.")
        } else {
            FauxResponse::tool_call(&format!("c{}", n + 1), "look", json!({}))
        };
        response.usage = Usage {
            total_tokens: 100,
            cost: Cost {
                total: 0.01,
                ..Default::default()
            },
            ..Default::default()
        };
        response
    })
}

fn greedy_agent(run: &DurableRun, server: &ScriptFn) -> Agent {
    let look = AgentTool::dynamic("look", "Look.", json!({"type": "object"}), |_c| async {
        Ok(ToolResult::text("seen"))
    })
    .with_replay(Replay::Safe);
    Agent::new(AgentOptions {
        model: Some(Arc::new(Model::default())),
        stream_fn: Some(run.model(Arc::new(server.clone()))),
        tools: vec![run.tool(look)],
        ..Default::default()
    })
}

/// Runs the greedy model under `run` from `prompt`; the model, with the requests it was sent.
async fn run_greedy(run: &DurableRun, prompt: Vec<Message>) -> ScriptFn {
    let server = greedy();
    greedy_agent(run, &server)
        .prompt_messages(prompt)
        .await
        .expect("run");
    server
}

fn prompt() -> Vec<Message> {
    vec![Message::user_text("look around")]
}

async fn run_with(budget: Budget) -> (Vec<Vec<Message>>, Option<Limit>, RunEnd, Message) {
    let run = DurableRun::start(Arc::new(MemoryJournal::default()), &[], &prompt())
        .await
        .expect("start")
        .with_budget(budget);
    let server = greedy();
    let agent = greedy_agent(&run, &server);
    let outcome = agent.prompt_messages(prompt()).await.expect("run");
    let last = outcome.messages.last().cloned().expect("an answer");
    let requests = server.requests();
    (requests, run.ended_by(), run.end(), last)
}

fn assert_wrap_up(requests: &[Vec<Message>], limit: Limit, expected_requests: usize) {
    assert_eq!(requests.len(), expected_requests, "{limit:?}");
    let last = requests.last().expect("a request");
    assert!(
        get_current_tools(last.iter()).is_empty(),
        "{limit:?}: no tools"
    );
    let notice = last.last().expect("messages");
    assert_eq!(notice.role(), "system");
    assert_eq!(notice.content_json(), json!(budget_notice(limit)));
    for earlier in &requests[..requests.len() - 1] {
        assert!(
            !get_current_tools(earlier.iter()).is_empty(),
            "{limit:?}: tools before"
        );
    }
}

async fn check(budget: Budget, limit: Limit, expected_requests: usize) {
    let (requests, ended_by, end, last) = run_with(budget).await;
    assert_wrap_up(&requests, limit, expected_requests);
    assert_eq!(ended_by, Some(limit));
    assert_eq!(
        end,
        RunEnd::Budget {
            limit: limit.name().into()
        }
    );
    assert_eq!(last.role(), "assistant");
    assert!(last
        .content_json()
        .to_string()
        .contains("Here is what I have."));
}

#[tokio::test]
async fn each_limit_ends_the_run_with_a_wrap_up_turn() {
    let turns = Budget {
        max_turns: Some(2),
        ..Default::default()
    };
    check(turns, Limit::Turns, 3).await;
    let tokens = Budget {
        max_tokens: Some(150),
        ..Default::default()
    };
    check(tokens, Limit::Tokens, 3).await;
    let cost = Budget {
        max_cost: Some(0.025),
        ..Default::default()
    };
    check(cost, Limit::Cost, 4).await;
    let calls = Budget {
        max_tool_calls: Some(1),
        ..Default::default()
    };
    check(calls, Limit::ToolCalls, 2).await;
    let time = Budget {
        max_wall_time: Some(Duration::ZERO),
        ..Default::default()
    };
    check(time, Limit::WallTime, 1).await;
}

#[tokio::test]
async fn the_first_limit_reached_is_the_one_reported() {
    // The greedy model would loop forever without a budget; with two limits, the turn
    // limit comes first (ten turns use 1,000 tokens of the million).
    let (requests, ended_by, end, _) = run_with(Budget {
        max_turns: Some(10),
        max_tokens: Some(1_000_000),
        ..Default::default()
    })
    .await;
    assert_eq!(requests.len(), 11);
    assert_eq!(ended_by, Some(Limit::Turns));
    assert!(matches!(end, RunEnd::Budget { .. }));
}

#[tokio::test]
async fn a_recovered_run_keeps_the_budget_it_was_started_with() {
    let journal = Arc::new(MemoryJournal::default());
    let budget = Budgets {
        run: Budget {
            max_turns: Some(2),
            ..Default::default()
        },
        ..Default::default()
    };
    let run = DurableRun::start_with_budget(journal.clone(), &[], &prompt(), budget.clone())
        .await
        .expect("start");
    run_greedy(&run, prompt()).await;
    let records = journal.records().expect("records");
    match &records[0].step {
        Step::RunStarted { budget: b, .. } => assert_eq!(b, &budget),
        other => panic!("the first record is {other:?}"),
    }
    // Killed after the first response: the recovery is given no budget, and keeps it.
    let (run, prompt) = cut_and_recover(&records, |s| matches!(s, Step::ModelOutcome { .. }));
    assert_eq!(run.budget(), budget);
    let server = run_greedy(&run, prompt).await;
    assert_eq!(run.ended_by(), Some(Limit::Turns));
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        2,
        "the first request is served from the journal; then one live request and the wrap-up"
    );
    assert!(get_current_tools(requests[1].iter()).is_empty());
}

#[tokio::test]
async fn a_session_limit_wraps_up_its_run_and_refuses_the_next() {
    let journal = Arc::new(MemoryJournal::default());
    let budget = Budgets {
        session: Budget {
            max_tool_calls: Some(3),
            ..Default::default()
        },
        ..Default::default()
    };
    // The first run stops on its own after two calls (its own turn limit).
    let first = DurableRun::start_with_budget(journal.clone(), &[], &prompt(), budget.clone())
        .await
        .expect("start")
        .with_budget(Budget {
            max_turns: Some(2),
            ..Default::default()
        });
    run_greedy(&first, prompt()).await;
    assert_eq!(first.ended_by(), Some(Limit::Turns));
    first.finish(first.end()).await.expect("finish");
    let spent = Spent::of_session(&journal.records().expect("records"));
    assert_eq!((spent.turns, spent.tool_calls, spent.tokens), (3, 2, 300));

    // The second has one call left in the session's budget, then wraps up.
    let second = DurableRun::start_with_budget(journal.clone(), &[], &prompt(), budget.clone())
        .await
        .expect("one call left");
    let server = run_greedy(&second, prompt()).await;
    assert_eq!(second.ended_by(), Some(Limit::SessionToolCalls));
    assert_eq!(
        second.end(),
        RunEnd::Budget {
            limit: "sessionToolCalls".into()
        }
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one call, then the wrap-up");
    let notice = requests[1].last().expect("the notice").content_json();
    assert_eq!(notice, json!(budget_notice(Limit::SessionToolCalls)));
    assert!(notice.to_string().contains("of this session"), "{notice}");
    second.finish(second.end()).await.expect("finish");

    // A third is refused, and nothing is journaled for it.
    let before = journal.records().expect("records").len();
    let third = DurableRun::start_with_budget(journal.clone(), &[], &prompt(), budget).await;
    let Err(e @ JournalError::BudgetSpent { limit, .. }) = third else {
        panic!("the third run started");
    };
    assert_eq!(limit, Limit::SessionToolCalls);
    assert!(e.to_string().contains("used 3 of 3"), "{e}");
    assert_eq!(journal.records().expect("records").len(), before);
}
