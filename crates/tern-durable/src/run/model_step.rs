//! The model-request step: a stream function around the real one. Live, it journals the
//! intent (with the context digest) before the request and the final message after it,
//! before the loop sees that message. Recovering, it serves recorded final messages instead
//! of sending, and re-sends a request that was cut off.

use std::sync::Arc;

use tern_ai::{
    assistant_stream, AssistantMessage, AssistantMessageEvent, AssistantMessageEventSender,
    Context, Model, PartialMessage, StopReason, StreamFn, StreamOptions, StreamStart,
};

use tern_agent::{ResponsePartials, Restart};

use super::RunInner;
use crate::budget::Turn;
use crate::digest::{request_digests_with, RequestDigests};
use crate::replay::Divergence;
use crate::{Record, Step};

/// A [`StreamFn`] that journals each request of a durable run.
pub(super) struct DurableModel {
    pub(super) run: Arc<RunInner>,
    pub(super) inner: Arc<dyn StreamFn>,
}

/// What to do with one request.
enum Plan {
    /// Served from the journal: the final message, after the messages a repeated `start`
    /// left behind.
    Recorded {
        message: Box<AssistantMessage>,
        restarts: Vec<Restart>,
    },
    /// Sent: the step id and its attempt.
    Live { id: String, attempt: u32 },
    /// Recovery found another request than the journal's: refuse to go on.
    Diverged(String),
}

impl StreamFn for DurableModel {
    fn stream(&self, model: &Model, context: Context, options: &StreamOptions) -> StreamStart {
        let (tx, rx) = assistant_stream();
        let turn = self.run.spending.lock().next_turn(&context.messages);
        let context = match turn {
            Turn::Normal => context,
            Turn::WrapUp(messages) => Context::new(messages),
            Turn::Over(limit) => {
                let why = format!("the {} budget is spent", limit.name());
                push_final(&tx, error_message(model, self.run.env.now_ms(), why));
                return Ok(rx);
            }
        };
        let digests = request_digests_with(&context.messages, &mut self.run.context_digests.lock());
        let plan = self.run.plan_model(&digests);
        match plan {
            Plan::Recorded { message, restarts } => {
                self.run.spending.lock().spent(&message);
                // The partials a repeated `start` left behind, as the loop saw them, so its
                // context, and the next request, is the recorded one.
                let ended_on = PartialMessage::new(*message);
                for restart in restarts {
                    tx.push(AssistantMessageEvent::Start {
                        partial: restart.into_partial(&ended_on),
                    });
                }
                push_ended_on(&tx, ended_on);
            }
            Plan::Diverged(why) => {
                push_final(&tx, error_message(model, self.run.env.now_ms(), why));
            }
            Plan::Live { id, attempt } => {
                let run = self.run.clone();
                let inner = self.inner.clone();
                let model = model.clone();
                // The request is sent after the intent is written, so it keeps its options.
                let options = options.clone();
                // Run by the loop's own polls of the stream: no task per request, and the
                // upstream events reach the loop without a hop through the runtime.
                let forward = async move {
                    let intent = Record::new(Step::ModelIntent {
                        id: id.clone(),
                        run_id: run.run_id.clone(),
                        attempt,
                        context_digest: digests.context,
                        system_digest: digests.system,
                        tools_digest: digests.tools,
                    });
                    let now = || run.env.now_ms();
                    if let Err(e) = run.journal.append(&intent).await {
                        let why = format!("the request was not sent: {e}");
                        return push_final(&tx, error_message(&model, now(), why));
                    }
                    let mut upstream = match inner.stream(&model, context, &options) {
                        Ok(s) => s,
                        Err(e) => {
                            return push_final(&tx, error_message(&model, now(), e.to_string()))
                        }
                    };
                    let mut partials = ResponsePartials::default();
                    while let Some(event) = upstream.next().await {
                        match event {
                            AssistantMessageEvent::Done { .. }
                            | AssistantMessageEvent::Error { .. } => break,
                            other => {
                                partials.observe(&other);
                                tx.push(other);
                            }
                        }
                    }
                    let done = upstream.result().await;
                    let restarts = partials.restarts(&done);
                    drop((upstream, partials));
                    // The stream's own copy went with it, so a message no partial shares is
                    // ours alone and moves into the record, and out of it again, without a
                    // copy; one a partial shares (a provider's) is copied, and the loop gets
                    // the shared one, as without a journal.
                    let (message, done) = match Arc::try_unwrap(done) {
                        Ok(message) => (message, None),
                        Err(done) => ((*done).clone(), Some(done)),
                    };
                    run.spending.lock().spent(&message);
                    let outcome = Record::new(Step::ModelOutcome {
                        id,
                        message,
                        restarts,
                    });
                    if let Err(e) = run.journal.append(&outcome).await {
                        let why = format!("the response was not recorded: {e}");
                        return push_final(&tx, error_message(&model, now(), why));
                    }
                    match (done, outcome.step) {
                        (Some(done), _) => push_end(&tx, done),
                        (None, Step::ModelOutcome { message, .. }) => {
                            push_end(&tx, Arc::new(message))
                        }
                        // Built as a model outcome just above.
                        (None, _) => {}
                    }
                };
                return Ok(rx.driven_by(forward));
            }
        }
        Ok(rx)
    }
}

