//! The OpenAI Responses request: `input` items (reasoning items replayed verbatim from
//! their signature, message ids kept in text signatures, tool-call ids split into call and
//! item), prompt-cache options, reasoning effort, session headers.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::message::{Content, ContentBlock, Message};
use crate::model::Model;
use crate::providers::constrained::{self, grammar_call_input, GrammarInputs};
use crate::providers::driver::{Built, WireApi};
use crate::providers::http::{HttpFailure, HttpRequest};
use crate::providers::js_json::compact;
use crate::providers::model_options::{
    cache_retention, compat, merge_headers, resolve_max_tokens, stream_body,
};
use crate::providers::openai_sdk::{base_headers, http_error_message, responses_error_prefix};
use crate::providers::thinking::{reasoning_effort, thinking_level_map};
use crate::providers::transform::{accepts_images, short_hash, transform_messages};
use crate::stream_fn::{Context, StreamOptions};
use crate::transcript::{collapse_system_messages, get_current_tools, system_message_text};

/// The providers whose `call_id|item_id` tool-call ids are replayed as they are.
pub(crate) const TOOL_CALL_PROVIDERS: [&str; 3] = ["openai", "openai-codex", "opencode"];

fn normalize_id_part(part: &str) -> String {
    let s: String = crate::providers::transform::sanitize_id(part)
        .chars()
        .take(64)
        .collect();
    s.trim_end_matches('_').to_string()
}

fn parse_text_signature(sig: Option<&str>) -> Option<(String, Option<String>)> {
    let sig = sig.filter(|s| !s.is_empty())?;
    if sig.starts_with('{') {
        if let Ok(v) = serde_json::from_str::<Value>(sig) {
            if v.get("v").and_then(Value::as_f64) == Some(1.0) {
                if let Some(id) = v.get("id").and_then(Value::as_str) {
                    let phase = v
                        .get("phase")
                        .and_then(Value::as_str)
                        .filter(|p| *p == "commentary" || *p == "final_answer")
                        .map(str::to_string);
                    return Some((id.to_string(), phase));
                }
            }
        }
    }
    Some((sig.to_string(), None))
}

fn tool_result_output(model: &Model, content: &[ContentBlock]) -> Value {
    let texts: Vec<&str> = content.iter().filter_map(|b| b.as_text()).collect();
    let text = texts.join("\n");
    let images: Vec<&crate::message::ImageContent> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Image(i) => Some(i),
            _ => None,
        })
        .collect();
    let has_text = !text.trim().is_empty();
    if images.is_empty() || !accepts_images(model) {
        return json!(if has_text {
            text
        } else if !images.is_empty() {
            "(see attached image)".to_string()
        } else {
            "(no tool output)".to_string()
        });
    }
    let mut out = Vec::new();
    if has_text {
        out.push(json!({"type": "input_text", "text": text}));
    }
    for i in images {
        out.push(json!({"type": "input_image", "detail": "auto", "image_url": format!("data:{};base64,{}", i.mime_type, i.data)}));
    }
    Value::Array(out)
}

/// Converts a transcript into Responses `input` items.
/// How a host wants tools and reasoning effort told mid-conversation (Codex).
#[derive(Default)]
pub(crate) struct InputOptions<'a> {
    /// Tools are declared in `additional_tools` items at the system messages that add them,
    /// removals announced as text (the reference's `changes` tool support).
    pub tool_changes: bool,
    /// The `strict` of each declared tool.
    pub tool_strict: Option<Value>,
    /// The effort sent in `configuration_update` items (after same-model turns that carried
    /// one, and at the end).
    pub configuration_update: Option<&'a str>,
    /// The input property of each declared grammar tool: their calls are replayed as
    /// `custom_tool_call` items, their results as `custom_tool_call_output`.
    pub grammar_inputs: Option<&'a GrammarInputs>,
    /// The model takes OpenAI grammar (custom) tools (in `additional_tools` items).
    pub grammar_tools: bool,
}

const INCREMENTAL_TOOLS_NOTICE: &str = "This is an incremental tools update. Previously declared tools remain available unless explicitly marked unavailable. A tool declared again here is available again, and its latest definition replaces the earlier one.";

/// Converts a transcript into Responses `input` items; `tool_call_providers` are the
/// providers whose paired tool-call ids are kept, `grammar_inputs` the declared grammar
/// tools' input properties.
pub(crate) fn convert_messages(
    model: &Model,
    messages: &[Message],
    tool_call_providers: &[&str],
    grammar_inputs: &GrammarInputs,
) -> Result<Vec<Value>, String> {
    convert_input(
        model,
        messages,
        tool_call_providers,
        &InputOptions {
            grammar_inputs: Some(grammar_inputs),
            ..InputOptions::default()
        },
    )
}

