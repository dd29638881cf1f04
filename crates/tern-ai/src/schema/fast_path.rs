//! The fast path: arguments that already match a flat object schema exactly.
//!
//! Most tool schemas are an object of primitive-typed properties, and most calls already
//! match them exactly. For those the full check would coerce nothing and normalize nothing,
//! so the arguments are returned as they are without running the engine. Anything else
//! (another schema shape, a value needing coercion, an integral float) takes the full path,
//! so results are identical either way.

use std::collections::HashMap;

use serde_json::Value;

use super::kind::Kind;

/// The shape of a flat object schema, read once when the schema is compiled.
#[derive(Debug)]
pub(crate) struct FastShape {
    /// Each declared property's primitive type (foldhash: looked up for every argument of
    /// every call, where SipHash was most of the check's cost).
    types: HashMap<String, Kind, foldhash::fast::RandomState>,
    /// The required property names.
    required: Vec<String>,
    /// `additionalProperties: false`.
    closed: bool,
}

/// Keywords that carry no check and no subschema (so nothing that could fail to compile).
fn inert(k: &str) -> bool {
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
}

impl FastShape {
    /// The shape of `schema` when it is a flat object schema; None otherwise.
    pub(crate) fn of(schema: &Value) -> Option<FastShape> {
        let s = schema.as_object()?;
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
        // The whole schema must have the simple shape, used or not: the reference compiles
        // all of it and fails on any malformed part.
        let mut types = HashMap::default();
        for (name, sub) in properties? {
            let mut ty = None;
            for (k, v) in sub.as_object()? {
                match k.as_str() {
                    "type" => ty = Some(v.as_str()?),
                    k if inert(k) => {}
                    _ => return None,
                }
            }
            let kind = Kind::parse(ty?)?;
            if !matches!(
                kind,
                Kind::String | Kind::Boolean | Kind::Integer | Kind::Number
            ) {
                return None;
            }
            types.insert(name.clone(), kind);
        }
        let required = required
            .into_iter()
            .flatten()
            .map(|name| name.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()?;
        Some(FastShape {
            types,
            required,
            closed,
        })
    }

    /// `arguments` unchanged when they already match exactly; None when the full path must
    /// decide.
    pub(crate) fn already_valid(&self, arguments: &Value) -> Option<Value> {
        self.is_valid(arguments).then(|| arguments.clone())
    }

    /// Whether `arguments` pass as they are (see [`already_valid`](Self::already_valid)).
    pub(crate) fn is_valid(&self, arguments: &Value) -> bool {
        self.check(arguments).is_some()
    }

    fn check(&self, arguments: &Value) -> Option<()> {
        let args = arguments.as_object()?;
        if !self.required.iter().all(|name| args.contains_key(name)) {
            return None;
        }
        for (name, value) in args {
            let Some(kind) = self.types.get(name) else {
                if self.closed || !plain_value(value, 0) {
                    return None;
                }
                continue;
            };
            let ok = match (kind, value) {
                (Kind::String, Value::String(_)) | (Kind::Boolean, Value::Bool(_)) => true,
                (Kind::Integer, Value::Number(n)) => n.is_i64() || n.is_u64(),
                (Kind::Number, Value::Number(n)) => {
                    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() != 0.0)
                }
                _ => false,
            };
            if !ok {
                return None;
            }
        }
        Some(())
    }
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
