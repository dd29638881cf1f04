//! The scenario's hooks: each records what it saw, runs the first matching rule's side
//! effects, and answers what the rule says. They run against a [`HookHost`]: the in-process
//! harness, or a Temporal worker's side of a session (which shares these hooks).

use std::collections::HashMap;
use std::future::{ready, Future};
use std::sync::{Arc, Weak};

use futures::future::{BoxFuture, Either};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use tern_agent::hooks::{
    AfterToolCallContext, AfterToolCallResult, BeforeToolCallContext, BeforeToolCallResult,
    PrepareRequestContext, RequestUpdate, TurnContext, TurnDecision, TurnUpdate,
};
use tern_agent::{AgentContext, AgentTool, Hooks};
use tern_ai::{BoxError, Content, Message, SystemMessage};

use super::model::make_model;
use super::norm::{
    canonical, entry, js_template, norm, norm_of, or_null, roles, strict_equal, truthy,
};
use super::spec::{ActionSpec, HooksSpec, Rule};

const STANDARD_ROLES: &[&str] = &["system", "user", "assistant", "toolResult"];

/// What the hooks need from the runner they run in.
pub trait HookHost: Send + Sync + 'static {
    /// The scenario's hook rules.
    fn hook_rules(&self) -> &HooksSpec;
    /// The hooks' call counts and repeat counts.
    fn hook_counts(&self) -> &HookCounts;
    /// Records a trace entry.
    fn push(&self, entry: Value);
    /// Runs a rule's side effects (its actions, recorded with `"in": hook`, then its delay).
    fn side_effects(
        self: Arc<Self>,
        actions: Vec<Arc<ActionSpec>>,
        delay_ms: Option<Value>,
        hook: &'static str,
    ) -> BoxFuture<'static, ()>;
    /// The scenario's tools by id.
    fn tools_for(&self, ids: &[String]) -> Vec<AgentTool>;
    /// Ends the scenario with a runner error.
    fn set_fatal(&self, message: String);
}

/// How often each hook was called, and how often `beforeToolCall` saw each call (tool name
/// and arguments).
#[derive(Default)]
pub struct HookCounts {
    calls: Mutex<HashMap<&'static str, u64>>,
    repeats: Mutex<HashMap<String, u64>>,
}

impl HookCounts {
    /// Counts a call of `hook`; returns its number (from 1).
    pub fn next(&self, hook: &'static str) -> u64 {
        let mut c = self.calls.lock();
        let n = c.entry(hook).or_insert(0);
        *n += 1;
        *n
    }

    fn repeat(&self, key: String) -> u64 {
        let mut r = self.repeats.lock();
        let c = r.entry(key).or_insert(0);
        *c += 1;
        *c
    }
}

/// Runs a rule's side effects on the host.
async fn side_effects<H: HookHost>(h: &Arc<H>, rule: Option<&Rule>, hook: &'static str) {
    if let Some(rule) = rule {
        let (actions, delay) = (rule.actions.clone(), rule.delay_ms.clone());
        h.clone().side_effects(actions, delay, hook).await;
    }
}

/// A hook body that calls the host while it lives, else answers `absent`.
fn bound<H, C, T, F, Fut>(
    me: &Weak<H>,
    absent: fn(C) -> T,
    call: F,
) -> impl Fn(C) -> Either<Fut, std::future::Ready<Result<T, BoxError>>> + Send + Sync + 'static
where
    H: HookHost,
    C: 'static,
    T: 'static,
    F: Fn(Arc<H>, C) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, BoxError>>,
{
    let me = me.clone();
    move |ctx| match me.upgrade() {
        Some(h) => Either::Left(call(h, ctx)),
        None => Either::Right(ready(Ok(absent(ctx)))),
    }
}

