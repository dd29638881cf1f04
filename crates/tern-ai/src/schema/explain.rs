//! Explanations: each failing keyword with the reference's message and path.

use serde_json::Value;

use crate::schema::annotations::Ann;
use crate::schema::context::addr;
use crate::schema::context::{Ctx, Pass};
use crate::schema::formats::check_format;
use crate::schema::js::string::{
    js_join_string, js_number_string, js_stringify, js_to_string, list_values, utf16_len,
};
use crate::schema::js::value::{deep_equal, js_entries, strict_eq, unique};
use crate::schema::keywords::{
    contains_bounds, contains_message, has_unevaluated, num_kw, pattern_entries, FALSE_SCHEMA,
};
use crate::schema::kind::Kind;
use crate::schema::number::{num_f64, walk_number};
use crate::schema::{Base, JsonMap};

/// The explanation of a `$ref` target: the path it was made at and its errors.
pub(crate) type KnownErrors = (String, Vec<VErr>);

/// One reported error: a JSON Pointer into the (coerced) value and a message.
#[derive(Clone, Debug)]
pub(crate) struct VErr {
    pub(crate) path: String,
    pub(crate) message: String,
}

impl<'s> Ctx<'s> {
    /// The reference's explainer: each failing keyword reported at the value it failed on.
    pub(crate) fn walk(
        &self,
        node: &'s Value,
        base: &Base,
        v: &Value,
        path: &str,
        out: &mut Vec<VErr>,
    ) {
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
        if !self.enter(Pass::Explain, node, v) {
            return;
        }
        self.walk_node(o, &b, v, path, out);
        self.leave(Pass::Explain, node, v);
    }

    pub(crate) fn walk_node(
        &self,
        o: &'s JsonMap,
        b: &Base,
        v: &Value,
        path: &str,
        out: &mut Vec<VErr>,
    ) {
        let start = out.len();
        if let Some(t) = o.get("type") {
            if !Kind::keyword_matches(t, v) {
                let names: Vec<String> = match t {
                    Value::Array(list) => list.iter().map(js_join_string).collect(),
                    other => vec![js_join_string(other)],
                };
                out.push(verr(
                    path,
                    &format!(
                        "expected {}, got {}",
                        names.join(" or "),
                        Kind::of(v).name()
                    ),
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

    pub(crate) fn walk_ref(&self, r: &str, b: &Base, v: &Value, path: &str, out: &mut Vec<VErr>) {
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

    pub(crate) fn walk_string(&self, o: &JsonMap, s: &str, path: &str, out: &mut Vec<VErr>) {
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

    pub(crate) fn walk_object(
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

    pub(crate) fn walk_array(
        &self,
        o: &'s JsonMap,
        b: &Base,
        a: &[Value],
        path: &str,
        out: &mut Vec<VErr>,
    ) {
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

    pub(crate) fn walk_union(
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
    pub(crate) fn explained_tag(
        &self,
        branches: &'s [Value],
        b: &Base,
    ) -> Option<(&'s str, Vec<&'s Value>)> {
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

    pub(crate) fn declared_keys(&self, s: &'s Value, b: &Base, m: &JsonMap) -> usize {
        let node = match s.get("$ref") {
            Some(Value::String(r)) if s.is_object() => self.resolve(r, &self.base_for(s, b)).0,
            _ => s,
        };
        match node.get("properties") {
            Some(Value::Object(props)) => m.keys().filter(|k| props.contains_key(*k)).count(),
            _ => 0,
        }
    }

    pub(crate) fn walk_unevaluated(
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

pub(crate) fn verr(path: &str, message: &str) -> VErr {
    VErr {
        path: path.to_string(),
        message: message.to_string(),
    }
}

/// `path` extended by one JSON Pointer segment.
pub(crate) fn pointer(path: &str, key: &str) -> String {
    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// A JSON Pointer as the dotted path the model sees: `/edits/0/oldText` -> `edits.0.oldText`.
pub(crate) fn format_path(p: &str) -> String {
    if p.is_empty() {
        return "root".to_string();
    }
    p[1..]
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}
