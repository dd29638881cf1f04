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
//! Everything is recomputed per call (no schema cache: callers may keep one); regular
//! expressions are shared through a small process-wide cache, as the reference shares them.
//!
//! # Differences from the reference
//!
//! Checked against the reference on a recorded table (`tests/data/validation_cases.json`) and
//! on randomized differential runs. What is knowingly not reproduced:
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

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::{Mutex, OnceLock};

use regex::Regex;
use serde_json::{Map, Value};

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
/// use tern_ai::validation::validate_tool_arguments;
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
    if let Some(valid) = already_valid(schema, arguments) {
        return Ok(valid);
    }
    if value_depth(arguments) > MAX_DEPTH {
        // Deeper than the checks may recurse (serde_json itself parses at most 128 levels):
        // reported as the reference reports a recursion that exhausts its stack.
        return Err(STACK_OVERFLOW.to_string());
    }
    let ctx = Ctx::new(schema);
    // The reference compiles the whole schema first; a malformed subschema throws there.
    ctx.compile(schema, &ctx.root_base(), &mut HashSet::new(), 0)?;
    if schema.is_boolean() {
        // pi-ai caches validators in a WeakMap keyed by the schema, which takes no boolean.
        return Err("Invalid value used as weak map key".to_string());
    }
    let coerced = ctx.coerce(schema, arguments);
    let root_base = ctx.root_base();
    ctx.overflow.set(false);
    let valid = ctx.ok(schema, &root_base, &coerced);
    if ctx.overflow.get() {
        // The reference recurses without end on such schemas and throws a RangeError.
        return Err(STACK_OVERFLOW.to_string());
    }
    if valid {
        return Ok(normalize_numbers(coerced, 0));
    }
    let mut errors = Vec::new();
    ctx.walk(schema, &root_base, &coerced, "", &mut errors);
    if ctx.overflow.get() {
        return Err(STACK_OVERFLOW.to_string());
    }
    if errors.is_empty() {
        errors.push(VErr {
            path: String::new(),
            message: "invalid".to_string(),
        });
    }
    let lines: Vec<String> = errors
        .iter()
        .map(|e| format!("  - {}: {}", format_path(&e.path), e.message))
        .collect();
    Err(format!(
        "Validation failed for tool \"{tool_name}\":\n{}\n\nReceived arguments:\n{}",
        lines.join("\n"),
        js_stringify(arguments, true)
    ))
}

// ---------------------------------------------------------------------------------------------
// Fast path
// ---------------------------------------------------------------------------------------------

/// Most tool schemas are an object of primitive-typed properties, and most calls already
/// match them exactly. For those the full check would coerce nothing and normalize nothing,
/// so the arguments are returned as they are without building a validator. Anything else
/// (another schema shape, a value needing coercion, an integral float) returns `None` and
/// takes the full path, so results are identical either way.
fn already_valid(schema: &Value, arguments: &Value) -> Option<Value> {
    // Keywords that carry no check and no subschema (so nothing that could fail to compile).
    let inert = |k: &str| {
        matches!(
            k,
            "$schema"
                | "$comment"
                | "title"
                | "description"
                | "default"
                | "examples"
                | "deprecated"
                | "readOnly"
                | "writeOnly"
        )
    };
    let s = schema.as_object()?;
    let args = arguments.as_object()?;
    let mut properties = None;
    let mut required = None;
    let mut closed = false;
    for (k, v) in s {
        match k.as_str() {
            "type" if v == "object" => {}
            "properties" => properties = Some(v.as_object()?),
            "required" => required = Some(v.as_array()?),
            "additionalProperties" => closed = !v.as_bool()?,
            k if inert(k) => {}
            _ => return None,
        }
    }
    // The whole schema must have the simple shape, used or not: the reference compiles all
    // of it and fails on any malformed part.
    let properties = properties?;
    for sub in properties.values() {
        let mut ty = None;
        for (k, v) in sub.as_object()? {
            match k.as_str() {
                "type" => ty = Some(v.as_str()?),
                k if inert(k) => {}
                _ => return None,
            }
        }
        let ty = ty?;
        if !matches!(ty, "string" | "boolean" | "integer" | "number") {
            return None;
        }
    }
    for name in required.into_iter().flatten() {
        if !args.contains_key(name.as_str()?) {
            return None;
        }
    }
    for (name, value) in args {
        // Checked above: every property has a string `type`.
        let declared = properties.get(name).and_then(|p| p.get("type"));
        let Some(ty) = declared.and_then(Value::as_str) else {
            if closed || !plain_value(value, 0) {
                return None;
            }
            continue;
        };
        let ok = match (ty, value) {
            ("string", Value::String(_)) | ("boolean", Value::Bool(_)) => true,
            ("integer", Value::Number(n)) => n.is_i64() || n.is_u64(),
            ("number", Value::Number(n)) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() != 0.0)
            }
            _ => false,
        };
        if !ok {
            return None;
        }
    }
    Some(arguments.clone())
}

/// A value that number normalization leaves unchanged (no integral floats), not too deep.
fn plain_value(v: &Value, depth: usize) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() != 0.0)
        }
        Value::Array(a) => depth < 32 && a.iter().all(|x| plain_value(x, depth + 1)),
        Value::Object(o) => depth < 32 && o.values().all(|x| plain_value(x, depth + 1)),
        _ => true,
    }
}

// ---------------------------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------------------------

/// The base URI of a root schema without `$id` (the reference's, so `$id`s resolve alike).
const DEFAULT_BASE: &str = "https://json-schema.invalid/root.json";
/// The message of the reference's RangeError when a schema recurses without end.
const STACK_OVERFLOW: &str = "Maximum call stack size exceeded";
/// How deep the checks may nest before we stop: a guard for this thread's stack, far above
/// what JSON arguments (serde_json parses at most 128 levels) need.
const MAX_DEPTH: usize = 400;
/// The schema a `$ref` that names nothing compiles to (`unresolvedRefs: "reject"`).
static FALSE_SCHEMA: Value = Value::Bool(false);

/// Keywords that never affect a check: a schema with only these and `type` is a bare type.
const NEUTRAL_KEYWORDS: &[&str] = &[
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
const ANNOTATING: &[&str] = &[
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
const SCHEMA_KEYWORDS: &[&str] = &[
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
const MAP_KEYWORDS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];
const ARRAY_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];

type Base = Rc<str>;
type JsonMap = Map<String, Value>;
/// A compiled tagged union: the tag key and each branch's tag value.
type Tag = (String, Vec<Value>);
/// The explanation of a `$ref` target: the path it was made at and its errors.
type KnownErrors = (String, Vec<VErr>);
/// A number keyword: its name, the comparison shown in its message, and the test.
type Bound = (&'static str, &'static str, fn(f64, f64) -> bool);

/// One reported error: a JSON Pointer into the (coerced) value and a message.
#[derive(Clone, Debug)]
struct VErr {
    path: String,
    message: String,
}

/// Annotations for `unevaluatedProperties` / `unevaluatedItems`.
#[derive(Default)]
struct Ann {
    props: HashSet<String>,
    all_props: bool,
    items: usize,
    all_items: bool,
    indexes: HashSet<usize>,
}

impl Ann {
    fn merge(&mut self, other: Ann) {
        self.props.extend(other.props);
        self.all_props |= other.all_props;
        self.items = self.items.max(other.items);
        self.all_items |= other.all_items;
        self.indexes.extend(other.indexes);
    }
}

/// Identity of a value for the conversion pass's re-entry stack and memo: primitives by value
/// (as JS compares them), objects and arrays by address (as JS compares object identity).
#[derive(Clone, PartialEq, Eq, Hash)]
enum IdKey {
    Null,
    Bool(bool),
    Num(u64),
    Str(String),
    Ptr(usize),
}

fn id_key(v: &Value) -> IdKey {
    match v {
        Value::Null => IdKey::Null,
        Value::Bool(b) => IdKey::Bool(*b),
        Value::Number(n) => {
            let x = num_f64(n);
            IdKey::Num(if x == 0.0 { 0 } else { x.to_bits() })
        }
        Value::String(s) => IdKey::Str(s.clone()),
        _ => IdKey::Ptr(addr(v)),
    }
}

/// State of one run of the conversion pass.
#[derive(Default)]
struct ConvState {
    /// (schema node, value) pairs being converted through a re-entry point.
    entered: Vec<(usize, IdKey)>,
    /// How often a re-entry was cut short; results computed across a cut are not memoized.
    cuts: usize,
    /// Results of `$ref` targets by (node, value): keeps recursive unions linear.
    memo: HashMap<(usize, IdKey), Option<Value>>,
}

fn addr<T>(x: &T) -> usize {
    x as *const T as usize
}

// ---------------------------------------------------------------------------------------------
// The compiled schema context: reference resolution, checks, coercion and explanations
// ---------------------------------------------------------------------------------------------

struct Ctx<'s> {
    /// Schema node address to the base URI it was indexed under.
    base_of: HashMap<usize, Base>,
    /// Schema resources (the root and every `$id`) by document URI.
    resources: HashMap<String, &'s Value>,
    /// `$anchor`, `$dynamicAnchor` and fragment `$id` targets by full URI.
    anchors: HashMap<String, &'s Value>,
    /// References that named nothing (they check as `false`).
    unresolved: RefCell<HashSet<String>>,
    /// Regular expressions of this schema by source (None: not expressible here).
    regexes: RefCell<HashMap<String, Option<Regex>>>,
    /// Tagged-union shape of `anyOf`/`oneOf` arrays by address.
    tags: RefCell<HashMap<usize, Option<Tag>>>,
    depth: Cell<usize>,
    /// (kind, node, value) triples being evaluated: meeting one again is endless recursion.
    active: RefCell<HashSet<(u8, usize, usize)>>,
    /// Set when a check recursed without end (the reference would throw a RangeError).
    overflow: Cell<bool>,
    /// Explanations of `$ref` targets for object and array values, by (target, value).
    walk_memo: RefCell<HashMap<(usize, usize), KnownErrors>>,
}

const KIND_OK: u8 = 1;
const KIND_ANN: u8 = 2;
const KIND_WALK: u8 = 3;

impl<'s> Ctx<'s> {
    fn new(root: &'s Value) -> Self {
        let mut ctx = Ctx {
            base_of: HashMap::new(),
            resources: HashMap::new(),
            anchors: HashMap::new(),
            unresolved: RefCell::new(HashSet::new()),
            regexes: RefCell::new(HashMap::new()),
            tags: RefCell::new(HashMap::new()),
            depth: Cell::new(0),
            active: RefCell::new(HashSet::new()),
            overflow: Cell::new(false),
            walk_memo: RefCell::new(HashMap::new()),
        };
        // Indexed eagerly; the reference indexes on the first `$ref` or `$id`, with the same result.
        ctx.resources.insert(DEFAULT_BASE.to_string(), root);
        ctx.index(root, Rc::from(DEFAULT_BASE), 0);
        ctx
    }

    fn root_base(&self) -> Base {
        Rc::from(DEFAULT_BASE)
    }

    // --- recursion guards -------------------------------------------------------------------

    /// Enters a check of `node` for `v`; false (and `overflow` set) on endless or too deep recursion.
    fn enter(&self, kind: u8, node: &Value, v: &Value) -> bool {
        if self.overflow.get() {
            return false;
        }
        let d = self.depth.get();
        if d >= MAX_DEPTH || !self.active.borrow_mut().insert((kind, addr(node), addr(v))) {
            self.overflow.set(true);
            return false;
        }
        self.depth.set(d + 1);
        true
    }

    fn leave(&self, kind: u8, node: &Value, v: &Value) {
        self.depth.set(self.depth.get().saturating_sub(1));
        self.active
            .borrow_mut()
            .remove(&(kind, addr(node), addr(v)));
    }

    /// Depth guard for the coercion passes, which end by themselves but must not exhaust the stack.
    fn deeper(&self) -> bool {
        let d = self.depth.get();
        if d >= MAX_DEPTH {
            return false;
        }
        self.depth.set(d + 1);
        true
    }

    fn shallower(&self) {
        self.depth.set(self.depth.get().saturating_sub(1));
    }

    // --- reference resolution ---------------------------------------------------------------

    fn index(&mut self, node: &'s Value, base: Base, depth: usize) {
        let Value::Object(o) = node else { return };
        if depth > MAX_DEPTH || self.base_of.contains_key(&addr(node)) {
            return;
        }
        let mut b = base;
        if let Some(Value::String(id)) = o.get("$id") {
            let uri = resolve_uri(id, &b);
            let doc = document_of(&uri).to_string();
            self.resources.insert(doc.clone(), node);
            if uri.len() > doc.len() + 1 {
                self.anchors.insert(uri.clone(), node);
            }
            b = Rc::from(doc.as_str());
        }
        self.base_of.insert(addr(node), b.clone());
        if let Some(Value::String(a)) = o.get("$anchor") {
            self.anchors.insert(format!("{b}#{a}"), node);
        }
        if let Some(Value::String(a)) = o.get("$dynamicAnchor") {
            self.anchors.insert(format!("{b}#{a}"), node);
        }
        for k in SCHEMA_KEYWORDS {
            if let Some(s) = o.get(*k) {
                self.index(s, b.clone(), depth + 1);
            }
        }
        for k in MAP_KEYWORDS {
            if let Some(Value::Object(m)) = o.get(*k) {
                for s in m.values() {
                    self.index(s, b.clone(), depth + 1);
                }
            }
        }
        for k in ARRAY_KEYWORDS {
            if let Some(Value::Array(list)) = o.get(*k) {
                for s in list {
                    self.index(s, b.clone(), depth + 1);
                }
            }
        }
    }

    /// The base URI of `node`, whose parent has `base`.
    fn base_for(&self, node: &Value, base: &Base) -> Base {
        if let Some(b) = self.base_of.get(&addr(node)) {
            return b.clone();
        }
        match node.get("$id") {
            Some(Value::String(id)) => Rc::from(document_of(&resolve_uri(id, base))),
            _ => base.clone(),
        }
    }

    /// The schema `r` names from `base`, with its base; `false` when it names nothing.
    fn resolve(&self, r: &str, base: &Base) -> (&'s Value, Base) {
        match self.find(r, base) {
            Some(found) => found,
            None => {
                self.unresolved.borrow_mut().insert(resolve_uri(r, base));
                (&FALSE_SCHEMA, base.clone())
            }
        }
    }

    fn is_unresolved(&self, r: &str, base: &Base) -> bool {
        self.unresolved.borrow().contains(&resolve_uri(r, base))
    }

    fn find(&self, r: &str, base: &Base) -> Option<(&'s Value, Base)> {
        let uri = resolve_uri(r, base);
        let doc = document_of(&uri);
        let fragment = if uri.len() > doc.len() {
            percent_decode(&uri[doc.len() + 1..])?
        } else {
            String::new()
        };
        let root = *self.resources.get(doc)?;
        if fragment.is_empty() {
            return Some((root, Rc::from(doc)));
        }
        if fragment.starts_with('/') {
            let mut node = root;
            let mut b: Base = Rc::from(doc);
            for raw in fragment.split('/').skip(1) {
                let key = raw.replace("~1", "/").replace("~0", "~");
                node = match node {
                    Value::Object(m) => m.get(&key)?,
                    Value::Array(a) => a.get(array_index(&key)? as usize)?,
                    _ => return None,
                };
                if node.is_object() {
                    if let Some(nb) = self.base_of.get(&addr(node)) {
                        b = nb.clone();
                    }
                }
            }
            return Some((node, b));
        }
        let target = *self.anchors.get(&format!("{doc}#{fragment}"))?;
        let b = self
            .base_of
            .get(&addr(target))
            .cloned()
            .unwrap_or_else(|| Rc::from(doc));
        Some((target, b))
    }

    // --- regular expressions ----------------------------------------------------------------

    /// Whether `s` matches the ECMAScript pattern `p`; None when the pattern uses what the
    /// `regex` crate cannot express (lookaround, backreferences) or does not compile.
    fn regex_test(&self, p: &str, s: &str) -> Option<bool> {
        if let Some(re) = self.regexes.borrow().get(p) {
            return re.as_ref().map(|re| re.is_match(s));
        }
        // A pattern ECMAScript rejects failed the compile already; here it matches everything.
        let re = shared_regex(p).ok().flatten();
        let result = re.as_ref().map(|re| re.is_match(s));
        self.regexes.borrow_mut().insert(p.to_string(), re);
        result
    }

    // --- compile: the reference's compile-time errors ---------------------------------------

    /// Walks what the reference compiles, in its order, for its one compile error: a
    /// subschema that is neither an object nor a boolean.
    fn compile(
        &self,
        node: &'s Value,
        base: &Base,
        seen: &mut HashSet<(usize, bool)>,
        depth: usize,
    ) -> Result<(), String> {
        let o = match node {
            Value::Bool(_) => return Ok(()),
            Value::Object(o) => o,
            _ => return Err(not_a_schema(node)),
        };
        if depth > MAX_DEPTH || !seen.insert((addr(node), false)) || bare_type(o).is_some() {
            return Ok(());
        }
        let b = self.base_for(node, base);
        if has_unevaluated(o) {
            return self.compile_annotating(node, &b, seen, depth);
        }
        self.compile_plain(o, &b, seen, depth, false)
    }

