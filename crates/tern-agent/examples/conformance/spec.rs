//! The scenario format (FORMAT.md 1), parsed and checked before anything runs, so that a
//! bad scenario fails with a clear message instead of half a trace.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Map, Value};
use tern_agent::hooks::AfterToolCallResult;
use tern_agent::{QueueMode, ToolExecutionMode, ToolResult};
use tern_ai::{ContentBlock, Message, StopReason, ThinkingBudgets, ThinkingLevel, Usage};

use super::norm::js_template;

pub type R<T> = Result<T, String>;

pub const DEFAULT_MODEL_ID: &str = "model-a";

pub struct Scenario {
    pub tools: HashMap<String, Arc<ToolDef>>,
    pub agent: Option<AgentSpec>,
    pub hooks: HooksSpec,
    pub listeners: Vec<Arc<ListenerSpec>>,
    pub model: Vec<Arc<ResponseSpec>>,
    pub actions: Vec<Arc<ActionSpec>>,
    pub settle_ms: f64,
}

pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub label: String,
    pub parameters: Value,
    pub execution_mode: Option<ToolExecutionMode>,
    pub prepare: Option<Vec<PrepOp>>,
    pub behavior: Arc<Behaviour>,
    pub calls: HashMap<String, Arc<Behaviour>>,
}

impl ToolDef {
    /// FORMAT.md 1.2's `prepareArguments` ops, applied to a shallow copy; `None` when none
    /// changed anything.
    pub fn prepare_arguments(&self, args: &Value) -> Option<Value> {
        let ops = self.prepare.as_deref().unwrap_or_default();
        let Value::Object(original) = args else {
            return None;
        };
        let mut out: Option<Map<String, Value>> = None;
        for op in ops {
            let cur = out.as_ref().unwrap_or(original);
            match op {
                PrepOp::Rename { from, to } => {
                    if cur.contains_key(from) && !cur.contains_key(to) {
                        let m = out.get_or_insert_with(|| original.clone());
                        let v = m.get(from).cloned().unwrap_or(Value::Null);
                        m.insert(to.clone(), v);
                        m.shift_remove(from);
                    }
                }
                PrepOp::Default { key, value } => {
                    if !cur.contains_key(key) {
                        let m = out.get_or_insert_with(|| original.clone());
                        m.insert(key.clone(), value.clone());
                    }
                }
                PrepOp::Drop { key } => {
                    if cur.contains_key(key) {
                        let m = out.get_or_insert_with(|| original.clone());
                        m.shift_remove(key);
                    }
                }
            }
        }
        out.map(Value::Object)
    }
}

pub enum PrepOp {
    Rename { from: String, to: String },
    Default { key: String, value: Value },
    Drop { key: String },
}

pub struct Behaviour {
    pub steps: Vec<Step>,
    pub ignore_abort: bool,
    pub abort_error: String,
    pub late_updates: Option<Vec<Step>>,
    pub throw: Option<String>,
    pub result: ToolResult,
}

pub enum Step {
    Sleep(f64),
    Update(ToolResult),
    RunToolCall(CallSpec),
    Do(Arc<ActionSpec>),
    Ignored,
}

