//! A run's life in the agent: claim the agent, set the loop up from the state and settings,
//! run it with panics contained, turn a failure into the reference's failure message, and
//! release the agent with the run's outcome.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Waker;

use futures::future::{BoxFuture, FutureExt};
use tern_ai::{
    AssistantMessage, Content, ContentBlock, Message, StopReason, StreamFn, StreamOptions,
};
use tokio_util::sync::CancellationToken;

use super::listeners::AgentSink;
use super::{Agent, Inner};
use crate::agent_loop::{run_continue, run_prompts, Run};
use crate::config::{reasoning_of, AgentContext, AgentLoopConfig, MessageSource};
use crate::error::AgentError;
use crate::events::{AgentEvent, EventSink};
use crate::hooks::Hooks;
use crate::outcome::{RunEnding, RunOutcome};

/// The agent's runs, as every handle of the agent sees them.
#[derive(Default)]
pub(super) struct Runs {
    /// The active run's signal, while a run is active.
    pub(super) active: Option<CancellationToken>,
    /// How many runs began; the active one is the last.
    began: u64,
    /// How many runs ended.
    ended: u64,
    /// Who waits for a run to end ([`Agent::wait_for_idle`]).
    waiters: Vec<Waker>,
}

impl Runs {
    /// The number of the active run, `None` when the agent is idle.
    pub(super) fn active_number(&self) -> Option<u64> {
        self.active.as_ref().map(|_| self.began)
    }

    /// Whether run `number` has ended; if not, `waker` is woken when it does.
    pub(super) fn ended_or_wake(&mut self, number: u64, waker: &Waker) -> bool {
        if self.ended >= number {
            return true;
        }
        if !self.waiters.iter().any(|w| w.will_wake(waker)) {
            self.waiters.push(waker.clone());
        }
        false
    }
}

/// The active run, as the run itself holds it. Dropped without [`Agent::end`] (the prompt's
/// future was dropped mid-run), it cancels the run's signal and releases the agent, so the
/// agent is not left busy forever.
pub(super) struct RunHandle {
    signal: CancellationToken,
    // Transcript length when the run began: what lies past it, the run added.
    start: usize,
    // Released by `end`; `None` afterwards.
    inner: Option<Arc<Inner>>,
}

impl Drop for RunHandle {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            self.signal.cancel();
            {
                let mut st = inner.state.lock();
                st.settle_run(&inner.changes);
                st.transcript.end_run();
            }
            release(&inner);
        }
    }
}

/// Marks the active run ended and wakes those waiting for it.
fn release(inner: &Inner) {
    let waiters = {
        let mut runs = inner.runs.lock();
        runs.active = None;
        runs.ended = runs.began;
        std::mem::take(&mut runs.waiters)
    };
    waiters.into_iter().for_each(Waker::wake);
}

/// What a run starts from.
pub(super) enum Start {
    /// New messages, as `prompt` gives them (`skip_initial_steering` when they are the
    /// steering queue's own).
    Prompt {
        messages: Vec<Message>,
        skip_initial_steering: bool,
    },
    /// The transcript as it is.
    Continue,
}

impl Agent {
    /// Claims the agent for a run; `busy` when another run holds it.
    pub(super) fn begin(&self, busy: AgentError) -> Result<RunHandle, AgentError> {
        let mut runs = self.inner.runs.lock();
        if runs.active.is_some() {
            return Err(busy);
        }
        let signal = CancellationToken::new();
        runs.active = Some(signal.clone());
        runs.began += 1;
        drop(runs);
        let mut st = self.inner.state.lock();
        st.is_streaming = true;
        st.clear_streaming(&self.inner.changes);
        st.error_message = None;
        st.transcript.begin_run();
        Ok(RunHandle {
            signal,
            start: st.transcript.len(),
            inner: Some(self.inner.clone()),
        })
    }

    /// Runs the loop for a claimed run and releases the agent.
    pub(super) async fn run(&self, run: RunHandle, start: Start) -> RunOutcome {
        let skip = matches!(
            start,
            Start::Prompt {
                skip_initial_steering: true,
                ..
            }
        );
        let (context, config, stream_fn) = self.loop_setup(skip, run.signal.clone());
        let sink = AgentSink::new(self.inner.clone(), run.signal.clone());
        let looped = Run::new(config, run.signal.clone(), stream_fn);
        let result = match start {
            Start::Prompt { messages, .. } => {
                contain_panics(Box::pin(run_prompts(messages, context, looped, &sink))).await
            }
            Start::Continue => contain_panics(Box::pin(run_continue(context, looped, &sink))).await,
        };
        Box::pin(self.end(run, result)).await
    }

