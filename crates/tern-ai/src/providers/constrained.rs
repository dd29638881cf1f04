//! Constrained sampling (pi-ai's `constrained-sampling.js`; the config's typed view is
//! [`ConstrainedSampling`](crate::message::ConstrainedSampling)).
//!
//! JSON schema: a tool whose `constrainedSampling` is `{"type": "json_schema", "strict":
//! "prefer" | "require"}` is sent in a provider's strict mode, its schema rewritten to the
//! strict subset (every property required, an optional one made nullable, no additional
//! properties), when the provider supports strict tools and the schema fits; a `prefer` tool
//! falls back to non-strict otherwise, a `require` tool fails the request before it is sent
//! (`Tool "x" requires JSON-schema constrained sampling, but <why>.`). On Claude (Anthropic,
//! Bedrock) a session over the strict-tool limits sends `prefer` tools non-strict
//! (`strict_limits`).
//!
//! Grammar: a tool whose config is `{"type": "grammar", "variants": {"openai_lark"?,
//! "openai_regex"?}}` goes as an OpenAI custom tool with its grammar (the Lark variant, else
//! the regex; blank ones do not count) on a model whose compat sets
//! `supportsOpenAIGrammarTools` (Responses, Azure, Codex, Chat Completions), else as an
//! ordinary function tool. Its parameters must be an object schema with exactly one required
//! string property, the input property: a custom call's input text is that argument, when
//! it streams (`custom_input`) and when an earlier call is replayed as a custom call. Every
//! grammar tool the transcript declares is checked up front; a bad one fails the request
//! with the reference's message.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::message::{Message, ToolDeclaration};

/// Keywords strict mode has no room for, anywhere in a schema.
const UNSUPPORTED_KEYS: [&str; 16] = [
    "$ref",
    "$defs",
    "definitions",
    "allOf",
    "oneOf",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
    "prefixItems",
    "not",
    "if",
    "then",
    "else",
];

/// A provider's extra rule: a keyword (and its value) its strict mode rejects.
pub(crate) type UnsupportedKeyword = fn(&str, &Value) -> bool;

/// Why a schema has no strict form.
#[derive(Debug)]
pub(crate) struct Unsupported(String);

fn unsupported<T>(why: impl Into<String>) -> Result<T, Unsupported> {
    Err(Unsupported(why.into()))
}

fn types(schema: &Map<String, Value>) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn is_structured(schema: &Value) -> bool {
    let Some(o) = schema.as_object() else {
        return false;
    };
    let t = types(o);
    t.contains(&"object")
        || t.contains(&"array")
        || o.contains_key("properties")
        || o.contains_key("items")
}

fn allows_null(schema: &Value) -> bool {
    let Some(o) = schema.as_object() else {
        return false;
    };
    types(o).contains(&"null")
        || o.get("const") == Some(&Value::Null)
        || o.get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.contains(&Value::Null))
        || o.get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|vs| vs.iter().any(allows_null))
}

