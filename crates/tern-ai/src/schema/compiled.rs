//! [`CompiledSchema`]: a tool's schema compiled once, validated against many times.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde_json::Value;

use super::context::Ctx;
use super::explain::{format_path, VErr};
use super::fast_path::FastShape;
use super::js::number::{normalize_numbers, value_depth};
use super::js::string::js_stringify;
use super::keywords::{MAX_DEPTH, STACK_OVERFLOW};
use super::resolver::Index;

/// A JSON Schema compiled for tool-argument validation: indexed (`$id`s, anchors), checked
/// for the reference's compile errors and, for flat object schemas, read into a fast path,
/// once. [`validate`](CompiledSchema::validate) then coerces and checks arguments without
/// reading the schema's structure again.
///
/// It is `Send + Sync`; share it behind an `Arc` across calls and tasks.
///
/// ```
/// use serde_json::json;
/// use tern_ai::schema::CompiledSchema;
///
/// let schema = CompiledSchema::new(json!({
///     "type": "object",
///     "properties": { "count": { "type": "integer" } },
///     "required": ["count"]
/// }));
/// assert_eq!(schema.validate("count", &json!({ "count": "3" }), None), Ok(json!({ "count": 3 })));
/// assert!(schema.validate("count", &json!({}), None).is_err());
/// ```
pub struct CompiledSchema {
    /// The schema, boxed so that its nodes keep the addresses the index knows them by.
    root: Box<Value>,
    index: Index,
    /// The reference's compile error, if the schema has one (reported on every call).
    outcome: Result<(), String>,
    /// References the compile step found naming nothing.
    unresolved: HashSet<String>,
    /// The flat-object shape, when the schema has it.
    fast: Option<FastShape>,
}

impl CompiledSchema {
    /// Compiles `schema`. A schema the reference cannot compile still makes a value: its
    /// error is what every [`validate`](CompiledSchema::validate) returns, as the reference
    /// reports it per call.
    pub fn new(schema: Value) -> CompiledSchema {
        let root = Box::new(schema);
        let index = Index::build(&root);
        let fast = FastShape::of(&root);
        let (outcome, unresolved) = {
            let ctx = Ctx::new(&root, &index, HashSet::new());
            // The reference compiles the whole schema first; a malformed subschema throws there.
            let outcome = ctx.compile(&root, &ctx.root_base(), &mut HashSet::new(), 0);
            (outcome, ctx.unresolved.into_inner())
        };
        CompiledSchema {
            root,
            index,
            outcome,
            unresolved,
            fast,
        }
    }

    /// The schema as given.
    pub fn schema(&self) -> &Value {
        &self.root
    }

    /// The reference's compile error for this schema, if it has one.
    pub fn compile_error(&self) -> Option<&str> {
        self.outcome.as_ref().err().map(String::as_str)
    }

    /// Whether `instance` satisfies the schema as it is: the check alone, without coercion
    /// or explanation. A schema with a compile error accepts nothing, and neither does a
    /// check that recurses without end (the reference throws there).
    ///
    /// ```
    /// use serde_json::json;
    /// use tern_ai::schema::CompiledSchema;
    ///
    /// let schema = CompiledSchema::new(json!({ "type": "integer" }));
    /// assert!(schema.is_valid(&json!(3)));
    /// assert!(!schema.is_valid(&json!("3")));
    /// ```
    pub fn is_valid(&self, instance: &Value) -> bool {
        if self.outcome.is_err() || value_depth(instance) > MAX_DEPTH {
            return false;
        }
        let ctx = Ctx::new(&self.root, &self.index, self.unresolved.clone());
        let valid = ctx.ok(&self.root, &ctx.root_base(), instance);
        valid && !ctx.overflow.get()
    }

    /// Validates (and coerces) `arguments` for the tool `tool_name`, as
    /// [`validate_tool_arguments`](super::validate_tool_arguments) does.
    pub fn validate(
        &self,
        tool_name: &str,
        arguments: &Value,
        arguments_error: Option<&str>,
    ) -> Result<Value, String> {
        self.validate_in_place(tool_name, arguments, arguments_error)
            .map(Cow::into_owned)
    }

    /// As [`validate`](Self::validate), without copying arguments that pass as they are:
    /// `Cow::Borrowed(arguments)` then, the coerced copy otherwise.
    ///
    /// ```
    /// use std::borrow::Cow;
    /// use serde_json::json;
    /// use tern_ai::schema::CompiledSchema;
    /// let schema = CompiledSchema::new(json!({
    ///     "type": "object",
    ///     "properties": { "limit": { "type": "integer" } }
    /// }));
    /// let exact = json!({ "limit": 5 });
    /// assert!(matches!(schema.validate_in_place("read", &exact, None), Ok(Cow::Borrowed(_))));
    /// let text = json!({ "limit": "5" });
    /// let coerced = schema.validate_in_place("read", &text, None).unwrap();
    /// assert_eq!(coerced.into_owned(), exact);
    /// ```
    pub fn validate_in_place<'a>(
        &self,
        tool_name: &str,
        arguments: &'a Value,
        arguments_error: Option<&str>,
    ) -> Result<Cow<'a, Value>, String> {
        if let Some(e) = arguments_error {
            return Err(format!("Invalid arguments for tool \"{tool_name}\": {e}"));
        }
        if self.fast.as_ref().is_some_and(|f| f.is_valid(arguments)) {
            return Ok(Cow::Borrowed(arguments));
        }
        if value_depth(arguments) > MAX_DEPTH {
            // Deeper than the checks may recurse (serde_json itself parses at most 128 levels):
            // reported as the reference reports a recursion that exhausts its stack.
            return Err(STACK_OVERFLOW.to_string());
        }
        self.outcome.clone()?;
        let schema: &Value = &self.root;
        if schema.is_boolean() {
            // pi-ai caches validators in a WeakMap keyed by the schema, which takes no boolean.
            return Err("Invalid value used as weak map key".to_string());
        }
        let ctx = Ctx::new(schema, &self.index, self.unresolved.clone());
        let coerced = ctx.coerce(schema, arguments);
        let root_base = ctx.root_base();
        ctx.overflow.set(false);
        let valid = ctx.ok(schema, &root_base, &coerced);
        if ctx.overflow.get() {
            // The reference recurses without end on such schemas and throws a RangeError.
            return Err(STACK_OVERFLOW.to_string());
        }
        if valid {
            return Ok(Cow::Owned(normalize_numbers(coerced, 0)));
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
}

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledSchema")
            .field("schema", &self.root)
            .field("compile_error", &self.compile_error())
            .finish_non_exhaustive()
    }
}
