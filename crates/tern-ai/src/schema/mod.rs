//! Tool-argument validation: a port of pi-ai 1.6's `validateToolArguments`.
//!
//! The reference compiles a tool's JSON Schema with `@earendil-works/pi-schema` 1.6
//! (`compile(schema, { formats, coerce: true, unresolvedRefs: "reject" })`) and runs its
//! `parse()`: the arguments are coerced towards the schema, then checked; a failure is
//! explained keyword by keyword. This module reproduces the three parts for JSON values:
//!
//! * **coercion** (three passes, in the reference's order): optional `null`s dropped, the
//!   TypeBox-style conversions (`"5"` to 5, `null` to `"null"` for a string, a single value to
//!   a one-item array, the first union branch the value converts to, ...), then Ajv-style
//!   primitive coercion by `type`;
//! * **checking**, JSON Schema 2020-12 (the reference's default draft) with pi-schema's
//!   choices: `number` is finite, regular expressions are ECMAScript's, a `$ref` that names
//!   nothing rejects only values at its place;
//! * **explaining**, with the reference's messages, error paths and order (all errors are
//!   collected; a failed `type` stops the other keywords of that schema).
//!
//! A [`CompiledSchema`] indexes the schema, runs the compile checks and reads its fast-path
//! shape once; each [`validate`](CompiledSchema::validate) then only coerces, checks and
//! explains. [`validate_tool_arguments`] compiles on every call. Regular expressions are
//! shared through a small process-wide cache, as the reference shares them.
//!
//! # Files
//!
//! * `compiled.rs`: [`CompiledSchema`], the entry point; `fast_path.rs`: flat object schemas
//!   whose arguments already match;
//! * `resolver.rs`: `$id`/`$anchor` index and `$ref` resolution; `uri.rs`: URI resolution;
//! * `compiler.rs`: the reference's compile-time errors;
//! * `context.rs`: the per-call state (recursion guards, caches);
//! * `checks.rs`: the checks; `annotations.rs`: annotating checks for `unevaluated*`;
//! * `coerce/`: the three coercion passes (`mod.rs`) and the single-value rules (`rules.rs`);
//! * `explain.rs`: error messages, paths and order;
//! * `keywords.rs`: keyword lists and readers; `kind.rs`: `type` names; `number.rs`: number
//!   keywords;
//! * `js/`: JS semantics (`value.rs`: equality and property order, `string.rs`: `String()` and
//!   `JSON.stringify`, `number.rs`: `Number()` and numbers as JSON);
//! * `ecma_regex.rs`: ECMAScript patterns on the `regex` crate;
//! * `formats/`: the `format` checks (`date_time.rs`, `hostname.rs`, `url.rs`).
//!
//! # Differences from the reference
//!
//! Checked against the reference on a recorded table (`tests/data/validation_cases.json`) and
//! on randomized differential runs, and against the `jsonschema` crate on the official test
//! suite (`tests/schema_suite.rs`, which lists where verdicts differ and why). What is
//! knowingly not reproduced:
//!
//! * **Patterns the `regex` crate cannot express**: lookaround, backreferences, `\B`, and, in a
//!   pattern that only compiles without the `u` flag, a quantifier after an astral character
//!   (it would repeat half a surrogate pair). Such a `pattern` matches every string, and such a
//!   `patternProperties` key every key. Without the `u` flag the reference also matches by UTF-16
//!   units (`.` on an emoji); here matching is always by code points. Patterns ECMAScript rejects
//!   give its compile error (`Invalid regular expression: /…/: <reason>`), as the reference does.
//! * **`$dynamicRef`** resolves like `$ref` (its initial target), without the dynamic scope.
//! * **Formats**: `idn-hostname` and `idn-email` skip the NFC normalization; `url`, `iri` and
//!   `iri-reference` approximate the WHATWG URL parser (schemes, authorities, hosts, ports; no
//!   IDNA mapping). Unicode property tables are the `regex` crate's, not V8's.
//! * **Endless recursion** in a schema gives the reference's `Maximum call stack size exceeded`
//!   wherever the reference's checks overflow; where its explainer overflows, V8's stack size
//!   decides the text, which is not reproduced. Checks also stop at a fixed depth (far beyond
//!   the 128 levels serde_json parses), which the reference would pass.
//! * **Non-JSON types**: `bigint`, `bytes` and `undefined` match no JSON value, and the
//!   conversions to them are not done.
//! * **Numbers** are compared as `f64`, as JS does, but an integer argument beyond 2^53 that no
//!   rule changes is returned exactly rather than rounded. Exact JS number texts also need
//!   serde_json's `float_roundtrip` feature when the arguments are parsed.
//! * An invalid subschema reached only at explanation time (an `if` without `then`/`else`)
//!   makes the reference throw while explaining; here it is ignored.

mod annotations;
mod checks;
mod coerce;
mod compiled;
mod compiler;
mod context;
pub(crate) mod ecma_regex;
mod explain;
mod fast_path;
mod formats;
mod js;
mod keywords;
mod kind;
mod number;
mod resolver;
mod uri;

use serde_json::{Map, Value};

pub use compiled::CompiledSchema;
use fast_path::FastShape;
pub(crate) use keywords::MAP_KEYWORDS;

/// A base URI, shared between the schema nodes it applies to.
pub(crate) type Base = std::sync::Arc<str>;
/// A JSON object.
pub(crate) type JsonMap = Map<String, Value>;

/// Validate (and coerce) `arguments` against the JSON Schema `schema`.
/// Ok(coerced value) or Err(message) where message is the full reference text
/// `Validation failed for tool "<name>":\n  - path: msg ...\n\nReceived arguments:\n<pretty JSON>`.
///
/// `arguments_error` is the parse error of the call's raw arguments, if any; it is reported
/// as `Invalid arguments for tool "<name>": <error>` before the schema is looked at. A schema
/// the reference cannot compile (a subschema that is neither an object nor a boolean) gives
/// the reference's compile error text instead of the validation text.
///
/// ```
/// use serde_json::json;
/// use tern_ai::schema::validate_tool_arguments;
///
/// let schema = json!({
///     "type": "object",
///     "properties": { "path": { "type": "string" }, "limit": { "type": "integer" } },
///     "required": ["path"],
///     "additionalProperties": false
/// });
/// // "5" is coerced to 5.
/// let ok = validate_tool_arguments("read", &schema, &json!({ "path": "a.ts", "limit": "5" }), None);
/// assert_eq!(ok, Ok(json!({ "path": "a.ts", "limit": 5 })));
/// // Only values that cannot be coerced fail.
/// let err = validate_tool_arguments("read", &schema, &json!({ "limit": "x" }), None).unwrap_err();
/// assert_eq!(
///     err,
///     "Validation failed for tool \"read\":\n  - path: missing\n  - limit: expected integer, got string\n\nReceived arguments:\n{\n  \"limit\": \"x\"\n}"
/// );
/// ```
pub fn validate_tool_arguments(
    tool_name: &str,
    schema: &Value,
    arguments: &Value,
    arguments_error: Option<&str>,
) -> Result<Value, String> {
    if let Some(e) = arguments_error {
        return Err(format!("Invalid arguments for tool \"{tool_name}\": {e}"));
    }
    // The common case needs no compiled schema (and so no copy of the schema).
    if let Some(valid) = FastShape::of(schema).and_then(|f| f.already_valid(arguments)) {
        return Ok(valid);
    }
    CompiledSchema::new(schema.clone()).validate(tool_name, arguments, None)
}