/// The hooks the scenario declares, each bound to `me`.
pub fn build_hooks<H: HookHost>(me: &Weak<H>) -> Hooks {
    let Some(host) = me.upgrade() else {
        return Hooks::default();
    };
    let spec = host.hook_rules();
    let mut hooks = Hooks::default();
    // The hooks that answer "no change" (`None`) once the host is gone, each set by its
    // own `Hooks` method: a macro, as each takes a closure of a different type.
    macro_rules! set_optional_hooks {
        ($($hook:ident),*) => {$(
            if spec.$hook.is_some() {
                let f = bound(me, |_| None, $hook::<H>);
                hooks = hooks.$hook(move |ctx, _signal| f(ctx));
            }
        )*};
    }
    set_optional_hooks!(
        before_tool_call,
        after_tool_call,
        finish_turn,
        prepare_request,
        prepare_next_turn
    );
    if spec.transform_context.is_some() {
        let f = bound(me, |m| m, transform_context::<H>);
        hooks = hooks.transform_context(move |messages, _signal| f(messages));
    }
    if spec.convert_to_llm.is_some() {
        let f = bound(me, |m| m, |h: Arc<H>, m| ready(convert_to_llm(&*h, m)));
        hooks = hooks.convert_to_llm(f);
    }
    hooks
}

async fn before_tool_call<H: HookHost>(
    h: Arc<H>,
    ctx: BeforeToolCallContext,
) -> Result<Option<BeforeToolCallResult>, BoxError> {
    let rules = h.hook_rules().before_tool_call.as_deref().unwrap_or(&[]);
    let n = h.hook_counts().next("beforeToolCall");
    let key = format!("{}\u{0}{}", ctx.tool_call.name, canonical(&ctx.args));
    let repeat = h.hook_counts().repeat(key);
    let rule = first_rule(
        rules,
        &facts(&[
            ("n", json!(n)),
            ("repeat", json!(repeat)),
            ("toolName", json!(ctx.tool_call.name)),
            ("toolCallId", json!(ctx.tool_call.id)),
        ]),
    );
    let returned: Option<Map<String, Value>> = rule
        .filter(|r| {
            r.throw.is_none() && (r.block.is_some() || r.reason.is_some() || r.terminate.is_some())
        })
        .map(|r| {
            let mut m = Map::new();
            for (k, v) in [
                ("block", &r.block),
                ("reason", &r.reason),
                ("terminate", &r.terminate),
            ] {
                if let Some(v) = v {
                    m.insert(k.into(), v.clone());
                }
            }
            m
        });
    let mut e = hook_fields(
        "beforeToolCall",
        n,
        [
            ("toolCallId", json!(ctx.tool_call.id)),
            ("toolName", json!(ctx.tool_call.name)),
            ("args", norm(&ctx.args)),
            ("toolCallArgs", norm(&ctx.tool_call.arguments)),
            ("repeat", json!(repeat)),
        ],
    );
    let result = ("returned", or_null(returned.clone().map(Value::Object)));
    push_threw_or(&mut e, rule.and_then(|r| r.throw.as_ref()), result);
    h.push(entry(e));
    // The reference's hook assigns into the validated arguments in place.
    let mutated = rule.and_then(|r| r.mutate_args.as_ref()).and_then(|m| {
        let Value::Object(mut args) = ctx.args.clone() else {
            return None;
        };
        args.extend(m.clone());
        Some(Value::Object(args))
    });
    side_effects(&h, rule, "beforeToolCall").await;
    if let Some(t) = rule.and_then(|r| r.throw.as_ref()) {
        return Err(js_template(t).into());
    }
    let result = returned.map(|m| BeforeToolCallResult {
        block: m.get("block").is_some_and(truthy),
        reason: m.get("reason").map(js_template),
        terminate: m.get("terminate").is_some_and(truthy),
        ..BeforeToolCallResult::default()
    });
    Ok(match mutated {
        None => result,
        Some(args) => Some(BeforeToolCallResult {
            args: Some(args),
            ..result.unwrap_or_default()
        }),
    })
}