#[derive(Clone)]
pub struct CallSpec {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

pub struct AgentSpec {
    pub system_prompt: Option<String>,
    /// `None` for `model: null`: the Agent is built without a model.
    pub model: Option<String>,
    pub options: OptionsSpec,
    pub thinking_level: ThinkingLevel,
    pub tools: Vec<String>,
    pub messages: Vec<Message>,
    pub tool_execution: Option<ToolExecutionMode>,
    pub steering_mode: Option<QueueMode>,
    pub follow_up_mode: Option<QueueMode>,
}

#[derive(Default)]
pub struct HooksSpec {
    pub before_tool_call: Option<Vec<Rule>>,
    pub after_tool_call: Option<Vec<Rule>>,
    pub finish_turn: Option<Vec<Rule>>,
    pub prepare_request: Option<Vec<Rule>>,
    pub prepare_next_turn: Option<Vec<Rule>>,
    pub transform_context: Option<TransformSpec>,
    pub convert_to_llm: Option<HashSet<String>>,
}

/// Stream options a scenario sets (Agent: `sessionId`, `maxRetryDelayMs`, `thinkingBudgets`;
/// low-level `config`: `sessionId`, `maxTokens`, `temperature`).
#[derive(Default)]
pub struct OptionsSpec {
    pub session_id: Option<String>,
    pub max_tokens: Option<u64>,
    pub temperature: Option<f64>,
    pub max_retry_delay_ms: Option<u64>,
    pub thinking_budgets: Option<ThinkingBudgets>,
}

impl OptionsSpec {
    /// The request options these settings give.
    pub fn stream_options(&self) -> tern_ai::StreamOptions {
        tern_ai::StreamOptions {
            session_id: self.session_id.clone(),
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            max_retry_delay_ms: self.max_retry_delay_ms,
            thinking_budgets: self.thinking_budgets.clone(),
            ..Default::default()
        }
    }
}

pub struct TransformSpec {
    pub keep_last: Option<f64>,
    pub throw: Option<Value>,
}

/// One hook rule: `match`, side effects, and the outcome keys of every hook kind (each hook
/// reads the ones it knows).
#[derive(Default)]
pub struct Rule {
    pub matcher: Option<Map<String, Value>>,
    pub actions: Vec<Arc<ActionSpec>>,
    pub delay_ms: Option<Value>,
    pub throw: Option<Value>,
    // beforeToolCall
    pub block: Option<Value>,
    pub reason: Option<Value>,
    pub terminate: Option<Value>,
    // afterToolCall: the `result(override)` value and its typed form
    pub override_: Option<(Value, AfterToolCallResult)>,
    // finishTurn
    pub action: Option<Value>,
    // prepareRequest / prepareNextTurn
    pub model: Option<String>,
    pub thinking_level: Option<(String, ThinkingLevel)>,
    pub context_append: Option<(Value, Vec<Message>)>,
    pub messages: Option<(Value, Vec<Message>)>,
    pub context_replace: Option<(Value, Vec<Message>)>,
    pub system_prompt: Option<String>,
    pub context_tools: Option<Vec<String>>,
    // beforeToolCall: keys assigned into the validated arguments
    pub mutate_args: Option<Map<String, Value>>,
}

impl Rule {
    /// Whether the rule returns a replacement context (prepareRequest, prepareNextTurn).
    pub fn changes_context(&self) -> bool {
        self.context_replace.is_some()
            || self.system_prompt.is_some()
            || self.context_tools.is_some()
            || self.context_append.is_some()
    }
}

pub struct ListenerSpec {
    pub name: Value,
    pub events: Option<Vec<String>>,
    pub delay_ms: Option<Value>,
    pub unsubscribe_after: Option<f64>,
}

pub struct ResponseSpec {
    pub content: Vec<ContentBlock>,
    /// Compact JSON of each toolCall block's arguments, in scenario key order.
    pub stop_reason: StopReason,
    pub error_message: Option<String>,
    pub usage: Usage,
    pub chunk_size: usize,
    pub delay_ms: f64,
    pub start_delay_ms: f64,
    pub end_delay_ms: f64,
    pub final_only: bool,
    pub throw: Option<String>,
    /// Iterating the stream fails with this message after `throw_after_events` events.
    pub stream_throw: Option<String>,
    pub throw_after_events: usize,
    /// The stream ends with its result instead of a `done`/`error` event.
    pub no_terminal: bool,
    /// Another `start` before each of these block indices (the block count: after the last).
    pub restart_before: Vec<usize>,
}

pub struct AtSpec {
    pub event: String,
    pub nth: f64,
    pub tool_name: Option<Value>,
    pub role: Option<Value>,
    pub update: Option<Value>,
    pub label: String,
}

pub struct ActionSpec {
    pub do_: String,
    pub at: Option<AtSpec>,
    pub text: Option<String>,
    pub messages: Option<Vec<Message>>,
    pub message: Option<Message>,
    pub tools: Option<Vec<String>>,
    pub model: Option<String>,
    pub thinking_level: Option<ThinkingLevel>,
    pub tool_execution: Option<ToolExecutionMode>,
    pub steering_mode: Option<QueueMode>,
    pub follow_up_mode: Option<QueueMode>,
    pub ms: f64,
    pub tool_call: Option<CallSpec>,
    pub aborted: bool,
    pub prompts: Vec<Message>,
    pub ctx_messages: Vec<Message>,
    pub ctx_tools: Vec<String>,
    pub cfg_model: String,
    pub cfg_thinking_level: ThinkingLevel,
    pub cfg_tool_execution: Option<ToolExecutionMode>,
    pub cfg_options: OptionsSpec,
    /// `false` for `wait: false`: prompt/continue start without being awaited.
    pub wait: bool,
    /// The listener `unsubscribe` removes.
    pub name: Value,
}

const ACTIONS: &[&str] = &[
    "prompt",
    "continue",
    "steer",
    "followUp",
    "abort",
    "reset",
    "set",
    "sleep",
    "snapshot",
    "runToolCall",
    "agentLoop",
    "agentLoopContinue",
    "runAgentLoop",
    "runAgentLoopContinue",
    "waitForIdle",
    "clearSteeringQueue",
    "clearFollowUpQueue",
    "clearAllQueues",
    "unsubscribe",
];

// The small readers live beside this file (the two runners include it by path).
#[path = "spec_read.rs"]
mod read;
use read::*;
pub use read::{message, parse_thinking_level, result_value};

// ------------------------------------------------------------------ scenario

pub fn parse(v: &Value) -> R<Scenario> {
    let root = object(v, "scenario")?;
    let mut tools = HashMap::new();
    for (i, t) in opt_array(root, "tools", "scenario")?
        .into_iter()
        .flatten()
        .enumerate()
    {
        let path = format!("tools[{i}]");
        let def = tool_def(t, &path)?;
        let id = match opt_string(object(t, &path)?, "id", &path)? {
            Some(id) => id,
            None => def.name.clone(),
        };
        tools.insert(id, Arc::new(def));
    }
    let p = Parser {
        tool_ids: tools.keys().cloned().collect(),
        check: true,
    };
    let agent = match get(root, "agent") {
        None => None,
        Some(a) => Some(p.agent(a)?),
    };
    // Steps of tool behaviours may hold actions: check their tool references too.
    for (i, t) in opt_array(root, "tools", "scenario")?
        .into_iter()
        .flatten()
        .enumerate()
    {
        p.check_tool_steps(t, &format!("tools[{i}]"))?;
    }
    let hooks = match get(root, "hooks") {
        None => HooksSpec::default(),
        Some(h) => p.hooks(h)?,
    };
    let mut listeners = Vec::new();
    for (i, l) in opt_array(root, "listeners", "scenario")?
        .into_iter()
        .flatten()
        .enumerate()
    {
        let path = format!("listeners[{i}]");
        let o = object(l, &path)?;
        listeners.push(Arc::new(ListenerSpec {
            name: o.get("name").cloned().unwrap_or(Value::Null),
            events: string_list(o, "events", &path)?,
            delay_ms: duration_value(o, "delayMs", &path)?,
            unsubscribe_after: opt_number(o, "unsubscribeAfter", &path)?,
        }));
    }
    let model = list_at(opt_array(root, "model", "scenario")?, "model", |r, at| {
        response(r, at).map(Arc::new)
    })?
    .unwrap_or_default();
    let actions = list_at(
        opt_array(root, "actions", "scenario")?,
        "actions",
        |a, at| p.action(a, at).map(Arc::new),
    )?
    .unwrap_or_default();
    let settle_ms = opt_number(root, "settleMs", "scenario")?.unwrap_or(20.0);
    Ok(Scenario {
        tools,
        agent,
        hooks,
        listeners,
        model,
        actions,
        settle_ms,
    })
}

fn tool_def(v: &Value, path: &str) -> R<ToolDef> {
    let o = object(v, path)?;
    let name = opt_string(o, "name", path)?.ok_or_else(|| format!("{path}.name: missing"))?;
    let prepare = opt_list(o, "prepareArguments", path, prep_op)?;
    let behavior = match get(o, "behavior") {
        None => Arc::new(behaviour(&Value::Object(Map::new()), path)?),
        Some(b) => Arc::new(behaviour(b, &format!("{path}.behavior"))?),
    };
    let mut calls = HashMap::new();
    if let Some(c) = get(o, "calls") {
        for (id, b) in object(c, &format!("{path}.calls"))? {
            calls.insert(
                id.clone(),
                Arc::new(behaviour(b, &format!("{path}.calls.{id}"))?),
            );
        }
    }
    Ok(ToolDef {
        description: opt_string(o, "description", path)?.unwrap_or_default(),
        label: opt_string(o, "label", path)?.unwrap_or_else(|| name.clone()),
        parameters: get(o, "parameters")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
        execution_mode: opt_tool_execution(o, "executionMode", path)?,
        prepare,
        behavior,
        calls,
        name,
    })
}

fn prep_op(v: &Value, path: &str) -> R<PrepOp> {
    let o = object(v, path)?;
    let key = |k: &str| opt_string(o, k, path)?.ok_or_else(|| format!("{path}.{k}: missing"));
    match opt_string(o, "op", path)?.as_deref() {
        Some("rename") => Ok(PrepOp::Rename {
            from: key("from")?,
            to: key("to")?,
        }),
        Some("default") => Ok(PrepOp::Default {
            key: key("key")?,
            value: o.get("value").cloned().unwrap_or(Value::Null),
        }),
        Some("drop") => Ok(PrepOp::Drop { key: key("key")? }),
        other => Err(format!("{path}: unknown prepareArguments op {other:?}")),
    }
}

fn behaviour(v: &Value, path: &str) -> R<Behaviour> {
    let o = object(v, path)?;
    // Actions inside steps are parsed later (they need the tool ids); see check_tool_steps.
    let p = Parser {
        tool_ids: HashSet::new(),
        check: false,
    };
    let steps = opt_list(o, "steps", path, |st, at| p.step(st, at, false))?.unwrap_or_default();
    let late_updates = opt_list(o, "lateUpdates", path, |st, at| p.step(st, at, true))?;
    let throw = get(o, "throw").map(js_template);
    let result = match get(o, "result") {
        None => tool_result(&serde_json::json!({"text": "ok"}), path)?,
        Some(r) => tool_result(r, &format!("{path}.result"))?,
    };
    Ok(Behaviour {
        steps,
        ignore_abort: get(o, "onAbort").and_then(Value::as_str) == Some("ignore"),
        abort_error: opt_string(o, "abortError", path)?.unwrap_or_else(|| "Tool aborted".into()),
        late_updates,
        throw,
        result,
    })
}

fn call_spec(v: &Value, path: &str) -> R<CallSpec> {
    let o = object(v, path)?;
    Ok(CallSpec {
        id: opt_string(o, "id", path)?.ok_or_else(|| format!("{path}.id: missing"))?,
        name: opt_string(o, "name", path)?.ok_or_else(|| format!("{path}.name: missing"))?,
        arguments: get(o, "arguments")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
    })
}

fn response(v: &Value, path: &str) -> R<ResponseSpec> {
    let o = object(v, path)?;
    let content_v = get(o, "content")
        .cloned()
        .unwrap_or_else(|| Value::Array(Vec::new()));
    let Value::Array(blocks) = content_v else {
        return Err(format!("{path}.content: expected an array"));
    };
    let mut content = Vec::new();
    for (i, b) in blocks.into_iter().enumerate() {
        let bpath = format!("{path}.content[{i}]");
        let mut bo = object(&b, &bpath)?.clone();
        if bo.get("type").and_then(Value::as_str) == Some("toolCall")
            && !bo.contains_key("arguments")
        {
            bo.insert("arguments".into(), Value::Object(Map::new()));
        }
        let block: ContentBlock = serde_json::from_value(Value::Object(bo))
            .map_err(|e| format!("{bpath}: invalid content block: {e}"))?;
        if matches!(block, ContentBlock::Image(_)) {
            return Err(format!("{bpath}: image blocks are not assistant content"));
        }
        content.push(block);
    }
    let has_call = content
        .iter()
        .any(|b| matches!(b, ContentBlock::ToolCall(_)));
    let stop_reason = match get(o, "stopReason") {
        None => {
            if has_call {
                StopReason::ToolUse
            } else {
                StopReason::Stop
            }
        }
        Some(s) => {
            serde_json::from_value(s.clone()).map_err(|e| format!("{path}.stopReason: {e}"))?
        }
    };
    let usage = match get(o, "usage") {
        None => Usage::default(),
        Some(u) => serde_json::from_value(u.clone()).map_err(|e| format!("{path}.usage: {e}"))?,
    };
    let chunk = opt_number(o, "chunkSize", path)?.unwrap_or(0.0);
    Ok(ResponseSpec {
        content,
        stop_reason,
        error_message: opt_string(o, "errorMessage", path)?,
        usage,
        chunk_size: if chunk > 0.0 { chunk as usize } else { 0 },
        delay_ms: opt_number(o, "delayMs", path)?.unwrap_or(0.0),
        start_delay_ms: opt_number(o, "startDelayMs", path)?.unwrap_or(0.0),
        end_delay_ms: opt_number(o, "endDelayMs", path)?.unwrap_or(0.0),
        final_only: get(o, "stream").and_then(Value::as_str) == Some("final-only"),
        throw: get(o, "throw").map(js_template),
        stream_throw: get(o, "streamThrow").map(js_template),
        throw_after_events: opt_number(o, "throwAfterEvents", path)?.unwrap_or(0.0) as usize,
        no_terminal: get(o, "noTerminal").is_some_and(super::norm::truthy),
        restart_before: match get(o, "restartBefore") {
            None => Vec::new(),
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|e| format!("{path}.restartBefore: {e}"))?,
        },
    })
}