    fn compile_annotating(
        &self,
        node: &'s Value,
        base: &Base,
        seen: &mut HashSet<(usize, bool)>,
        depth: usize,
    ) -> Result<(), String> {
        let o = match node {
            Value::Bool(_) => return Ok(()),
            Value::Object(o) => o,
            _ => return Err(not_a_schema(node)),
        };
        if depth > MAX_DEPTH || !seen.insert((addr(node), true)) {
            return Ok(());
        }
        let b = self.base_for(node, base);
        self.compile_plain(o, &b, seen, depth, true)?;
        let d = depth + 1;
        if o.contains_key("properties")
            || o.contains_key("patternProperties")
            || o.contains_key("additionalProperties")
        {
            if let Some(Value::Object(props)) = o.get("properties") {
                for (_, s) in js_entries(props) {
                    self.compile(s, &b, seen, d)?;
                }
            }
            if let Some(Value::Object(pats)) = o.get("patternProperties") {
                for (p, s) in js_entries(pats) {
                    shared_regex(p)?;
                    self.compile(s, &b, seen, d)?;
                }
            }
            if let Some(s) = o.get("additionalProperties") {
                self.compile(s, &b, seen, d)?;
            }
        }
        if o.contains_key("prefixItems") || o.contains_key("items") || o.contains_key("contains") {
            let prefix = match (o.get("prefixItems"), o.get("items")) {
                (Some(Value::Array(p)), _) | (_, Some(Value::Array(p))) => p.as_slice(),
                _ => &[],
            };
            for s in prefix {
                self.compile(s, &b, seen, d)?;
            }
            let rest = if matches!(o.get("items"), Some(Value::Array(_))) {
                o.get("additionalItems")
            } else {
                o.get("items")
            };
            if let Some(s) = rest {
                self.compile(s, &b, seen, d)?;
            }
            if let Some(s) = o.get("contains") {
                self.compile(s, &b, seen, d)?;
            }
        }
        for k in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(list)) = o.get(k) {
                for s in list {
                    self.compile_annotating(s, &b, seen, d)?;
                }
            }
        }
        if let Some(s) = o.get("if") {
            self.compile_annotating(s, &b, seen, d)?;
            for k in ["then", "else"] {
                if let Some(s) = o.get(k) {
                    self.compile_annotating(s, &b, seen, d)?;
                }
            }
        }
        for k in ["$ref", "$dynamicRef"] {
            if let Some(Value::String(r)) = o.get(k) {
                let (t, tb) = self.resolve(r, &b);
                self.compile_annotating(t, &tb, seen, d)?;
            }
        }
        if let Some(Value::Object(deps)) = o.get("dependentSchemas") {
            for (_, s) in js_entries(deps) {
                self.compile_annotating(s, &b, seen, d)?;
            }
        }
        for k in ["unevaluatedProperties", "unevaluatedItems"] {
            if let Some(s) = o.get(k) {
                self.compile(s, &b, seen, d)?;
            }
        }
        Ok(())
    }

    /// The subschemas of one node's plain keywords (`ann`: the keywords an annotating check
    /// leaves to its plain part only).
    fn compile_plain(
        &self,
        o: &'s JsonMap,
        b: &Base,
        seen: &mut HashSet<(usize, bool)>,
        depth: usize,
        ann: bool,
    ) -> Result<(), String> {
        let d = depth + 1;
        if let Some(Value::String(p)) = o.get("pattern") {
            shared_regex(p)?;
        }
        if !ann {
            let props = o.get("properties").and_then(Value::as_object);
            let pats = o.get("patternProperties").and_then(Value::as_object);
            let has_required = matches!(o.get("required"), Some(Value::Array(r)) if r.iter().any(Value::is_string));
            let additional = o
                .get("additionalProperties")
                .filter(|a| !matches!(a, Value::Bool(true)));
            let core = props.is_some_and(|p| !p.is_empty())
                || pats.is_some_and(|p| !p.is_empty())
                || has_required;
            if core || additional.is_some() {
                if let Some(props) = props {
                    for (_, s) in js_entries(props) {
                        self.compile(s, b, seen, d)?;
                    }
                }
                if let Some(pats) = pats {
                    for (p, s) in js_entries(pats) {
                        shared_regex(p)?;
                        self.compile(s, b, seen, d)?;
                    }
                }
                if let Some(s) = additional {
                    self.compile(s, b, seen, d)?;
                }
            }
        }
        if let Some(s) = o.get("propertyNames") {
            self.compile(s, b, seen, d)?;
        }
        if !ann {
            if let Some(Value::Object(deps)) = o.get("dependentSchemas") {
                for (_, s) in js_entries(deps) {
                    self.compile(s, b, seen, d)?;
                }
            }
        }
        if let Some(Value::Object(deps)) = o.get("dependencies") {
            for (_, s) in js_entries(deps) {
                if !s.is_array() {
                    self.compile(s, b, seen, d)?;
                }
            }
        }
        if !ann {
            let (prefix, rest) = prefix_and_rest(o);
            for s in prefix {
                self.compile(s, b, seen, d)?;
            }
            if let Some(s) = rest {
                self.compile(s, b, seen, d)?;
            }
            if let Some(s) = o.get("contains") {
                self.compile(s, b, seen, d)?;
            }
            for k in ["allOf", "anyOf", "oneOf"] {
                if let Some(Value::Array(list)) = o.get(k) {
                    for s in list {
                        self.compile(s, b, seen, d)?;
                    }
                }
            }
        }
        if let Some(s) = o.get("not") {
            self.compile(s, b, seen, d)?;
        }
        if !ann {
            if let Some(s) = o.get("if") {
                if o.contains_key("then") || o.contains_key("else") {
                    self.compile(s, b, seen, d)?;
                    for k in ["then", "else"] {
                        if let Some(s) = o.get(k) {
                            self.compile(s, b, seen, d)?;
                        }
                    }
                }
            }
            for k in ["$ref", "$dynamicRef"] {
                if let Some(Value::String(r)) = o.get(k) {
                    let (t, tb) = self.resolve(r, b);
                    self.compile(t, &tb, seen, d)?;
                }
            }
        }
        Ok(())
    }

    // --- checks -----------------------------------------------------------------------------

    /// Whether `v` is valid against `node` (whose parent has base `base`).
    fn ok(&self, node: &'s Value, base: &Base, v: &Value) -> bool {
        let o = match node {
            Value::Bool(b) => return *b,
            Value::Object(o) => o,
            _ => return false,
        };
        if !self.enter(KIND_OK, node, v) {
            return false;
        }
        let b = self.base_for(node, base);
        let r = if has_unevaluated(o) {
            let mut a = Ann::default();
            self.ann_all(o, &b, v, &mut a, false)
        } else {
            self.ok_obj(o, &b, v, false)
        };
        self.leave(KIND_OK, node, v);
        r
    }

    /// `passes()` of the coercer: None when the check recursed without end (the reference
    /// catches that error there and treats the answer as unknown).
    fn passes(&self, node: &'s Value, base: &Base, v: &Value) -> Option<bool> {
        let before = self.overflow.replace(false);
        let r = self.ok(node, base, v);
        let overflowed = self.overflow.replace(before);
        if overflowed {
            None
        } else {
            Some(r)
        }
    }

    /// The plain keywords of one schema object (`ann`: without those an annotating check
    /// evaluates itself), in the reference's order.
    fn ok_obj(&self, o: &'s JsonMap, b: &Base, v: &Value, ann: bool) -> bool {
        if let Some(t) = o.get("type") {
            if !type_ok(t, v) {
                return false;
            }
        }
        let by_type = match v {
            Value::String(s) => self.string_ok(o, s),
            Value::Number(n) => number_ok(o, num_f64(n)),
            Value::Object(m) => self.object_ok(o, b, m, v, ann),
            Value::Array(a) => self.array_ok(o, b, a, ann),
            _ => true,
        };
        if !by_type {
            return false;
        }
        if let Some(Value::Array(values)) = o.get("enum") {
            if !values.iter().any(|e| deep_equal(e, v, 0)) {
                return false;
            }
        }
        if let Some(c) = o.get("const") {
            if !deep_equal(c, v, 0) {
                return false;
            }
        }
        if !ann {
            if let Some(Value::Array(all)) = o.get("allOf") {
                if !all.iter().all(|s| self.ok(s, b, v)) {
                    return false;
                }
            }
            if let Some(Value::Array(branches)) = o.get("anyOf") {
                if !self.union_ok(branches, b, v, false) {
                    return false;
                }
            }
            if let Some(Value::Array(branches)) = o.get("oneOf") {
                if !self.union_ok(branches, b, v, true) {
                    return false;
                }
            }
        }
        if let Some(n) = o.get("not") {
            if self.ok(n, b, v) {
                return false;
            }
        }
        if !ann {
            if let Some(cond) = o.get("if") {
                let then = o.get("then");
                let otherwise = o.get("else");
                if then.is_some() || otherwise.is_some() {
                    let branch = if self.ok(cond, b, v) { then } else { otherwise };
                    if let Some(s) = branch {
                        if !self.ok(s, b, v) {
                            return false;
                        }
                    }
                }
            }
            // A `$dynamicRef` checks as a plain `$ref` (see the module notes).
            for k in ["$ref", "$dynamicRef"] {
                if let Some(Value::String(r)) = o.get(k) {
                    let (t, tb) = self.resolve(r, b);
                    if !self.ok(t, &tb, v) {
                        return false;
                    }
                }
            }
        }
        true
    }

    fn string_ok(&self, o: &JsonMap, s: &str) -> bool {
        let has_len = o.get("minLength").is_some_and(Value::is_number)
            || o.get("maxLength").is_some_and(Value::is_number);
        if has_len {
            let n = s.chars().count() as f64;
            if num_kw(o, "minLength").is_some_and(|min| n < min)
                || num_kw(o, "maxLength").is_some_and(|max| n > max)
            {
                return false;
            }
        }
        if let Some(Value::String(p)) = o.get("pattern") {
            if self.regex_test(p, s) == Some(false) {
                return false;
            }
        }
        if let Some(Value::String(f)) = o.get("format") {
            if check_format(f, s) == Some(false) {
                return false;
            }
        }
        true
    }

    fn object_ok(&self, o: &'s JsonMap, b: &Base, m: &JsonMap, v: &Value, ann: bool) -> bool {
        if let Some(Value::Array(req)) = o.get("required") {
            if req
                .iter()
                .any(|k| matches!(k, Value::String(k) if !m.contains_key(k)))
            {
                return false;
            }
        }
        if !ann {
            let props = o.get("properties").and_then(Value::as_object);
            if let Some(props) = props {
                for (k, s) in js_entries(props) {
                    if let Some(x) = m.get(k) {
                        if !self.ok(s, b, x) {
                            return false;
                        }
                    }
                }
            }
            let pats = pattern_entries(o);
            let additional = o
                .get("additionalProperties")
                .filter(|a| !matches!(a, Value::Bool(true)));
            if !pats.is_empty() || additional.is_some() {
                for (k, x) in js_entries(m) {
                    let mut matched = props.is_some_and(|p| p.contains_key(k));
                    for (p, s) in &pats {
                        if self.regex_test(p, k) != Some(false) {
                            matched = true;
                            if !self.ok(s, b, x) {
                                return false;
                            }
                        }
                    }
                    if !matched {
                        if let Some(a) = additional {
                            if !self.ok(a, b, x) {
                                return false;
                            }
                        }
                    }
                }
            }
        }
        if let Some(pn) = o.get("propertyNames") {
            for k in m.keys() {
                if !self.ok(pn, b, &Value::String(k.clone())) {
                    return false;
                }
            }
        }
        let count = m.len() as f64;
        if num_kw(o, "minProperties").is_some_and(|n| count < n)
            || num_kw(o, "maxProperties").is_some_and(|n| count > n)
        {
            return false;
        }
        if let Some(Value::Object(deps)) = o.get("dependentRequired") {
            for (k, list) in deps {
                if let Value::Array(list) = list {
                    if m.contains_key(k) && list.iter().any(|r| !m.contains_key(&js_to_string(r))) {
                        return false;
                    }
                }
            }
        }
        if !ann {
            if let Some(Value::Object(deps)) = o.get("dependentSchemas") {
                for (k, s) in js_entries(deps) {
                    if m.contains_key(k) && !self.ok(s, b, v) {
                        return false;
                    }
                }
            }
        }
        if let Some(Value::Object(deps)) = o.get("dependencies") {
            for (k, d) in js_entries(deps) {
                if !m.contains_key(k) {
                    continue;
                }
                let ok = match d {
                    Value::Array(list) => list.iter().all(|r| m.contains_key(&js_to_string(r))),
                    s => self.ok(s, b, v),
                };
                if !ok {
                    return false;
                }
            }
        }
        true
    }

    fn array_ok(&self, o: &'s JsonMap, b: &Base, a: &[Value], ann: bool) -> bool {
        let len = a.len() as f64;
        if num_kw(o, "minItems").is_some_and(|n| len < n)
            || num_kw(o, "maxItems").is_some_and(|n| len > n)
        {
            return false;
        }
        if !ann {
            let (prefix, rest) = prefix_and_rest(o);
            for (i, x) in a.iter().enumerate() {
                let s = if i < prefix.len() {
                    prefix.get(i)
                } else {
                    rest
                };
                if let Some(s) = s {
                    if !self.ok(s, b, x) {
                        return false;
                    }
                }
            }
            if let Some(c) = o.get("contains") {
                let (min, max) = contains_bounds(o);
                if !self.contains_ok(c, b, a, min, max) {
                    return false;
                }
            }
        }
        if matches!(o.get("uniqueItems"), Some(Value::Bool(true))) && !unique(a) {
            return false;
        }
        true
    }

    fn contains_ok(&self, c: &'s Value, b: &Base, a: &[Value], min: f64, max: f64) -> bool {
        let mut n = 0.0;
        for x in a {
            if self.ok(c, b, x) {
                n += 1.0;
                if n > max {
                    return false;
                }
            }
        }
        n >= min
    }

    /// `anyOf`/`oneOf`, evaluated as the reference's compiled union: a tagged union by its
    /// tag, an `anyOf` by its bare-type branches first.
    fn union_ok(&self, branches: &'s [Value], b: &Base, v: &Value, exactly_one: bool) -> bool {
        if let Some((key, tags)) = self.compiled_tag(branches, b) {
            let Value::Object(m) = v else { return false };
            let Some(tag) = m.get(&key) else { return false };
            return match tags.iter().position(|t| strict_eq(t, tag)) {
                Some(i) => branches.get(i).is_some_and(|s| self.ok(s, b, v)),
                None => false,
            };
        }
        if exactly_one {
            let mut n = 0;
            for s in branches {
                if self.ok(s, b, v) {
                    n += 1;
                    if n > 1 {
                        return false;
                    }
                }
            }
            return n == 1;
        }
        let bare: Vec<&str> = branches
            .iter()
            .filter_map(|s| s.as_object().and_then(bare_type))
            .collect();
        if bare.iter().any(|t| type_name_ok(t, v)) {
            return true;
        }
        branches
            .iter()
            .filter(|s| s.as_object().and_then(bare_type).is_none())
            .any(|s| self.ok(s, b, v))
    }

    /// The compile-time tag of a union: every branch an object schema with a required,
    /// distinct primitive `const` on one key.
    fn compiled_tag(&self, branches: &'s [Value], b: &Base) -> Option<Tag> {
        let key = branches.as_ptr() as usize;
        if let Some(cached) = self.tags.borrow().get(&key) {
            return cached.clone();
        }
        let computed = self.compute_tag(branches, b);
        self.tags.borrow_mut().insert(key, computed.clone());
        computed
    }

    fn compute_tag(&self, branches: &'s [Value], b: &Base) -> Option<Tag> {
        if branches.len() < 2 {
            return None;
        }
        let mut resolved = Vec::with_capacity(branches.len());
        for branch in branches {
            let o = branch.as_object()?;
            let node = match o.get("$ref") {
                Some(Value::String(r)) if o.len() == 1 => {
                    self.resolve(r, &self.base_for(branch, b)).0
                }
                _ => branch,
            };
            resolved.push(node.as_object()?);
        }
        let first = resolved.first()?.get("properties")?.as_object()?;
        for (key, _) in js_entries(first) {
            let tags: Option<Vec<Value>> =
                resolved.iter().map(|s| tag_of(s, key).cloned()).collect();
            let Some(tags) = tags else { continue };
            let distinct = tags
                .iter()
                .enumerate()
                .all(|(i, t)| tags[..i].iter().all(|u| !strict_eq(t, u)));
            if distinct {
                return Some((key.clone(), tags));
            }
        }
        None
    }

    // --- annotating checks (unevaluatedProperties / unevaluatedItems) -----------------------

    /// The annotating check of `node`: it also records what it evaluated in `a`.
    fn ok_ann(&self, node: &'s Value, base: &Base, v: &Value, a: &mut Ann) -> bool {
        let o = match node {
            Value::Bool(b) => return *b,
            Value::Object(o) => o,
            _ => return false,
        };
        if !self.enter(KIND_ANN, node, v) {
            return false;
        }
        let b = self.base_for(node, base);
        let r = if has_unevaluated(o) {
            // unevaluated* sees only its own schema's annotations, never its siblings'.
            let mut own = Ann::default();
            let r = self.ann_all(o, &b, v, &mut own, false);
            if r {
                a.merge(own);
            }
            r
        } else {
            self.ann_all(o, &b, v, a, false)
        };
        self.leave(KIND_ANN, node, v);
        r
    }

    /// The plain keywords, then each annotating keyword in order (`skip_uneval`: without the
    /// node's own unevaluated* keywords, as the explainer evaluates them).
    fn ann_all(&self, o: &'s JsonMap, b: &Base, v: &Value, a: &mut Ann, skip_uneval: bool) -> bool {
        if !self.ok_obj(o, b, v, true) {
            return false;
        }
        if !o.keys().any(|k| ANNOTATING.contains(&k.as_str())) {
            return true;
        }
        if o.contains_key("properties")
            || o.contains_key("patternProperties")
            || o.contains_key("additionalProperties")
        {
            if let Value::Object(m) = v {
                let props = o.get("properties").and_then(Value::as_object);
                let pats = pattern_entries(o);
                let additional = o.get("additionalProperties");
                let mut seen = Vec::new();
                if let Some(props) = props {
                    for (k, s) in js_entries(props) {
                        if let Some(x) = m.get(k) {
                            if !self.ok(s, b, x) {
                                return false;
                            }
                            seen.push(k.clone());
                        }
                    }
                }
                for (k, x) in js_entries(m) {
                    let mut matched = props.is_some_and(|p| p.contains_key(k));
                    for (p, s) in &pats {
                        if self.regex_test(p, k) != Some(false) {
                            if !self.ok(s, b, x) {
                                return false;
                            }
                            matched = true;
                            seen.push(k.clone());
                        }
                    }
                    if !matched {
                        if let Some(s) = additional {
                            if !self.ok(s, b, x) {
                                return false;
                            }
                            seen.push(k.clone());
                        }
                    }
                }
                a.props.extend(seen);
            }
        }
        if o.contains_key("prefixItems") || o.contains_key("items") || o.contains_key("contains") {
            if let Value::Array(list) = v {
                let prefix = match (o.get("prefixItems"), o.get("items")) {
                    (Some(Value::Array(p)), _) | (_, Some(Value::Array(p))) => p.as_slice(),
                    _ => &[],
                };
                let rest = if matches!(o.get("items"), Some(Value::Array(_))) {
                    o.get("additionalItems")
                } else {
                    o.get("items")
                };
                let m = list.len().min(prefix.len());
                for i in 0..m {
                    if !self.ok(&prefix[i], b, &list[i]) {
                        return false;
                    }
                }
                if let Some(rest) = rest {
                    for x in list.iter().skip(prefix.len()) {
                        if !self.ok(rest, b, x) {
                            return false;
                        }
                    }
                    a.all_items = true;
                }
                a.items = a.items.max(m);
                if let Some(c) = o.get("contains") {
                    let (min, max) = contains_bounds(o);
                    let mut n = 0.0;
                    for (i, x) in list.iter().enumerate() {
                        if self.ok(c, b, x) {
                            n += 1.0;
                            a.indexes.insert(i);
                        }
                    }
                    if n < min || n > max {
                        return false;
                    }
                }
            }
        }
        if let Some(Value::Array(all)) = o.get("allOf") {
            for s in all {
                if !self.ok_ann(s, b, v, a) {
                    return false;
                }
            }
        }
        for (k, exactly_one) in [("anyOf", false), ("oneOf", true)] {
            if let Some(Value::Array(branches)) = o.get(k) {
                let mut n = 0;
                for s in branches {
                    let mut own = Ann::default();
                    if self.ok_ann(s, b, v, &mut own) {
                        n += 1;
                        a.merge(own);
                    }
                }
                if if exactly_one { n != 1 } else { n == 0 } {
                    return false;
                }
            }
        }
        if let Some(cond) = o.get("if") {
            let mut own = Ann::default();
            let ok = if self.ok_ann(cond, b, v, &mut own) {
                a.merge(own);
                o.get("then").is_none_or(|s| self.ok_ann(s, b, v, a))
            } else {
                o.get("else").is_none_or(|s| self.ok_ann(s, b, v, a))
            };
            if !ok {
                return false;
            }
        }
        for k in ["$ref", "$dynamicRef"] {
            if let Some(Value::String(r)) = o.get(k) {
                let (t, tb) = self.resolve(r, b);
                if !self.ok_ann(t, &tb, v, a) {
                    return false;
                }
            }
        }
        if let Some(Value::Object(deps)) = o.get("dependentSchemas") {
            for (k, s) in js_entries(deps) {
                if let Value::Object(m) = v {
                    if m.contains_key(k) && !self.ok_ann(s, b, v, a) {
                        return false;
                    }
                }
            }
        }
        if skip_uneval {
            return true;
        }
        if let Some(up) = o.get("unevaluatedProperties") {
            if let Value::Object(m) = v {
                if !a.all_props {
                    for (k, x) in js_entries(m) {
                        if !a.props.contains(k) && !self.ok(up, b, x) {
                            return false;
                        }
                    }
                    a.all_props = true;
                }
            }
        }
        if let Some(ui) = o.get("unevaluatedItems") {
            if let Value::Array(list) = v {
                if !a.all_items {
                    for (i, x) in list.iter().enumerate().skip(a.items) {
                        if !a.indexes.contains(&i) && !self.ok(ui, b, x) {
                            return false;
                        }
                    }
                    a.all_items = true;
                }
            }
        }
        true
    }

    // --- coercion ---------------------------------------------------------------------------

    /// The reference's `coerce()`: optional nulls, conversions, primitive coercion by type.
    fn coerce(&self, schema: &'s Value, arguments: &Value) -> Value {
        let base = self.root_base();
        let mut value = arguments.clone();
        self.drop_nulls(&mut value, schema, &base);
        let mut state = ConvState::default();
        if let Some(converted) = self.convert(&mut state, schema, &base, &value, true) {
            value = converted;
        }
        self.coerce_types(value, schema, &base)
    }

    /// Pass 1: a `null` in an optional property whose schema rejects null is dropped.
    fn drop_nulls(&self, value: &mut Value, schema: &'s Value, base: &Base) {
        let Value::Object(so) = schema else { return };
        if !self.deeper() {
            return;
        }
        let b = self.base_for(schema, base);
        match value {
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    if let Some(s) = item_schema_at(so, i) {
                        self.drop_nulls(item, s, &b);
                    }
                }
            }
            Value::Object(m) => self.drop_object_nulls(m, so, &b),
            _ => {}
        }
        self.shallower();
    }

    fn drop_object_nulls(&self, m: &mut JsonMap, so: &'s JsonMap, b: &Base) {
        let props = so.get("properties").and_then(Value::as_object);
        let pats = pattern_entries(so);
        let additional = so.get("additionalProperties").filter(|a| a.is_object());
        if pats.is_empty() && additional.is_none() && props.is_none() {
            return;
        }
        let required: HashSet<&str> = match so.get("required") {
            Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
            _ => HashSet::new(),
        };
        if let Some(props) = props {
            for (key, prop) in js_entries(props) {
                let Some(current) = m.get_mut(key) else {
                    continue;
                };
                let is_ref = matches!(prop.get("$ref"), Some(Value::String(_))) && prop.is_object();
                if current.is_null()
                    && !required.contains(key.as_str())
                    && !is_ref
                    && self.passes(prop, b, &Value::Null) == Some(false)
                {
                    m.shift_remove(key);
                    continue;
                }
                self.drop_nulls(current, prop, b);
            }
        }
        if !pats.is_empty() || additional.is_some() {
            for key in js_key_list(m) {
                let mut matched = props.is_some_and(|p| p.contains_key(&key));
                for (p, s) in &pats {
                    if self.regex_test(p, &key) == Some(false) {
                        continue;
                    }
                    matched = true;
                    if let Some(current) = m.get_mut(&key) {
                        self.drop_nulls(current, s, b);
                    }
                }
                if !matched {
                    if let (Some(a), Some(current)) = (additional, m.get_mut(&key)) {
                        self.drop_nulls(current, a, b);
                    }
                }
            }
        }
    }

    /// Pass 2, TypeBox's conversions: the converted value, or None when it is unchanged.
    /// `stable` tells that `value` lives in the pass's input tree for the whole pass (only
    /// such values are memoized by address).
    fn convert(
        &self,
        st: &mut ConvState,
        node: &'s Value,
        base: &Base,
        value: &Value,
        stable: bool,
    ) -> Option<Value> {
        let Value::Object(o) = node else { return None };
        if !self.deeper() {
            return None;
        }
        let b = self.base_for(node, base);
        let r = if let Some(Value::String(r)) = o.get("$ref") {
            // A `$ref` converts by its target alone; its siblings do not convert.
            let (t, tb) = self.resolve(r, &b);
            if t.is_object() {
                self.reenter(st, t, &tb, value, stable, true)
            } else {
                None
            }
        } else {
            self.convert_node(st, node, o, &b, value, stable)
        };
        self.shallower();
        r
    }

    /// Converts at a re-entry point (a `$ref` or a wrapped single value): a pair already being
    /// converted is left as it is, so recursive schemas end.
    fn reenter(
        &self,
        st: &mut ConvState,
        node: &'s Value,
        base: &Base,
        value: &Value,
        stable: bool,
        memoize: bool,
    ) -> Option<Value> {
        let key = (addr(node), id_key(value));
        if st.entered.contains(&key) {
            st.cuts += 1;
            return None;
        }
        let memo_ok = memoize && (stable || !matches!(value, Value::Array(_) | Value::Object(_)));
        if memo_ok {
            if let Some(r) = st.memo.get(&key) {
                return r.clone();
            }
        }
        let cuts = st.cuts;
        st.entered.push(key.clone());
        let r = self.convert(st, node, base, value, stable);
        st.entered.pop();
        if memo_ok && st.cuts == cuts {
            st.memo.insert(key, r.clone());
        }
        r
    }

    /// One node's conversion: its first keyword among const, enum, anyOf, oneOf, allOf, type.
    fn convert_node(
        &self,
        st: &mut ConvState,
        node: &'s Value,
        o: &'s JsonMap,
        b: &Base,
        value: &Value,
        stable: bool,
    ) -> Option<Value> {
        if let Some(c) = o.get("const") {
            return convert_literal(c, value);
        }
        if let Some(Value::Array(values)) = o.get("enum") {
            if values.iter().any(|m| strict_eq(m, value)) {
                return None;
            }
            for member in values {
                if let Some(candidate) = convert_literal(member, value) {
                    if self.passes(node, b, &candidate) == Some(true) {
                        return Some(candidate);
                    }
                }
            }
            return None;
        }
        for k in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = o.get(k) {
                return self.convert_union(st, node, o, branches, b, value, stable);
            }
        }
        if let Some(Value::Array(members)) = o.get("allOf") {
            let mut current: Option<Value> = None;
            for member in members {
                let input = current.as_ref().unwrap_or(value);
                if let Some(next) = self.convert(st, member, b, input, stable && current.is_none())
                {
                    current = Some(next);
                }
            }
            let input = current.as_ref().unwrap_or(value);
            if let Some(next) = self.convert_members(st, o, b, input, stable && current.is_none()) {
                current = Some(next);
            }
            return current;
        }
        match o.get("type") {
            Some(Value::String(t)) => match t.as_str() {
                "string" => changed(try_string(value)?, value),
                "number" => changed(num_value(try_number(value)?), value),
                "integer" => changed(num_value(try_number(value)?.trunc()), value),
                "boolean" => changed(Value::Bool(try_boolean(value)?), value),
                "null" => {
                    try_null(value)?;
                    changed(Value::Null, value)
                }
                "array" => self.convert_array(st, o, b, value, stable),
                "object" => self.convert_object(st, o, b, value, stable),
                // `bigint` and `undefined` have no JSON value to convert to.
                _ => None,
            },
            None => {
                if o.contains_key("properties") || o.contains_key("patternProperties") {
                    self.convert_object(st, o, b, value, stable)
                } else if o.contains_key("items") || o.contains_key("prefixItems") {
                    self.convert_array(st, o, b, value, stable)
                } else {
                    None
                }
            }
            Some(_) => None,
        }
    }

    /// A value one branch accepts stays; else the first branch's conversion the whole node accepts.
    #[allow(clippy::too_many_arguments)]
    fn convert_union(
        &self,
        st: &mut ConvState,
        node: &'s Value,
        o: &'s JsonMap,
        branches: &'s [Value],
        b: &Base,
        value: &Value,
        stable: bool,
    ) -> Option<Value> {
        if branches
            .iter()
            .any(|s| self.passes(s, b, value) == Some(true))
        {
            return self.convert_members(st, o, b, value, stable);
        }
        for s in branches {
            let first = self.convert(st, s, b, value, stable);
            let input = first.as_ref().unwrap_or(value);
            let second = self.convert_members(st, o, b, input, stable && first.is_none());
            let candidate = second.or(first);
            if self.passes(node, b, candidate.as_ref().unwrap_or(value)) == Some(true) {
                return candidate;
            }
        }
        self.convert_members(st, o, b, value, stable)
    }

    /// The object members of a union or intersection node, when it declares any.
    fn convert_members(
        &self,
        st: &mut ConvState,
        o: &'s JsonMap,
        b: &Base,
        value: &Value,
        stable: bool,
    ) -> Option<Value> {
        if o.contains_key("properties")
            || o.contains_key("patternProperties")
            || o.contains_key("additionalProperties")
        {
            self.convert_object(st, o, b, value, stable)
        } else {
            None
        }
    }

    fn convert_array(
        &self,
        st: &mut ConvState,
        o: &'s JsonMap,
        b: &Base,
        value: &Value,
        stable: bool,
    ) -> Option<Value> {
        let items_schema = o.get("items");
        let prefix = match (items_schema, o.get("prefixItems")) {
            (Some(Value::Array(p)), _) | (_, Some(Value::Array(p))) => Some(p),
            _ => None,
        };
        if let Some(prefix) = prefix {
            // A tuple converts its items and never wraps a single value.
            let Value::Array(items) = value else {
                return None;
            };
            let rest = if matches!(items_schema, Some(Value::Array(_))) {
                None
            } else {
                items_schema
            };
            let mut out: Option<Vec<Value>> = None;
            for (i, item) in items.iter().enumerate() {
                let s = if i < prefix.len() {
                    prefix.get(i)
                } else {
                    rest
                };
                if let Some(next) = s.and_then(|s| self.convert(st, s, b, item, stable)) {
                    out.get_or_insert_with(|| items.clone())[i] = next;
                }
            }
            return out.map(Value::Array);
        }
        if let Value::Array(items) = value {
            let s = items_schema?;
            let mut out: Option<Vec<Value>> = None;
            for (i, item) in items.iter().enumerate() {
                if let Some(next) = self.convert(st, s, b, item, stable) {
                    out.get_or_insert_with(|| items.clone())[i] = next;
                }
            }
            return out.map(Value::Array);
        }
        // A single value becomes a one-item array, converted by the item schema.
        let inner = match items_schema {
            Some(s) if s.is_object() => self.reenter(st, s, b, value, stable, false),
            _ => None,
        };
        Some(Value::Array(vec![inner.unwrap_or_else(|| value.clone())]))
    }

    fn convert_object(
        &self,
        st: &mut ConvState,
        o: &'s JsonMap,
        b: &Base,
        value: &Value,
        stable: bool,
    ) -> Option<Value> {
        let Value::Object(m) = value else { return None };
        let props = o.get("properties").and_then(Value::as_object);
        let pats = pattern_entries(o);
        let additional = o.get("additionalProperties").filter(|a| a.is_object());
        let mut out: Option<JsonMap> = None;
        for (key, child) in js_entries(m) {
            let mut current: Option<Value> = None;
            let prop = props.and_then(|p| p.get(key));
            let mut matched = prop.is_some();
            if let Some(s) = prop {
                current = self.convert(st, s, b, child, stable);
            }
            for (p, s) in &pats {
                if self.regex_test(p, key) == Some(false) {
                    continue;
                }
                matched = true;
                let input = current.as_ref().unwrap_or(child);
                if let Some(next) = self.convert(st, s, b, input, stable && current.is_none()) {
                    current = Some(next);
                }
            }
            if !matched {
                if let Some(a) = additional {
                    current = self.convert(st, a, b, child, stable);
                }
            }
            if let Some(next) = current {
                out.get_or_insert_with(|| m.clone())
                    .insert(key.clone(), next);
            }
        }
        out.map(Value::Object)
    }

    /// Pass 3, primitive coercion by `type` (Ajv's `coerceTypes`).
    fn coerce_types(&self, value: Value, schema: &'s Value, base: &Base) -> Value {
        let Value::Object(so) = schema else {
            return value;
        };
        if !self.deeper() {
            return value;
        }
        let b = self.base_for(schema, base);
        let mut next = value;
        if let Some(Value::Array(all)) = so.get("allOf") {
            for member in all {
                next = self.coerce_types(next, member, &b);
            }
        }
        for k in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = so.get(k) {
                next = self.coerce_union(next, branches, &b);
            }
        }
        let types: Vec<&str> = match so.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let matches_member = types.len() > 1 && types.iter().any(|t| matches_type(&next, t));
        if !matches_member {
            for t in &types {
                if let Some(candidate) = coerce_primitive(&next, t) {
                    next = candidate;
                    break;
                }
            }
        }
        if types.contains(&"object") {
            if let Value::Object(m) = &mut next {
                self.coerce_properties(m, so, &b);
            }
        }
        if types.contains(&"array") {
            if let Value::Array(items) = &mut next {
                for (i, item) in items.iter_mut().enumerate() {
                    if let Some(s) = item_schema_at(so, i).filter(|s| s.is_object()) {
                        *item = self.coerce_types(std::mem::take(item), s, &b);
                    }
                }
            }
        }
        self.shallower();
        next
    }

    fn coerce_union(&self, value: Value, branches: &'s [Value], b: &Base) -> Value {
        if branches
            .iter()
            .any(|s| self.passes(s, b, &value) == Some(true))
        {
            return value;
        }
        for s in branches {
            let coerced = self.coerce_types(value.clone(), s, b);
            if self.passes(s, b, &coerced) == Some(true) {
                return coerced;
            }
        }
        value
    }

    fn coerce_properties(&self, m: &mut JsonMap, so: &'s JsonMap, b: &Base) {
        let props = so.get("properties").and_then(Value::as_object);
        if let Some(props) = props {
            for (key, prop) in js_entries(props) {
                if let Some(slot) = m.get_mut(key) {
                    *slot = self.coerce_types(std::mem::take(slot), prop, b);
                }
            }
        }
        let pats = pattern_entries(so);
        let additional = so.get("additionalProperties").filter(|a| a.is_object());
        if pats.is_empty() && additional.is_none() {
            return;
        }
        for key in js_key_list(m) {
            let mut matched = props.is_some_and(|p| p.contains_key(&key));
            for (p, s) in &pats {
                if self.regex_test(p, &key) == Some(false) {
                    continue;
                }
                matched = true;
                if let Some(slot) = m.get_mut(&key) {
                    *slot = self.coerce_types(std::mem::take(slot), s, b);
                }
            }
            if !matched {
                if let (Some(a), Some(slot)) = (additional, m.get_mut(&key)) {
                    *slot = self.coerce_types(std::mem::take(slot), a, b);
                }
            }
        }
    }

    // --- explanations -----------------------------------------------------------------------

    /// The reference's explainer: each failing keyword reported at the value it failed on.
    fn walk(&self, node: &'s Value, base: &Base, v: &Value, path: &str, out: &mut Vec<VErr>) {
        let o = match node {
            Value::Bool(true) => return,
            Value::Bool(false) => {
                out.push(verr(path, "no value is allowed here"));
                return;
            }
            Value::Object(o) => o,
            _ => return,
        };
        let b = self.base_for(node, base);
        if self.ok(node, &b, v) || self.overflow.get() {
            return;
        }
        if !self.enter(KIND_WALK, node, v) {
            return;
        }
        self.walk_node(o, &b, v, path, out);
        self.leave(KIND_WALK, node, v);
    }

    fn walk_node(&self, o: &'s JsonMap, b: &Base, v: &Value, path: &str, out: &mut Vec<VErr>) {
        let start = out.len();
        if let Some(t) = o.get("type") {
            if !type_ok(t, v) {
                let names: Vec<String> = match t {
                    Value::Array(list) => list.iter().map(js_join_string).collect(),
                    other => vec![js_join_string(other)],
                };
                out.push(verr(
                    path,
                    &format!("expected {}, got {}", names.join(" or "), type_name(v)),
                ));
                return;
            }
        }
        if let Some(Value::Array(values)) = o.get("enum") {
            if !values.iter().any(|e| deep_equal(e, v, 0)) {
                out.push(verr(
                    path,
                    &format!("expected one of {}", list_values(values)),
                ));
            }
        }
        if let Some(c) = o.get("const") {
            if !deep_equal(c, v, 0) {
                out.push(verr(path, &format!("expected {}", js_stringify(c, false))));
            }
        }
        match v {
            Value::String(s) => self.walk_string(o, s, path, out),
            Value::Number(n) => walk_number(o, num_f64(n), path, out),
            Value::Object(m) => self.walk_object(o, b, m, v, path, out),
            Value::Array(a) => self.walk_array(o, b, a, path, out),
            _ => {}
        }
        if let Some(Value::Array(all)) = o.get("allOf") {
            for s in all {
                self.walk(s, b, v, path, out);
            }
        }
        if let Some(Value::Array(branches)) = o.get("anyOf") {
            self.walk_union(branches, b, v, path, out, false);
        }
        if let Some(Value::Array(branches)) = o.get("oneOf") {
            self.walk_union(branches, b, v, path, out, true);
        }
        if let Some(n) = o.get("not") {
            if self.ok(n, b, v) {
                out.push(verr(path, "must not match the schema in not"));
            }
        }
        if let Some(cond) = o.get("if") {
            let branch = if self.ok(cond, b, v) {
                o.get("then")
            } else {
                o.get("else")
            };
            if let Some(s) = branch {
                self.walk(s, b, v, path, out);
            }
        }
        if let Some(Value::String(r)) = o.get("$ref") {
            self.walk_ref(r, b, v, path, out);
        }
        if out.len() == start && has_unevaluated(o) {
            self.walk_unevaluated(o, b, v, path, out);
        }
        if out.len() == start && matches!(o.get("$dynamicRef"), Some(Value::String(_))) {
            out.push(verr(
                path,
                "does not match the dynamically referenced schema",
            ));
        }
    }

    fn walk_ref(&self, r: &str, b: &Base, v: &Value, path: &str, out: &mut Vec<VErr>) {
        let (t, tb) = self.resolve(r, b);
        if matches!(t, Value::Bool(false)) && self.is_unresolved(r, b) {
            out.push(verr(path, &format!("unresolved reference {r}")));
            return;
        }
        if !t.is_object() || !matches!(v, Value::Array(_) | Value::Object(_)) {
            self.walk(t, &tb, v, path, out);
            return;
        }
        // A recursive union explains each branch; the same children are explained once.
        let key = (addr(t), addr(v));
        if let Some((known_path, errors)) = self.walk_memo.borrow().get(&key) {
            if known_path == path {
                out.extend(errors.iter().cloned());
                return;
            }
        }
        let mut errors = Vec::new();
        self.walk(t, &tb, v, path, &mut errors);
        self.walk_memo
            .borrow_mut()
            .insert(key, (path.to_string(), errors.clone()));
        out.extend(errors);
    }

    fn walk_string(&self, o: &JsonMap, s: &str, path: &str, out: &mut Vec<VErr>) {
        let n = || s.chars().count() as f64;
        if let Some(min) = num_kw(o, "minLength") {
            if n() < min {
                out.push(verr(
                    path,
                    &format!("expected at least {} characters", js_number_string(min)),
                ));
            }
        }
        if let Some(max) = num_kw(o, "maxLength") {
            if n() > max {
                out.push(verr(
                    path,
                    &format!("expected at most {} characters", js_number_string(max)),
                ));
            }
        }
        if let Some(Value::String(p)) = o.get("pattern") {
            if self.regex_test(p, s) == Some(false) {
                out.push(verr(path, &format!("expected to match {p}")));
            }
        }
        if let Some(Value::String(f)) = o.get("format") {
            if check_format(f, s) == Some(false) {
                out.push(verr(path, &format!("expected format {f}")));
            }
        }
    }

    fn walk_object(
        &self,
        o: &'s JsonMap,
        b: &Base,
        m: &JsonMap,
        v: &Value,
        path: &str,
        out: &mut Vec<VErr>,
    ) {
        let props = o.get("properties").and_then(Value::as_object);
        if let Some(Value::Array(req)) = o.get("required") {
            for k in req {
                if let Value::String(k) = k {
                    if !m.contains_key(k) {
                        out.push(verr(&pointer(path, k), "missing"));
                    }
                }
            }
        }
        if let Some(props) = props {
            for (k, s) in js_entries(props) {
                if let Some(x) = m.get(k) {
                    self.walk(s, b, x, &pointer(path, k), out);
                }
            }
        }
        let pats = pattern_entries(o);
        let additional = o.get("additionalProperties");
        let names = o.get("propertyNames");
        for (k, x) in js_entries(m) {
            let mut matched = props.is_some_and(|p| p.contains_key(k));
            for (p, s) in &pats {
                if self.regex_test(p, k) != Some(false) {
                    matched = true;
                    self.walk(s, b, x, &pointer(path, k), out);
                }
            }
            if !matched {
                match additional {
                    Some(Value::Bool(false)) => out.push(verr(&pointer(path, k), "unknown field")),
                    Some(s) => self.walk(s, b, x, &pointer(path, k), out),
                    None => {}
                }
            }
            if let Some(pn) = names {
                if !self.ok(pn, b, &Value::String(k.clone())) {
                    out.push(verr(&pointer(path, k), "invalid property name"));
                }
            }
        }
        let count = m.len() as f64;
        if let Some(n) = num_kw(o, "minProperties") {
            if count < n {
                out.push(verr(
                    path,
                    &format!("expected at least {} properties", js_number_string(n)),
                ));
            }
        }
        if let Some(n) = num_kw(o, "maxProperties") {
            if count > n {
                out.push(verr(
                    path,
                    &format!("expected at most {} properties", js_number_string(n)),
                ));
            }
        }
        // `{ ...dependentRequired, ...dependencies }`: the later object's values win.
        let mut deps = JsonMap::new();
        for k in ["dependentRequired", "dependencies"] {
            if let Some(Value::Object(d)) = o.get(k) {
                for (key, value) in js_entries(d) {
                    deps.insert(key.clone(), value.clone());
                }
            }
        }
        for (k, d) in js_entries(&deps) {
            if !m.contains_key(k) {
                continue;
            }
            match d {
                Value::Array(list) => {
                    for r in list {
                        let r = js_to_string(r);
                        if !m.contains_key(&r) {
                            out.push(verr(
                                &pointer(path, &r),
                                &format!("required when {k} is present"),
                            ));
                        }
                    }
                }
                // The merged copy has no address in the schema; look the original up for `$ref`s.
                _ => {
                    let original = ["dependencies", "dependentRequired"]
                        .iter()
                        .find_map(|name| o.get(*name).and_then(|d| d.get(k)))
                        .unwrap_or(&FALSE_SCHEMA);
                    self.walk(original, b, v, path, out);
                }
            }
        }
        if let Some(Value::Object(deps)) = o.get("dependentSchemas") {
            for (k, s) in js_entries(deps) {
                if m.contains_key(k) {
                    self.walk(s, b, v, path, out);
                }
            }
        }
    }

    fn walk_array(&self, o: &'s JsonMap, b: &Base, a: &[Value], path: &str, out: &mut Vec<VErr>) {
        let (prefix, rest) = match o.get("items") {
            Some(Value::Array(items)) => (items.as_slice(), o.get("additionalItems")),
            items => (
                o.get("prefixItems")
                    .and_then(Value::as_array)
                    .map_or(&[][..], |p| p.as_slice()),
                items,
            ),
        };
        for (i, x) in a.iter().enumerate() {
            let s = if i < prefix.len() {
                prefix.get(i)
            } else {
                rest
            };
            if let Some(s) = s {
                self.walk(s, b, x, &format!("{path}/{i}"), out);
            }
        }
        let len = a.len() as f64;
        if let Some(n) = num_kw(o, "minItems") {
            if len < n {
                out.push(verr(
                    path,
                    &format!("expected at least {} items", js_number_string(n)),
                ));
            }
        }
        if let Some(n) = num_kw(o, "maxItems") {
            if len > n {
                out.push(verr(
                    path,
                    &format!("expected at most {} items", js_number_string(n)),
                ));
            }
        }
        if matches!(o.get("uniqueItems"), Some(Value::Bool(true))) && !unique(a) {
            out.push(verr(path, "expected unique items"));
        }
        if let Some(c) = o.get("contains") {
            let (min, max) = contains_bounds(o);
            if !self.contains_ok(c, b, a, min, max) {
                out.push(verr(path, &contains_message(min, max)));
            }
        }
    }

    fn walk_union(
        &self,
        branches: &'s [Value],
        b: &Base,
        v: &Value,
        path: &str,
        out: &mut Vec<VErr>,
        exactly_one: bool,
    ) {
        let matches = branches.iter().filter(|s| self.ok(s, b, v)).count();
        if matches == 1 || (!exactly_one && matches > 0) {
            return;
        }
        if matches > 1 {
            out.push(verr(path, "matches more than one alternative"));
            return;
        }
        // A tagged union reports the branch its tag selects.
        if let (Some((key, values)), Value::Object(m)) = (self.explained_tag(branches, b), v) {
            let i = m
                .get(key)
                .and_then(|t| values.iter().position(|x| strict_eq(x, t)));
            match i.and_then(|i| branches.get(i)) {
                Some(s) => self.walk(s, b, v, path, out),
                None => {
                    let listed: Vec<Value> = values.into_iter().cloned().collect();
                    out.push(verr(
                        &pointer(path, key),
                        &format!("expected one of {}", list_values(&listed)),
                    ));
                }
            }
            return;
        }
        // Otherwise the branch that declares most of the object's keys, then the one whose first
        // error is deepest.
        let mut best: Option<(Vec<VErr>, usize)> = None;
        for s in branches {
            let mut errors = Vec::new();
            self.walk(s, b, v, path, &mut errors);
            let Some(first) = errors.first() else {
                continue;
            };
            let declared = match v {
                Value::Object(m) => self.declared_keys(s, b, m),
                _ => 0,
            };
            let better = match &best {
                None => true,
                Some((best_errors, best_declared)) => {
                    declared > *best_declared
                        || (declared == *best_declared
                            && utf16_len(&first.path)
                                > best_errors.first().map_or(0, |e| utf16_len(&e.path)))
                }
            };
            if better {
                best = Some((errors, declared));
            }
        }
        match best {
            Some((errors, _)) => out.extend(errors),
            None => out.push(verr(path, "matches no alternative")),
        }
    }

    /// The explainer's tag: a key of the first branch's properties whose `const` is a distinct
    /// primitive in every branch.
    fn explained_tag(&self, branches: &'s [Value], b: &Base) -> Option<(&'s str, Vec<&'s Value>)> {
        let resolved: Vec<&'s Value> = branches
            .iter()
            .map(|s| match s.get("$ref") {
                Some(Value::String(r)) if s.is_object() => self.resolve(r, &self.base_for(s, b)).0,
                _ => s,
            })
            .collect();
        let first = resolved.first()?.get("properties")?.as_object()?;
        for (key, _) in js_entries(first) {
            let values: Option<Vec<&'s Value>> = resolved
                .iter()
                .map(|s| {
                    let tag = s
                        .get("properties")
                        .and_then(Value::as_object)
                        .and_then(|p| p.get(key));
                    tag.filter(|t| t.is_object()).and_then(|t| t.get("const"))
                })
                .collect();
            let Some(values) = values else { continue };
            let primitive = values
                .iter()
                .all(|x| !matches!(x, Value::Array(_) | Value::Object(_)));
            let distinct = values
                .iter()
                .enumerate()
                .all(|(i, x)| values[..i].iter().all(|y| !strict_eq(x, y)));
            if primitive && distinct {
                return Some((key.as_str(), values));
            }
        }
        None
    }

    fn declared_keys(&self, s: &'s Value, b: &Base, m: &JsonMap) -> usize {
        let node = match s.get("$ref") {
            Some(Value::String(r)) if s.is_object() => self.resolve(r, &self.base_for(s, b)).0,
            _ => s,
        };
        match node.get("properties") {
            Some(Value::Object(props)) => m.keys().filter(|k| props.contains_key(*k)).count(),
            _ => 0,
        }
    }

    fn walk_unevaluated(
        &self,
        o: &'s JsonMap,
        b: &Base,
        v: &Value,
        path: &str,
        out: &mut Vec<VErr>,
    ) {
        let mut a = Ann::default();
        self.ann_all(o, b, v, &mut a, true);
        if let (Value::Object(m), Some(up)) = (v, o.get("unevaluatedProperties")) {
            if !a.all_props {
                for (k, x) in js_entries(m) {
                    if a.props.contains(k) {
                        continue;
                    }
                    if matches!(up, Value::Bool(false)) {
                        out.push(verr(&pointer(path, k), "unknown field"));
                    } else {
                        self.walk(up, b, x, &pointer(path, k), out);
                    }
                }
            }
        }
        if let (Value::Array(list), Some(ui)) = (v, o.get("unevaluatedItems")) {
            if !a.all_items {
                for (i, x) in list.iter().enumerate().skip(a.items) {
                    if a.indexes.contains(&i) {
                        continue;
                    }
                    let at = format!("{path}/{i}");
                    if matches!(ui, Value::Bool(false)) {
                        out.push(verr(&at, "unexpected item"));
                    } else {
                        self.walk(ui, b, x, &at, out);
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Schema helpers
// ---------------------------------------------------------------------------------------------

fn not_a_schema(node: &Value) -> String {
    format!(
        "A schema must be an object or a boolean, got {}",
        js_stringify(node, false)
    )
}

fn has_unevaluated(o: &JsonMap) -> bool {
    o.contains_key("unevaluatedProperties") || o.contains_key("unevaluatedItems")
}

/// The type of a schema that is only a known `type` (with neutral keywords).
fn bare_type(o: &JsonMap) -> Option<&str> {
    let mut t = None;
    for (k, v) in o {
        if k == "type" {
            t = Some(v);
        } else if !NEUTRAL_KEYWORDS.contains(&k.as_str()) {
            return None;
        }
    }
    let t = t?.as_str()?;
    matches!(
        t,
        "string"
            | "number"
            | "integer"
            | "boolean"
            | "null"
            | "array"
            | "object"
            | "bytes"
            | "bigint"
            | "undefined"
    )
    .then_some(t)
}

/// `prefixItems`/`items`: the tuple prefix and the schema of the items after it (`true`: none).
fn prefix_and_rest(o: &JsonMap) -> (&[Value], Option<&Value>) {
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
fn item_schema_at(o: &JsonMap, index: usize) -> Option<&Value> {
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

fn pattern_entries(o: &JsonMap) -> Vec<(&String, &Value)> {
    match o.get("patternProperties") {
        Some(Value::Object(p)) => js_entries(p),
        _ => Vec::new(),
    }
}

fn contains_bounds(o: &JsonMap) -> (f64, f64) {
    (
        num_kw(o, "minContains").unwrap_or(1.0),
        num_kw(o, "maxContains").unwrap_or(f64::INFINITY),
    )
}

fn contains_message(min: f64, max: f64) -> String {
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
fn tag_of<'a>(o: &'a JsonMap, key: &str) -> Option<&'a Value> {
    if o.get("type").and_then(Value::as_str) != Some("object") {
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
fn num_kw(o: &JsonMap, k: &str) -> Option<f64> {
    match o.get(k) {
        Some(Value::Number(n)) => Some(num_f64(n)),
        _ => None,
    }
}

fn num_f64(n: &serde_json::Number) -> f64 {
    n.as_f64().unwrap_or(0.0)
}

fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_i64() || n.is_u64() || num_f64(n).fract() == 0.0,
        _ => false,
    }
}

fn type_name_ok(t: &str, v: &Value) -> bool {
    match t {
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => is_integer(v),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        // `bytes`, `bigint` and `undefined` have no JSON values; unknown names match nothing.
        _ => false,
    }
}

fn type_ok(t: &Value, v: &Value) -> bool {
    match t {
        Value::String(t) => type_name_ok(t, v),
        Value::Array(list) => list
            .iter()
            .any(|t| t.as_str().is_some_and(|t| type_name_ok(t, v))),
        _ => false,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) if is_integer(v) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn number_ok(o: &JsonMap, x: f64) -> bool {
    num_kw(o, "minimum").is_none_or(|m| x >= m)
        && num_kw(o, "maximum").is_none_or(|m| x <= m)
        && num_kw(o, "exclusiveMinimum").is_none_or(|m| x > m)
        && num_kw(o, "exclusiveMaximum").is_none_or(|m| x < m)
        && num_kw(o, "multipleOf").is_none_or(|d| is_multiple(x, d))
}

fn walk_number(o: &JsonMap, x: f64, path: &str, out: &mut Vec<VErr>) {
    let checks: [Bound; 4] = [
        ("minimum", ">=", |x, m| x >= m),
        ("maximum", "<=", |x, m| x <= m),
        ("exclusiveMinimum", ">", |x, m| x > m),
        ("exclusiveMaximum", "<", |x, m| x < m),
    ];
    for (k, op, pass) in checks {
        if let Some(m) = num_kw(o, k) {
            if !pass(x, m) {
                out.push(verr(
                    path,
                    &format!("expected {op} {}", js_number_string(m)),
                ));
            }
        }
    }
    if let Some(d) = num_kw(o, "multipleOf") {
        if !is_multiple(x, d) {
            out.push(verr(
                path,
                &format!("expected a multiple of {}", js_number_string(d)),
            ));
        }
    }
}

/// Whether `v` is a multiple of `d`, exactly for decimals (0.0075 / 0.0001 is not 75 in floats).
fn is_multiple(v: f64, d: f64) -> bool {
    let q = v / d;
    if q.is_finite() && q.fract() == 0.0 {
        return true;
    }
    if !q.is_finite() {
        return v % d == 0.0;
    }
    let (Some((vc, ve)), Some((dc, de))) = (decimal(v), decimal(d)) else {
        return false;
    };
    if dc == 0 {
        return false;
    }
    if ve >= de {
        // (vc * 10^k) mod dc, without overflow: dc < 10^21, so r * 10 fits in u128.
        let mut r = vc % dc;
        for _ in 0..(ve - de) {
            r = (r * 10) % dc;
        }
        r == 0
    } else {
        if vc == 0 {
            return true;
        }
        let mut m = dc;
        for _ in 0..(de - ve) {
            match m.checked_mul(10) {
                Some(n) => m = n,
                None => return false,
            }
        }
        vc % m == 0
    }
}

/// `|x|` as decimal digits and an exponent, from its shortest JS text.
fn decimal(x: f64) -> Option<(u128, i64)> {
    let text = js_number_string(x.abs());
    let (mantissa, exponent) = match text.split_once('e') {
        Some((m, e)) => (m, e.trim_start_matches('+').parse::<i64>().ok()?),
        None => (text.as_str(), 0),
    };
    let fraction = mantissa.find('.').map_or(0, |p| mantissa.len() - p - 1) as i64;
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    Some((digits.parse::<u128>().ok()?, exponent - fraction))
}

// ---------------------------------------------------------------------------------------------
// JS value semantics
// ---------------------------------------------------------------------------------------------

/// JS `===` for JSON values: primitives by value, objects and arrays never (distinct objects).
fn strict_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => num_f64(x) == num_f64(y),
        (Value::String(x), Value::String(y)) => x == y,
        _ => false,
    }
}

/// JSON equality as `const`, `enum` and `uniqueItems` compare (key order does not matter).
fn deep_equal(a: &Value, b: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| deep_equal(p, q, depth + 1))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, p)| y.get(k).is_some_and(|q| deep_equal(p, q, depth + 1)))
        }
        _ => strict_eq(a, b),
    }
}