async fn after_tool_call<H: HookHost>(
    h: Arc<H>,
    ctx: AfterToolCallContext,
) -> Result<Option<AfterToolCallResult>, BoxError> {
    let rules = h.hook_rules().after_tool_call.as_deref().unwrap_or(&[]);
    let n = h.hook_counts().next("afterToolCall");
    let rule = first_rule(
        rules,
        &facts(&[
            ("n", json!(n)),
            ("toolName", json!(ctx.tool_call.name)),
            ("toolCallId", json!(ctx.tool_call.id)),
            ("isError", json!(ctx.is_error)),
        ]),
    );
    let returned = rule.and_then(|r| r.override_.as_ref());
    let mut e = hook_fields(
        "afterToolCall",
        n,
        [
            ("toolCallId", json!(ctx.tool_call.id)),
            ("toolName", json!(ctx.tool_call.name)),
            ("args", norm(&ctx.args)),
            ("result", norm_of(&ctx.result)),
            ("isError", json!(ctx.is_error)),
        ],
    );
    let result = ("returned", or_null(returned.map(|(v, _)| norm(v))));
    push_threw_or(&mut e, rule.and_then(|r| r.throw.as_ref()), result);
    h.push(entry(e));
    side_effects(&h, rule, "afterToolCall").await;
    if let Some(t) = rule.and_then(|r| r.throw.as_ref()) {
        return Err(js_template(t).into());
    }
    Ok(returned.map(|(_, typed)| typed.clone()))
}

async fn finish_turn<H: HookHost>(
    h: Arc<H>,
    ctx: TurnContext,
) -> Result<Option<TurnDecision>, BoxError> {
    let rules = h.hook_rules().finish_turn.as_deref().unwrap_or(&[]);
    let n = h.hook_counts().next("finishTurn");
    let tool_calls = ctx.message.tool_calls().count();
    let rule = first_rule(
        rules,
        &facts(&[
            ("n", json!(n)),
            ("hasToolCalls", json!(tool_calls > 0)),
            ("stopReason", json!(ctx.message.stop_reason.as_str())),
        ]),
    );
    let action = rule.and_then(|r| r.action.clone()).filter(truthy);
    h.push(entry(hook_fields(
        "finishTurn",
        n,
        [
            ("stopReason", json!(ctx.message.stop_reason.as_str())),
            ("toolCalls", json!(tool_calls)),
            ("toolResults", tool_result_ids(&ctx)),
            ("newMessageRoles", roles(&ctx.new_messages)),
            (
                "returned",
                or_null(action.clone().map(|a| json!({"action": a}))),
            ),
        ],
    )));
    side_effects(&h, rule, "finishTurn").await;
    Ok(match action.as_ref().and_then(Value::as_str) {
        Some("end") => Some(TurnDecision::End),
        Some("continue") => Some(TurnDecision::Continue),
        _ => None,
    })
}

async fn prepare_request<H: HookHost>(
    h: Arc<H>,
    ctx: PrepareRequestContext,
) -> Result<Option<RequestUpdate>, BoxError> {
    let rules = h.hook_rules().prepare_request.as_deref().unwrap_or(&[]);
    let n = h.hook_counts().next("prepareRequest");
    let rule = first_rule(rules, &facts(&[("n", json!(n))]))
        .filter(|r| r.model.is_some() || r.thinking_level.is_some() || r.changes_context());
    let any_rule = first_rule(rules, &facts(&[("n", json!(n))]));
    let returned = rule.map(|r| update_returned(r, None));
    h.push(entry(hook_fields(
        "prepareRequest",
        n,
        [
            ("model", json!(ctx.model.id)),
            ("thinkingLevel", json!(ctx.thinking_level.as_str())),
            ("messageRoles", roles(&ctx.context.messages)),
            ("returned", or_null(returned)),
        ],
    )));
    side_effects(&h, any_rule, "prepareRequest").await;
    let Some(rule) = rule else {
        return Ok(None);
    };
    Ok(Some(RequestUpdate {
        model: rule.model.as_deref().map(make_model),
        thinking_level: rule.thinking_level.as_ref().map(|(_, l)| *l),
        context: context_update(&*h, rule, &ctx.context),
    }))
}