/// Rewrites one schema node in place to its strict form.
fn make_node_strict(
    schema: &mut Value,
    extra: Option<UnsupportedKeyword>,
) -> Result<(), Unsupported> {
    let Some(o) = schema.as_object_mut() else {
        return unsupported("boolean schemas are unsupported");
    };
    for key in UNSUPPORTED_KEYS {
        if o.contains_key(key) {
            return unsupported(format!("{key} schemas are unsupported"));
        }
    }
    if let Some(rejects) = extra {
        if let Some((k, v)) = o.iter().find(|(k, v)| rejects(k, v)) {
            return unsupported(format!("{k}: {v} is unsupported"));
        }
    }
    // OpenAI's strict mode rejects nodes without a type; a bare enum counts as typed.
    if !o.contains_key("type") && !o.contains_key("anyOf") && !o.contains_key("enum") {
        return unsupported("schemas without a type are unsupported");
    }
    if let Some(any) = o.get_mut("anyOf") {
        let Some(variants) = any.as_array_mut().filter(|v| !v.is_empty()) else {
            return unsupported("anyOf must contain at least one schema");
        };
        for variant in variants {
            if is_structured(variant) {
                return unsupported("object and array unions are unsupported");
            }
            make_node_strict(variant, extra)?;
        }
    }
    if let Some(items) = o.get_mut("items") {
        if items.is_array() {
            return unsupported("tuple schemas are unsupported");
        }
        make_node_strict(items, extra)?;
    }
    let is_object = o.get("type") == Some(&json!("object"));
    if o.contains_key("properties") && !is_object {
        return unsupported("properties require type object");
    }
    if !is_object {
        return Ok(());
    }
    if o.get("additionalProperties")
        .is_some_and(|a| a != &Value::Bool(false))
    {
        return unsupported("schema-valued or true additionalProperties is unsupported");
    }
    if o.get("properties").is_some_and(|p| !p.is_object()) {
        return unsupported("object properties must be a schema map");
    }
    let required: Vec<String> = match o.get("required") {
        None => Vec::new(),
        Some(Value::Array(r)) if r.iter().all(Value::is_string) => r
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        Some(_) => return unsupported("object required must be a string array"),
    };
    let names: Vec<String> = o
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    if required.iter().any(|r| !names.contains(r)) {
        return unsupported("required contains an unknown property");
    }
    if let Some(Value::Object(props)) = o.get_mut("properties") {
        for (key, property) in props.iter_mut() {
            make_node_strict(property, extra)?;
            if !required.contains(key) && !allows_null(property) {
                let inner = std::mem::take(property);
                *property = json!({"anyOf": [inner, {"type": "null"}]});
            }
        }
    }
    // `required` and `additionalProperties` keep their places when present, else come last
    // (JavaScript's assignment order).
    o.insert(
        "required".into(),
        Value::Array(names.into_iter().map(Value::String).collect()),
    );
    o.insert("additionalProperties".into(), Value::Bool(false));
    Ok(())
}

/// `schema`'s strict form (pi-ai's `makeStrictJsonSchema`).
pub(crate) fn make_strict(
    schema: &Value,
    extra: Option<UnsupportedKeyword>,
) -> Result<Value, Unsupported> {
    let mut cloned = schema.clone();
    if !cloned.is_object() {
        return unsupported("root schema must have type object");
    }
    make_node_strict(&mut cloned, extra)?;
    if cloned.get("type") != Some(&json!("object")) {
        return unsupported("root schema must have type object");
    }
    Ok(cloned)
}

fn json_schema_config(tool: &ToolDeclaration) -> Option<&Value> {
    tool.constrained_sampling
        .as_ref()
        .filter(|c| c.get("type") == Some(&json!("json_schema")))
}

/// Whether `tool` asks for strict JSON-schema sampling only where possible (pi-ai's
/// `prefersJsonSchemaStrictSampling`).
pub(crate) fn prefers_strict(tool: &ToolDeclaration) -> bool {
    json_schema_config(tool).is_some_and(|c| c.get("strict") == Some(&json!("prefer")))
}

/// `tool`'s strict schema when it goes in strict mode (pi-ai's
/// `resolveJsonSchemaStrictSampling` and `getJsonSchemaToolParameters`), `None` when it goes
/// as the provider's default; an error for a `require` tool that cannot have it.
fn strict_form(
    tool: &ToolDeclaration,
    supports_strict: bool,
    extra: Option<UnsupportedKeyword>,
) -> Result<Option<Value>, String> {
    let Some(config) = json_schema_config(tool) else {
        return Ok(None);
    };
    let require = config.get("strict") == Some(&json!("require"));
    if supports_strict {
        return match make_strict(&tool.parameters, extra) {
            Ok(strict) => Ok(Some(strict)),
            Err(_) if !require => Ok(None),
            Err(Unsupported(why)) => Err(format!(
                "Tool \"{}\" requires JSON-schema constrained sampling, but {why}.",
                tool.name
            )),
        };
    }
    if require {
        return Err(format!(
            "Tool \"{}\" requires JSON-schema constrained sampling, but strict tools are unsupported.",
            tool.name
        ));
    }
    Ok(None)
}

/// What a request sends for `tool`: whether it goes strict, and its parameters (their strict
/// form then). A `require` tool that cannot go strict fails the request with the reference's
/// message.
pub(crate) fn sent(
    tool: &ToolDeclaration,
    supports_strict: bool,
    extra: Option<UnsupportedKeyword>,
) -> Result<(bool, Value), String> {
    Ok(match strict_form(tool, supports_strict, extra)? {
        Some(strict) => (true, strict),
        None => (false, tool.parameters.clone()),
    })
}

