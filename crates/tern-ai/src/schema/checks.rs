//! The checks: whether a value is valid against a schema.

use serde_json::Value;

use crate::schema::annotations::Ann;
use crate::schema::context::{Ctx, Pass};
use crate::schema::formats::check_format;
use crate::schema::js::string::js_to_string;
use crate::schema::js::value::{deep_equal, js_entries, strict_eq, unique};
use crate::schema::keywords::{
    bare_type, contains_bounds, has_unevaluated, num_kw, pattern_entries, prefix_and_rest, tag_of,
};
use crate::schema::kind::Kind;
use crate::schema::number::{num_f64, number_ok};
use crate::schema::{Base, JsonMap};

/// A compiled tagged union: the tag key and each branch's tag value.
pub(crate) type Tag = (String, Vec<Value>);

impl<'s> Ctx<'s> {
    /// Whether `v` is valid against `node` (whose parent has base `base`).
    pub(crate) fn ok(&self, node: &'s Value, base: &Base, v: &Value) -> bool {
        let o = match node {
            Value::Bool(b) => return *b,
            Value::Object(o) => o,
            _ => return false,
        };
        if !self.enter(Pass::Check, node, v) {
            return false;
        }
        let b = self.base_for(node, base);
        let r = if has_unevaluated(o) {
            let mut a = Ann::default();
            self.ann_all(o, &b, v, &mut a, false)
        } else {
            self.ok_obj(o, &b, v, false)
        };
        self.leave(Pass::Check, node, v);
        r
    }

    /// `passes()` of the coercer: None when the check recursed without end (the reference
    /// catches that error there and treats the answer as unknown).
    pub(crate) fn passes(&self, node: &'s Value, base: &Base, v: &Value) -> Option<bool> {
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
    pub(crate) fn ok_obj(&self, o: &'s JsonMap, b: &Base, v: &Value, ann: bool) -> bool {
        if let Some(t) = o.get("type") {
            if !Kind::keyword_matches(t, v) {
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

    pub(crate) fn string_ok(&self, o: &JsonMap, s: &str) -> bool {
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

    pub(crate) fn object_ok(
        &self,
        o: &'s JsonMap,
        b: &Base,
        m: &JsonMap,
        v: &Value,
        ann: bool,
    ) -> bool {
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

    pub(crate) fn array_ok(&self, o: &'s JsonMap, b: &Base, a: &[Value], ann: bool) -> bool {
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

    pub(crate) fn contains_ok(
        &self,
        c: &'s Value,
        b: &Base,
        a: &[Value],
        min: f64,
        max: f64,
    ) -> bool {
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
    pub(crate) fn union_ok(
        &self,
        branches: &'s [Value],
        b: &Base,
        v: &Value,
        exactly_one: bool,
    ) -> bool {
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
        let bare: Vec<Kind> = branches
            .iter()
            .filter_map(|s| s.as_object().and_then(bare_type))
            .collect();
        if bare.iter().any(|t| t.matches(v)) {
            return true;
        }
        branches
            .iter()
            .filter(|s| s.as_object().and_then(bare_type).is_none())
            .any(|s| self.ok(s, b, v))
    }

    /// The compile-time tag of a union: every branch an object schema with a required,
    /// distinct primitive `const` on one key.
    pub(crate) fn compiled_tag(&self, branches: &'s [Value], b: &Base) -> Option<Tag> {
        let key = branches.as_ptr() as usize;
        if let Some(cached) = self.tags.borrow().get(&key) {
            return cached.clone();
        }
        let computed = self.compute_tag(branches, b);
        self.tags.borrow_mut().insert(key, computed.clone());
        computed
    }

    pub(crate) fn compute_tag(&self, branches: &'s [Value], b: &Base) -> Option<Tag> {
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
}
