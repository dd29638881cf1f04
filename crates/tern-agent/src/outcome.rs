//! How a run of the [`Agent`](crate::Agent) ended: [`RunOutcome`] is what `prompt` and
//! `continue_run` return, so that an embedder reads the ending, the new messages and the
//! usage totals without re-deriving them from the transcript.
//!
//! ```
//! use tern_agent::{Agent, RunEnding};
//! use tern_ai::faux::{FauxModel, FauxResponse};
//! use tern_ai::Model;
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let model = FauxModel::new(vec![FauxResponse::text("Hi.")]);
//! let agent = Agent::builder(Model::default(), model).build();
//! let outcome = agent.prompt("hello").await.unwrap();
//! assert_eq!(outcome.ending, RunEnding::Completed);
//! assert_eq!(outcome.messages.len(), 2); // the prompt and the answer
//! assert_eq!(outcome.final_text(), Some("Hi.".to_string()));
//! # });
//! ```

use tern_ai::{AssistantMessage, Message, StopReason, Usage};

/// How a run ended.
///
/// More endings may come (a budget running out, for one): a `match` needs a `_` arm.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunEnding {
    /// The model answered without asking for more tools, and nothing was left queued.
    Completed,
    /// The run's signal fired ([`Agent::abort`](crate::Agent::abort)).
    Aborted,
    /// The provider or a hook failed; the text is the error message recorded on the run's
    /// last assistant message.
    Failed(String),
    /// A hook or a limit stopped the run before the model was done.
    Stopped(StopCause),
}

/// What stopped a run that neither completed nor failed.
///
/// More causes may come: a `match` needs a `_` arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopCause {
    /// Every tool result of the last batch asked to terminate: a tool's `terminate`, an
    /// `after_tool_call` override, or a `before_tool_call` block with `terminate`.
    ToolsTerminated,
    /// `finish_turn` returned [`TurnDecision::End`](crate::hooks::TurnDecision::End).
    FinishTurn,
    /// The last response hit the output token limit (`stopReason: "length"`).
    OutputLimit,
}

/// What a run of the agent produced.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RunOutcome {
    /// How the run ended.
    pub ending: RunEnding,
    /// The messages the run appended to the transcript, in order (prompts included).
    pub messages: Vec<Message>,
    /// The sum of the usage (tokens and cost) of the run's assistant messages.
    pub usage: Usage,
}

impl RunOutcome {
    /// The outcome of a run that appended `messages` and ended as `ending`.
    pub(crate) fn new(ending: RunEnding, messages: Vec<Message>) -> Self {
        let usage = total_usage(messages.iter().filter_map(Message::as_assistant));
        RunOutcome {
            ending,
            messages,
            usage,
        }
    }

    /// This outcome followed by `next`'s, as one: the messages of both in order, the usage
    /// summed, and `next`'s ending (a host that continues the run with queued input reports
    /// the whole of it).
    ///
    /// ```
    /// # use tern_agent::{Agent, RunEnding};
    /// # use tern_ai::{faux::{FauxModel, FauxResponse}, Message, Model};
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let faux = FauxModel::new(vec![FauxResponse::text("one"), FauxResponse::text("two")]);
    /// let agent = Agent::builder(Model::default(), faux).build();
    /// let first = agent.prompt("a").await.expect("runs");
    /// agent.follow_up(Message::user_text("b"));
    /// let both = first.then(agent.continue_run().await.expect("runs"));
    /// assert_eq!(both.messages.len(), 4);
    /// assert_eq!(both.ending, RunEnding::Completed);
    /// # });
    /// ```
    pub fn then(self, next: RunOutcome) -> RunOutcome {
        let mut messages = self.messages;
        messages.extend(next.messages);
        RunOutcome::new(next.ending, messages)
    }

    /// Whether the run completed.
    pub fn is_completed(&self) -> bool {
        self.ending == RunEnding::Completed
    }