/// [`sent`], with `prefer` tools sent as declared when `preferred_off` (a session whose
/// strict tools went over Claude's limits; `require` tools stay strict).
pub(crate) fn sent_unless_preferred_off(
    tool: &ToolDeclaration,
    supports_strict: bool,
    extra: Option<UnsupportedKeyword>,
    preferred_off: bool,
) -> Result<(bool, Value), String> {
    if preferred_off && prefers_strict(tool) {
        return Ok((false, tool.parameters.clone()));
    }
    sent(tool, supports_strict, extra)
}

/// How a grammar tool goes as an OpenAI custom tool (pi-ai's `GrammarConstrainedSampling`).
#[derive(Debug, PartialEq)]
pub(crate) struct Grammar {
    /// `lark` or `regex`.
    pub syntax: &'static str,
    /// The grammar text.
    pub definition: String,
    /// The one required string property of the tool's parameters: a call's input text is
    /// that argument.
    pub input_property: String,
}

/// JavaScript's `String.prototype.trim` is empty.
fn blank(s: &str) -> bool {
    s.chars()
        .all(|c| (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}')
}

/// JavaScript truthiness.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

/// The property of `tool`'s parameters that carries a grammar call's input (pi-ai's
/// `inferGrammarInputProperty`).
fn grammar_input_property(tool: &ToolDeclaration) -> Result<String, String> {
    let schema = &tool.parameters;
    if schema.get("type") != Some(&json!("object")) {
        return Err("grammar constrained sampling requires an object parameter schema".into());
    }
    let property = match schema.get("required").and_then(Value::as_array) {
        Some(required) if required.len() == 1 => required[0].as_str(),
        _ => None,
    };
    let Some(property) = property else {
        return Err(
            "grammar constrained sampling requires exactly one required string property".into(),
        );
    };
    let entry = schema
        .get("properties")
        .and_then(Value::as_object)
        .and_then(|p| p.get(property))
        .filter(|e| truthy(e));
    let Some(entry) = entry else {
        return Err(format!(
            "grammar constrained sampling requires a properties entry for {property}"
        ));
    };
    if entry.get("type") != Some(&json!("string")) {
        return Err(format!(
            "grammar constrained sampling property {property} must have type string"
        ));
    }
    Ok(property.to_string())
}

/// How `tool` goes as a custom tool (pi-ai's `resolveGrammarConstrainedSampling`): `None`
/// for a tool without a grammar config or on a model without OpenAI grammar tools; an
/// error for a grammar tool that cannot be one.
pub(crate) fn grammar(
    tool: &ToolDeclaration,
    supports_grammar_tools: bool,
) -> Result<Option<Grammar>, String> {
    let Some(config) = tool
        .constrained_sampling
        .as_ref()
        .filter(|c| c.get("type") == Some(&json!("grammar")))
    else {
        return Ok(None);
    };
    if !supports_grammar_tools {
        return Ok(None);
    }
    let variants = match config.get("variants") {
        // Reading a variant off a missing object is JavaScript's TypeError.
        None => return Err(read_error("undefined", "openai_lark")),
        Some(Value::Null) => return Err(read_error("null", "openai_lark")),
        Some(v) => v,
    };
    let definition = |key: &str| {
        variants
            .get(key)
            .and_then(Value::as_str)
            .filter(|d| !blank(d))
    };
    let (syntax, definition) = match (definition("openai_lark"), definition("openai_regex")) {
        (Some(lark), _) => ("lark", lark),
        (None, Some(regex)) => ("regex", regex),
        (None, None) => {
            return Err(format!(
                "Tool \"{}\" cannot use grammar constrained sampling: no supported grammar variant was provided.",
                tool.name
            ))
        }
    };
    let input_property = grammar_input_property(tool).map_err(|why| {
        format!(
            "Tool \"{}\" cannot use grammar constrained sampling: {why}.",
            tool.name
        )
    })?;
    Ok(Some(Grammar {
        syntax,
        definition: definition.to_string(),
        input_property,
    }))
}

fn read_error(what: &str, key: &str) -> String {
    format!("Cannot read properties of {what} (reading '{key}')")
}

/// The input property of each grammar tool the transcript declares, by tool name (pi-ai's
/// `createGrammarToolInputProperties` over `getDeclaredTools`: every tool any system message
/// adds, its latest declaration); the first bad grammar tool fails the request.
pub(crate) fn grammar_inputs(
    messages: &[Message],
    supports_grammar_tools: bool,
) -> Result<GrammarInputs, String> {
    let mut declared: Vec<&ToolDeclaration> = Vec::new();
    for m in messages {
        let Message::System(s) = m else { continue };
        for t in s.tools_added.iter().flatten() {
            match declared.iter_mut().find(|d| d.name == t.name) {
                Some(d) => *d = t,
                None => declared.push(t),
            }
        }
    }
    grammar_inputs_of(declared, supports_grammar_tools)
}

/// [`grammar_inputs`] of these declarations.
pub(crate) fn grammar_inputs_of<'a>(
    tools: impl IntoIterator<Item = &'a ToolDeclaration>,
    supports_grammar_tools: bool,
) -> Result<GrammarInputs, String> {
    let mut inputs = GrammarInputs::new();
    for tool in tools {
        if let Some(g) = grammar(tool, supports_grammar_tools)? {
            inputs.insert(tool.name.clone(), g.input_property);
        }
    }
    Ok(inputs)
}

