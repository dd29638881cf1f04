//! Budgets: limits on turns, tokens, cost, wall time and tool calls of a run, and of all the
//! runs of a session. When one is
//! reached the run does not fail: the next request is a wrap-up turn. It carries a system
//! message that says which budget is spent and removes every tool, so the model answers
//! with what it has; the run then ends normally and says which limit ended it.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use std::time::Duration;

use tern_ai::environment::Environment;

use tern_ai::transcript::get_current_tools;
use tern_ai::{AssistantMessage, Content, Message, SystemMessage, ToolReference};

/// Limits of one run, or of all runs of a session; `None` is no limit.
///
/// Journaled in a run's `run_started` record (camelCase, wall time in ms), so a recovery or a
/// replay runs under the limits the run was started with.
///
/// ```
/// let b = tern_durable::Budget { max_turns: Some(3), ..Default::default() };
/// assert!(b.max_tokens.is_none());
/// assert_eq!(serde_json::to_value(&b).unwrap(), serde_json::json!({"maxTurns": 3}));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    /// Model requests (turns) before the wrap-up turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// Total tokens (input + output, as the provider reports `totalTokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Cost in dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    /// Wall time since the run started.
    #[serde(
        default,
        rename = "maxWallTimeMs",
        with = "millis",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_wall_time: Option<Duration>,
    /// Tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u32>,
}

impl Budget {
    /// No limit at all.
    pub fn is_unlimited(&self) -> bool {
        *self == Budget::default()
    }
}

/// A wall time as whole milliseconds.
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        d.map(|d| d.as_millis() as u64).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}

/// The limits a run starts with: its own, and the session's over all its runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budgets {
    /// Limits of this run.
    #[serde(default, skip_serializing_if = "Budget::is_unlimited")]
    pub run: Budget,
    /// Limits over every run of the session (this one included).
    #[serde(default, skip_serializing_if = "Budget::is_unlimited")]
    pub session: Budget,
}

impl Budgets {
    /// Neither the run nor the session has a limit.
    pub fn is_unlimited(&self) -> bool {
        self.run.is_unlimited() && self.session.is_unlimited()
    }
}

/// What runs have used: one run's spending, or a session's sum over its runs
/// ([`Spent::of_session`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spent {
    /// Model requests (a re-sent request counts once).
    pub turns: u32,
    /// Tokens of the finished responses.
    pub tokens: u64,
    /// Dollars of the finished responses.
    pub cost: f64,
    /// Tool calls started.
    pub tool_calls: u32,
    /// Wall time of the runs, as each process that ran them measured it.
    pub wall_time: Duration,
}

impl Spent {
    /// The sum over every run in a session's `records`: requests and tool calls counted once
    /// each, tokens and cost of each finished response, and the wall time `run_finished`
    /// records carry (a run cut off before its end adds none).
    ///
    /// ```
    /// use tern_durable::{Record, RunEnd, Spent, Step};
    /// let records = vec![Record::new(Step::RunFinished {
    ///     run_id: "r".into(),
    ///     end: RunEnd::Completed,
    ///     wall_time_ms: Some(1500),
    /// })];
    /// assert_eq!(Spent::of_session(&records).wall_time.as_millis(), 1500);
    /// ```
    pub fn of_session(records: &[crate::Record]) -> Spent {
        use crate::Step;
        let mut requests = std::collections::HashSet::new();
        let mut calls = std::collections::HashSet::new();
        let mut spent = Spent::default();
        for r in records {
            match &r.step {
                Step::ModelIntent { id, .. } => {
                    requests.insert(id.as_str());
                }
                Step::ModelOutcome { message, .. } => {
                    spent.tokens += tokens_of(message);
                    spent.cost += message.usage.cost.total;
                }
                Step::ToolIntent { id, .. } => {
                    calls.insert(id.as_str());
                }
                Step::RunFinished {
                    wall_time_ms: Some(ms),
                    ..
                } => spent.wall_time += Duration::from_millis(*ms),
                _ => {}
            }
        }
        spent.turns = u32::try_from(requests.len()).unwrap_or(u32::MAX);
        spent.tool_calls = u32::try_from(calls.len()).unwrap_or(u32::MAX);
        spent
    }

