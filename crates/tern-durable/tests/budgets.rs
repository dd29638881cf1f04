//! Budgets: each limit ends a scripted run with a wrap-up turn whose request has no tools
//! and carries the budget notice; the run says which limit ended it.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::json;
use tern_agent::{Agent, AgentOptions, AgentTool, Replay, ToolResult};
use tern_ai::faux::{FauxModel, FauxResponse};
use tern_ai::transcript::get_current_tools;
use tern_ai::{Context, Cost, Message, Model, StreamFn, StreamOptions, Usage};
use tern_durable::{budget_notice, Budget, DurableRun, Limit, MemoryJournal, RunEnd};

/// Calls the tool while it has tools, answers in text when it has none; every response
/// costs 100 tokens and one cent. Keeps each request's messages.
#[derive(Clone, Default)]
struct Greedy {
    requests: Arc<Mutex<Vec<Vec<Message>>>>,
}

impl StreamFn for Greedy {
    fn stream(
        &self,
        model: &Model,
        context: Context,
        options: StreamOptions,
    ) -> tern_ai::StreamStart {
        let n = {
            let mut r = self.requests.lock();
            r.push(context.messages.to_vec());
            r.len()
        };
        let mut response = if get_current_tools(context.messages.iter()).is_empty() {
            FauxResponse::text("Here is what I have.")
        } else {
            FauxResponse::tool_call(&format!("c{n}"), "look", json!({}))
        };
        response.usage = Usage {
            total_tokens: 100,
            cost: Cost {
                total: 0.01,
                ..Default::default()
            },
            ..Default::default()
        };
        FauxModel::new(vec![response]).stream(model, context, options)
    }
}

async fn run_with(budget: Budget) -> (Vec<Vec<Message>>, Option<Limit>, RunEnd, Message) {
    let prompt = vec![Message::user_text("look around")];
    let run = DurableRun::start(Arc::new(MemoryJournal::default()), &[], &prompt)
        .await
        .expect("start")
        .with_budget(budget);
    let server = Greedy::default();
    let look = AgentTool::dynamic("look", "Look.", json!({"type": "object"}), |_c| async {
        Ok(ToolResult::text("seen"))
    })
    .with_replay(Replay::Safe);
    let agent = Agent::new(AgentOptions {
        model: Some(Arc::new(Model::default())),
        stream_fn: Some(run.model(Arc::new(server.clone()))),
        tools: vec![run.tool(look)],
        ..Default::default()
    });
    let outcome = agent.prompt_messages(prompt).await.expect("run");
    let last = outcome.messages.last().cloned().expect("an answer");
    let requests = server.requests.lock().clone();
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
