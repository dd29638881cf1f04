//! JSON-schema constrained sampling (pi-ai's `constrained-sampling.js`): a tool whose
//! `constrainedSampling` is `{"type": "json_schema", "strict": "prefer" | "require"}` is sent
//! in a provider's strict mode, its schema rewritten to the strict subset (every property
//! required, an optional one made nullable, no additional properties), when the provider
//! supports strict tools and the schema fits; a `prefer` tool falls back to non-strict
//! otherwise, a `require` tool fails the request.
//!
//! Grammar-constrained tools (`{"type": "grammar"}`, OpenAI's custom tools) are not sent as
//! such: they go as ordinary function tools.

use serde_json::{json, Map, Value};

use crate::message::ToolDeclaration;

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
/// form then). A `require` tool that cannot go strict goes as declared (pi-ai fails the
/// request instead).
pub(crate) fn sent(
    tool: &ToolDeclaration,
    supports_strict: bool,
    extra: Option<UnsupportedKeyword>,
) -> (bool, Value) {
    match strict_form(tool, supports_strict, extra) {
        Ok(Some(strict)) => (true, strict),
        _ => (false, tool.parameters.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let (strict, sent_schema) = sent(&tool(fine.clone(), "prefer"), true, None);
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
}
