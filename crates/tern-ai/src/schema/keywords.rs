//! Keyword lists, the engine's limits, and the helpers that read a schema object's keywords.

use serde_json::Value;

use crate::schema::js::string::{js_number_string, js_stringify};
use crate::schema::js::value::js_entries;
use crate::schema::kind::Kind;
use crate::schema::number::num_f64;
use crate::schema::JsonMap;

/// The base URI of a root schema without `$id` (the reference's, so `$id`s resolve alike).
pub(crate) const DEFAULT_BASE: &str = "https://json-schema.invalid/root.json";
/// The message of the reference's RangeError when a schema recurses without end.
pub(crate) const STACK_OVERFLOW: &str = "Maximum call stack size exceeded";
/// How deep the checks may nest before we stop: a guard for this thread's stack, far above
/// what JSON arguments (serde_json parses at most 128 levels) need.
pub(crate) const MAX_DEPTH: usize = 400;
/// The schema a `$ref` that names nothing compiles to (`unresolvedRefs: "reject"`).
pub(crate) static FALSE_SCHEMA: Value = Value::Bool(false);

/// Keywords that never affect a check: a schema with only these and `type` is a bare type.
pub(crate) const NEUTRAL_KEYWORDS: &[&str] = &[
    "$schema",
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$defs",
    "definitions",
    "contentEncoding",
    "contentMediaType",
    "minContains",
    "maxContains",
    "$vocabulary",
];

/// The keywords an annotating check (below `unevaluated*`) handles itself.
pub(crate) const ANNOTATING: &[&str] = &[
    "properties",
    "patternProperties",
    "additionalProperties",
    "prefixItems",
    "items",
    "additionalItems",
    "contains",
    "minContains",
    "maxContains",
    "allOf",
    "anyOf",
    "oneOf",
    "if",
    "then",
    "else",
    "$ref",
    "$dynamicRef",
    "dependentSchemas",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// Keywords holding one subschema, walked when indexing `$id`s and anchors.
pub(crate) const SCHEMA_KEYWORDS: &[&str] = &[
    "additionalProperties",
    "propertyNames",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "contentSchema",
    "items",
];
/// Keywords whose value maps names to subschemas.
pub(crate) const MAP_KEYWORDS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];
pub(crate) const ARRAY_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];

pub(crate) fn not_a_schema(node: &Value) -> String {
    format!(
        "A schema must be an object or a boolean, got {}",
        js_stringify(node, false)
    )
}

pub(crate) fn has_unevaluated(o: &JsonMap) -> bool {
    o.contains_key("unevaluatedProperties") || o.contains_key("unevaluatedItems")
}

/// The type of a schema that is only a known `type` (with neutral keywords).
pub(crate) fn bare_type(o: &JsonMap) -> Option<Kind> {
    let mut t = None;
    for (k, v) in o {
        if k == "type" {
            t = Some(v);
        } else if !NEUTRAL_KEYWORDS.contains(&k.as_str()) {
            return None;
        }
    }
    Kind::parse(t?.as_str()?)
}

/// `prefixItems`/`items`: the tuple prefix and the schema of the items after it (`true`: none).
pub(crate) fn prefix_and_rest(o: &JsonMap) -> (&[Value], Option<&Value>) {
    let (prefix, rest) = match o.get("items") {
        Some(Value::Array(items)) => (items.as_slice(), o.get("additionalItems")),
        items => (
            o.get("prefixItems")
                .and_then(Value::as_array)
                .map_or(&[][..], |p| p.as_slice()),
            items,
        ),
    };
    (prefix, rest.filter(|r| !matches!(r, Value::Bool(true))))
}

/// The schema of an array item at `index`, for the coercion passes.
/// The schema of item `index` given [`prefix_and_rest`]'s tuple prefix and rest schema.
pub(crate) fn item_schema<'a>(
    prefix: &'a [Value],
    rest: Option<&'a Value>,
    index: usize,
) -> Option<&'a Value> {
    if index < prefix.len() {
        prefix.get(index)
    } else {
        rest
    }
}

pub(crate) fn item_schema_at(o: &JsonMap, index: usize) -> Option<&Value> {
    if let Some(Value::Array(items)) = o.get("items") {
        return items.get(index);
    }
    if let Some(Value::Array(prefix)) = o.get("prefixItems") {
        if index < prefix.len() {
            return prefix.get(index);
        }
    }
    o.get("items")
}

pub(crate) fn pattern_entries(o: &JsonMap) -> Vec<(&String, &Value)> {
    match o.get("patternProperties") {
        Some(Value::Object(p)) => js_entries(p),
        _ => Vec::new(),
    }
}

pub(crate) fn contains_bounds(o: &JsonMap) -> (f64, f64) {
    (
        num_kw(o, "minContains").unwrap_or(1.0),
        num_kw(o, "maxContains").unwrap_or(f64::INFINITY),
    )
}

pub(crate) fn contains_message(min: f64, max: f64) -> String {
    let noun = |n: f64| if n == 1.0 { "item" } else { "items" };
    if max == f64::INFINITY {
        format!(
            "expected at least {} matching {}",
            js_number_string(min),
            noun(min)
        )
    } else if min == 0.0 {
        format!(
            "expected at most {} matching {}",
            js_number_string(max),
            noun(max)
        )
    } else {
        format!(
            "expected between {} and {} matching items",
            js_number_string(min),
            js_number_string(max)
        )
    }
}

/// A property schema's tag for the compiled tagged union.
pub(crate) fn tag_of<'a>(o: &'a JsonMap, key: &str) -> Option<&'a Value> {
    if o.get("type").and_then(Value::as_str).and_then(Kind::parse) != Some(Kind::Object) {
        return None;
    }
    let Some(Value::Array(required)) = o.get("required") else {
        return None;
    };
    if !required.iter().any(|r| r.as_str() == Some(key)) {
        return None;
    }
    let tag = o
        .get("properties")?
        .as_object()?
        .get(key)?
        .as_object()?
        .get("const")?;
    (!matches!(tag, Value::Array(_) | Value::Object(_))).then_some(tag)
}

/// A keyword that counts only when it is a number.
pub(crate) fn num_kw(o: &JsonMap, k: &str) -> Option<f64> {
    match o.get(k) {
        Some(Value::Number(n)) => Some(num_f64(n)),
        _ => None,
    }
}
