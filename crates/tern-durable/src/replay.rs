//! Record/replay: re-run a recorded run offline against its recorded model outputs and tool
//! results (and recorded hook decisions, such as permission answers), and report the first
//! place where the agent now behaves differently, or that it is identical.
//! Usable in a test to pin an agent's behaviour.
//!
//! The agent under test is built by the caller (its system prompt, tools, hooks) around the
//! replay's stream function and tool wrapper; nothing is sent to a model and no tool runs.

use std::sync::Arc;

use tern_agent::Agent;
use tern_ai::{BoxError, Context, Model, StreamFn, StreamOptions};

use crate::{DurableRun, Journal, JournalError, MemoryJournal, Record, Recovery};

/// The first difference between a recorded run and its replay.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Divergence {
    /// The system prompt of a request differs.
    #[error("model request {request}: the system prompt differs from the recording")]
    SystemPrompt {
        /// 1-based request.
        request: usize,
    },
    /// The tool set or a tool's schema differs.
    #[error("model request {request}: the tool set or a tool schema differs from the recording")]
    Tools {
        /// 1-based request.
        request: usize,
    },
    /// The messages sent differ (system prompt and tools equal).
    #[error("model request {request}: the request context differs from the recording")]
    Context {
        /// 1-based request.
        request: usize,
    },
    /// The agent made a request the recording does not have.
    #[error("model request {request} was not in the recording")]
    ExtraRequest {
        /// 1-based request.
        request: usize,
    },
    /// The agent made fewer requests than recorded.
    #[error("the recording has {recorded} model requests, the replay made {made}")]
    MissingRequests {
        /// Recorded requests.
        recorded: usize,
        /// Requests made.
        made: usize,
    },
    /// Tool calls started in another order.
    #[error("tool call {index}: the recording started {recorded}, the replay started {now}")]
    ToolCallOrder {
        /// 1-based position among the run's tool calls.
        index: usize,
        /// The call id recorded there.
        recorded: String,
        /// The call id started now.
        now: String,
    },
    /// A hook's decision about a tool call differs: the recording asked and the policy now
    /// decides without asking, it asks now and the recording did not, or it asks another
    /// question.
    #[error(
        "tool call {call_id}: the {hook} hook's decision differs from the recording: {detail}"
    )]
    HookDecision {
        /// The hook (e.g. `permission`).
        hook: String,
        /// The call id.
        call_id: String,
        /// What differs.
        detail: String,
    },
    /// A tool call the recording does not have.
    #[error("tool call {call_id} ({tool}) was not in the recording")]
    ExtraToolCall {
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
    },
}

/// What a replay found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplayReport {
    /// The agent made the same requests and tool calls, in the same order.
    Identical,
    /// The first difference.
    Diverged(Divergence),
}

impl std::fmt::Display for ReplayReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplayReport::Identical => f.write_str("identical"),
            ReplayReport::Diverged(d) => write!(f, "diverged: {d}"),
        }
    }
}

/// A model that is never reached: a replay serves recorded outputs only.
struct Offline;

impl StreamFn for Offline {
    fn stream(
        &self,
        _model: &Model,
        _context: Context,
        _options: &StreamOptions,
    ) -> Result<tern_ai::AssistantMessageEventStream, BoxError> {
        Err("a replay sends no request".into())
    }
}

/// Replays the last run of `records` on the agent `build` makes.
///
/// `build` gets the replay's run and the stream function to give the agent; it wraps each
/// tool with [`DurableRun::tool`] and starts from `transcript` (the messages the run
/// started from, `&[]` for a fresh agent). A journal of another transcript is an error.
pub async fn replay(
    records: Vec<Record>,
    transcript: &[tern_ai::Message],
    build: impl FnOnce(&DurableRun, Arc<dyn StreamFn>) -> Agent,
) -> Result<ReplayReport, JournalError> {
    let mut records = records;
    // A replay re-runs the whole run, finished or not.
    if let Some(last) = records.last() {
        if matches!(last.step, crate::Step::RunFinished { .. }) {
            records.pop();
        }
    }
    let journal: Arc<dyn Journal> = Arc::new(MemoryJournal::new(records));
    let (run, prompt) = match DurableRun::recover(journal, transcript)? {
        Recovery::NothingInterrupted => return Ok(ReplayReport::Identical),
        Recovery::Interrupted { run, prompt, .. } => (run, prompt),
    };
    let run = run.offline();
    let agent = build(&run, run.model(Arc::new(Offline)));
    let _inputs = run.attach(&agent);
    // A diverged run ends with an error message, which is what the report is about.
    let _ = agent.prompt_messages(prompt).await;
    Ok(match run.first_divergence() {
        Some(d) => ReplayReport::Diverged(d),
        None => ReplayReport::Identical,
    })
}