struct Parser {
    tool_ids: HashSet<String>,
    /// Whether tool references are checked (off while tool ids are not known yet).
    check: bool,
}

impl Parser {
    fn tool_refs(&self, o: &Map<String, Value>, key: &str, path: &str) -> R<Option<Vec<String>>> {
        let refs = string_list(o, key, path)?;
        if let (true, Some(refs)) = (self.check, &refs) {
            for r in refs {
                if !self.tool_ids.contains(r) {
                    return Err(format!(
                        "{path}.{key}: scenario references unknown tool {r}"
                    ));
                }
            }
        }
        Ok(refs)
    }

    fn agent(&self, v: &Value) -> R<AgentSpec> {
        let path = "agent";
        let o = object(v, path)?;
        Ok(AgentSpec {
            system_prompt: opt_string(o, "systemPrompt", path)?,
            model: match o.get("model") {
                Some(Value::Null) => None,
                _ => Some(opt_string(o, "model", path)?.unwrap_or_else(|| DEFAULT_MODEL_ID.into())),
            },
            options: options_spec(o, path)?,
            thinking_level: opt_thinking_level(o, "thinkingLevel", path)?.unwrap_or_default(),
            tools: self.tool_refs(o, "tools", path)?.unwrap_or_default(),
            messages: messages(o, "messages", path)?.unwrap_or_default(),
            tool_execution: opt_tool_execution(o, "toolExecution", path)?,
            steering_mode: opt_queue_mode(o, "steeringMode", path)?,
            follow_up_mode: opt_queue_mode(o, "followUpMode", path)?,
        })
    }

