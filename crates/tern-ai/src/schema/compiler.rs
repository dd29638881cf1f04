//! The reference's compile step: where a malformed subschema is reported.

use std::collections::HashSet;

use serde_json::Value;

use crate::schema::context::addr;
use crate::schema::context::Ctx;
use crate::schema::ecma_regex::shared_regex;
use crate::schema::js::value::js_entries;
use crate::schema::keywords::{
    bare_type, has_unevaluated, not_a_schema, prefix_and_rest, MAX_DEPTH,
};
use crate::schema::{Base, JsonMap};

impl<'s> Ctx<'s> {
    /// Walks what the reference compiles, in its order, for its one compile error: a
    /// subschema that is neither an object nor a boolean.
    pub(crate) fn compile(
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

    pub(crate) fn compile_annotating(
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
    pub(crate) fn compile_plain(
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
}