impl RunInner {
    fn plan_model(&self, digests: &RequestDigests) -> Plan {
        let n = {
            let mut cursor = self.cursor.lock();
            cursor.next_model += 1;
            cursor.next_model - 1
        };
        self.deliver_recorded(n);
        self.note_request(n);
        let cursor = self.cursor.lock();
        let Some(m) = cursor.recorded.models.get(n) else {
            if self.offline {
                drop(cursor);
                return self.diverge(Divergence::ExtraRequest { request: n + 1 });
            }
            return Plan::Live {
                id: format!("{}:m{n}", self.run_id),
                attempt: 1,
            };
        };
        let request = n + 1;
        let divergence = if m.digests.system != digests.system {
            Some(Divergence::SystemPrompt { request })
        } else if m.digests.tools != digests.tools {
            Some(Divergence::Tools { request })
        } else if m.digests.context != digests.context {
            Some(Divergence::Context { request })
        } else {
            None
        };
        let plan = match (&m.outcome, divergence) {
            (_, Some(d)) => Err(d),
            (Some(message), None) => Ok(Plan::Recorded {
                message: Box::new(message.clone()),
                restarts: m.restarts.clone(),
            }),
            (None, None) if self.offline => Err(Divergence::ExtraRequest { request }),
            (None, None) => Ok(Plan::Live {
                id: m.id.clone(),
                attempt: m.attempts + 1,
            }),
        };
        drop(cursor);
        plan.unwrap_or_else(|d| self.diverge(d))
    }

    fn diverge(&self, d: Divergence) -> Plan {
        let text = d.to_string();
        self.note_divergence(d);
        Plan::Diverged(format!("{text}; the run was not continued"))
    }
}

fn error_message(model: &Model, now_ms: u64, why: String) -> AssistantMessage {
    AssistantMessage {
        stop_reason: StopReason::Error,
        error_message: Some(format!("durable run: {why}")),
        api: model.api.as_str().into(),
        provider: model.provider.as_str().into(),
        model: model.id.as_str().into(),
        timestamp: now_ms,
        ..AssistantMessage::default()
    }
}

/// A whole response as the provider would stream it: `start`, then `done` or `error`.
fn push_final(tx: &AssistantMessageEventSender, message: AssistantMessage) {
    push_ended_on(tx, PartialMessage::new(message));
}

/// `start` with `partial`, then the end sharing its message, as a provider's events share
/// the one partial they build.
fn push_ended_on(tx: &AssistantMessageEventSender, partial: PartialMessage) {
    let message = partial.shared();
    tx.push(AssistantMessageEvent::Start { partial });
    push_end(tx, message);
}

/// The final event of a response.
fn push_end(tx: &AssistantMessageEventSender, message: Arc<AssistantMessage>) {
    let reason = message.stop_reason;
    match reason {
        StopReason::Error | StopReason::Aborted => tx.push(AssistantMessageEvent::Error {
            reason,
            error: message,
        }),
        _ => tx.push(AssistantMessageEvent::Done { reason, message }),
    }
}
