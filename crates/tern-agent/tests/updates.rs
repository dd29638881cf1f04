//! Partial results a tool sends from a thread of its own, while the loop waits on the tool,
//! reach the listeners in order, before the call's end.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tern_agent::{Agent, AgentEvent, AgentOptions, AgentTool, ToolResult};
use tern_ai::faux::{FauxModel, FauxResponse};

/// A tool whose updates come from a std thread, a few milliseconds apart, while `execute`
/// waits for the thread to finish.
fn threaded_tool() -> AgentTool {
    AgentTool::dynamic(
        "watch",
        "Sends three partial results from a thread.",
        json!({"type": "object", "properties": {"tag": {"type": "string"}}}),
        |input| async move {
            let tag = input
                .args
                .get("tag")
                .and_then(|t| t.as_str())
                .unwrap_or("")
                .to_string();
            let (done, finished) = tokio::sync::oneshot::channel();
            let updater = input.updater.clone();
            let t = tag.clone();
            std::thread::spawn(move || {
                for i in 0..3 {
                    std::thread::sleep(Duration::from_millis(5));
                    updater.update(ToolResult::text(format!("{t}{i}")));
                }
                let _ = done.send(());
            });
            let _ = finished.await;
            Ok(ToolResult::text(format!("{tag} done")))
        },
    )
}

/// The text of a result's first block.
fn text_of(result: &ToolResult) -> String {
    result
        .content
        .iter()
        .flatten()
        .find_map(|b| b.as_text().map(str::to_string))
        .unwrap_or_default()
}

fn record(agent: &Agent) -> Arc<Mutex<Vec<String>>> {
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    agent.subscribe_sync(move |e| {
        let line = match e {
            AgentEvent::ToolExecutionStart { tool_call } => format!("start {}", tool_call.id),
            AgentEvent::ToolExecutionUpdate {
                tool_call,
                partial_result,
            } => format!("update {} {}", tool_call.id, text_of(partial_result)),
            AgentEvent::ToolExecutionEnd { tool_call, .. } => format!("end {}", tool_call.id),
            _ => return,
        };
        l.lock().unwrap().push(line);
    });
    log
}

#[tokio::test]
async fn updates_from_a_tool_thread_arrive_in_order_before_the_end() {
    let agent = Agent::new(AgentOptions {
        stream_fn: Some(Arc::new(FauxModel::new(vec![
            FauxResponse::tool_call("c1", "watch", json!({"tag": "a"})),
            FauxResponse::text("ok"),
        ]))),
        tools: vec![threaded_tool()],
        ..Default::default()
    });
    let log = record(&agent);
    agent.prompt("go").await.unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        [
            "start c1",
            "update c1 a0",
            "update c1 a1",
            "update c1 a2",
            "end c1"
        ]
    );
}

#[tokio::test]
async fn each_call_of_a_parallel_batch_gets_its_own_updates() {
    let agent = Agent::new(AgentOptions {
        stream_fn: Some(Arc::new(FauxModel::new(vec![
            FauxResponse::tool_calls(vec![
                ("c1", "watch", json!({"tag": "a"})),
                ("c2", "watch", json!({"tag": "b"})),
            ]),
            FauxResponse::text("ok"),
        ]))),
        tools: vec![threaded_tool()],
        ..Default::default()
    });
    let log = record(&agent);
    agent.prompt("go").await.unwrap();
    let log = log.lock().unwrap();
    for (id, tag) in [("c1", "a"), ("c2", "b")] {
        let mine: Vec<&str> = log
            .iter()
            .filter(|l| l.split(' ').nth(1) == Some(id))
            .map(String::as_str)
            .collect();
        let expected: Vec<String> = std::iter::once(format!("start {id}"))
            .chain((0..3).map(|i| format!("update {id} {tag}{i}")))
            .chain(std::iter::once(format!("end {id}")))
            .collect();
        assert_eq!(mine, expected, "{log:?}");
    }
}