    /// The run's last assistant message.
    pub fn final_message(&self) -> Option<&AssistantMessage> {
        self.messages.iter().rev().find_map(Message::as_assistant)
    }

    /// The text of the run's last assistant message.
    pub fn final_text(&self) -> Option<String> {
        self.final_message().map(AssistantMessage::text)
    }
}

/// The ending a final assistant message implies, when it ends the run by itself.
pub(crate) fn ending_of(message: &AssistantMessage) -> Option<RunEnding> {
    match message.stop_reason {
        StopReason::Aborted => Some(RunEnding::Aborted),
        StopReason::Error => Some(RunEnding::Failed(
            message.error_message.clone().unwrap_or_default(),
        )),
        _ => None,
    }
}

/// Token and cost totals of `messages`. A provider's billed total stays marked as billed
/// only when every message's total was.
fn total_usage<'a>(messages: impl Iterator<Item = &'a AssistantMessage>) -> Usage {
    let mut sum = Usage::default();
    let mut all_billed = None;
    for m in messages {
        let u = &m.usage;
        sum.input = sum.input.saturating_add(u.input);
        sum.output = sum.output.saturating_add(u.output);
        sum.cache_read = sum.cache_read.saturating_add(u.cache_read);
        sum.cache_write = sum.cache_write.saturating_add(u.cache_write);
        sum.total_tokens = sum.total_tokens.saturating_add(u.total_tokens);
        sum.cache_write_1h = add_optional(sum.cache_write_1h, u.cache_write_1h);
        sum.reasoning = add_optional(sum.reasoning, u.reasoning);
        let c = &u.cost;
        sum.cost.input += c.input;
        sum.cost.output += c.output;
        sum.cost.cache_read += c.cache_read;
        sum.cost.cache_write += c.cache_write;
        sum.cost.total += c.total;
        let billed = c.total_from_provider == Some(true);
        all_billed = Some(all_billed.unwrap_or(true) && billed);
    }
    sum.cost.total_from_provider = all_billed.filter(|b| *b);
    sum
}

fn add_optional(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tern_ai::Cost;

    fn assistant(stop_reason: StopReason, input: u64, cost: f64) -> Message {
        Message::from(AssistantMessage {
            stop_reason,
            usage: Usage {
                input,
                output: 1,
                total_tokens: input + 1,
                cost: Cost {
                    total: cost,
                    ..Cost::default()
                },
                ..Usage::default()
            }
            .into(),
            ..AssistantMessage::default()
        })
    }

    #[test]
    fn usage_sums_the_assistant_messages_only() {
        let messages = vec![
            Message::user_text("go"),
            assistant(StopReason::ToolUse, 10, 0.5),
            assistant(StopReason::Stop, 20, 0.25),
        ];
        let o = RunOutcome::new(RunEnding::Completed, messages);
        assert_eq!(o.usage.input, 30);
        assert_eq!(o.usage.output, 2);
        assert_eq!(o.usage.total_tokens, 32);
        assert_eq!(o.usage.cost.total, 0.75);
        assert_eq!(o.usage.reasoning, None);
        assert_eq!(o.usage.cost.total_from_provider, None);
        assert!(o.is_completed());
    }

    #[test]
    fn error_and_abort_messages_imply_their_endings() {
        let mut failed = AssistantMessage {
            stop_reason: StopReason::Error,
            error_message: Some("HTTP 500".into()),
            ..AssistantMessage::default()
        };
        assert_eq!(
            ending_of(&failed),
            Some(RunEnding::Failed("HTTP 500".into()))
        );
        failed.stop_reason = StopReason::Aborted;
        assert_eq!(ending_of(&failed), Some(RunEnding::Aborted));
        failed.stop_reason = StopReason::Stop;
        assert_eq!(ending_of(&failed), None);
    }

    #[test]
    fn an_empty_run_has_no_final_message() {
        let o = RunOutcome::new(RunEnding::Completed, Vec::new());
        assert!(o.final_message().is_none());
        assert_eq!(o.usage, Usage::default());
    }
}