    async fn end(
        &self,
        mut run: RunHandle,
        result: Result<(Vec<Message>, RunEnding), AgentError>,
    ) -> RunOutcome {
        let outcome = match result {
            Ok((messages, ending)) => RunOutcome::new(ending, messages),
            Err(e) => {
                let ending = if run.signal.is_cancelled() {
                    RunEnding::Aborted
                } else {
                    RunEnding::Failed(e.to_string())
                };
                self.handle_run_failure(e, &run.signal).await;
                let added = self.inner.state.lock().transcript.with(|messages| {
                    messages
                        .get(run.start..)
                        .map(<[Message]>::to_vec)
                        .unwrap_or_default()
                });
                RunOutcome::new(ending, added)
            }
        };
        self.inner.state.lock().settle_run(&self.inner.changes);
        // Released here rather than by the handle's drop: the agent stays busy until the
        // state is settled, and packing follows the release.
        run.inner = None;
        release(&self.inner);
        self.pack_when_idle(long_to_pack(&outcome.messages));
        outcome
    }

    /// Idle again: what the run appended joins the packed transcript. Encoding it and
    /// freeing the decoded messages costs about 0.15 µs a message and more for long texts: a
    /// short run's are packed now, a `long` run's ([`long_to_pack`]) off the caller's path, in
    /// a task of its own (when there is a runtime) that finds the agent idle, or leaves the
    /// work to the run that has begun meanwhile. A task per run would cost more than it saves
    /// for a few short messages.
    fn pack_when_idle(&self, long: bool) {
        let pack = |inner: &Inner| {
            let mut st = inner.state.lock();
            if !st.is_streaming {
                st.transcript.end_run();
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) if long => {
                let inner = Arc::downgrade(&self.inner);
                runtime.spawn(async move {
                    if let Some(inner) = inner.upgrade() {
                        pack(&inner);
                    }
                });
            }
            _ => pack(&self.inner),
        }
    }

    async fn handle_run_failure(&self, error: AgentError, signal: &CancellationToken) {
        let model = self.inner.state.lock().model.clone();
        let failure = Message::from(AssistantMessage {
            content: vec![ContentBlock::text("")],
            api: model.api.as_str().into(),
            provider: model.provider.as_str().into(),
            model: model.id.as_str().into(),
            stop_reason: if signal.is_cancelled() {
                StopReason::Aborted
            } else {
                StopReason::Error
            },
            error_message: Some(error.to_string()),
            timestamp: tern_ai::clock::now_ms(),
            ..Default::default()
        });
        let sink = AgentSink::new(self.inner.clone(), signal.clone());
        sink.emit(AgentEvent::MessageStart {
            message: failure.clone(),
        })
        .await;
        sink.emit(AgentEvent::MessageEnd {
            message: failure.clone(),
        })
        .await;
        sink.emit(AgentEvent::TurnEnd {
            message: failure.clone(),
            tool_results: Vec::new(),
        })
        .await;
        sink.emit(AgentEvent::AgentEnd {
            messages: vec![failure],
        })
        .await;
    }

    fn loop_setup(
        &self,
        skip_initial_steering: bool,
        signal: CancellationToken,
    ) -> (AgentContext, AgentLoopConfig, Arc<dyn StreamFn>) {
        let (context, model, level) = {
            let st = self.inner.state.lock();
            (
                AgentContext::new(st.transcript.to_vec(), st.tools.clone()),
                st.model.clone(),
                st.thinking_level,
            )
        };
        let settings = self.inner.settings.lock();
        // The queues are drained when the loop asks, which it awaits at once.
        // The run holds the agent (for the run's length; nothing the agent keeps holds the
        // run), so that asking its queues, which are empty at almost every turn, takes no
        // lock nor an upgrade of a weak handle.
        let inner = self.inner.clone();
        let skip = AtomicBool::new(skip_initial_steering);
        let steering: MessageSource = Arc::new(move || {
            if skip.load(Ordering::Relaxed) && skip.swap(false, Ordering::SeqCst) {
                return ready_messages(Vec::new());
            }
            ready_messages(inner.steering.drain())
        });
        let inner = self.inner.clone();
        let follow: MessageSource = Arc::new(move || ready_messages(inner.follow_up.drain()));
        // Every request of the run borrows these options, with the run's signal and level
        // (the options' own signal is never read, so it is not cloned: a token's clone
        // takes its tree's lock).
        let reasoning = reasoning_of(level);
        let (mut stream_options, hooks) = match &settings.custom {
            Some(s) => (s.stream_options.with_signal(signal), s.hooks.clone()),
            None => (StreamOptions::for_signal(signal), Hooks::default()),
        };
        stream_options.reasoning = reasoning;
        let config = AgentLoopConfig {
            model,
            reasoning,
            stream_options,
            hooks,
            get_steering_messages: Some(steering),
            get_follow_up_messages: Some(follow),
            tool_execution: settings.tool_execution,
        };
        (context, config, settings.stream_fn.clone())
    }
}