/// Whether all items differ, by a canonical text per item (linear instead of pairwise).
fn unique(items: &[Value]) -> bool {
    let mut seen = HashSet::with_capacity(items.len());
    items.iter().all(|x| {
        let mut key = String::new();
        canonical(x, &mut key, 0);
        seen.insert(key)
    })
}

fn canonical(v: &Value, out: &mut String, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        Value::Array(a) => {
            out.push('[');
            for x in a {
                canonical(x, out, depth + 1);
                out.push(',');
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for k in keys {
                write_json_string(out, k);
                out.push(':');
                if let Some(x) = m.get(k) {
                    canonical(x, out, depth + 1);
                }
                out.push(',');
            }
            out.push('}');
        }
        Value::Number(n) => out.push_str(&js_number_string(num_f64(n))),
        other => out.push_str(&js_stringify(other, false)),
    }
}

/// A canonical array index key (`"0"`..`"4294967294"`): JS orders those keys first, ascending.
fn array_index(k: &str) -> Option<u32> {
    if k.is_empty()
        || k.len() > 10
        || (k.len() > 1 && k.starts_with('0'))
        || !k.bytes().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let n: u64 = k.parse().ok()?;
    u32::try_from(n).ok().filter(|n| *n != u32::MAX)
}

/// Object entries in JS property order: array-index keys ascending, then insertion order.
fn js_entries(m: &JsonMap) -> Vec<(&String, &Value)> {
    let mut indexed = Vec::new();
    let mut rest = Vec::with_capacity(m.len());
    for (k, v) in m {
        match array_index(k) {
            Some(i) => indexed.push((i, k, v)),
            None => rest.push((k, v)),
        }
    }
    if indexed.is_empty() {
        return rest;
    }
    indexed.sort_by_key(|e| e.0);
    indexed
        .into_iter()
        .map(|(_, k, v)| (k, v))
        .chain(rest)
        .collect()
}