    fn step(&self, v: &Value, path: &str, late: bool) -> R<Step> {
        let o = object(v, path)?;
        if let Some(ms) = get(o, "sleep") {
            let ms = ms
                .as_f64()
                .ok_or_else(|| format!("{path}.sleep: expected a number"))?;
            return Ok(Step::Sleep(ms));
        }
        if let Some(u) = get(o, "update") {
            return Ok(Step::Update(tool_result(u, &format!("{path}.update"))?));
        }
        if late {
            return Ok(Step::Ignored);
        }
        if let Some(c) = get(o, "runToolCall") {
            return Ok(Step::RunToolCall(call_spec(
                c,
                &format!("{path}.runToolCall"),
            )?));
        }
        if get(o, "do").is_some() {
            return Ok(Step::Do(Arc::new(self.action(v, path)?)));
        }
        Ok(Step::Ignored)
    }

    /// Re-parses `do` steps with the tool ids known, for their tool references.
    fn check_tool_steps(&self, t: &Value, path: &str) -> R<()> {
        let o = object(t, path)?;
        let mut behaviours: Vec<(String, &Value)> = Vec::new();
        if let Some(b) = get(o, "behavior") {
            behaviours.push((format!("{path}.behavior"), b));
        }
        if let Some(Value::Object(c)) = get(o, "calls") {
            for (id, b) in c {
                behaviours.push((format!("{path}.calls.{id}"), b));
            }
        }
        for (bpath, b) in behaviours {
            if let Some(Value::Array(steps)) = b.get("steps") {
                for (i, st) in steps.iter().enumerate() {
                    if st.get("do").is_some_and(|d| !d.is_null())
                        && st.get("sleep").is_none_or(Value::is_null)
                        && st.get("update").is_none_or(Value::is_null)
                        && st.get("runToolCall").is_none_or(Value::is_null)
                    {
                        self.action(st, &format!("{bpath}.steps[{i}]"))?;
                    }
                }
            }
        }
        Ok(())
    }

