//! Running a worker: it hosts the session workflow and the activities of one provider
//! configuration and one tool set.

use std::time::Duration;

use temporalio_client::Client;
use temporalio_sdk::{Runtime, Worker, WorkerOptions};

use crate::activities::AgentActivities;
use crate::error::Error;
use crate::workflow::AgentWorkflow;

/// How long a session's next workflow task waits for the worker that ran the last one
/// before any worker may take it. The default (10 s) is what a failover costs on top of the
/// heartbeat timeout; a healthy worker picks its tasks up in milliseconds.
const STICKY_TIMEOUT: Duration = Duration::from_secs(2);

/// Builds a worker on `task_queue` hosting the session workflow and `activities`. Run it
/// with `worker.run().await` inside a tokio runtime; the future is not `Send` (spawn it with
/// `spawn_local` or await it directly).
pub fn build_worker(
    runtime: &Runtime,
    client: Client,
    task_queue: &str,
    activities: AgentActivities,
) -> Result<Worker, Error> {
    let options = WorkerOptions::new(task_queue)
        .register_workflow::<AgentWorkflow>()
        .map_err(|e| Error::Worker(e.to_string()))?
        .register_activities(activities)
        .sticky_queue_schedule_to_start_timeout(STICKY_TIMEOUT)
        .build();
    Worker::new(runtime, client, options).map_err(|e| Error::Worker(e.to_string()))
}

/// A Temporal runtime on the current tokio runtime.
pub fn runtime() -> Result<Runtime, Error> {
    Runtime::from_current_tokio(Default::default()).map_err(|e| Error::Worker(e.to_string()))
}
