//! Coercion: the three passes that bring arguments towards the schema before checking.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::schema::coerce::rules::{
    changed, coerce_primitive, convert_literal, try_boolean, try_null, try_number, try_string,
};
use crate::schema::context::{addr, Ctx};
use crate::schema::js::number::num_value;
use crate::schema::js::value::{js_entries, js_key_list, strict_eq};
use crate::schema::keywords::{item_schema_at, pattern_entries};
use crate::schema::kind::Kind;
use crate::schema::number::num_f64;
use crate::schema::{Base, JsonMap};

pub(crate) mod rules;

/// Identity of a value for the conversion pass's re-entry stack and memo: primitives by value
/// (as JS compares them), objects and arrays by address (as JS compares object identity).
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) enum IdKey {
    Null,
    Bool(bool),
    Num(u64),
    Str(String),
    Ptr(usize),
}

pub(crate) fn id_key(v: &Value) -> IdKey {
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
pub(crate) struct ConvState {
    /// (schema node, value) pairs being converted through a re-entry point.
    pub(crate) entered: Vec<(usize, IdKey)>,
    /// How often a re-entry was cut short; results computed across a cut are not memoized.
    pub(crate) cuts: usize,
    /// Results of `$ref` targets by (node, value): keeps recursive unions linear.
    pub(crate) memo: HashMap<(usize, IdKey), Option<Value>>,
}

impl<'s> Ctx<'s> {
    /// The reference's `coerce()`: optional nulls, conversions, primitive coercion by type.
    pub(crate) fn coerce(&self, schema: &'s Value, arguments: &Value) -> Value {
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
    pub(crate) fn drop_nulls(&self, value: &mut Value, schema: &'s Value, base: &Base) {
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

    pub(crate) fn drop_object_nulls(&self, m: &mut JsonMap, so: &'s JsonMap, b: &Base) {
        let props = so.get("properties").and_then(Value::as_object);
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
        self.each_unlisted_member(m, so, |current, s| self.drop_nulls(current, s, b));
    }

    /// Pass 2, TypeBox's conversions: the converted value, or None when it is unchanged.
    /// `stable` tells that `value` lives in the pass's input tree for the whole pass (only
    /// such values are memoized by address).
    pub(crate) fn convert(
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
    pub(crate) fn reenter(
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
    pub(crate) fn convert_node(
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
            Some(Value::String(t)) => match Kind::parse(t)? {
                Kind::String => changed(try_string(value)?, value),
                Kind::Number => changed(num_value(try_number(value)?), value),
                Kind::Integer => changed(num_value(try_number(value)?.trunc()), value),
                Kind::Boolean => changed(Value::Bool(try_boolean(value)?), value),
                Kind::Null => {
                    try_null(value)?;
                    changed(Value::Null, value)
                }
                Kind::Array => self.convert_array(st, o, b, value, stable),
                Kind::Object => self.convert_object(st, o, b, value, stable),
                // `bytes`, `bigint` and `undefined` have no JSON value to convert to.
                Kind::Bytes | Kind::BigInt | Kind::Undefined => None,
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
    pub(crate) fn convert_union(
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
    pub(crate) fn convert_members(
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

    pub(crate) fn convert_array(
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
        let Value::Array(items) = value else {
            // A tuple never wraps a single value; a list makes it a one-item array,
            // converted by the item schema.
            if prefix.is_some() {
                return None;
            }
            let inner = match items_schema {
                Some(s) if s.is_object() => self.reenter(st, s, b, value, stable, false),
                _ => None,
            };
            return Some(Value::Array(vec![inner.unwrap_or_else(|| value.clone())]));
        };
        // A tuple's items convert by position, those past it (and a list's) by `items`.
        let rest = if matches!(items_schema, Some(Value::Array(_))) {
            None
        } else {
            items_schema
        };
        let mut out: Option<Vec<Value>> = None;
        for (i, item) in items.iter().enumerate() {
            let s = prefix.and_then(|p| p.get(i)).or(rest);
            if let Some(next) = s.and_then(|s| self.convert(st, s, b, item, stable)) {
                out.get_or_insert_with(|| items.clone())[i] = next;
            }
        }
        out.map(Value::Array)
    }

    pub(crate) fn convert_object(
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
    pub(crate) fn coerce_types(&self, value: Value, schema: &'s Value, base: &Base) -> Value {
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
        // Unknown names count towards "more than one type" but match and coerce nothing.
        let kinds: Vec<Kind> = types.iter().filter_map(|t| Kind::parse(t)).collect();
        let matches_member = types.len() > 1 && kinds.iter().any(|k| k.matches(&next));
        if !matches_member {
            for k in &kinds {
                if let Some(candidate) = coerce_primitive(&next, *k) {
                    next = candidate;
                    break;
                }
            }
        }
        if kinds.contains(&Kind::Object) {
            if let Value::Object(m) = &mut next {
                self.coerce_properties(m, so, &b);
            }
        }
        if kinds.contains(&Kind::Array) {
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

    pub(crate) fn coerce_union(&self, value: Value, branches: &'s [Value], b: &Base) -> Value {
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

    pub(crate) fn coerce_properties(&self, m: &mut JsonMap, so: &'s JsonMap, b: &Base) {
        let props = so.get("properties").and_then(Value::as_object);
        if let Some(props) = props {
            for (key, prop) in js_entries(props) {
                if let Some(slot) = m.get_mut(key) {
                    *slot = self.coerce_types(std::mem::take(slot), prop, b);
                }
            }
        }
        self.each_unlisted_member(m, so, |slot, s| {
            *slot = self.coerce_types(std::mem::take(slot), s, b);
        });
    }

    /// Calls `f` on each member of `m` with each schema `patternProperties` gives it (every
    /// matching pattern), or with `additionalProperties` when neither `properties` nor a
    /// pattern names the key, in the reference's key order.
    fn each_unlisted_member(
        &self,
        m: &mut JsonMap,
        so: &'s JsonMap,
        mut f: impl FnMut(&mut Value, &'s Value),
    ) {
        let props = so.get("properties").and_then(Value::as_object);
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
                if let Some(value) = m.get_mut(&key) {
                    f(value, s);
                }
            }
            if !matched {
                if let (Some(a), Some(value)) = (additional, m.get_mut(&key)) {
                    f(value, a);
                }
            }
        }
    }
}