    fn hooks(&self, v: &Value) -> R<HooksSpec> {
        let path = "hooks";
        let o = object(v, path)?;
        let rules = |key: &str| opt_list(o, key, path, |r, at| self.rule(r, at));
        let transform_context = match get(o, "transformContext") {
            None => None,
            Some(t) => {
                let tp = "hooks.transformContext";
                let to = object(t, tp)?;
                Some(TransformSpec {
                    keep_last: opt_number(to, "keepLast", tp)?,
                    throw: get(to, "throw").cloned(),
                })
            }
        };
        let convert_to_llm = match get(o, "convertToLlm") {
            None => None,
            Some(c) => {
                let cp = "hooks.convertToLlm";
                let co = object(c, cp)?;
                Some(
                    string_list(co, "toUser", cp)?
                        .unwrap_or_default()
                        .into_iter()
                        .collect(),
                )
            }
        };
        Ok(HooksSpec {
            before_tool_call: rules("beforeToolCall")?,
            after_tool_call: rules("afterToolCall")?,
            finish_turn: rules("finishTurn")?,
            prepare_request: rules("prepareRequest")?,
            prepare_next_turn: rules("prepareNextTurn")?,
            transform_context,
            convert_to_llm,
        })
    }

    fn rule(&self, v: &Value, path: &str) -> R<Rule> {
        let o = object(v, path)?;
        let matcher = match get(o, "match") {
            None => None,
            Some(m) => Some(object(m, &format!("{path}.match"))?.clone()),
        };
        let actions = opt_list(o, "actions", path, |a, at| self.action(a, at).map(Arc::new))?
            .unwrap_or_default();
        let override_ = match get(o, "override") {
            Some(ov) if super::norm::truthy(ov) => {
                let value = result_value(ov, &format!("{path}.override"))?;
                let typed = after_result(&value, &format!("{path}.override"))?;
                Some((value, typed))
            }
            _ => None,
        };
        let thinking_level = match opt_string(o, "thinkingLevel", path)? {
            None => None,
            Some(s) => {
                let level = parse_thinking_level(&s, &format!("{path}.thinkingLevel"))?;
                Some((s, level))
            }
        };
        let with_messages = |key: &str| -> R<Option<(Value, Vec<Message>)>> {
            match messages(o, key, path)? {
                None => Ok(None),
                Some(list) => Ok(Some((o[key].clone(), list))),
            }
        };
        Ok(Rule {
            matcher,
            actions,
            delay_ms: duration_value(o, "delayMs", path)?,
            throw: get(o, "throw").cloned(),
            block: get(o, "block").cloned(),
            reason: get(o, "reason").cloned(),
            terminate: get(o, "terminate").cloned(),
            override_,
            action: get(o, "action").cloned(),
            model: opt_string(o, "model", path)?,
            thinking_level,
            context_append: with_messages("contextAppend")?,
            messages: with_messages("messages")?,
            context_replace: with_messages("contextReplace")?,
            system_prompt: opt_string(o, "systemPrompt", path)?,
            context_tools: self.tool_refs(o, "contextTools", path)?,
            mutate_args: match get(o, "mutateArgs") {
                None => None,
                Some(m) => Some(object(m, &format!("{path}.mutateArgs"))?.clone()),
            },
        })
    }