/// [`convert_messages`] with the host's ways of announcing tools and effort; `Err` for a
/// tool or a replayed grammar call the request cannot carry.
pub(crate) fn convert_input(
    model: &Model,
    messages: &[Message],
    tool_call_providers: &[&str],
    opts: &InputOptions<'_>,
) -> Result<Vec<Value>, String> {
    let no_grammar_inputs = GrammarInputs::new();
    let grammar_inputs = opts.grammar_inputs.unwrap_or(&no_grammar_inputs);
    let allowed = tool_call_providers.contains(&model.provider.as_str());
    // The source message decides whether a call is foreign; transform passes only the id, so
    // foreignness is decided per assistant message below.
    let mut foreign_ids: HashMap<String, bool> = HashMap::new();
    for m in messages {
        if let Message::Assistant(a) = m {
            let foreign = a.provider != model.provider || a.api != model.api;
            for c in a.tool_calls() {
                foreign_ids.insert(c.id.to_string(), foreign);
            }
        }
    }
    let normalize = |id: &str| -> String {
        if !allowed || !id.contains('|') {
            return normalize_id_part(id);
        }
        let mut parts = id.split('|');
        let call = normalize_id_part(parts.next().unwrap_or(""));
        let item_raw = parts.next().unwrap_or("");
        let foreign = foreign_ids.get(id).copied().unwrap_or(false);
        let mut item = if foreign {
            let n = format!("fc_{}", short_hash(item_raw));
            n.chars().take(64).collect()
        } else {
            normalize_id_part(item_raw)
        };
        if !item.starts_with("fc_") {
            item = normalize_id_part(&format!("fc_{item}"));
        }
        format!("{call}|{item}")
    };
    let transformed = transform_messages(messages, model, &normalize);
    let developer = compat(model, "supportsDeveloperRole").and_then(Value::as_bool) != Some(false);
    let instruction_role = if model.reasoning && developer {
        "developer"
    } else {
        "system"
    };
    let mut out: Vec<Value> = Vec::new();
    let mut msg_index = 0usize;
    let mut declared_tools = false;
    // Tools announced as removed and not declared again since.
    let mut unavailable: Vec<String> = Vec::new();
    for (source_index, msg) in transformed.iter().enumerate() {
        let leading_system = source_index == 0 && matches!(msg, Message::System(_));
        match msg {
            Message::System(s) => {
                let added = s.tools_added.as_deref().unwrap_or(&[]);
                if opts.tool_changes {
                    unavailable.retain(|n| !added.iter().any(|t| &t.name == n));
                    if !added.is_empty() {
                        if declared_tools {
                            let notice = match unavailable.is_empty() {
                                true => INCREMENTAL_TOOLS_NOTICE.to_string(),
                                false => format!(
                                    "{INCREMENTAL_TOOLS_NOTICE}\nStill unavailable: {}.",
                                    unavailable.join(", ")
                                ),
                            };
                            out.push(json!({"role": instruction_role, "content": notice}));
                        }
                        declared_tools = true;
                        let tools = added
                            .iter()
                            .map(|t| {
                                responses_tool(t, opts.tool_strict.as_ref(), opts.grammar_tools)
                            })
                            .collect::<Result<Vec<Value>, String>>()?;
                        out.push(json!({"type": "additional_tools", "role": "developer", "tools": tools}));
                    }
                }
                let mut parts = vec![system_message_text(s, leading_system)];
                if opts.tool_changes {
                    // A redefinition is a removal plus an addition; only true removals count.
                    let removed: Vec<String> = s
                        .tools_removed
                        .iter()
                        .flatten()
                        .map(|t| t.name.clone())
                        .filter(|n| !added.iter().any(|t| &t.name == n))
                        .collect();
                    if !removed.is_empty() {
                        let list: Vec<String> = removed.iter().map(|n| format!("- {n}")).collect();
                        parts.push(format!(
                            "The following tools are no longer available. Do not call them:\n{}",
                            list.join("\n")
                        ));
                    }
                    for n in removed {
                        if !unavailable.contains(&n) {
                            unavailable.push(n);
                        }
                    }
                }
                let text: Vec<String> = parts.into_iter().filter(|p| !p.is_empty()).collect();
                let text = text.join("\n\n");
                if !text.is_empty() {
                    out.push(json!({"role": instruction_role, "content": text}));
                }
            }
            Message::User(u) => match &u.content {
                Content::Text(t) => out
                    .push(json!({"role": "user", "content": [{"type": "input_text", "text": t}]})),
                Content::Blocks(blocks) => {
                    let content: Vec<Value> = blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => Some(json!({"type": "input_text", "text": t.text})),
                            ContentBlock::Image(i) => Some(json!({"type": "input_image", "detail": "auto", "image_url": format!("data:{};base64,{}", i.mime_type, i.data)})),
                            _ => None,
                        })
                        .collect();
                    // An empty turn is skipped; it still counts for the fallback message ids.
                    if !content.is_empty() {
                        out.push(json!({"role": "user", "content": content}));
                    }
                }
            },
            Message::Assistant(a) => {
                let same_api = a.provider == model.provider && a.api == model.api;
                let same_model = same_api && a.model == model.id;
                let different_model = same_api && a.model != model.id;
                let mut items: Vec<Value> = Vec::new();
                let mut text_index = 0usize;
                for b in &a.content {
                    match b {
                        ContentBlock::Thinking(t) => {
                            if let Some(sig) =
                                t.thinking_signature.as_deref().filter(|s| !s.is_empty())
                            {
                                if let Ok(v) = serde_json::from_str::<Value>(sig) {
                                    items.push(v);
                                }
                            }
                        }
                        ContentBlock::Text(t) => {
                            let parsed = parse_text_signature(t.text_signature.as_deref());
                            let fallback = if text_index == 0 {
                                format!("msg_pi_{msg_index}")
                            } else {
                                format!("msg_pi_{msg_index}_{text_index}")
                            };
                            text_index += 1;
                            let (mut id, phase) = match parsed {
                                Some((id, phase)) => (id, phase),
                                None => (String::new(), None),
                            };
                            if id.is_empty() {
                                id = fallback;
                            } else if id.encode_utf16().count() > 64 {
                                id = format!("msg_{}", short_hash(&id));
                            }
                            let mut item = json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t.text, "annotations": []}], "status": "completed", "id": id});
                            if let Some(p) = phase {
                                item["phase"] = json!(p);
                            }
                            items.push(item);
                        }
                        ContentBlock::ToolCall(c) => {
                            let mut parts = c.id.splitn(2, '|');
                            let call_id = parts.next().unwrap_or("").to_string();
                            // A grammar tool's call goes back as a custom call, whose item ids
                            // are `ctc_*` (function calls' `fc_*`); a call whose id does not
                            // match its type (grammar support changed) goes without one.
                            let custom = grammar_inputs.get(c.name.as_str());
                            let prefix = if custom.is_some() { "ctc_" } else { "fc_" };
                            let item_id = parts
                                .next()
                                .map(str::to_string)
                                .filter(|i| !different_model && i.starts_with(prefix));
                            let mut item = Map::new();
                            let kind = if custom.is_some() {
                                "custom_tool_call"
                            } else {
                                "function_call"
                            };
                            item.insert("type".into(), json!(kind));
                            if let Some(i) = item_id {
                                item.insert("id".into(), json!(i));
                            }
                            item.insert("call_id".into(), json!(call_id));
                            item.insert("name".into(), json!(c.name));
                            match custom {
                                Some(property) => {
                                    let input =
                                        grammar_call_input(&c.name, &c.arguments, property)?;
                                    item.insert("input".into(), json!(input));
                                }
                                None => {
                                    item.insert("arguments".into(), json!(compact(&c.arguments)));
                                }
                            }
                            if same_model {
                                if let Some(ns) = &c.extra().namespace {
                                    item.insert("namespace".into(), json!(ns));
                                }
                            }
                            items.push(Value::Object(item));
                        }
                        ContentBlock::Image(_) => {}
                    }
                }
                if let (Some(_), true, Some(level)) = (
                    opts.configuration_update,
                    same_model && !items.is_empty(),
                    a.extra().provider_thinking_level.as_deref(),
                ) {
                    out.push(
                        json!({"type": "configuration_update", "reasoning": {"effort": level}}),
                    );
                }
                out.extend(items);
            }
            Message::ToolResult(t) => {
                let call_id = t.tool_call_id.split('|').next().unwrap_or("").to_string();
                let kind = if grammar_inputs.contains_key(t.tool_name.as_str()) {
                    "custom_tool_call_output"
                } else {
                    "function_call_output"
                };
                out.push(json!({"type": kind, "call_id": call_id, "output": tool_result_output(model, &t.content)}));
            }
            Message::Custom(_) => {}
        }
        if !leading_system {
            msg_index += 1;
        }
    }
    if let Some(effort) = opts.configuration_update {
        out.push(json!({"type": "configuration_update", "reasoning": {"effort": effort}}));
    }
    Ok(out)
}