fn js_key_list(m: &JsonMap) -> Vec<String> {
    js_entries(m).into_iter().map(|(k, _)| k.clone()).collect()
}

/// `String(v)` as `Array.prototype.join` applies it to elements (null becomes empty).
fn js_join_string(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        other => js_to_string(other),
    }
}

/// JS `String(v)`.
fn js_to_string(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => js_number_string(num_f64(n)),
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(js_join_string).collect::<Vec<_>>().join(","),
        Value::Object(_) => "[object Object]".to_string(),
    }
}

/// JS `Number.prototype.toString()`: shortest round-trip digits, exponent form outside 1e-7..1e21.
fn js_number_string(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_string();
    }
    if x == 0.0 {
        return "0".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    let sign = if x < 0.0 { "-" } else { "" };
    let exp_form = format!("{:e}", x.abs());
    let (mantissa, exponent) = exp_form.split_once('e').unwrap_or((exp_form.as_str(), "0"));
    let exponent: i64 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i64;
    let n = exponent + 1;
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        format!("{int}.{frac}")
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let e_sign = if e >= 0 { "+" } else { "-" };
        let (first, rest) = digits.split_at(1);
        if rest.is_empty() {
            format!("{first}e{e_sign}{}", e.abs())
        } else {
            format!("{first}.{rest}e{e_sign}{}", e.abs())
        }
    };
    format!("{sign}{body}")
}