    fn action(&self, v: &Value, path: &str) -> R<ActionSpec> {
        let o = object(v, path)?;
        let do_ = opt_string(o, "do", path)?.ok_or_else(|| format!("{path}.do: missing"))?;
        if !ACTIONS.contains(&do_.as_str()) {
            return Err(format!("runner: unknown action {do_} ({path})"));
        }
        let at = match get(o, "at") {
            None => None,
            Some(at) => Some(at_spec(at, &format!("{path}.at"))?),
        };
        let text = opt_string(o, "text", path)?;
        let msgs = messages(o, "messages", path)?;
        let message = match get(o, "message") {
            None => None,
            Some(m) => Some(message(m, &format!("{path}.message"))?),
        };
        match do_.as_str() {
            "prompt" if text.is_none() && msgs.is_none() => {
                return Err(format!("{path}: prompt needs `text` or `messages`"))
            }
            "steer" | "followUp" if text.is_none() && message.is_none() => {
                return Err(format!("{path}: {do_} needs `text` or `message`"))
            }
            "runToolCall" if get(o, "toolCall").is_none() => {
                return Err(format!("{path}: runToolCall needs `toolCall`"))
            }
            _ => {}
        }
        let tool_call = match get(o, "toolCall") {
            None => None,
            Some(c) => Some(call_spec(c, &format!("{path}.toolCall"))?),
        };
        let (ctx_messages, ctx_tools) = match get(o, "context") {
            None => (Vec::new(), Vec::new()),
            Some(c) => {
                let cp = format!("{path}.context");
                let co = object(c, &cp)?;
                (
                    messages(co, "messages", &cp)?.unwrap_or_default(),
                    self.tool_refs(co, "tools", &cp)?.unwrap_or_default(),
                )
            }
        };
        let (cfg_model, cfg_thinking_level, cfg_tool_execution, cfg_options) =
            match get(o, "config") {
                None => (
                    DEFAULT_MODEL_ID.to_string(),
                    ThinkingLevel::Off,
                    None,
                    OptionsSpec::default(),
                ),
                Some(c) => {
                    let cp = format!("{path}.config");
                    let co = object(c, &cp)?;
                    (
                        opt_string(co, "model", &cp)?.unwrap_or_else(|| DEFAULT_MODEL_ID.into()),
                        opt_thinking_level(co, "thinkingLevel", &cp)?.unwrap_or_default(),
                        opt_tool_execution(co, "toolExecution", &cp)?,
                        options_spec(co, &cp)?,
                    )
                }
            };
        Ok(ActionSpec {
            at,
            text,
            messages: msgs,
            message,
            tools: self.tool_refs(o, "tools", path)?,
            model: opt_string(o, "model", path)?,
            thinking_level: opt_thinking_level(o, "thinkingLevel", path)?,
            tool_execution: opt_tool_execution(o, "toolExecution", path)?,
            steering_mode: opt_queue_mode(o, "steeringMode", path)?,
            follow_up_mode: opt_queue_mode(o, "followUpMode", path)?,
            ms: opt_number(o, "ms", path)?.unwrap_or(0.0),
            tool_call,
            aborted: get(o, "aborted").is_some_and(super::norm::truthy),
            prompts: messages(o, "prompts", path)?.unwrap_or_default(),
            ctx_messages,
            ctx_tools,
            cfg_model,
            cfg_thinking_level,
            cfg_tool_execution,
            cfg_options,
            wait: o.get("wait") != Some(&Value::Bool(false)),
            name: o.get("name").cloned().unwrap_or(Value::Null),
            do_,
        })
    }
}

