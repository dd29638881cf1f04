//! Shared by the Temporal tests: a dev server, a worker, and event normalization.

#![allow(dead_code)]

pub mod dev_server;

use std::time::{Duration, Instant};

use serde_json::Value;
use temporalio_client::Client;
use temporalio_sdk::{Runtime, Worker, WorkerOptions};
use tern_ai::{Message, Model};
use tern_temporal::{
    build_worker, connect_client, runtime, AgentActivities, AgentWorkflow, Sessions,
};

/// Connects (retrying while the fresh server starts its namespace).
pub async fn sessions(address: &str, task_queue: &str) -> Sessions {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match Sessions::connect(address, "default", task_queue).await {
            Ok(s) => return s,
            Err(e) if Instant::now() > deadline => panic!("no Temporal at {address}: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// A worker of this process hosting `activities`; run it beside a test with
/// [`with_worker`]. Keep the runtime alive while it runs.
pub async fn worker(
    address: &str,
    task_queue: &str,
    activities: AgentActivities,
) -> (Runtime, Worker) {
    let (client, rt) = client_and_runtime(address).await;
    let worker = build_worker(&rt, client, task_queue, activities).expect("a worker");
    (rt, worker)
}

/// A worker that caches no workflow: every workflow task replays the session's history
/// from its start, so a workflow whose commands differ on replay fails its tasks.
pub async fn replaying_worker(
    address: &str,
    task_queue: &str,
    activities: AgentActivities,
) -> (Runtime, Worker) {
    let (client, rt) = client_and_runtime(address).await;
    let options = WorkerOptions::new(task_queue)
        .register_workflow::<AgentWorkflow>()
        .expect("the workflow registers")
        .register_activities(activities)
        .max_cached_workflows(0)
        .build();
    let worker = Worker::new(&rt, client, options).expect("a worker");
    (rt, worker)
}

/// What a worker is built from: a client of the server at `address` and a Temporal runtime.
async fn client_and_runtime(address: &str) -> (Client, Runtime) {
    let client = connect_client(address, "default").await.expect("a client");
    (client, runtime().expect("a Temporal runtime"))
}

/// Runs `body` while `worker` runs beside it on this thread (its workflows are not `Send`).
pub async fn with_worker<F: std::future::Future>(mut worker: Worker, body: F) -> F::Output {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            tokio::task::spawn_local(async move { worker.run().await });
            body.await
        })
        .await
}

/// The model the tests' faux scripts answer as.
pub fn faux_model() -> Model {
    Model {
        id: "faux-1".into(),
        provider: "faux".into(),
        api: "faux".into(),
        ..Model::default()
    }
}

/// Messages as JSON without their times, to compare across runs.
pub fn normalized(messages: &[Message]) -> Vec<Value> {
    messages
        .iter()
        .map(|m| {
            let mut v = serde_json::to_value(m).expect("messages serialize");
            strip_times(&mut v);
            v
        })
        .collect()
}

/// Removes what differs between two runs of the same script: wall-clock times and
/// durations.
pub fn strip_times(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("timestamp");
            m.remove("durationMs");
            m.values_mut().for_each(strip_times);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_times),
        _ => {}
    }
}

/// Events compared across runs: times and durations stripped, and the partial message of
/// streaming events left out (its state when a subscriber reads it depends on how far the
/// producer got; kinds, deltas and order are compared).
pub fn comparable(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .map(|e| {
            let mut e = e.clone();
            strip_times(&mut e);
            if e["type"] == "message_update" {
                if let Some(m) = e.as_object_mut() {
                    m.remove("message");
                }
                if let Some(m) = e["assistantMessageEvent"].as_object_mut() {
                    m.remove("partial");
                }
            }
            if e["type"] == "message_start" && e["message"]["role"] == "assistant" {
                e["message"] = serde_json::json!({"role": "assistant"});
            }
            e
        })
        .collect()
}
