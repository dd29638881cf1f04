//! One copy of each distinct tool declaration per process, with its compiled parameters
//! schema.
//!
//! A service that builds the same tools for each of a thousand agents would otherwise hold a
//! thousand copies of every schema, and compile each copy again on its agent's first call of
//! that tool (memory that keeps growing for as long as agents try tools they had not used).
//! Declarations equal in their serialized form share one entry; an entry lives as long as a
//! tool holds it.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;
use tern_ai::schema::CompiledSchema;
use tern_ai::ToolDeclaration;

/// A declaration and its parameters schema, compiled on first use.
pub(crate) struct SharedDeclaration {
    pub(crate) declaration: Arc<ToolDeclaration>,
    compiled: OnceLock<CompiledSchema>,
}

impl SharedDeclaration {
    /// The compiled parameters schema (compiled once per distinct declaration).
    pub(crate) fn compiled(&self) -> &CompiledSchema {
        self.compiled
            .get_or_init(|| CompiledSchema::new(self.declaration.parameters.clone()))
    }
}

#[derive(Default)]
struct Table {
    entries: HashMap<String, Weak<SharedDeclaration>>,
    // Dead entries are swept when the table reaches this size, which then doubles: the
    // sweep costs O(1) per insert, amortized.
    sweep_at: usize,
}

fn table() -> &'static Mutex<Table> {
    static TABLE: OnceLock<Mutex<Table>> = OnceLock::new();
    TABLE.get_or_init(Default::default)
}

/// The shared entry for `declaration`: an existing one when an equal declaration is alive,
/// else a new one.
pub(crate) fn share(declaration: ToolDeclaration) -> Arc<SharedDeclaration> {
    // The serialized text is the identity: equal text, equal declaration for every reader
    // (the providers send this text; validation compiles this schema).
    let Ok(key) = serde_json::to_string(&declaration) else {
        return fresh(declaration);
    };
    let mut t = table().lock();
    if let Some(live) = t.entries.get(&key).and_then(Weak::upgrade) {
        return live;
    }
    let entry = fresh(declaration);
    if t.entries.len() >= t.sweep_at {
        t.entries.retain(|_, w| w.strong_count() > 0);
        t.sweep_at = (t.entries.len() * 2).max(64);
    }
    t.entries.insert(key, Arc::downgrade(&entry));
    entry
}

fn fresh(declaration: ToolDeclaration) -> Arc<SharedDeclaration> {
    Arc::new(SharedDeclaration {
        declaration: Arc::new(declaration),
        compiled: OnceLock::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decl(name: &str, schema: serde_json::Value) -> ToolDeclaration {
        ToolDeclaration {
            name: name.into(),
            description: "d".into(),
            parameters: schema,
            constrained_sampling: None,
        }
    }

    #[test]
    fn equal_declarations_share_one_entry_and_one_compiled_schema() {
        let a = share(decl("shared_a", json!({"type": "object"})));
        let b = share(decl("shared_a", json!({"type": "object"})));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(std::ptr::eq(a.compiled(), b.compiled()));
        let other = share(decl("shared_a", json!({"type": "string"})));
        assert!(!Arc::ptr_eq(&a, &other));
    }

    #[test]
    fn an_entry_no_tool_holds_is_dropped() {
        let a = share(decl("shared_gone", json!({})));
        let weak = Arc::downgrade(&a);
        drop(a);
        assert!(weak.upgrade().is_none());
        let again = share(decl("shared_gone", json!({})));
        assert_eq!(again.declaration.name, "shared_gone");
    }
}