/// JS `JSON.stringify(v)` (`pretty`: with a 2-space indent), keys in JS property order.
fn js_stringify(v: &Value, pretty: bool) -> String {
    let mut out = String::new();
    write_json(&mut out, v, pretty, 0);
    out
}

fn write_json(out: &mut String, v: &Value, pretty: bool, depth: usize) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let x = num_f64(n);
            out.push_str(&if x.is_finite() {
                js_number_string(x)
            } else {
                "null".to_string()
            });
        }
        Value::String(s) => write_json_string(out, s),
        // Past the depth guard the rest is left out rather than risking the stack.
        Value::Array(_) | Value::Object(_) if depth > MAX_DEPTH => out.push_str("null"),
        Value::Array(a) => {
            if a.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline_indent(out, pretty, depth + 1);
                write_json(out, x, pretty, depth + 1);
            }
            newline_indent(out, pretty, depth);
            out.push(']');
        }
        Value::Object(m) => {
            if m.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, (k, x)) in js_entries(m).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline_indent(out, pretty, depth + 1);
                write_json_string(out, k);
                out.push_str(if pretty { ": " } else { ":" });
                write_json(out, x, pretty, depth + 1);
            }
            newline_indent(out, pretty, depth);
            out.push('}');
        }
    }
}

fn newline_indent(out: &mut String, pretty: bool, depth: usize) {
    if pretty {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    }
}

fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn list_values(values: &[Value]) -> String {
    const LISTED: usize = 20;
    if values.len() <= LISTED {
        return js_stringify(&Value::Array(values.to_vec()), false);
    }
    let listed = js_stringify(&Value::Array(values[..LISTED].to_vec()), false);
    format!(
        "{}, ... and {} more]",
        &listed[..listed.len() - 1],
        values.len() - LISTED
    )
}

fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

fn verr(path: &str, message: &str) -> VErr {
    VErr {
        path: path.to_string(),
        message: message.to_string(),
    }
}

/// `path` extended by one JSON Pointer segment.
fn pointer(path: &str, key: &str) -> String {
    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// A JSON Pointer as the dotted path the model sees: `/edits/0/oldText` -> `edits.0.oldText`.
fn format_path(p: &str) -> String {
    if p.is_empty() {
        return "root".to_string();
    }
    p[1..]
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

/// The nesting depth of a value, measured without recursion.
fn value_depth(v: &Value) -> usize {
    let mut max = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        max = max.max(d);
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|x| (x, d + 1))),
            Value::Object(m) => stack.extend(m.values().map(|x| (x, d + 1))),
            _ => {}
        }
    }
    max
}

/// Numbers as JSON would carry them out of JS: integral values up to 2^53 as integers.
fn normalize_numbers(v: Value, depth: usize) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => num_value(num_f64(&n)),
        Value::Array(a) if depth <= MAX_DEPTH => Value::Array(
            a.into_iter()
                .map(|x| normalize_numbers(x, depth + 1))
                .collect(),
        ),
        Value::Object(m) if depth <= MAX_DEPTH => Value::Object(
            m.into_iter()
                .map(|(k, x)| (k, normalize_numbers(x, depth + 1)))
                .collect(),
        ),
        other => other,
    }
}

/// A JS number as a JSON value: integral values up to 2^53 as integers (-0 as 0).
fn num_value(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() <= 9_007_199_254_740_992.0 {
        return Value::from(x as i64);
    }
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

// --- conversions (TypeBox's Value.Convert rules) ---------------------------------------------

/// `Some(new)` when `new` differs from `old` (JS `!==` on primitives).
fn changed(new: Value, old: &Value) -> Option<Value> {
    (!strict_eq(&new, old)).then_some(new)
}

/// A `const`/`enum` literal taken from a value of another type that converts to exactly it.
fn convert_literal(literal: &Value, value: &Value) -> Option<Value> {
    if strict_eq(literal, value) {
        return None;
    }
    let result = match literal {
        Value::String(_) => try_string(value),
        Value::Number(_) => try_number(value).map(num_value),
        Value::Bool(_) => try_boolean(value).map(Value::Bool),
        _ => None,
    }?;
    strict_eq(&result, literal).then(|| literal.clone())
}

fn try_string(v: &Value) -> Option<Value> {
    match v {
        Value::Bool(b) => Some(Value::String(b.to_string())),
        Value::Number(n) => Some(Value::String(js_number_string(num_f64(n)))),
        Value::Null => Some(Value::String("null".to_string())),
        Value::String(_) => Some(v.clone()),
        _ => None,
    }
}

const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

fn try_number(v: &Value) -> Option<f64> {
    match v {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::Number(n) => Some(num_f64(n)),
        Value::Null => Some(0.0),
        Value::String(s) => {
            let x = js_string_to_number(s);
            if x.is_finite() {
                return Some(x);
            }
            match s.to_lowercase().as_str() {
                "false" => return Some(0.0),
                "true" => return Some(1.0),
                _ => {}
            }
            // TypeBox's BigInt form: `12n` (the other integer forms already parsed above).
            let digits = s.strip_suffix('n')?;
            let unsigned = digits.strip_prefix('-').unwrap_or(digits);
            let canonical = unsigned == "0"
                || (!unsigned.is_empty()
                    && !unsigned.starts_with('0')
                    && unsigned.bytes().all(|c| c.is_ascii_digit()));
            if !canonical || unsigned.len() > 16 {
                return None;
            }
            let x: f64 = digits.parse::<i64>().ok()? as f64;
            (x.abs() <= MAX_SAFE).then_some(x)
        }
        _ => None,
    }
}

fn try_boolean(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => {
            let x = num_f64(n);
            if x == 0.0 {
                Some(false)
            } else if x == 1.0 {
                Some(true)
            } else {
                None
            }
        }
        Value::Null => Some(false),
        Value::String(s) => {
            let lower = s.to_lowercase();
            if lower == "false" || s == "0" {
                Some(false)
            } else if lower == "true" || s == "1" {
                Some(true)
            } else {
                None
            }
        }
        _ => None,
    }
}

fn try_null(v: &Value) -> Option<()> {
    let ok = match v {
        Value::Bool(b) => !*b,
        Value::Number(n) => num_f64(n) == 0.0,
        Value::Null => true,
        Value::String(s) => {
            let lower = s.to_lowercase();
            lower == "undefined" || lower == "null" || s.is_empty() || s == "0"
        }
        _ => false,
    };
    ok.then_some(())
}

// --- primitive coercion by type (Ajv's coerceTypes) ------------------------------------------

fn matches_type(v: &Value, t: &str) -> bool {
    match t {
        "number" => v.is_number(),
        "integer" => is_integer(v),
        "boolean" => v.is_boolean(),
        "string" => v.is_string(),
        "null" => v.is_null(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        _ => false,
    }
}

fn coerce_primitive(v: &Value, t: &str) -> Option<Value> {
    match t {
        "number" | "integer" => match v {
            Value::Null => Some(Value::from(0)),
            Value::String(s) if !js_trim(s).is_empty() => {
                let x = js_string_to_number(s);
                let accepted = if t == "number" {
                    x.is_finite()
                } else {
                    x.is_finite() && x.fract() == 0.0
                };
                accepted.then(|| num_value(x))
            }
            Value::Bool(b) => Some(Value::from(u8::from(*b))),
            _ => None,
        },
        "boolean" => match v {
            Value::Null => Some(Value::Bool(false)),
            Value::String(s) if s == "true" => Some(Value::Bool(true)),
            Value::String(s) if s == "false" => Some(Value::Bool(false)),
            Value::Number(n) if num_f64(n) == 1.0 => Some(Value::Bool(true)),
            Value::Number(n) if num_f64(n) == 0.0 => Some(Value::Bool(false)),
            _ => None,
        },
        "string" => match v {
            Value::Null => Some(Value::String(String::new())),
            Value::Number(n) => Some(Value::String(js_number_string(num_f64(n)))),
            Value::Bool(b) => Some(Value::String(b.to_string())),
            _ => None,
        },
        "null" => match v {
            Value::String(s) if s.is_empty() => Some(Value::Null),
            Value::Number(n) if num_f64(n) == 0.0 => Some(Value::Null),
            Value::Bool(false) => Some(Value::Null),
            _ => None,
        },
        _ => None,
    }
}

/// JS white space and line terminators, as `trim()` and `Number()` strip them.
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

/// JS `Number(s)` for a string: decimal, `0x`/`0o`/`0b`, `Infinity`; NaN otherwise.
fn js_string_to_number(s: &str) -> f64 {
    let t = js_trim(s);
    if t.is_empty() {
        return 0.0;
    }
    let bytes = t.as_bytes();
    if bytes.len() > 2 && bytes[0] == b'0' {
        let radix = match bytes[1] {
            b'x' | b'X' => Some(16),
            b'o' | b'O' => Some(8),
            b'b' | b'B' => Some(2),
            _ => None,
        };
        if let Some(radix) = radix {
            let mut x = 0.0f64;
            for c in t[2..].chars() {
                match c.to_digit(radix) {
                    Some(d) => x = x * f64::from(radix) + f64::from(d),
                    None => return f64::NAN,
                }
            }
            return x;
        }
    }
    match t {
        "Infinity" | "+Infinity" => return f64::INFINITY,
        "-Infinity" => return f64::NEG_INFINITY,
        _ => {}
    }
    if !is_decimal_literal(t) {
        return f64::NAN;
    }
    t.parse::<f64>().unwrap_or(f64::NAN)
}

/// `[+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?`
fn is_decimal_literal(t: &str) -> bool {
    let b = t.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut digits = i - int_start;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        digits += i - frac_start;
    }
    if digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let exp_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return false;
        }
    }
    i == b.len()
}

// ---------------------------------------------------------------------------------------------
// URIs (for `$id`/`$ref` resolution and the URL-based formats)
// ---------------------------------------------------------------------------------------------

fn document_of(uri: &str) -> &str {
    match uri.find('#') {
        Some(i) => &uri[..i],
        None => uri,
    }
}

/// `new URL(r, base).href`, falling back as the reference does when that throws.
fn resolve_uri(r: &str, base: &str) -> String {
    match url_join(base, r) {
        Some(u) => u,
        None if r.starts_with('#') => format!("{}{r}", document_of(base)),
        None => r.to_string(),
    }
}

fn split_scheme(s: &str) -> Option<(&str, &str)> {
    let colon = s.find(':')?;
    let scheme = &s[..colon];
    let mut chars = scheme.chars();
    let first = chars.next()?;
    if !first.is_ascii_alphabetic()
        || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return None;
    }
    Some((scheme, &s[colon + 1..]))
}

fn is_special_scheme(s: &str) -> bool {
    matches!(s, "http" | "https" | "ws" | "wss" | "ftp" | "file")
}

/// A URI split into authority, path, query and fragment (each without its delimiter).
struct UriParts<'a> {
    authority: Option<&'a str>,
    path: &'a str,
    query: Option<&'a str>,
    fragment: Option<&'a str>,
}

fn split_uri(rest: &str) -> UriParts<'_> {
    let (rest, fragment) = match rest.find('#') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let (rest, query) = match rest.find('?') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    if let Some(after) = rest.strip_prefix("//") {
        let end = after.find('/').unwrap_or(after.len());
        return UriParts {
            authority: Some(&after[..end]),
            path: &after[end..],
            query,
            fragment,
        };
    }
    UriParts {
        authority: None,
        path: rest,
        query,
        fragment,
    }
}

fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let absolute = path.starts_with('/');
    let segments: Vec<&str> = path.split('/').collect();
    let last = segments.len().saturating_sub(1);
    for (i, seg) in segments.iter().enumerate() {
        match *seg {
            "." => {
                if i == last {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > usize::from(absolute) {
                    out.pop();
                }
                if i == last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let joined = out.join("/");
    if absolute && !joined.starts_with('/') {
        format!("/{joined}")
    } else {
        joined
    }
}

fn build_uri(scheme: &str, parts: &UriParts<'_>, path: &str) -> String {
    let special = is_special_scheme(scheme);
    let mut out = format!("{scheme}:");
    if let Some(a) = parts.authority {
        out.push_str("//");
        out.push_str(&if special {
            a.to_ascii_lowercase()
        } else {
            a.to_string()
        });
    }
    if special && path.is_empty() && parts.authority.is_some() {
        out.push('/');
    }
    out.push_str(path);
    if let Some(q) = parts.query {
        out.push('?');
        out.push_str(q);
    }
    if let Some(f) = parts.fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

/// RFC 3986 reference resolution with the WHATWG normalizations that matter for schema URIs.
fn url_join(base: &str, r: &str) -> Option<String> {
    if let Some((scheme, rest)) = split_scheme(r) {
        let scheme = scheme.to_ascii_lowercase();
        let parts = split_uri(rest);
        let path = if parts.authority.is_some() || parts.path.starts_with('/') {
            remove_dot_segments(parts.path)
        } else {
            parts.path.to_string()
        };
        return Some(build_uri(&scheme, &parts, &path));
    }
    let (scheme, brest) = split_scheme(base)?;
    let scheme = scheme.to_ascii_lowercase();
    let b = split_uri(brest);
    if b.authority.is_none() && !b.path.starts_with('/') {
        // A base that cannot be a base takes only fragments.
        if let Some(f) = r.strip_prefix('#') {
            let parts = UriParts {
                authority: None,
                path: b.path,
                query: b.query,
                fragment: Some(f),
            };
            return Some(build_uri(&scheme, &parts, b.path));
        }
        return None;
    }
    let rp = split_uri(r);
    let (authority, path, query) = if rp.authority.is_some() {
        (rp.authority, remove_dot_segments(rp.path), rp.query)
    } else if rp.path.is_empty() {
        (b.authority, b.path.to_string(), rp.query.or(b.query))
    } else if rp.path.starts_with('/') {
        (b.authority, remove_dot_segments(rp.path), rp.query)
    } else {
        let merged = if b.authority.is_some() && b.path.is_empty() {
            format!("/{}", rp.path)
        } else {
            match b.path.rfind('/') {
                Some(i) => format!("{}{}", &b.path[..=i], rp.path),
                None => rp.path.to_string(),
            }
        };
        (b.authority, remove_dot_segments(&merged), rp.query)
    };
    let parts = UriParts {
        authority,
        path: &path,
        query,
        fragment: rp.fragment,
    };
    Some(build_uri(&scheme, &parts, &path))
}

/// `decodeURIComponent`: None on a malformed escape or invalid UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_string());
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

// ---------------------------------------------------------------------------------------------
// ECMAScript regular expressions on the `regex` crate
// ---------------------------------------------------------------------------------------------

#[derive(Debug, PartialEq)]
enum TrErr {
    /// Valid ECMAScript the `regex` crate cannot express (lookaround, backreferences, ...).
    Unsupported,
    /// A syntax error, with V8's reason.
    Syntax(&'static str),
}

/// ECMAScript `\s`: white space and line terminators.
const JS_SPACE_CLASS: &str = r"\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";

/// A compiled pattern: Ok(None) when the `regex` crate cannot express it, Err(the reference's
/// compile error) when ECMAScript rejects it with and without the `u` flag.
type SharedRegex = Result<Option<Regex>, String>;

/// A pattern's regex, shared across calls as the reference shares its RegExps.
fn shared_regex(p: &str) -> SharedRegex {
    static CACHE: OnceLock<Mutex<HashMap<String, SharedRegex>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Ok(map) = cache.lock() {
        if let Some(hit) = map.get(p) {
            return hit.clone();
        }
    }
    let compiled = compile_js_regex(p);
    if let Ok(mut map) = cache.lock() {
        // Bounded: tool schemas repeat a few patterns; an unusual flood just starts over.
        if map.len() >= 512 {
            map.clear();
        }
        map.insert(p.to_string(), compiled.clone());
    }
    compiled
}

/// The reference's `new RegExp(p, "u")`, retried without `u` (Annex B syntax) when that throws.
fn compile_js_regex(p: &str) -> SharedRegex {
    let unicode = translate_regex(p, true, true).is_ok();
    if !unicode {
        if let Err(TrErr::Syntax(reason)) = translate_regex(p, false, true) {
            return Err(format!("Invalid regular expression: /{p}/: {reason}"));
        }
    }
    Ok(translate_regex(p, unicode, false)
        .ok()
        .and_then(|t| Regex::new(&t).ok()))
}

/// What the last piece of a pattern was, for the quantifier rules.
#[derive(Clone, Copy, PartialEq)]
enum Last {
    /// Nothing to repeat: the start, or right after `(` or `|`.
    Nothing,
    Atom,
    /// An astral character: without `u` a quantifier would repeat its low surrogate only.
    Astral,
    /// `^`, `$`, `\b`, `\B`.
    Assertion,
    Lookahead,
    Lookbehind,
    Quantifier,
    LazyQuantifier,
}

/// Capturing groups and whether any is named, scanned ahead as V8 does for backreferences.
fn scan_groups(cs: &[char]) -> (usize, bool) {
    let (mut count, mut named) = (0, false);
    let mut i = 0;
    let mut in_class = false;
    while i < cs.len() {
        match cs[i] {
            '\\' => i += 1,
            '[' => in_class = true,
            ']' => in_class = false,
            '(' if !in_class => {
                if cs.get(i + 1) != Some(&'?') {
                    count += 1;
                } else if cs.get(i + 2) == Some(&'<') && !matches!(cs.get(i + 3), Some('=' | '!')) {
                    count += 1;
                    named = true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    (count, named)
}

/// Whether `name` is a capture group name (an identifier).
fn is_group_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '$' || c == '_')
        && chars.all(|c| c.is_alphanumeric() || matches!(c, '$' | '_' | '\u{200c}' | '\u{200d}'))
}

/// Translates ECMAScript regex syntax to the `regex` crate's. `unicode`: parse as the `u` flag
/// does (else Annex B). `check_only`: the result only tells validity, so what the crate cannot
/// express becomes a placeholder instead of failing as unsupported.
fn translate_regex(src: &str, unicode: bool, check_only: bool) -> Result<String, TrErr> {
    let cs: Vec<char> = src.chars().collect();
    let (total_captures, has_named) = scan_groups(&cs);
    let mut out = String::with_capacity(src.len() + 16);
    // Open groups (with what they leave for a quantifier), names, backreferences to check.
    let mut groups: Vec<Last> = Vec::new();
    let mut captures = 0usize;
    let mut names: Vec<String> = Vec::new();
    let mut number_refs: Vec<usize> = Vec::new();
    let mut name_refs: Vec<String> = Vec::new();
    let mut last = Last::Nothing;
    // What cannot be expressed: an error unless only checking.
    let unsupported = |out: &mut String| -> Result<(), TrErr> {
        if check_only {
            out.push_str("(?:)");
            Ok(())
        } else {
            Err(TrErr::Unsupported)
        }
    };
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        match c {
            '\\' => {
                let Some(&e) = cs.get(i + 1) else {
                    return Err(TrErr::Syntax("\\ at end of pattern"));
                };
                match e {
                    'b' => {
                        out.push_str(r"(?-u:\b)");
                        last = Last::Assertion;
                        i += 2;
                    }
                    'B' => {
                        unsupported(&mut out)?;
                        last = Last::Assertion;
                        i += 2;
                    }
                    '1'..='9' => {
                        let mut j = i + 1;
                        let mut n = 0usize;
                        while let Some(v) = cs.get(j).and_then(|c| c.to_digit(10)) {
                            n = n.saturating_mul(10).saturating_add(v as usize);
                            j += 1;
                        }
                        if unicode || n <= total_captures {
                            number_refs.push(n);
                            unsupported(&mut out)?;
                            i = j;
                        } else {
                            // Without `u`, a number above the group count is an octal escape.
                            let (next, value) = legacy_octal(&cs, i + 1);
                            push_code_point(&mut out, value);
                            i = next;
                        }
                        last = Last::Atom;
                    }
                    'k' if unicode || has_named => {
                        if cs.get(i + 2) != Some(&'<') {
                            return Err(TrErr::Syntax("Invalid named reference"));
                        }
                        let close = cs[i + 3..].iter().position(|c| *c == '>');
                        let Some(close) = close else {
                            return Err(TrErr::Syntax("Invalid capture group name"));
                        };
                        let name: String = cs[i + 3..i + 3 + close].iter().collect();
                        if !is_group_name(&name) {
                            return Err(TrErr::Syntax("Invalid capture group name"));
                        }
                        name_refs.push(name);
                        unsupported(&mut out)?;
                        last = Last::Atom;
                        i += close + 4;
                    }
                    _ => {
                        let (next, value) = translate_escape(&cs, i, &mut out, unicode, false)?;
                        last = if value.is_some_and(|v| v > 0xFFFF) {
                            Last::Astral
                        } else {
                            Last::Atom
                        };
                        i = next;
                    }
                }
                continue;
            }
            '[' => {
                i = translate_class(&cs, i, &mut out, unicode)?;
                last = Last::Atom;
                continue;
            }
            // `.` matches anything but line terminators.
            '.' => {
                out.push_str(r"[^\n\r\x{2028}\x{2029}]");
                last = Last::Atom;
            }
            '(' => {
                last = Last::Nothing;
                if cs.get(i + 1) != Some(&'?') {
                    captures += 1;
                    groups.push(Last::Atom);
                    out.push('(');
                    i += 1;
                    continue;
                }
                match (cs.get(i + 2), cs.get(i + 3)) {
                    (Some(':'), _) => {
                        out.push_str("(?:");
                        groups.push(Last::Atom);
                        i += 3;
                    }
                    (Some('=' | '!'), _) | (Some('<'), Some('=' | '!')) => {
                        let behind = cs.get(i + 2) == Some(&'<');
                        if !check_only {
                            return Err(TrErr::Unsupported);
                        }
                        out.push_str("(?:");
                        groups.push(if behind {
                            Last::Lookbehind
                        } else {
                            Last::Lookahead
                        });
                        i += if behind { 4 } else { 3 };
                    }
                    (Some('<'), _) => {
                        let close = cs[i + 3..].iter().position(|c| *c == '>');
                        let Some(close) = close else {
                            return Err(TrErr::Syntax("Invalid capture group name"));
                        };
                        let name: String = cs[i + 3..i + 3 + close].iter().collect();
                        if !is_group_name(&name) {
                            return Err(TrErr::Syntax("Invalid capture group name"));
                        }
                        if names.contains(&name) {
                            return Err(TrErr::Syntax("Duplicate capture group name"));
                        }
                        if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                            out.push_str("(?<");
                            out.push_str(&name);
                            out.push('>');
                        } else if check_only {
                            out.push('(');
                        } else {
                            // The crate takes only ASCII names.
                            return Err(TrErr::Unsupported);
                        }
                        names.push(name);
                        captures += 1;
                        groups.push(Last::Atom);
                        i += close + 4;
                    }
                    _ => return Err(TrErr::Syntax("Invalid group")),
                }
                continue;
            }
            ')' => {
                let Some(kind) = groups.pop() else {
                    return Err(TrErr::Syntax("Unmatched ')'"));
                };
                out.push(')');
                last = kind;
            }
            '|' => {
                out.push('|');
                last = Last::Nothing;
            }
            '^' | '$' => {
                out.push(c);
                last = Last::Assertion;
            }
            '*' | '+' | '?' => {
                last = quantify(last, c == '?', unicode, check_only)?;
                out.push(c);
            }
            '{' => match quantifier_end(&cs, i) {
                Some((end, min, max)) => {
                    last = quantify(last, false, unicode, check_only)?;
                    if max.is_some_and(|max| max < min) {
                        return Err(TrErr::Syntax("numbers out of order in {} quantifier"));
                    }
                    out.extend(&cs[i..=end]);
                    i = end + 1;
                    continue;
                }
                None if unicode => return Err(TrErr::Syntax("Lone quantifier brackets")),
                None => {
                    out.push_str(r"\{");
                    last = Last::Atom;
                }
            },
            '}' | ']' => {
                if unicode {
                    return Err(TrErr::Syntax("Lone quantifier brackets"));
                }
                out.push('\\');
                out.push(c);
                last = Last::Atom;
            }
            _ => {
                push_literal(&mut out, c);
                last = if (c as u32) > 0xFFFF {
                    Last::Astral
                } else {
                    Last::Atom
                };
            }
        }
        i += 1;
    }
    if !groups.is_empty() {
        return Err(TrErr::Syntax("Unterminated group"));
    }
    if number_refs.iter().any(|n| *n > captures) && unicode {
        return Err(TrErr::Syntax("Invalid escape"));
    }
    if name_refs.iter().any(|n| !names.contains(n)) {
        return Err(TrErr::Syntax("Invalid named capture referenced"));
    }
    Ok(out)
}

/// The state after a quantifier: only an atom repeats, once (`?` may follow for laziness);
/// without `u` a lookahead repeats too.
fn quantify(last: Last, question: bool, unicode: bool, check_only: bool) -> Result<Last, TrErr> {
    match last {
        Last::Quantifier if question => Ok(Last::LazyQuantifier),
        Last::Atom => Ok(Last::Quantifier),
        Last::Astral if unicode || check_only => Ok(Last::Quantifier),
        // Without `u` the quantifier repeats the low surrogate alone: not expressible here.
        Last::Astral => Err(TrErr::Unsupported),
        // Annex B lets a lookahead repeat (only checked: lookarounds are placeholders then).
        Last::Lookahead if !unicode => Ok(Last::Quantifier),
        Last::Lookahead | Last::Lookbehind => Err(TrErr::Syntax("Invalid quantifier")),
        _ => Err(TrErr::Syntax("Nothing to repeat")),
    }
}

/// Annex B's legacy octal escape at `cs[i]` (a digit): the index after it and its value.
fn legacy_octal(cs: &[char], i: usize) -> (usize, u32) {
    let digit = |k: usize| cs.get(k).and_then(|c| c.to_digit(8));
    let Some(first) = digit(i) else {
        // `\8` and `\9` are the digits themselves.
        return (i + 1, cs.get(i).map_or(0, |c| *c as u32));
    };
    match (digit(i + 1), digit(i + 2)) {
        (Some(b), Some(c)) if first <= 3 => (i + 3, first * 64 + b * 8 + c),
        (Some(b), _) => (i + 2, first * 8 + b),
        _ => (i + 1, first),
    }
}

fn push_code_point(out: &mut String, v: u32) {
    out.push_str(&format!(r"\x{{{v:X}}}"));
}

/// The `}` closing a quantifier `{n}`, `{n,}` or `{n,m}` at `i`, with its bounds.
fn quantifier_end(cs: &[char], i: usize) -> Option<(usize, u128, Option<u128>)> {
    let number = |j: &mut usize| -> Option<u128> {
        let start = *j;
        let mut n: u128 = 0;
        while let Some(d) = cs.get(*j).and_then(|c| c.to_digit(10)) {
            n = n.saturating_mul(10).saturating_add(u128::from(d));
            *j += 1;
        }
        (*j > start).then_some(n)
    };
    let mut j = i + 1;
    let min = number(&mut j)?;
    let mut max = Some(min);
    if cs.get(j) == Some(&',') {
        j += 1;
        max = number(&mut j);
    }
    (cs.get(j) == Some(&'}')).then_some((j, min, max))
}

fn push_literal(out: &mut String, c: char) {
    if r"\.+*?()|[]{}^$#&-~".contains(c) {
        out.push('\\');
    }
    out.push(c);
}

/// One escape at `cs[i]` (a backslash, not a backreference): the next index and, for a single
/// character, its code point (which may bound a class range).
fn translate_escape(
    cs: &[char],
    i: usize,
    out: &mut String,
    unicode: bool,
    in_class: bool,
) -> Result<(usize, Option<u32>), TrErr> {
    let Some(&e) = cs.get(i + 1) else {
        return Err(TrErr::Syntax("\\ at end of pattern"));
    };
    let mut next = i + 2;
    // An identity escape: the character itself, which the `u` flag allows only for syntax characters.
    let identity = |out: &mut String, c: char| -> Result<Option<u32>, TrErr> {
        if unicode && !(r"^$\.*+?()[]{}|/".contains(c) || (in_class && c == '-')) {
            return Err(TrErr::Syntax("Invalid escape"));
        }
        push_literal(out, c);
        Ok(Some(c as u32))
    };
    let class = |out: &mut String, inside: &str, negated: bool| {
        match (in_class, negated) {
            (true, false) => out.push_str(inside),
            (_, true) => {
                out.push_str("[^");
                out.push_str(inside);
                out.push(']');
            }
            (false, false) => {
                out.push('[');
                out.push_str(inside);
                out.push(']');
            }
        }
        Ok(None)
    };
    let value = match e {
        'd' => class(out, "0-9", false),
        'D' => class(out, "0-9", true),
        'w' => class(out, "0-9A-Za-z_", false),
        'W' => class(out, "0-9A-Za-z_", true),
        's' => class(out, JS_SPACE_CLASS, false),
        'S' => class(out, JS_SPACE_CLASS, true),
        'b' => {
            out.push_str(r"\x08");
            Ok(Some(8))
        }
        'n' | 'r' | 't' | 'f' | 'v' => {
            out.push('\\');
            out.push(e);
            Ok(Some(match e {
                'n' => 10,
                'r' => 13,
                't' => 9,
                'f' => 12,
                _ => 11,
            }))
        }
        '0' if !cs.get(i + 2).is_some_and(char::is_ascii_digit) => {
            out.push_str(r"\x00");
            Ok(Some(0))
        }
        '0'..='9' if unicode => Err(TrErr::Syntax("Invalid class escape")),
        '0'..='9' => {
            let (n, v) = legacy_octal(cs, i + 1);
            next = n;
            push_code_point(out, v);
            Ok(Some(v))
        }
        'c' => match cs.get(i + 2) {
            Some(l)
                if l.is_ascii_alphabetic()
                    || (!unicode && in_class && (l.is_ascii_digit() || *l == '_')) =>
            {
                let v = (*l as u32) % 32;
                push_code_point(out, v);
                next = i + 3;
                Ok(Some(v))
            }
            _ if unicode => Err(TrErr::Syntax("Invalid unicode escape")),
            _ => {
                // Without `u`, a lone `\c` is a backslash and a `c`.
                out.push_str(r"\\");
                next = i + 1;
                Ok(Some('\\' as u32))
            }
        },
        'x' => match hex_value(cs, i + 2, 2) {
            Some(v) => {
                push_code_point(out, v);
                next = i + 4;
                Ok(Some(v))
            }
            None => identity(out, 'x'),
        },
        'u' => {
            if unicode && cs.get(i + 2) == Some(&'{') {
                let mut j = i + 3;
                let mut v: u32 = 0;
                while let Some(d) = cs.get(j).and_then(|c| c.to_digit(16)) {
                    v = v.saturating_mul(16).saturating_add(d);
                    j += 1;
                }
                if j == i + 3 || cs.get(j) != Some(&'}') || v > 0x10FFFF {
                    return Err(TrErr::Syntax("Invalid Unicode escape"));
                }
                next = j + 1;
                unicode_escape(out, v)
            } else if let Some(v) = hex_value(cs, i + 2, 4) {
                next = i + 6;
                let mut cp = v;
                if (0xD800..=0xDBFF).contains(&v)
                    && cs.get(i + 6) == Some(&'\\')
                    && cs.get(i + 7) == Some(&'u')
                {
                    if let Some(low) =
                        hex_value(cs, i + 8, 4).filter(|l| (0xDC00..=0xDFFF).contains(l))
                    {
                        cp = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00);
                        next = i + 12;
                    }
                }
                unicode_escape(out, cp)
            } else if unicode {
                Err(TrErr::Syntax("Invalid Unicode escape"))
            } else {
                identity(out, 'u')
            }
        }
        'p' | 'P' if unicode => {
            let close = if cs.get(i + 2) == Some(&'{') {
                cs[i + 3..].iter().position(|c| *c == '}')
            } else {
                None
            };
            match close {
                Some(close) if close > 0 => {
                    out.push('\\');
                    out.push(e);
                    out.extend(&cs[i + 2..i + 4 + close]);
                    next = i + 4 + close;
                    Ok(None)
                }
                _ => Err(TrErr::Syntax("Invalid property name")),
            }
        }
        'B' | 'k' if unicode => Err(TrErr::Syntax("Invalid escape")),
        '-' if in_class => {
            out.push_str(r"\-");
            Ok(Some('-' as u32))
        }
        c => identity(out, c),
    }?;
    Ok((next, value))
}

/// A code point from a `\u` escape: a lone surrogate matches nothing in a Rust string.
fn unicode_escape(out: &mut String, cp: u32) -> Result<Option<u32>, TrErr> {
    if (0xD800..=0xDFFF).contains(&cp) {
        return Err(TrErr::Unsupported);
    }
    push_code_point(out, cp);
    Ok(Some(cp))
}

fn hex_value(cs: &[char], start: usize, len: usize) -> Option<u32> {
    let mut v = 0;
    for k in 0..len {
        v = v * 16 + cs.get(start + k)?.to_digit(16)?;
    }
    Some(v)
}

/// A character class at `cs[i]` (`[`): the index after its `]`.
fn translate_class(cs: &[char], i: usize, out: &mut String, unicode: bool) -> Result<usize, TrErr> {
    let mut j = i + 1;
    let negated = cs.get(j) == Some(&'^');
    if negated {
        j += 1;
    }
    if cs.get(j) == Some(&']') {
        // `[]` matches nothing, `[^]` anything.
        out.push_str(if negated {
            r"[\x{0}-\x{10FFFF}]"
        } else {
            r"[^\x{0}-\x{10FFFF}]"
        });
        return Ok(j + 1);
    }
    let mut body = String::new();
    // The last item's code point while it may start a range, and a range's start after its `-`.
    let mut previous: Option<u32> = None;
    let mut range_start: Option<u32> = None;
    // A class escape (`\d`, ...) that a `-` follows, or that follows a `-`: a range needs characters.
    let mut after_class_escape = false;
    loop {
        let Some(&c) = cs.get(j) else {
            return Err(TrErr::Syntax("Unterminated character class"));
        };
        if c == ']' {
            break;
        }
        let value = if c == '\\' {
            let (n, value) = translate_escape(cs, j, &mut body, unicode, true)?;
            j = n;
            value
        } else if c == '-'
            && cs.get(j + 1).is_some_and(|n| *n != ']')
            && (previous.is_some() || after_class_escape)
            && range_start.is_none()
        {
            if after_class_escape && unicode {
                return Err(TrErr::Syntax("Invalid character class"));
            }
            match previous {
                Some(p) => {
                    body.push('-');
                    range_start = Some(p);
                }
                // Without `u`, a `-` next to a class escape is itself.
                None => body.push_str(r"\-"),
            }
            previous = None;
            after_class_escape = false;
            j += 1;
            continue;
        } else {
            if matches!(c, '-' | '[' | '&' | '~' | '^') {
                body.push('\\');
                body.push(c);
            } else {
                push_literal(&mut body, c);
            }
            j += 1;
            Some(c as u32)
        };
        match (range_start.take(), value) {
            (Some(start), Some(end)) => {
                if start > end {
                    return Err(TrErr::Syntax("Range out of order in character class"));
                }
                previous = None;
                after_class_escape = false;
            }
            (Some(_), None) => {
                if unicode {
                    return Err(TrErr::Syntax("Invalid character class"));
                }
                // Not expressible without the `u` flag's range rules: the class keeps its members.
                return Err(TrErr::Unsupported);
            }
            (None, v) => {
                previous = v;
                after_class_escape = v.is_none();
            }
        }
    }
    out.push('[');
    if negated {
        out.push('^');
    }
    out.push_str(&body);
    out.push(']');
    Ok(j + 1)
}

// ---------------------------------------------------------------------------------------------
// Formats (pi-schema's `formats`, adapted from TypeBox 1.3.27, MIT)
// ---------------------------------------------------------------------------------------------

/// Whether `s` has the named format; None for a format pi-schema does not check.
fn check_format(name: &str, s: &str) -> Option<bool> {
    Some(match name {
        "date" => is_date(s),
        "date-time" => is_date_time(s),
        "time" => is_time(s),
        "duration" => format_match(&DURATION, RE_DURATION, false, s),
        "email" => format_match(&EMAIL, RE_EMAIL, true, s),
        "idn-email" => is_idn_email(s),
        "hostname" => is_hostname(s),
        "idn-hostname" => is_idn_hostname(s),
        "ipv4" => format_match(&IPV4, RE_IPV4, false, s),
        "ipv6" => format_match(&IPV6, RE_IPV6, true, s),
        "uri" => format_match(&URI, &RE_URI.replace("{ipv6}", URI_IPV6), true, s),
        "uri-reference" => format_match(
            &URI_REFERENCE,
            &RE_URI_REFERENCE.replace("{ipv6}", URI_IPV6),
            true,
            s,
        ),
        "uri-template" => format_match(&URI_TEMPLATE, RE_URI_TEMPLATE, true, s),
        "iri" => is_iri(s),
        "iri-reference" => is_iri_reference(s),
        "url" => url_can_parse(s, false),
        "uuid" => format_match(&UUID, RE_UUID, true, s),
        "json-pointer" => format_match(&JSON_POINTER, RE_JSON_POINTER, false, s),
        "json-pointer-uri-fragment" => format_match(
            &JSON_POINTER_URI_FRAGMENT,
            RE_JSON_POINTER_URI_FRAGMENT,
            true,
            s,
        ),
        "relative-json-pointer" => {
            format_match(&RELATIVE_JSON_POINTER, RE_RELATIVE_JSON_POINTER, false, s)
        }
        "regex" => is_regex(s),
        _ => return None,
    })
}

type LazyRegex = OnceLock<Option<Regex>>;

/// A format's regex, translated from its ECMAScript source once (`ci`: the `i` flag).
fn format_regex(cell: &'static LazyRegex, src: &str, ci: bool) -> Option<&'static Regex> {
    cell.get_or_init(|| {
        let t = translate_regex(src, false, false).ok()?;
        Regex::new(&if ci { format!("(?i){t}") } else { t }).ok()
    })
    .as_ref()
}

fn format_match(cell: &'static LazyRegex, src: &str, ci: bool, s: &str) -> bool {
    // The sources are constants known to translate; a failure would only skip the format.
    format_regex(cell, src, ci).is_none_or(|re| re.is_match(s))
}

/// A regex of our own (Rust syntax), compiled once.
fn own_regex(cell: &'static LazyRegex, src: &str) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(src).ok()).as_ref()
}

static DURATION: LazyRegex = OnceLock::new();
static EMAIL: LazyRegex = OnceLock::new();
static IPV4: LazyRegex = OnceLock::new();
static IPV6: LazyRegex = OnceLock::new();
static URI: LazyRegex = OnceLock::new();
static URI_REFERENCE: LazyRegex = OnceLock::new();
static URI_TEMPLATE: LazyRegex = OnceLock::new();
static UUID: LazyRegex = OnceLock::new();
static JSON_POINTER: LazyRegex = OnceLock::new();
static JSON_POINTER_URI_FRAGMENT: LazyRegex = OnceLock::new();
static RELATIVE_JSON_POINTER: LazyRegex = OnceLock::new();
static TIME: LazyRegex = OnceLock::new();
static IDN_EMAIL: LazyRegex = OnceLock::new();

const RE_DURATION: &str = r"^P((\d+Y(\d+M(\d+D)?)?|\d+M(\d+D)?|\d+D)(T(\d+H(\d+M(\d+S)?)?|\d+M(\d+S)?|\d+S))?|T(\d+H(\d+M(\d+S)?)?|\d+M(\d+S)?|\d+S)|\d+W)$";
const RE_EMAIL: &str = r##"^(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*|"(?:[^"\\]|\\[\x20-\x7e])*")@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|\[(?:IPv6:[a-f0-9:]+|(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3})\])$"##;
const RE_IPV4: &str =
    r"^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$";
const RE_IPV6: &str = r"^(?:(?:(?:[0-9a-f]{1,4}:){6}|::(?:[0-9a-f]{1,4}:){5}|(?:[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){4}|(?:(?:[0-9a-f]{1,4}:)?[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){3}|(?:(?:[0-9a-f]{1,4}:){0,2}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){2}|(?:(?:[0-9a-f]{1,4}:){0,3}[0-9a-f]{1,4})?::[0-9a-f]{1,4}:|(?:(?:[0-9a-f]{1,4}:){0,4}[0-9a-f]{1,4})?::)(?:[0-9a-f]{1,4}:[0-9a-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[0-9a-f]{1,4}:){0,5}[0-9a-f]{1,4})?::[0-9a-f]{1,4}|(?:(?:[0-9a-f]{1,4}:){0,6}[0-9a-f]{1,4})?::)$";
const RE_UUID: &str = r"^[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$";
const RE_JSON_POINTER: &str = r"^(?:\/(?:[^~/]|~0|~1)*)*$";
const RE_JSON_POINTER_URI_FRAGMENT: &str =
    r"^#(?:\/(?:[a-z0-9_\-.!$&'()*+,;:=@]|%[0-9a-f]{2}|~0|~1)*)*$";
const RE_RELATIVE_JSON_POINTER: &str = r"^(?:0|[1-9][0-9]*)(?:#|(?:\/(?:[^~/]|~0|~1)*)*)$";
const RE_URI_TEMPLATE: &str = r#"^(?:(?:[^\x00-\x20"<>%\\^`{|}\x7f]|%[0-9a-f]{2})|\{[+#./;?&=,!@|]?(?:[a-z0-9_]|%[0-9a-f]{2})+(?:\.(?:[a-z0-9_]|%[0-9a-f]{2})+)*(?::[1-9]\d{0,3}|\*)?(?:,(?:[a-z0-9_]|%[0-9a-f]{2})+(?:\.(?:[a-z0-9_]|%[0-9a-f]{2})+)*(?::[1-9]\d{0,3}|\*)?)*\})*$"#;
const RE_TIME: &str =
    r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))?$";

/// The IPv6 address alternatives of the URI grammar (RFC 3986's IP-literal without brackets).
const URI_IPV6: &str = r"(?:(?:[\da-f]{1,4}:){6}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|::(?:[\da-f]{1,4}:){5}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:[\da-f]{1,4})?::(?:[\da-f]{1,4}:){4}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,1}[\da-f]{1,4})?::(?:[\da-f]{1,4}:){3}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,2}[\da-f]{1,4})?::(?:[\da-f]{1,4}:){2}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,3}[\da-f]{1,4})?::[\da-f]{1,4}:(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,4}[\da-f]{1,4})?::(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,5}[\da-f]{1,4})?::[\da-f]{1,4}|(?:(?:[\da-f]{1,4}:){0,6}[\da-f]{1,4})?::)";

/// The `uri` regex; `{ipv6}` stands for [`URI_IPV6`].
const RE_URI: &str = r"^[a-z][a-z0-9+\-.]*:(?:\/\/(?:(?:[-a-z0-9._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\[(?:{ipv6}|v[0-9a-f]+\.[-a-z0-9._~!$&'()*+,;=:]+)\]|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)|(?:[-a-z0-9._~!$&'()*+,;=]|%[0-9a-f]{2})*)(?::\d*)?(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*|\/(?:(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?(?:\?(?:[-a-z0-9._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?(?:#(?:[-a-z0-9._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?$";
/// The `uri-reference` regex; `{ipv6}` stands for [`URI_IPV6`].
const RE_URI_REFERENCE: &str = r"^(?:[a-z][a-z0-9+\-.]*:(?:\/\/(?:(?:[-a-z0-9._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\[(?:{ipv6}|v[0-9a-f]+\.[-a-z0-9._~!$&'()*+,;=:]+)\]|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)|(?:[-a-z0-9._~!$&'()*+,;=]|%[0-9a-f]{2})*)(?::\d*)?(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*|\/(?:(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:\/\/(?:(?:[-a-z0-9._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\[(?:{ipv6}|v[0-9a-f]+\.[-a-z0-9._~!$&'()*+,;=:]+)\]|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)|(?:[-a-z0-9._~!$&'()*+,;=]|%[0-9a-f]{2})*)(?::\d*)?(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*|\/(?:(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[-a-z0-9._~!$&'()*+,;=@]|%[0-9a-f]{2})+(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?)(?:\?(?:[-a-z0-9._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?(?:#(?:[-a-z0-9._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?$";

// `u32::is_multiple_of` is newer than the workspace's minimum Rust version.
#[allow(unknown_lints, clippy::manual_is_multiple_of)]
fn is_leap_year(year: u32) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// RFC 3339 full-date, with the day checked against the month.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = s.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    const DAYS: [u32; 13] = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let max = if month == 2 && is_leap_year(year) {
        29
    } else {
        DAYS.get(month as usize).copied().unwrap_or(0)
    };
    (1..=12).contains(&month) && day >= 1 && day <= max
}

/// RFC 3339 full-time (an offset required), leap seconds only at 23:59:60 UTC.
fn is_time(s: &str) -> bool {
    let Some(re) = own_regex(&TIME, RE_TIME) else {
        return true;
    };
    let Some(c) = re.captures(s) else {
        return false;
    };
    let num = |i: usize| {
        c.get(i)
            .and_then(|m| m.as_str().parse::<i64>().ok())
            .unwrap_or(0)
    };
    let zulu = c.get(4).is_some();
    let sign = c.get(5).map(|m| m.as_str());
    if !zulu && sign.is_none() {
        return false;
    }
    let (hr, min, sec) = (num(1), num(2), num(3));
    if hr > 23 || min > 59 || sec > 60 {
        return false;
    }
    let (tz_h, tz_m) = (num(6), num(7));
    if sign.is_some() && (tz_h > 23 || tz_m > 59) {
        return false;
    }
    if sec < 60 {
        return true;
    }
    let tz_sign = if sign == Some("-") { -1 } else { 1 };
    let utc = hr * 60 + min - tz_sign * (tz_h * 60 + tz_m);
    utc.rem_euclid(1440) == 1439
}

fn is_date_time(s: &str) -> bool {
    let parts: Vec<&str> = s.split(['T', 't']).collect();
    parts.len() == 2 && is_date(parts[0]) && is_time(parts[1])
}

/// `idn-email` (without the reference's NFC normalization, see the module notes).
fn is_idn_email(s: &str) -> bool {
    const SRC: &str = r#"(?i)^(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~\x{80}-\x{10FFFF}\-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~\x{80}-\x{10FFFF}\-]+)*|"(?:[^"\\]|\\[^\n\r\x{2028}\x{2029}])*")@([\p{L}\p{N}][\p{L}\p{N}\-]{0,62}(?:\.[\p{L}\p{N}][\p{L}\p{N}\-]{0,62})*)$"#;
    let Some(re) = own_regex(&IDN_EMAIL, SRC) else {
        return true;
    };
    let Some(c) = re.captures(s) else {
        return false;
    };
    // No domain label may end with a hyphen (a lookbehind in the reference).
    c.get(1)
        .is_none_or(|d| d.as_str().split('.').all(|label| !label.ends_with('-')))
}

// --- hostnames (TypeBox's IDNA checks) -------------------------------------------------------

static CLS_COMBINING: LazyRegex = OnceLock::new();
static CLS_PERMITTED: LazyRegex = OnceLock::new();
static CLS_JAPANESE: LazyRegex = OnceLock::new();
static CLS_GREEK: LazyRegex = OnceLock::new();
static CLS_HEBREW: LazyRegex = OnceLock::new();
static CLS_ARABIC_LETTER: LazyRegex = OnceLock::new();
static CLS_LETTER: LazyRegex = OnceLock::new();
static CLS_NONSPACING: LazyRegex = OnceLock::new();

/// Whether `c` is in the character class regex `src` (compiled once into `cell`).
fn in_class(cell: &'static LazyRegex, src: &str, c: char) -> bool {
    let mut buf = [0u8; 4];
    own_regex(cell, src).is_some_and(|re| re.is_match(c.encode_utf8(&mut buf)))
}

fn is_combining(c: char) -> bool {
    in_class(&CLS_COMBINING, r"^[\p{Mn}\p{Mc}\p{Me}]$", c)
}
fn is_greek(c: char) -> bool {
    in_class(&CLS_GREEK, r"^\p{Script=Greek}$", c)
}
fn is_hebrew(c: char) -> bool {
    in_class(&CLS_HEBREW, r"^\p{Script=Hebrew}$", c)
}

const VIRAMAS: &[u32] = &[
    0x094d, 0x09cd, 0x0a4d, 0x0acd, 0x0b4d, 0x0bcd, 0x0c4d, 0x0ccd, 0x0d3b, 0x0d3c, 0x0d4d, 0x0dca,
    0x1b44, 0x1baa, 0x1bab, 0xa9c0, 0x11046, 0x1107f, 0x110b9, 0x11133, 0x11134, 0x111c0, 0x11235,
    0x1134d, 0x11442, 0x114c2, 0x115bf, 0x1163f, 0x116b6, 0x11c3f, 0x11d44, 0x11d45,
];

/// RFC 5893 bidi class, as coarsely as the reference computes it.
fn bidi_class(c: char) -> &'static str {
    let cp = c as u32;
    if c.is_ascii_digit() || (0x06f0..=0x06f9).contains(&cp) {
        "EN"
    } else if (0x0660..=0x0669).contains(&cp) {
        "AN"
    } else if in_class(&CLS_NONSPACING, r"^\p{Mn}$", c) {
        "NSM"
    } else if is_hebrew(c) {
        "R"
    } else if in_class(
        &CLS_ARABIC_LETTER,
        r"^[\p{Script=Arabic}\p{Script=Syriac}\p{Script=Thaana}\p{Script=Mandaic}]$",
        c,
    ) {
        "AL"
    } else if in_class(&CLS_LETTER, r"^\p{L}$", c) {
        "L"
    } else {
        "ON"
    }
}