/// Already drained messages as the loop's message future. An empty poll, the usual case,
/// allocates nothing: its future is zero-sized.
fn ready_messages(messages: Vec<Message>) -> BoxFuture<'static, Vec<Message>> {
    struct NoMessages;
    impl Future for NoMessages {
        type Output = Vec<Message>;
        fn poll(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Vec<Message>> {
            std::task::Poll::Ready(Vec::new())
        }
    }
    if messages.is_empty() {
        Box::pin(NoMessages)
    } else {
        Box::pin(std::future::ready(messages))
    }
}

/// A panic in a hook or listener fails the run like a hook error instead of unwinding
/// through the agent, which would leave it busy forever.
///
/// Callers pass the run boxed: an agent's prompt future then stays small, which matters when
/// thousands of agents wait at once.
async fn contain_panics<T, F: Future<Output = Result<T, AgentError>>>(
    run: std::pin::Pin<Box<F>>,
) -> Result<T, AgentError> {
    match std::panic::AssertUnwindSafe(run).catch_unwind().await {
        Ok(result) => result,
        Err(payload) => Err(AgentError::Failed(format!(
            "Run panicked: {}",
            crate::tool_exec::panic_text(payload.as_ref())
        ))),
    }
}

/// Whether packing a run's `messages` is long work, better done off the caller's path: more
/// than 64 messages, or more than 16 KB of text and image data. An 800 KB answer takes about
/// a millisecond to encode into fresh memory and free.
fn long_to_pack(messages: &[Message]) -> bool {
    const MESSAGES: usize = 64;
    const BYTES: usize = 16 * 1024;
    if messages.len() > MESSAGES {
        return true;
    }
    let mut bytes = 0;
    for m in messages {
        bytes += match m {
            Message::User(u) => match &u.content {
                Content::Text(t) => t.len(),
                Content::Blocks(b) => block_bytes(b),
            },
            Message::Assistant(a) => block_bytes(&a.content),
            Message::ToolResult(r) => block_bytes(&r.content),
            Message::System(_) | Message::Custom(_) => 0,
        };
        if bytes > BYTES {
            return true;
        }
    }
    false
}

/// The bytes of `blocks`' texts and image data, what makes a message large. Tool-call
/// arguments are left out: measuring them means walking their JSON for every run.
fn block_bytes(blocks: &[ContentBlock]) -> usize {
    blocks
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => t.text.len(),
            ContentBlock::Thinking(t) => t.thinking.len(),
            ContentBlock::Image(i) => i.data.len(),
            ContentBlock::ToolCall(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use tern_ai::{ImageContent, ToolResultMessage, UserMessage};

    use super::*;

    fn user(text: &str) -> Message {
        Message::from(UserMessage {
            content: text.into(),
            timestamp: 0,
            extra: None,
        })
    }

    fn answer(text: &str) -> Message {
        Message::from(AssistantMessage {
            content: vec![ContentBlock::text(text)],
            ..AssistantMessage::default()
        })
    }

    #[test]
    fn a_run_is_long_to_pack_for_its_count_or_its_bytes() {
        let short = [user("hi"), answer("hello")];
        assert!(!long_to_pack(&short));
        let many: Vec<Message> = (0..65).map(|_| user("hi")).collect();
        assert!(long_to_pack(&many), "65 messages");
        assert!(!long_to_pack(&many[..64]), "64 messages");

        let text = "x".repeat(16 * 1024);
        assert!(!long_to_pack(&[answer(&text)]), "16 KB of text");
        let text = "x".repeat(16 * 1024 + 1);
        assert!(long_to_pack(&[answer(&text)]), "a long answer");
        assert!(long_to_pack(&[user(&text)]), "a long prompt");
        let halves = "x".repeat(8 * 1024 + 1);
        assert!(
            long_to_pack(&[user(&halves), answer(&halves)]),
            "bytes add up across messages"
        );

        let image = ContentBlock::Image(ImageContent {
            data: text.clone(),
            mime_type: "image/png".into(),
            extra: None,
        });
        let result = Message::from(ToolResultMessage {
            content: vec![image],
            ..ToolResultMessage::default()
        });
        assert!(long_to_pack(&[result]), "a large image in a tool result");
    }
}