/// The replacement context of a rule's context keys (FORMAT.md 1.5), `None` without them.
fn context_update<H: HookHost>(h: &H, rule: &Rule, context: &AgentContext) -> Option<AgentContext> {
    if !rule.changes_context() {
        return None;
    }
    let mut messages = match &rule.context_replace {
        Some((_, m)) => m.clone(),
        None => context.messages.as_ref().clone(),
    };
    if let Some(prompt) = &rule.system_prompt {
        match messages.first_mut() {
            Some(Message::System(s)) => Arc::make_mut(s).content = Content::Text(prompt.clone()),
            _ => messages.insert(
                0,
                Message::System(Arc::new(SystemMessage {
                    content: Content::Text(prompt.clone()),
                    ..SystemMessage::default()
                })),
            ),
        }
    }
    if let Some((_, extra)) = &rule.context_append {
        messages.extend(extra.iter().cloned());
    }
    let tools = match &rule.context_tools {
        Some(ids) => Arc::new(h.tools_for(ids)),
        None => context.tools.clone(),
    };
    Some(AgentContext {
        messages: Arc::new(messages),
        tools,
    })
}

async fn prepare_next_turn<H: HookHost>(
    h: Arc<H>,
    ctx: TurnContext,
) -> Result<Option<TurnUpdate>, BoxError> {
    let rules = h.hook_rules().prepare_next_turn.as_deref().unwrap_or(&[]);
    let n = h.hook_counts().next("prepareNextTurn");
    let f = facts(&[
        ("n", json!(n)),
        ("stopReason", json!(ctx.message.stop_reason.as_str())),
    ]);
    let any_rule = first_rule(rules, &f);
    let rule = any_rule.filter(|r| {
        r.model.is_some()
            || r.thinking_level.is_some()
            || r.messages.is_some()
            || r.changes_context()
    });
    let returned = rule.map(|r| update_returned(r, Some(&r.messages)));
    h.push(entry(hook_fields(
        "prepareNextTurn",
        n,
        [
            ("stopReason", json!(ctx.message.stop_reason.as_str())),
            ("toolResults", tool_result_ids(&ctx)),
            ("returned", or_null(returned)),
        ],
    )));
    side_effects(&h, any_rule, "prepareNextTurn").await;
    let Some(rule) = rule else {
        return Ok(None);
    };
    Ok(Some(TurnUpdate {
        context: context_update(&*h, rule, &ctx.context),
        messages: rule.messages.as_ref().map(|(_, m)| m.clone()),
        model: rule.model.as_deref().map(make_model),
        thinking_level: rule.thinking_level.as_ref().map(|(_, l)| *l),
    }))
}

async fn transform_context<H: HookHost>(
    h: Arc<H>,
    messages: Arc<Vec<Message>>,
) -> Result<Arc<Vec<Message>>, BoxError> {
    let Some(spec) = &h.hook_rules().transform_context else {
        return Ok(messages);
    };
    let n = h.hook_counts().next("transformContext");
    let out = match spec.keep_last {
        None => messages.clone(),
        Some(k) => {
            let lead = usize::from(matches!(messages.first(), Some(Message::System(_))));
            let rest = &messages[lead..];
            let kept: &[Message] = if k > 0.0 {
                let t = k.trunc() as usize;
                if t == 0 || t >= rest.len() {
                    rest
                } else {
                    &rest[rest.len() - t..]
                }
            } else {
                &[]
            };
            let mut out: Vec<Message> = messages[..lead].to_vec();
            out.extend(kept.iter().cloned());
            Arc::new(out)
        }
    };
    let mut e = hook_fields("transformContext", n, [("inputRoles", roles(&messages))]);
    push_threw_or(&mut e, spec.throw.as_ref(), ("outputRoles", roles(&out)));
    h.push(entry(e));
    if let Some(t) = &spec.throw {
        return Err(js_template(t).into());
    }
    Ok(out)
}

