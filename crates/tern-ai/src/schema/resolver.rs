//! Reference resolution: `$id`, `$anchor` and JSON Pointer targets.
//!
//! The [`Index`] is built once per schema and holds no borrow of it: resources and anchors
//! are kept as paths from the root, base URIs by node address (stable while the schema is
//! neither moved out of its box nor changed, which [`CompiledSchema`](super::CompiledSchema)
//! guarantees by owning it).

use std::collections::HashMap;

use serde_json::Value;

use crate::schema::context::addr;
use crate::schema::context::Ctx;
use crate::schema::js::value::array_index;
use crate::schema::keywords::{
    ARRAY_KEYWORDS, DEFAULT_BASE, FALSE_SCHEMA, MAP_KEYWORDS, MAX_DEPTH, SCHEMA_KEYWORDS,
};
use crate::schema::uri::{document_of, percent_decode, resolve_uri};
use crate::schema::Base;

/// One step of a path from the root schema to a node.
#[derive(Clone, Debug)]
enum Step {
    /// A member of an object.
    Key(String),
    /// An item of an array.
    Item(usize),
}

/// A node's location: the steps from the root schema to it.
type Location = Box<[Step]>;

/// The `$id`s, anchors and base URIs of one schema.
#[derive(Debug, Default)]
pub(crate) struct Index {
    /// Schema node address to the base URI it was indexed under.
    base_of: HashMap<usize, Base>,
    /// Schema resources (the root and every `$id`) by document URI.
    resources: HashMap<String, Location>,
    /// `$anchor`, `$dynamicAnchor` and fragment `$id` targets by full URI.
    anchors: HashMap<String, Location>,
}

impl Index {
    /// Indexes `root` eagerly; the reference indexes on the first `$ref` or `$id`, with the
    /// same result.
    pub(crate) fn build(root: &Value) -> Index {
        let mut index = Index::default();
        index
            .resources
            .insert(DEFAULT_BASE.to_string(), Box::new([]));
        index.visit(root, Base::from(DEFAULT_BASE), &mut Vec::new(), 0);
        index
    }

    fn visit(&mut self, node: &Value, base: Base, at: &mut Vec<Step>, depth: usize) {
        let Value::Object(o) = node else { return };
        if depth > MAX_DEPTH || self.base_of.contains_key(&addr(node)) {
            return;
        }
        let location = || at.iter().cloned().collect::<Location>();
        let mut b = base;
        if let Some(Value::String(id)) = o.get("$id") {
            let uri = resolve_uri(id, &b);
            let doc = document_of(&uri).to_string();
            self.resources.insert(doc.clone(), location());
            if uri.len() > doc.len() + 1 {
                self.anchors.insert(uri.clone(), location());
            }
            b = Base::from(doc.as_str());
        }
        self.base_of.insert(addr(node), b.clone());
        if let Some(Value::String(a)) = o.get("$anchor") {
            self.anchors.insert(format!("{b}#{a}"), location());
        }
        if let Some(Value::String(a)) = o.get("$dynamicAnchor") {
            self.anchors.insert(format!("{b}#{a}"), location());
        }
        for k in SCHEMA_KEYWORDS {
            if let Some(s) = o.get(*k) {
                at.push(Step::Key((*k).to_string()));
                self.visit(s, b.clone(), at, depth + 1);
                at.pop();
            }
        }
        for k in MAP_KEYWORDS {
            if let Some(Value::Object(m)) = o.get(*k) {
                at.push(Step::Key((*k).to_string()));
                for (name, s) in m {
                    at.push(Step::Key(name.clone()));
                    self.visit(s, b.clone(), at, depth + 1);
                    at.pop();
                }
                at.pop();
            }
        }
        for k in ARRAY_KEYWORDS {
            if let Some(Value::Array(list)) = o.get(*k) {
                at.push(Step::Key((*k).to_string()));
                for (i, s) in list.iter().enumerate() {
                    at.push(Step::Item(i));
                    self.visit(s, b.clone(), at, depth + 1);
                    at.pop();
                }
                at.pop();
            }
        }
    }

    /// The base URI `node` was indexed under, if it was.
    pub(crate) fn base_of(&self, node: &Value) -> Option<&Base> {
        self.base_of.get(&addr(node))
    }

    /// The resource (root or `$id`) of document `doc` within `root`.
    fn resource<'s>(&self, root: &'s Value, doc: &str) -> Option<&'s Value> {
        node_at(root, self.resources.get(doc)?)
    }

    /// The target of the anchor `uri` within `root`.
    fn anchor<'s>(&self, root: &'s Value, uri: &str) -> Option<&'s Value> {
        node_at(root, self.anchors.get(uri)?)
    }
}

/// The node at `location` below `root`.
fn node_at<'s>(root: &'s Value, location: &[Step]) -> Option<&'s Value> {
    location
        .iter()
        .try_fold(root, |node, step| match (node, step) {
            (Value::Object(m), Step::Key(k)) => m.get(k),
            (Value::Array(a), Step::Item(i)) => a.get(*i),
            _ => None,
        })
}

impl<'s> Ctx<'s> {
    /// The base URI of `node`, whose parent has `base`.
    pub(crate) fn base_for(&self, node: &Value, base: &Base) -> Base {
        if let Some(b) = self.index.base_of(node) {
            return b.clone();
        }
        match node.get("$id") {
            Some(Value::String(id)) => Base::from(document_of(&resolve_uri(id, base))),
            _ => base.clone(),
        }
    }

    /// The schema `r` names from `base`, with its base; `false` when it names nothing.
    pub(crate) fn resolve(&self, r: &str, base: &Base) -> (&'s Value, Base) {
        match self.find(r, base) {
            Some(found) => found,
            None => {
                self.unresolved.borrow_mut().insert(resolve_uri(r, base));
                (&FALSE_SCHEMA, base.clone())
            }
        }
    }

    pub(crate) fn is_unresolved(&self, r: &str, base: &Base) -> bool {
        self.unresolved.borrow().contains(&resolve_uri(r, base))
    }

    pub(crate) fn find(&self, r: &str, base: &Base) -> Option<(&'s Value, Base)> {
        let uri = resolve_uri(r, base);
        let doc = document_of(&uri);
        let fragment = if uri.len() > doc.len() {
            percent_decode(&uri[doc.len() + 1..])?
        } else {
            String::new()
        };
        let root = self.index.resource(self.root, doc)?;
        if fragment.is_empty() {
            return Some((root, Base::from(doc)));
        }
        if fragment.starts_with('/') {
            let mut node = root;
            let mut b: Base = Base::from(doc);
            for raw in fragment.split('/').skip(1) {
                let key = raw.replace("~1", "/").replace("~0", "~");
                node = match node {
                    Value::Object(m) => m.get(&key)?,
                    Value::Array(a) => a.get(array_index(&key)? as usize)?,
                    _ => return None,
                };
                if node.is_object() {
                    if let Some(nb) = self.index.base_of(node) {
                        b = nb.clone();
                    }
                }
            }
            return Some((node, b));
        }
        let target = self.index.anchor(self.root, &format!("{doc}#{fragment}"))?;
        let b = self
            .index
            .base_of(target)
            .cloned()
            .unwrap_or_else(|| Base::from(doc));
        Some((target, b))
    }
}
