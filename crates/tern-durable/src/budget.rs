//! Budgets: limits on turns, tokens, cost, wall time and tool calls of a run. When one is
//! reached the run does not fail: the next request is a wrap-up turn. It carries a system
//! message that says which budget is spent and removes every tool, so the model answers
//! with what it has; the run then ends normally and says which limit ended it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tern_ai::transcript::get_current_tools;
use tern_ai::{AssistantMessage, Content, Message, SystemMessage, ToolReference};

/// Limits of one run; `None` is no limit.
///
/// ```
/// let b = tern_durable::Budget { max_turns: Some(3), ..Default::default() };
/// assert!(b.max_tokens.is_none());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Budget {
    /// Model requests (turns) before the wrap-up turn.
    pub max_turns: Option<u32>,
    /// Total tokens (input + output, as the provider reports `totalTokens`).
    pub max_tokens: Option<u64>,
    /// Cost in dollars.
    pub max_cost: Option<f64>,
    /// Wall time since the run started.
    pub max_wall_time: Option<Duration>,
    /// Tool calls.
    pub max_tool_calls: Option<u32>,
}

/// Which limit ended a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Limit {
    /// `max_turns`.
    Turns,
    /// `max_tokens`.
    Tokens,
    /// `max_cost`.
    Cost,
    /// `max_wall_time`.
    WallTime,
    /// `max_tool_calls`.
    ToolCalls,
}

impl Limit {
    /// The name in events, records and the CLI (`turns`, `tokens`, `cost`, `wallTime`,
    /// `toolCalls`).
    pub fn name(self) -> &'static str {
        match self {
            Limit::Turns => "turns",
            Limit::Tokens => "tokens",
            Limit::Cost => "cost",
            Limit::WallTime => "wallTime",
            Limit::ToolCalls => "toolCalls",
        }
    }
}

/// The notice the wrap-up request carries.
pub fn budget_notice(limit: Limit) -> String {
    let what = match limit {
        Limit::Turns => "turn",
        Limit::Tokens => "token",
        Limit::Cost => "cost",
        Limit::WallTime => "time",
        Limit::ToolCalls => "tool-call",
    };
    format!(
        "The {what} budget of this run is spent. No tools are available any more: answer now \
         with what you have, and say what is left undone."
    )
}

/// What a run has used, and whether its wrap-up turn was sent.
#[derive(Debug)]
pub(crate) struct Spending {
    budget: Budget,
    started: Instant,
    turns: u32,
    tokens: u64,
    cost: f64,
    tool_calls: u32,
    /// The limit that ended the run, once its wrap-up turn was sent.
    pub(crate) ended_by: Option<Limit>,
}

/// What the next request must be.
pub(crate) enum Turn {
    /// A normal request.
    Normal,
    /// The wrap-up request: the context with the notice appended.
    WrapUp(Vec<Message>),
    /// The wrap-up was already sent and the model asked for more: stop.
    Over(Limit),
}

impl Spending {
    pub(crate) fn new(budget: Budget) -> Self {
        Spending {
            budget,
            started: Instant::now(),
            turns: 0,
            tokens: 0,
            cost: 0.0,
            tool_calls: 0,
            ended_by: None,
        }
    }

    fn reached(&self) -> Option<Limit> {
        let b = &self.budget;
        let over = |max: Option<u64>, used: u64| max.is_some_and(|m| used >= m);
        if over(b.max_turns.map(u64::from), u64::from(self.turns)) {
            Some(Limit::Turns)
        } else if over(b.max_tokens, self.tokens) {
            Some(Limit::Tokens)
        } else if b.max_cost.is_some_and(|m| self.cost >= m) {
            Some(Limit::Cost)
        } else if b.max_wall_time.is_some_and(|m| self.started.elapsed() >= m) {
            Some(Limit::WallTime)
        } else if over(b.max_tool_calls.map(u64::from), u64::from(self.tool_calls)) {
            Some(Limit::ToolCalls)
        } else {
            None
        }
    }

    /// Decides the next request over `messages`, and counts it.
    pub(crate) fn next_turn(&mut self, messages: &[Message]) -> Turn {
        if let Some(limit) = self.ended_by {
            return Turn::Over(limit);
        }
        let Some(limit) = self.reached() else {
            self.turns += 1;
            return Turn::Normal;
        };
        self.ended_by = Some(limit);
        self.turns += 1;
        let removed: Vec<ToolReference> = get_current_tools(messages)
            .iter()
            .map(|t| ToolReference {
                name: t.name.clone(),
            })
            .collect();
        let notice = SystemMessage {
            content: Content::Text(budget_notice(limit)),
            tools_removed: (!removed.is_empty()).then_some(removed),
            timestamp: tern_ai::clock::now_ms(),
            ..SystemMessage::default()
        };
        let mut out = messages.to_vec();
        out.push(Message::System(Arc::new(notice)));
        Turn::WrapUp(out)
    }

    /// Counts a finished response.
    pub(crate) fn spent(&mut self, message: &AssistantMessage) {
        let u = &message.usage;
        let total = if u.total_tokens > 0 {
            u.total_tokens
        } else {
            u.input + u.output + u.cache_read + u.cache_write
        };
        self.tokens += total;
        self.cost += u.cost.total;
    }

    /// Counts a tool call; `Err` with the limit when calls are over (after the wrap-up).
    pub(crate) fn tool_call(&mut self) -> Result<(), Limit> {
        if let Some(limit) = self.ended_by {
            return Err(limit);
        }
        self.tool_calls += 1;
        Ok(())
    }
}
