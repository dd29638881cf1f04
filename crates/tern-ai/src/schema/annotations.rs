//! Annotating checks for `unevaluatedProperties` and `unevaluatedItems`.

use std::collections::HashSet;

use serde_json::Value;

use crate::schema::context::{Ctx, Pass};
use crate::schema::js::value::js_entries;
use crate::schema::keywords::{contains_bounds, has_unevaluated, pattern_entries, ANNOTATING};
use crate::schema::{Base, JsonMap};

/// Annotations for `unevaluatedProperties` / `unevaluatedItems`.
#[derive(Default)]
pub(crate) struct Ann {
    pub(crate) props: HashSet<String>,
    pub(crate) all_props: bool,
    pub(crate) items: usize,
    pub(crate) all_items: bool,
    pub(crate) indexes: HashSet<usize>,
}

impl Ann {
    pub(crate) fn merge(&mut self, other: Ann) {
        self.props.extend(other.props);
        self.all_props |= other.all_props;
        self.items = self.items.max(other.items);
        self.all_items |= other.all_items;
        self.indexes.extend(other.indexes);
    }
}

impl<'s> Ctx<'s> {
    /// The annotating check of `node`: it also records what it evaluated in `a`.
    pub(crate) fn ok_ann(&self, node: &'s Value, base: &Base, v: &Value, a: &mut Ann) -> bool {
        let o = match node {
            Value::Bool(b) => return *b,
            Value::Object(o) => o,
            _ => return false,
        };
        if !self.enter(Pass::Annotate, node, v) {
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
        self.leave(Pass::Annotate, node, v);
        r
    }

    /// The plain keywords, then each annotating keyword in order (`skip_uneval`: without the
    /// node's own unevaluated* keywords, as the explainer evaluates them).
    pub(crate) fn ann_all(
        &self,
        o: &'s JsonMap,
        b: &Base,
        v: &Value,
        a: &mut Ann,
        skip_uneval: bool,
    ) -> bool {
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
}