fn has_rtl(s: &str) -> bool {
    s.chars()
        .any(|c| matches!(bidi_class(c), "R" | "AL" | "AN"))
}

fn satisfies_bidi(s: &str) -> bool {
    let mut rtl = false;
    let (mut saw_en, mut saw_an) = (false, false);
    for (i, c) in s.chars().enumerate() {
        let class = bidi_class(c);
        if i == 0 {
            if !matches!(class, "L" | "R" | "AL") {
                return false;
            }
            rtl = class != "L";
        }
        let allowed = if rtl {
            matches!(
                class,
                "R" | "AL" | "AN" | "EN" | "ES" | "CS" | "ET" | "ON" | "BN" | "NSM"
            )
        } else {
            matches!(class, "L" | "EN" | "ES" | "CS" | "ET" | "ON" | "BN" | "NSM")
        };
        if !allowed {
            return false;
        }
        saw_en |= class == "EN";
        saw_an |= class == "AN";
    }
    !(rtl && saw_en && saw_an)
}

fn is_ace_prefixed(s: &str) -> bool {
    s.to_lowercase().starts_with("xn--")
}

fn has_bidi_chars(label: &str) -> bool {
    if is_ace_prefixed(label) {
        return label
            .get(4..)
            .and_then(|body| puny_decode(&body.to_lowercase()))
            .is_some_and(|decoded| has_rtl(&decoded));
    }
    has_rtl(label)
}