/// The body's `tools`: each tool the transcript declares as a Responses function (a custom
/// tool for a grammar tool when `grammar_tools`), with its `strict` where the server takes
/// the field (`supports_strict`).
pub(crate) fn insert_tools(
    body: &mut Map<String, Value>,
    messages: &[Message],
    supports_strict: bool,
    grammar_tools: bool,
) -> Result<(), String> {
    let tools = get_current_tools(messages);
    if tools.is_empty() {
        return Ok(());
    }
    let default = supports_strict.then_some(Value::Bool(false));
    let list = tools
        .iter()
        .map(|t| responses_tool(t, default.as_ref(), grammar_tools))
        .collect::<Result<Vec<Value>, String>>()?;
    body.insert("tools".into(), Value::Array(list));
    Ok(())
}

/// One tool as a Responses function (pi-ai's `convertResponsesTools`). `strict` is `None`
/// where the server takes no `strict` field, else the value a tool gets unless its
/// constrained sampling makes it strict (`false`, or `null` for Codex); a strict tool sends
/// its schema's strict form. A grammar tool goes as a custom tool with its grammar when the
/// model takes them (`grammar_tools`). `Err` for a tool that cannot go as it asks.
pub(crate) fn responses_tool(
    t: &crate::message::ToolDeclaration,
    strict: Option<&Value>,
    grammar_tools: bool,
) -> Result<Value, String> {
    if let Some(g) = constrained::grammar(t, grammar_tools)? {
        return Ok(
            json!({"type": "custom", "name": t.name, "description": t.description,
            "format": {"type": "grammar", "syntax": g.syntax, "definition": g.definition}}),
        );
    }
    let (constrained, parameters) = constrained::sent(t, strict.is_some(), None)?;
    let mut f = json!({"type": "function", "name": t.name, "description": t.description,
                       "parameters": parameters});
    if let Some(default) = strict {
        f["strict"] = if constrained {
            Value::Bool(true)
        } else {
            default.clone()
        };
    }
    Ok(f)
}