/// The input property of each declared grammar tool, by tool name.
pub(crate) type GrammarInputs = HashMap<String, String>;

/// The input text of a grammar tool call replayed in the history (pi-ai's
/// `getGrammarToolInput`): the call's `property` argument, which must be a string.
pub(crate) fn grammar_call_input(
    name: &str,
    arguments: &Value,
    property: &str,
) -> Result<String, String> {
    match arguments.get(property) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(format!(
            "Grammar tool call \"{name}\" requires argument \"{property}\" to be a string."
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ConstrainedSampling, GrammarVariants};

    fn tool(parameters: Value, strict: &str) -> ToolDeclaration {
        ToolDeclaration {
            name: "read".into(),
            description: String::new(),
            parameters,
            constrained_sampling: Some(json!({"type": "json_schema", "strict": strict})),
        }
    }

    #[test]
    fn optional_properties_become_required_and_nullable() {
        let schema = json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "offset": {"type": "number"},
            "mode": {"type": ["string", "null"]},
            "tags": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}}
        }, "required": ["path"]});
        let strict = make_strict(&schema, None).unwrap();
        assert_eq!(
            strict,
            json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "offset": {"anyOf": [{"type": "number"}, {"type": "null"}]},
                "mode": {"type": ["string", "null"]},
                "tags": {"anyOf": [{"type": "array", "items": {"type": "object",
                    "properties": {"k": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
                    "required": ["k"], "additionalProperties": false}}, {"type": "null"}]}
            }, "required": ["path", "offset", "mode", "tags"], "additionalProperties": false})
        );
    }

    #[test]
    fn prefer_falls_back_and_require_fails() {
        let loose = json!({"type": "object", "properties": {"x": {}}});
        assert_eq!(
            strict_form(&tool(loose.clone(), "prefer"), true, None),
            Ok(None)
        );
        let e = strict_form(&tool(loose, "require"), true, None).unwrap_err();
        assert!(e.contains("schemas without a type are unsupported"), "{e}");
        let fine = json!({"type": "object", "properties": {"x": {"type": "string"}}});
        let (strict, sent_schema) = sent(&tool(fine.clone(), "prefer"), true, None).unwrap();
        assert!(strict);
        assert_eq!(sent_schema["additionalProperties"], false);
        assert_eq!(
            strict_form(&tool(fine.clone(), "prefer"), false, None),
            Ok(None)
        );
        assert!(strict_form(&tool(fine, "require"), false, None).is_err());
        for bad in [
            json!({"type": "object", "additionalProperties": true}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/x"}}}),
            json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "object"}]}}}),
            json!({"type": "object", "required": ["nope"]}),
            json!({"type": "string"}),
        ] {
            assert!(make_strict(&bad, None).is_err(), "{bad}");
        }
    }

    fn grammar_tool(variants: Value, parameters: Value) -> ToolDeclaration {
        ToolDeclaration {
            name: "sql".into(),
            description: String::new(),
            parameters,
            constrained_sampling: Some(json!({"type": "grammar", "variants": variants})),
        }
    }

    fn one_string(name: &str) -> Value {
        json!({"type": "object", "properties": {name: {"type": "string"}}, "required": [name]})
    }

    #[test]
    fn grammar_tools_take_lark_then_regex_and_their_input_property() {
        let lark = grammar_tool(
            json!({"openai_lark": "start: x", "openai_regex": "x"}),
            one_string("q"),
        );
        let g = grammar(&lark, true).unwrap().unwrap();
        assert_eq!(
            (g.syntax, g.definition.as_str(), g.input_property.as_str()),
            ("lark", "start: x", "q")
        );
        let regex = grammar_tool(
            json!({"openai_lark": " \n\u{feff}", "openai_regex": "x+"}),
            one_string("q"),
        );
        assert_eq!(grammar(&regex, true).unwrap().unwrap().syntax, "regex");
        // Without support the tool goes as a function; non-grammar tools are not grammar tools.
        assert_eq!(grammar(&lark, false), Ok(None));
        assert_eq!(grammar(&tool(one_string("q"), "prefer"), true), Ok(None));
        assert_eq!(
            ConstrainedSampling::from_json(lark.constrained_sampling.as_ref().unwrap()),
            Some(ConstrainedSampling::Grammar {
                variants: GrammarVariants {
                    openai_lark: Some("start: x".into()),
                    openai_regex: Some("x".into()),
                },
            })
        );
    }

    #[test]
    fn bad_grammar_tools_fail_with_the_reference_messages() {
        let prefix = "Tool \"sql\" cannot use grammar constrained sampling: ";
        let fails = |variants: Value, parameters: Value| {
            grammar(&grammar_tool(variants, parameters), true).unwrap_err()
        };
        let ok = json!({"openai_regex": "x"});
        assert_eq!(
            fails(json!({"openai_lark": ""}), one_string("q")),
            format!("{prefix}no supported grammar variant was provided.")
        );
        assert_eq!(
            fails(ok.clone(), json!({"type": "string"})),
            format!("{prefix}grammar constrained sampling requires an object parameter schema.")
        );
        assert_eq!(
            fails(ok.clone(), json!({"type": "object", "required": ["a", "b"]})),
            format!("{prefix}grammar constrained sampling requires exactly one required string property.")
        );
        assert_eq!(
            fails(
                ok.clone(),
                json!({"type": "object", "properties": {"q": false}, "required": ["q"]})
            ),
            format!("{prefix}grammar constrained sampling requires a properties entry for q.")
        );
        assert_eq!(
            fails(
                ok,
                json!({"type": "object", "properties": {"q": {"type": "number"}}, "required": ["q"]})
            ),
            format!("{prefix}grammar constrained sampling property q must have type string.")
        );
        let no_variants = ToolDeclaration {
            constrained_sampling: Some(json!({"type": "grammar"})),
            ..grammar_tool(json!({}), one_string("q"))
        };
        assert!(grammar(&no_variants, true)
            .unwrap_err()
            .contains("reading 'openai_lark'"));
    }

    #[test]
    fn declared_grammar_tools_map_to_their_input_properties() {
        use crate::message::SystemMessage;
        use std::sync::Arc;
        let sql = grammar_tool(json!({"openai_regex": "x"}), one_string("query"));
        let system = |tools: Vec<ToolDeclaration>| {
            Message::from(SystemMessage {
                tools_added: Some(tools.into_iter().map(Arc::new).collect()),
                ..SystemMessage::default()
            })
        };
        let redeclared = ToolDeclaration {
            parameters: one_string("text"),
            ..sql.clone()
        };
        let messages = [
            system(vec![sql, tool(one_string("p"), "prefer")]),
            system(vec![redeclared]),
        ];
        let inputs = grammar_inputs(&messages, true).unwrap();
        assert_eq!(inputs.len(), 1);
        assert_eq!(inputs["sql"], "text");
        assert!(grammar_inputs(&messages, false).unwrap().is_empty());
        assert_eq!(
            grammar_call_input("sql", &json!({"text": 3}), "text").unwrap_err(),
            "Grammar tool call \"sql\" requires argument \"text\" to be a string."
        );
        assert_eq!(
            grammar_call_input("sql", &json!({"text": "a"}), "text"),
            Ok("a".into())
        );
    }

    #[test]
    fn preferred_tools_go_as_declared_when_turned_off() {
        let fine = json!({"type": "object", "properties": {"x": {"type": "string"}}});
        let prefer = tool(fine.clone(), "prefer");
        assert!(prefers_strict(&prefer));
        assert_eq!(
            sent_unless_preferred_off(&prefer, true, None, true),
            Ok((false, fine.clone()))
        );
        let require = tool(fine, "require");
        assert!(!prefers_strict(&require));
        assert!(
            sent_unless_preferred_off(&require, true, None, true)
                .unwrap()
                .0
        );
    }
}