fn puny_adapt(delta: u64, points: u64, first: bool) -> u64 {
    let mut delta = if first { delta / 700 } else { delta >> 1 };
    delta += delta / points.max(1);
    let mut k = 0;
    while delta > (35 * 26) >> 1 {
        delta /= 35;
        k += 36;
    }
    k + (36 * delta) / (delta + 38)
}

fn puny_threshold(k: u64, bias: u64) -> u64 {
    if k <= bias {
        1
    } else if k >= bias + 26 {
        26
    } else {
        k - bias
    }
}

/// RFC 3492 decoding of a label body (lowercase); None where the reference throws.
fn puny_decode(input: &str) -> Option<String> {
    let units: Vec<u16> = input.encode_utf16().collect();
    let mut output: Vec<u32> = Vec::new();
    let (mut n, mut i, mut bias) = (128u64, 0u64, 72u64);
    let delim = units.iter().rposition(|u| *u == u16::from(b'-'));
    if let Some(d) = delim.filter(|d| *d > 0) {
        for u in &units[..d] {
            if *u >= 128 {
                return None;
            }
            output.push(u32::from(*u));
        }
    }
    let mut idx = delim.map_or(0, |d| d + 1);
    while idx < units.len() {
        let old_i = i;
        let (mut w, mut k) = (1u64, 36u64);
        loop {
            let ch = *units.get(idx)?;
            idx += 1;
            let digit = match ch {
                0x61..=0x7a => u64::from(ch - 0x61),
                0x30..=0x39 => u64::from(ch - 0x30) + 26,
                _ => return None,
            };
            i = i.checked_add(digit.checked_mul(w)?)?;
            let t = puny_threshold(k, bias);
            if digit < t {
                break;
            }
            w = w.checked_mul(36 - t)?;
            k += 36;
        }
        let len = output.len() as u64 + 1;
        bias = puny_adapt(i - old_i, len, old_i == 0);
        n = n.checked_add(i / len)?;
        i %= len;
        output.insert(usize::try_from(i).ok()?, u32::try_from(n).ok()?);
        i += 1;
    }
    output.into_iter().map(char::from_u32).collect()
}

/// The length of the RFC 3492 encoding of `input` (the A-label's payload).
fn puny_encoded_len(input: &str) -> usize {
    let cps: Vec<u64> = input.chars().map(|c| u64::from(u32::from(c))).collect();
    let basic = cps.iter().filter(|c| **c < 128).count();
    let mut len = basic + usize::from(basic > 0);
    let (mut n, mut delta, mut bias, mut handled) = (128u64, 0u64, 72u64, basic as u64);
    while (handled as usize) < cps.len() {
        let Some(m) = cps.iter().copied().filter(|c| *c >= n).min() else {
            break;
        };
        delta = delta.saturating_add((m - n).saturating_mul(handled + 1));
        n = m;
        for &c in &cps {
            if c < n {
                delta = delta.saturating_add(1);
            }
            if c == n {
                let mut q = delta;
                let mut k = 36;
                loop {
                    let t = puny_threshold(k, bias);
                    if q < t {
                        break;
                    }
                    len += 1;
                    q = (q - t) / (36 - t);
                    k += 36;
                }
                len += 1;
                bias = puny_adapt(delta, handled + 1, handled == basic as u64);
                delta = 0;
                handled += 1;
            }
        }
        delta += 1;
        n += 1;
    }
    len
}

fn is_unicode_label(value: &str) -> bool {
    if !value.is_ascii() && puny_encoded_len(value) + 4 > 63 {
        return false;
    }
    if has_rtl(value) && !satisfies_bidi(value) {
        return false;
    }
    let chars: Vec<char> = value.chars().collect();
    let (Some(first), Some(last)) = (chars.first(), chars.last()) else {
        return true;
    };
    if *first == '-' || *last == '-' || chars.iter().skip(2).take(2).collect::<String>() == "--" {
        return false;
    }
    if is_combining(*first) {
        return false;
    }
    const DISALLOWED: &[u32] = &[
        0x0640, 0x07fa, 0x302e, 0x302f, 0x3031, 0x3032, 0x3033, 0x3034, 0x3035, 0x303b,
    ];
    let permitted = r"^[\p{L}\-+.,:/\p{Nd}\p{Mn}\p{Mc}\x{b7}\x{375}\x{5f3}\x{5f4}\x{200c}\x{200d}\x{30fb}\x{df}\x{3c2}\x{6fd}\x{6fe}\x{f0b}\x{3007}]$";
    let mut japanese = false;
    for (i, &c) in chars.iter().enumerate() {
        let cp = c as u32;
        if DISALLOWED.contains(&cp) || !in_class(&CLS_PERMITTED, permitted, c) {
            return false;
        }
        japanese |= in_class(
            &CLS_JAPANESE,
            r"^[\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Han}]$",
            c,
        );
        let prev = i.checked_sub(1).and_then(|p| chars.get(p)).copied();
        let next = chars.get(i + 1).copied();
        let ok = match cp {
            0x00b7 => prev == Some('l') && next == Some('l'),
            0x0375 => next.is_some_and(is_greek),
            0x05f3 | 0x05f4 => prev.is_some_and(is_hebrew),
            0x200c => prev.is_some_and(|p| (p as u32) >= 0x80 || VIRAMAS.contains(&(p as u32))),
            0x200d => prev.is_some_and(|p| VIRAMAS.contains(&(p as u32))),
            _ => true,
        };
        if !ok {
            return false;
        }
    }
    japanese || !value.contains('\u{30fb}')
}

fn is_puny_label(value: &str) -> bool {
    if !is_ace_prefixed(value) {
        return false;
    }
    let Some(body) = value.get(4..).map(str::to_lowercase) else {
        return false;
    };
    if body.rfind('-') == Some(0) {
        return false;
    }
    match puny_decode(&body) {
        Some(decoded) => !decoded.is_ascii() && is_unicode_label(&decoded),
        None => false,
    }
}

fn is_ascii_label(value: &str) -> bool {
    !value.starts_with('-')
        && !value.ends_with('-')
        && value.get(2..4) != Some("--")
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-')
}

fn is_hostname(value: &str) -> bool {
    let len = utf16_len(value);
    if len == 0 || len > 253 || value.ends_with('.') {
        return false;
    }
    value.split('.').all(|label| {
        let n = utf16_len(label);
        (1..=63).contains(&n) && (is_puny_label(label) || is_ascii_label(label))
    })
}

/// `idn-hostname` (without the reference's NFC normalization, see the module notes).
fn is_idn_hostname(value: &str) -> bool {
    if value.is_empty() || value.contains(' ') {
        return false;
    }
    let normalized: String = value
        .chars()
        .map(|c| match c as u32 {
            cp @ 0xff01..=0xff5e => char::from_u32(cp - 0xfee0).unwrap_or(c),
            _ => c,
        })
        .filter(|c| {
            !matches!(*c as u32, 0xad | 0x34f | 0x180b..=0x180d | 0x200b | 0xfe00..=0xfe0f | 0xe0100..=0xe01ef)
        })
        .map(|c| if matches!(c, '\u{3002}' | '\u{ff0e}' | '\u{ff61}') { '.' } else { c })
        .collect();
    if utf16_len(&normalized) > 253 {
        return false;
    }
    let labels: Vec<&str> = normalized.split('.').collect();
    let bidi = labels.iter().any(|l| has_bidi_chars(l));
    labels.iter().all(|label| {
        let n = utf16_len(label);
        (1..=63).contains(&n)
            && (is_puny_label(label) || is_unicode_label(label))
            && (!bidi || satisfies_bidi(label))
    })
}

// --- URL-based formats (the WHATWG parser's `URL.canParse`, approximated) ---------------------

fn is_iri(value: &str) -> bool {
    if value
        .chars()
        .any(|c| (c as u32) <= 0x20 || "<>^`{|}\\".contains(c))
        || has_bad_percent(value)
    {
        return false;
    }
    // The WHATWG parser rejects IPvFuture literals, which RFC 3987 allows: check one as [::1].
    let narrowed = if utf16_len(value) < 2048 {
        narrow_ipv_future(value)
    } else {
        value.to_string()
    };
    url_can_parse(&narrowed, false)
}

fn narrow_ipv_future(value: &str) -> String {
    static IPV_FUTURE: LazyRegex = OnceLock::new();
    match own_regex(&IPV_FUTURE, r"\[[vV][0-9a-fA-F]+\.[^\]]+\]") {
        Some(re) => re.replace(value, "[::1]").into_owned(),
        None => value.to_string(),
    }
}

fn is_iri_reference(value: &str) -> bool {
    if value
        .chars()
        .any(|c| (c as u32) <= 0x20 || c == '\u{7f}' || c == '\\')
        || has_bad_percent(value)
    {
        return false;
    }
    let malformed_scheme = split_scheme_prefix_without_colon(value);
    !malformed_scheme && url_can_parse(value, true)
}

/// `^[a-zA-Z][a-zA-Z0-9+\-.]*\/\/`: a scheme-like prefix followed by `//` without a colon.
fn split_scheme_prefix_without_colon(value: &str) -> bool {
    let mut chars = value.char_indices();
    if !chars.next().is_some_and(|(_, c)| c.is_ascii_alphabetic()) {
        return false;
    }
    for (i, c) in chars {
        if c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.') {
            continue;
        }
        return value[i..].starts_with("//");
    }
    false
}

/// A `%` not followed by two hex digits.
fn has_bad_percent(value: &str) -> bool {
    let b = value.as_bytes();
    b.iter().enumerate().any(|(i, c)| {
        *c == b'%'
            && !(b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    })
}

/// Whether the WHATWG URL parser accepts `input` (`http_base`: relative to `http://example.com`).
/// An approximation: schemes, authorities, hosts and ports are checked; IDNA mapping is not.
fn url_can_parse(input: &str, http_base: bool) -> bool {
    let trimmed = input.trim_matches(|c: char| c <= ' ');
    let s: String = trimmed
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    if let Some((scheme, rest)) = split_scheme(&s) {
        let scheme = scheme.to_ascii_lowercase();
        if is_special_scheme(&scheme) {
            let slashed = rest.starts_with(['/', '\\']);
            if scheme == "file" {
                return !slashed || file_host_ok(rest);
            }
            // The base's own scheme without `//` is relative to the base.
            let mut after_scheme = rest.chars();
            let two_slashes = matches!(
                (after_scheme.next(), after_scheme.next()),
                (Some('/' | '\\'), Some('/' | '\\'))
            );
            if http_base && scheme == "http" && !two_slashes {
                return true;
            }
            let after = rest.trim_start_matches(['/', '\\']);
            let end = after.find(['/', '\\', '?', '#']).unwrap_or(after.len());
            return authority_ok(&after[..end], true);
        }
        if let Some(after) = rest.strip_prefix("//") {
            let end = after.find(['/', '?', '#']).unwrap_or(after.len());
            return authority_ok(&after[..end], false);
        }
        return true;
    }
    if !http_base {
        return false;
    }
    let mut chars = s.chars();
    let two_slashes = matches!(
        (chars.next(), chars.next()),
        (Some('/' | '\\'), Some('/' | '\\'))
    );
    if two_slashes {
        let after = s[2..].trim_start_matches(['/', '\\']);
        let end = after.find(['/', '\\', '?', '#']).unwrap_or(after.len());
        return authority_ok(&after[..end], true);
    }
    true
}

fn file_host_ok(rest: &str) -> bool {
    let Some(after) = rest
        .strip_prefix("//")
        .or_else(|| rest.strip_prefix("\\\\"))
    else {
        return true;
    };
    let end = after.find(['/', '\\', '?', '#']).unwrap_or(after.len());
    let host = &after[..end];
    host.is_empty() || host_ok(host, true)
}

fn authority_ok(auth: &str, special: bool) -> bool {
    let host_port = match auth.rfind('@') {
        // Credentials without a host fail ("host-missing").
        Some(i) if i + 1 == auth.len() => return false,
        Some(i) => &auth[i + 1..],
        None => auth,
    };
    let (host, port) = if host_port.starts_with('[') {
        match host_port.find(']') {
            Some(i) => (&host_port[..=i], &host_port[i + 1..]),
            None => return false,
        }
    } else {
        match host_port.find(':') {
            Some(i) => (&host_port[..i], &host_port[i..]),
            None => (host_port, ""),
        }
    };
    if !port.is_empty() {
        let Some(digits) = port.strip_prefix(':') else {
            return false;
        };
        if !digits.bytes().all(|c| c.is_ascii_digit())
            || digits
                .parse::<u64>()
                .map_or(!digits.is_empty(), |p| p > 65535)
        {
            return false;
        }
    }
    // An empty host fails before a port as it does in a special URL ("host-missing").
    if host.is_empty() && (special || !port.is_empty()) {
        return false;
    }
    host.is_empty() || host_ok(host, special)
}

fn host_ok(host: &str, special: bool) -> bool {
    if let Some(inner) = host.strip_prefix('[') {
        return inner
            .strip_suffix(']')
            .is_some_and(|ip| format_match(&IPV6, RE_IPV6, true, ip));
    }
    if !special {
        return !host.chars().any(|c| {
            matches!(
                c,
                '\0' | '\t'
                    | '\n'
                    | '\r'
                    | ' '
                    | '#'
                    | '/'
                    | ':'
                    | '<'
                    | '>'
                    | '?'
                    | '@'
                    | '['
                    | '\\'
                    | ']'
                    | '^'
                    | '|'
            )
        });
    }
    let Some(decoded) = percent_decode(host) else {
        return false;
    };
    let domain = decoded.to_lowercase();
    if domain.is_empty()
        || domain.chars().any(|c| {
            (c as u32) < 0x20
                || c == '\u{7f}'
                || matches!(
                    c,
                    ' ' | '#'
                        | '%'
                        | '/'
                        | ':'
                        | '<'
                        | '>'
                        | '?'
                        | '@'
                        | '['
                        | '\\'
                        | ']'
                        | '^'
                        | '|'
                )
        })
    {
        return false;
    }
    let labels: Vec<&str> = domain.split('.').collect();
    // IDNA decodes `xn--` labels: one that decodes to nothing fails (the other checks of
    // UTS #46 need its mapping tables and are not made).
    let bad_ace = |l: &&str| {
        l.strip_prefix("xn--")
            .is_some_and(|body| puny_decode(body).is_none_or(|d| d.is_empty()))
    };
    if labels.iter().any(bad_ace) {
        return false;
    }
    let last = match labels.as_slice() {
        [.., last, ""] if labels.len() > 1 => *last,
        [.., last] => *last,
        [] => "",
    };
    let numeric = |s: &str| {
        !s.is_empty()
            && (s.bytes().all(|c| c.is_ascii_digit())
                || s.strip_prefix("0x")
                    .is_some_and(|h| h.bytes().all(|c| c.is_ascii_hexdigit())))
    };
    if numeric(last) {
        return ipv4_host_ok(&domain);
    }
    true
}

/// The WHATWG IPv4 parser: up to four parts, decimal, octal or hex, the last one widest.
fn ipv4_host_ok(domain: &str) -> bool {
    let mut parts: Vec<&str> = domain.split('.').collect();
    if parts.last() == Some(&"") && parts.len() > 1 {
        parts.pop();
    }
    if parts.len() > 4 {
        return false;
    }
    let mut numbers = Vec::with_capacity(parts.len());
    for p in &parts {
        let (digits, radix) = if let Some(h) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X"))
        {
            (h, 16)
        } else if p.len() > 1 && p.starts_with('0') {
            (&p[1..], 8)
        } else {
            (*p, 10)
        };
        if p.is_empty() {
            return false;
        }
        let n = if digits.is_empty() {
            Some(0)
        } else {
            u64::from_str_radix(digits, radix).ok()
        };
        match n {
            Some(n) => numbers.push(n),
            None => return false,
        }
    }
    let Some((last, init)) = numbers.split_last() else {
        return false;
    };
    if init.iter().any(|n| *n > 255) {
        return false;
    }
    *last < 256u64.pow(5 - numbers.len() as u32)
}

/// `regex`: whether `new RegExp(value, "u")` accepts it.
fn is_regex(value: &str) -> bool {
    match translate_regex(value, true, true) {
        Ok(t) => Regex::new(&t).is_ok(),
        Err(TrErr::Unsupported) => true,
        Err(TrErr::Syntax(_)) => false,
    }
}