/// Whether the model takes OpenAI grammar (custom) tools (`supportsOpenAIGrammarTools`).
/// What a Responses host accepts of [`insert_limits_and_tools`]: an output limit, strict
/// tools, grammar tools.
pub(crate) struct Limits {
    pub(crate) max_output_tokens: bool,
    pub(crate) strict: bool,
    pub(crate) grammar_tools: bool,
}

/// The body's `store: false`, output limit (at least 16), temperature, tools and tool choice,
/// as OpenAI's and Azure's Responses requests carry them.
pub(crate) fn insert_limits_and_tools(
    body: &mut Map<String, Value>,
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    messages: &[Message],
    limits: Limits,
) -> Result<(), String> {
    body.insert("store".into(), json!(false));
    let max_tokens = resolve_max_tokens(model, context, options);
    if max_tokens > 0 && limits.max_output_tokens {
        body.insert("max_output_tokens".into(), json!(max_tokens.max(16)));
    }
    if let Some(t) = options.temperature {
        body.insert("temperature".into(), json!(t));
    }
    insert_tools(body, messages, limits.strict, limits.grammar_tools)?;
    if let Some(choice) = &options.tool_choice {
        body.insert("tool_choice".into(), choice.clone());
    }
    Ok(())
}

pub(crate) fn grammar_tools(model: &Model) -> bool {
    compat(model, "supportsOpenAIGrammarTools")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The grammar tools' input properties a response's custom calls are read with: those the
/// request's transcript declares (all of `messages` when it keeps later system messages,
/// else the current tools, as the collapsed transcript has them); empty when a grammar tool
/// is bad: such a request fails before it is sent.
pub(crate) fn stream_grammar_inputs(
    model: &Model,
    messages: &[Message],
    keeps_system_messages: bool,
) -> GrammarInputs {
    let supported = grammar_tools(model);
    let inputs = if keeps_system_messages {
        constrained::grammar_inputs(messages, supported)
    } else {
        let tools = get_current_tools(messages);
        constrained::grammar_inputs_of(tools.iter().map(|t| &**t), supported)
    };
    inputs.unwrap_or_default()
}

/// A reasoning model's `reasoning` (and `include`): the level's effort with summaries, or,
/// when no level is asked for and `send_off` says the server takes it, the model's "off"
/// effort.
pub(crate) fn insert_reasoning(
    body: &mut Map<String, Value>,
    model: &Model,
    options: &StreamOptions,
    send_off: bool,
) {
    if let Some(level) = reasoning_effort(model, options) {
        let effort = match thinking_level_map(model, level.as_str()) {
            Some(v) if !v.is_null() => v.clone(),
            _ => json!(level.as_str()),
        };
        body.insert(
            "reasoning".into(),
            json!({"effort": effort, "summary": "auto"}),
        );
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    } else if send_off {
        match thinking_level_map(model, "off") {
            Some(Value::Null) => {}
            Some(v) => {
                body.insert("reasoning".into(), json!({"effort": v}));
            }
            None => {
                body.insert("reasoning".into(), json!({"effort": "none"}));
            }
        }
    }
}

impl WireApi for super::Responses {
    // The OpenAI SDK's stream swallows the abort and just ends.
    const ABORT_ENDS_BODY: bool = true;
    type Stream = super::stream::State;

    /// Builds the request (URL, headers and body) the reference would send.
    fn build_request(model: &Model, context: &Context, options: &StreamOptions) -> Built {
        let messages = collapse_system_messages(&context.messages);
        let retention = cache_retention(options);
        let cs = |k: &str| compat(model, k).and_then(Value::as_str).map(str::to_string);
        let cb = |k: &str, d: bool| compat(model, k).and_then(Value::as_bool).unwrap_or(d);
        let grammar_tools = grammar_tools(model);
        let grammar_inputs = constrained::grammar_inputs(&messages, grammar_tools)?;
        let mut body = stream_body(
            &model.id,
            "input",
            convert_messages(model, &messages, &TOOL_CALL_PROVIDERS, &grammar_inputs)?,
        );
        let key_mode = cs("promptCacheKeyMode").unwrap_or_else(|| "auto".into());
        if retention != "none" && key_mode != "disabled" {
            if let Some(sid) = &options.session_id {
                body.insert(
                    "prompt_cache_key".into(),
                    json!(sid.chars().take(64).collect::<String>()),
                );
            }
        }
        let explicit = cb("supportsExplicitPromptCacheMode", false);
        let long_ok = cb("supportsLongCacheRetention", true);
        if retention == "long" && long_ok && !explicit {
            body.insert("prompt_cache_retention".into(), json!("24h"));
        }
        if explicit {
            if retention == "none" {
                body.insert("prompt_cache_options".into(), json!({"mode": "explicit"}));
            } else if retention == "long" && long_ok {
                body.insert("prompt_cache_options".into(), json!({"ttl": "30m"}));
            }
        }
        let limits = Limits {
            max_output_tokens: cb("supportsMaxOutputTokens", true),
            strict: cb("supportsStrictMode", false),
            grammar_tools,
        };
        insert_limits_and_tools(&mut body, model, context, options, &messages, limits)?;
        if model.reasoning {
            insert_reasoning(
                &mut body,
                model,
                options,
                model.provider != "github-copilot",
            );
            if model.provider == "xai" {
                body.insert("include".into(), json!(["reasoning.encrypted_content"]));
            }
        }

        let mut headers = base_headers(model, options);
        if let Some(sid) = options.session_id.as_ref().filter(|_| retention != "none") {
            let openrouter =
                model.provider == "openrouter" || model.base_url.contains("openrouter.ai");
            let fmt = cs("sessionAffinityFormat").unwrap_or_else(|| {
                if openrouter {
                    "openrouter".into()
                } else {
                    "openai".into()
                }
            });
            if fmt == "openrouter" {
                headers.push(("x-session-id".into(), sid.clone()));
            } else {
                if fmt == "openai" {
                    headers.push(("session-id".into(), sid.clone()));
                }
                headers.push(("x-client-request-id".into(), sid.clone()));
            }
        }
        merge_headers(&mut headers, Some(&options.headers));
        Ok(HttpRequest::to_base_url(model, "/responses", headers, body))
    }

    fn new_stream(model: &Model, context: &Context) -> super::stream::State {
        let mut state = super::stream::State::default();
        state.grammar_inputs = stream_grammar_inputs(model, &context.messages, false);
        state
    }

    fn status_message(model: &Model, f: &HttpFailure) -> String {
        http_error_message(f, Some(&responses_error_prefix(model)))
    }
}