    /// The first limit of `budget` this spending has reached, as a `scope` limit.
    pub fn reaches(&self, budget: &Budget, scope: Scope) -> Option<Limit> {
        let over = |max: Option<u64>, used: u64| max.is_some_and(|m| used >= m);
        let kind = if over(budget.max_turns.map(u64::from), u64::from(self.turns)) {
            Kind::Turns
        } else if over(budget.max_tokens, self.tokens) {
            Kind::Tokens
        } else if budget.max_cost.is_some_and(|m| self.cost >= m) {
            Kind::Cost
        } else if budget.max_wall_time.is_some_and(|m| self.wall_time >= m) {
            Kind::WallTime
        } else if over(
            budget.max_tool_calls.map(u64::from),
            u64::from(self.tool_calls),
        ) {
            Kind::ToolCalls
        } else {
            return None;
        };
        Some(Limit::of(kind, scope))
    }

    fn plus(&self, other: &Spent) -> Spent {
        Spent {
            turns: self.turns.saturating_add(other.turns),
            tokens: self.tokens.saturating_add(other.tokens),
            cost: self.cost + other.cost,
            tool_calls: self.tool_calls.saturating_add(other.tool_calls),
            wall_time: self.wall_time + other.wall_time,
        }
    }
}

fn tokens_of(message: &AssistantMessage) -> u64 {
    let u = &message.usage;
    if u.total_tokens > 0 {
        u.total_tokens
    } else {
        u.input + u.output + u.cache_read + u.cache_write
    }
}

/// Whose limit: the run's or the session's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// One run.
    Run,
    /// All runs of a session.
    Session,
}

enum Kind {
    Turns,
    Tokens,
    Cost,
    WallTime,
    ToolCalls,
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
    /// The session's `max_turns`.
    SessionTurns,
    /// The session's `max_tokens`.
    SessionTokens,
    /// The session's `max_cost`.
    SessionCost,
    /// The session's `max_wall_time`.
    SessionWallTime,
    /// The session's `max_tool_calls`.
    SessionToolCalls,
}

impl Limit {
    fn of(kind: Kind, scope: Scope) -> Limit {
        match (scope, kind) {
            (Scope::Run, Kind::Turns) => Limit::Turns,
            (Scope::Run, Kind::Tokens) => Limit::Tokens,
            (Scope::Run, Kind::Cost) => Limit::Cost,
            (Scope::Run, Kind::WallTime) => Limit::WallTime,
            (Scope::Run, Kind::ToolCalls) => Limit::ToolCalls,
            (Scope::Session, Kind::Turns) => Limit::SessionTurns,
            (Scope::Session, Kind::Tokens) => Limit::SessionTokens,
            (Scope::Session, Kind::Cost) => Limit::SessionCost,
            (Scope::Session, Kind::WallTime) => Limit::SessionWallTime,
            (Scope::Session, Kind::ToolCalls) => Limit::SessionToolCalls,
        }
    }

    /// Whose limit it is.
    pub fn scope(self) -> Scope {
        match self {
            Limit::Turns | Limit::Tokens | Limit::Cost | Limit::WallTime | Limit::ToolCalls => {
                Scope::Run
            }
            _ => Scope::Session,
        }
    }