fn convert_to_llm<H: HookHost>(
    h: &H,
    messages: Arc<Vec<Message>>,
) -> Result<Arc<Vec<Message>>, BoxError> {
    let to_user = h.hook_rules().convert_to_llm.clone().unwrap_or_default();
    let n = h.hook_counts().next("convertToLlm");
    let mut out = Vec::new();
    for m in messages.iter() {
        let role = m.role();
        if STANDARD_ROLES.contains(&role) {
            out.push(m.clone());
        } else if to_user.contains(role) {
            let Message::Custom(c) = m else { continue };
            let timestamp = c.0.get("timestamp").cloned().unwrap_or(json!(0));
            let user = json!({"role": "user", "content": m.content_json(), "timestamp": timestamp});
            match serde_json::from_value::<Message>(user) {
                Ok(u) => out.push(u),
                Err(e) => {
                    let message = format!(
                        "runner: convertToLlm cannot turn a {role} message into a user message: {e}"
                    );
                    h.set_fatal(message.clone());
                    return Err(message.into());
                }
            }
        }
    }
    h.push(entry(hook_fields(
        "convertToLlm",
        n,
        [
            ("inputRoles", roles(&messages)),
            ("outputRoles", roles(&out)),
        ],
    )));
    Ok(Arc::new(out))
}

/// The `returned` entry of `prepareRequest` / `prepareNextTurn`: the rule's model, thinking
/// level and `extra` field, as the scenario wrote them.
/// A prepareRequest/prepareNextTurn rule's `returned` (`messages` only for prepareNextTurn).
fn update_returned(r: &Rule, messages: Option<&Option<(Value, Vec<Message>)>>) -> Value {
    let mut m = Map::new();
    if let Some(model) = &r.model {
        m.insert("model".into(), json!(model));
    }
    if let Some((level, _)) = &r.thinking_level {
        m.insert("thinkingLevel".into(), json!(level));
    }
    if let Some(Some((raw, _))) = messages {
        m.insert("messages".into(), raw.clone());
    }
    if let Some((raw, _)) = &r.context_replace {
        m.insert("contextReplace".into(), raw.clone());
    }
    if let Some(p) = &r.system_prompt {
        m.insert("systemPrompt".into(), json!(p));
    }
    if let Some(ids) = &r.context_tools {
        m.insert("contextTools".into(), json!(ids));
    }
    if let Some((raw, _)) = &r.context_append {
        m.insert("contextAppend".into(), raw.clone());
    }
    norm(&Value::Object(m))
}

/// The fields of a hook's trace entry: its kind, the hook and its call number `n`, then
/// `fields`.
fn hook_fields<const N: usize>(
    hook: &'static str,
    n: u64,
    fields: [(&'static str, Value); N],
) -> Vec<(&'static str, Value)> {
    let mut e = vec![
        ("kind", json!("hook")),
        ("hook", json!(hook)),
        ("n", json!(n)),
    ];
    e.extend(fields);
    e
}

/// Ends a hook's entry with what it threw, when its rule throws, else with `answer`.
fn push_threw_or(
    e: &mut Vec<(&'static str, Value)>,
    throw: Option<&Value>,
    answer: (&'static str, Value),
) {
    match throw {
        Some(t) => e.push(("threw", t.clone())),
        None => e.push(answer),
    }
}

fn tool_result_ids(ctx: &TurnContext) -> Value {
    Value::Array(
        ctx.tool_results
            .iter()
            .map(|r| json!(r.tool_call_id))
            .collect(),
    )
}

fn facts(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn rule_matches(m: Option<&Map<String, Value>>, facts: &Map<String, Value>) -> bool {
    let Some(m) = m else {
        return true;
    };
    m.iter().all(|(k, want)| match k.as_str() {
        "minN" | "minRepeat" => {
            let fact = if k == "minN" { "n" } else { "repeat" };
            match (facts.get(fact).and_then(Value::as_f64), want.as_f64()) {
                (Some(have), Some(want)) => have >= want,
                _ => false,
            }
        }
        _ => facts.get(k).is_some_and(|have| strict_equal(have, want)),
    })
}

fn first_rule<'a>(rules: &'a [Rule], facts: &Map<String, Value>) -> Option<&'a Rule> {
    rules
        .iter()
        .find(|r| rule_matches(r.matcher.as_ref(), facts))
}