fn options_spec(o: &Map<String, Value>, path: &str) -> R<OptionsSpec> {
    let whole =
        |key: &str| -> R<Option<u64>> { Ok(opt_number(o, key, path)?.map(|n| n.max(0.0) as u64)) };
    let thinking_budgets = match get(o, "thinkingBudgets") {
        None => None,
        Some(b) => {
            let bp = format!("{path}.thinkingBudgets");
            let bo = object(b, &bp)?;
            let level = |key: &str| -> R<Option<u64>> {
                Ok(opt_number(bo, key, &bp)?.map(|n| n.max(0.0) as u64))
            };
            Some(ThinkingBudgets {
                minimal: level("minimal")?,
                low: level("low")?,
                medium: level("medium")?,
                high: level("high")?,
            })
        }
    };
    Ok(OptionsSpec {
        session_id: opt_string(o, "sessionId", path)?,
        max_tokens: whole("maxTokens")?,
        temperature: opt_number(o, "temperature", path)?,
        max_retry_delay_ms: whole("maxRetryDelayMs")?,
        thinking_budgets,
    })
}

fn at_spec(v: &Value, path: &str) -> R<AtSpec> {
    let o = object(v, path)?;
    let event = opt_string(o, "event", path)?.ok_or_else(|| format!("{path}.event: missing"))?;
    let nth = opt_number(o, "nth", path)?.unwrap_or(1.0);
    let tool_name = get(o, "toolName").cloned();
    let role = get(o, "role").cloned();
    let update = get(o, "update").cloned();
    let filters: Vec<String> = [
        ("toolName", &tool_name),
        ("role", &role),
        ("update", &update),
    ]
    .iter()
    .filter_map(|(k, v)| {
        v.as_ref()
            .map(|v| format!("{k}={}", super::norm::js_template(v)))
    })
    .collect();
    let nth_text = super::norm::js_number(&super::norm::int_number(
        &serde_json::Number::from_f64(nth).unwrap_or_else(|| 1.into()),
    ));
    let label = if filters.is_empty() {
        format!("{event}#{nth_text}")
    } else {
        format!("{event}[{}]#{nth_text}", filters.join(","))
    };
    Ok(AtSpec {
        event,
        nth,
        tool_name,
        role,
        update,
        label,
    })
}