    /// The name in records and messages (`turns`, `tokens`, `cost`, `wallTime`,
    /// `toolCalls`; `sessionTurns`, … for a session's).
    pub fn name(self) -> &'static str {
        match self {
            Limit::Turns => "turns",
            Limit::Tokens => "tokens",
            Limit::Cost => "cost",
            Limit::WallTime => "wallTime",
            Limit::ToolCalls => "toolCalls",
            Limit::SessionTurns => "sessionTurns",
            Limit::SessionTokens => "sessionTokens",
            Limit::SessionCost => "sessionCost",
            Limit::SessionWallTime => "sessionWallTime",
            Limit::SessionToolCalls => "sessionToolCalls",
        }
    }

    /// The name of the [`Budget`] field as outputs carry it (`"limit": "maxTurns"`, camelCase
    /// like pi's JSON; `sessionMaxTurns`, … for a session's).
    ///
    /// ```
    /// assert_eq!(tern_durable::Limit::SessionCost.key(), "sessionMaxCost");
    /// ```
    pub fn key(self) -> &'static str {
        match self {
            Limit::Turns => "maxTurns",
            Limit::Tokens => "maxTokens",
            Limit::Cost => "maxCost",
            Limit::WallTime => "maxWallTime",
            Limit::ToolCalls => "maxToolCalls",
            Limit::SessionTurns => "sessionMaxTurns",
            Limit::SessionTokens => "sessionMaxTokens",
            Limit::SessionCost => "sessionMaxCost",
            Limit::SessionWallTime => "sessionMaxWallTime",
            Limit::SessionToolCalls => "sessionMaxToolCalls",
        }
    }

    /// The limit named `name` ([`name`](Self::name)), e.g. from a `run_finished` record.
    pub fn from_name(name: &str) -> Option<Limit> {
        ALL.into_iter().find(|l| l.name() == name)
    }
}

const ALL: [Limit; 10] = [
    Limit::Turns,
    Limit::Tokens,
    Limit::Cost,
    Limit::WallTime,
    Limit::ToolCalls,
    Limit::SessionTurns,
    Limit::SessionTokens,
    Limit::SessionCost,
    Limit::SessionWallTime,
    Limit::SessionToolCalls,
];

/// The notice the wrap-up request carries.
pub fn budget_notice(limit: Limit) -> String {
    let what = match limit {
        Limit::Turns | Limit::SessionTurns => "turn",
        Limit::Tokens | Limit::SessionTokens => "token",
        Limit::Cost | Limit::SessionCost => "cost",
        Limit::WallTime | Limit::SessionWallTime => "time",
        Limit::ToolCalls | Limit::SessionToolCalls => "tool-call",
    };
    let of = match limit.scope() {
        Scope::Run => "run",
        Scope::Session => "session",
    };
    format!(
        "The {what} budget of this {of} is spent. No tools are available any more: answer now \
         with what you have, and say what is left undone."
    )
}

/// What a run has used, and whether its wrap-up turn was sent.
#[derive(Debug)]
pub(crate) struct Spending {
    budgets: Budgets,
    /// What the session's earlier runs used.
    before: Spent,
    /// The run's clock: wall time is read from it, so a fixed clock gives the same records.
    env: Environment,
    started_ms: u64,
    used: Spent,
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
    pub(crate) fn new(budgets: Budgets, before: Spent, env: Environment) -> Self {
        Spending {
            budgets,
            before,
            started_ms: env.now_ms(),
            env,
            used: Spent::default(),
            ended_by: None,
        }
    }

    pub(crate) fn budgets(&self) -> &Budgets {
        &self.budgets
    }

    pub(crate) fn before(&self) -> &Spent {
        &self.before
    }

    /// This run's spending so far.
    pub(crate) fn used(&self) -> Spent {
        Spent {
            // A clock set back counts as no time, never as negative.
            wall_time: Duration::from_millis(self.env.now_ms().saturating_sub(self.started_ms)),
            ..self.used.clone()
        }
    }

    fn reached(&self) -> Option<Limit> {
        let used = self.used();
        used.reaches(&self.budgets.run, Scope::Run).or_else(|| {
            self.before
                .plus(&used)
                .reaches(&self.budgets.session, Scope::Session)
        })
    }

    /// Decides the next request over `messages`, and counts it.
    pub(crate) fn next_turn(&mut self, messages: &[Message]) -> Turn {
        if let Some(limit) = self.ended_by {
            return Turn::Over(limit);
        }
        let Some(limit) = self.reached() else {
            self.used.turns += 1;
            return Turn::Normal;
        };
        self.ended_by = Some(limit);
        self.used.turns += 1;
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
        self.used.tokens += tokens_of(message);
        self.used.cost += message.usage.cost.total;
    }

    /// Counts a tool call; `Err` with the limit when calls are over (after the wrap-up).
    pub(crate) fn tool_call(&mut self) -> Result<(), Limit> {
        if let Some(limit) = self.ended_by {
            return Err(limit);
        }
        self.used.tool_calls += 1;
        Ok(())
    }
}
