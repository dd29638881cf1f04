//! The per-call evaluation context: recursion guards and the pattern cache.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};

use regex::Regex;
use serde_json::Value;

use crate::schema::checks::Tag;
use crate::schema::ecma_regex::shared_regex;
use crate::schema::explain::KnownErrors;
use crate::schema::keywords::{DEFAULT_BASE, MAX_DEPTH};
use crate::schema::resolver::Index;
use crate::schema::Base;

pub(crate) struct Ctx<'s> {
    /// The root schema.
    pub(crate) root: &'s Value,
    /// Its `$id`s, anchors and base URIs.
    pub(crate) index: &'s Index,
    /// References that named nothing (they check as `false`).
    pub(crate) unresolved: RefCell<HashSet<String>>,
    /// Regular expressions of this schema by source (None: not expressible here).
    pub(crate) regexes: RefCell<HashMap<String, Option<Regex>>>,
    /// Tagged-union shape of `anyOf`/`oneOf` arrays by address.
    pub(crate) tags: RefCell<HashMap<usize, Option<Tag>>>,
    pub(crate) depth: Cell<usize>,
    /// (pass, node, value) triples being evaluated: meeting one again is endless recursion.
    pub(crate) active: RefCell<HashSet<(Pass, usize, usize)>>,
    /// Set when a check recursed without end (the reference would throw a RangeError).
    pub(crate) overflow: Cell<bool>,
    /// Explanations of `$ref` targets for object and array values, by (target, value).
    pub(crate) walk_memo: RefCell<HashMap<(usize, usize), KnownErrors>>,
}

/// Which evaluation of a (schema node, value) pair is running, for the recursion guard.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Pass {
    /// The plain check.
    Check,
    /// The annotating check below `unevaluated*`.
    Annotate,
    /// The explanation.
    Explain,
}

impl<'s> Ctx<'s> {
    /// A fresh run over `root`, indexed as `index`; `unresolved` are the references the
    /// compile step already found naming nothing.
    pub(crate) fn new(root: &'s Value, index: &'s Index, unresolved: HashSet<String>) -> Self {
        Ctx {
            root,
            index,
            unresolved: RefCell::new(unresolved),
            regexes: RefCell::new(HashMap::new()),
            tags: RefCell::new(HashMap::new()),
            depth: Cell::new(0),
            active: RefCell::new(HashSet::new()),
            overflow: Cell::new(false),
            walk_memo: RefCell::new(HashMap::new()),
        }
    }

    pub(crate) fn root_base(&self) -> Base {
        Base::from(DEFAULT_BASE)
    }

    // --- recursion guards -------------------------------------------------------------------

    /// Enters a check of `node` for `v`; false (and `overflow` set) on endless or too deep recursion.
    pub(crate) fn enter(&self, pass: Pass, node: &Value, v: &Value) -> bool {
        if self.overflow.get() {
            return false;
        }
        let d = self.depth.get();
        if d >= MAX_DEPTH || !self.active.borrow_mut().insert((pass, addr(node), addr(v))) {
            self.overflow.set(true);
            return false;
        }
        self.depth.set(d + 1);
        true
    }

    pub(crate) fn leave(&self, pass: Pass, node: &Value, v: &Value) {
        self.depth.set(self.depth.get().saturating_sub(1));
        self.active
            .borrow_mut()
            .remove(&(pass, addr(node), addr(v)));
    }

    /// Depth guard for the coercion passes, which end by themselves but must not exhaust the stack.
    pub(crate) fn deeper(&self) -> bool {
        let d = self.depth.get();
        if d >= MAX_DEPTH {
            return false;
        }
        self.depth.set(d + 1);
        true
    }

    pub(crate) fn shallower(&self) {
        self.depth.set(self.depth.get().saturating_sub(1));
    }

    // --- regular expressions ----------------------------------------------------------------

    /// Whether `s` matches the ECMAScript pattern `p`; None when the pattern uses what the
    /// `regex` crate cannot express (lookaround, backreferences) or does not compile.
    pub(crate) fn regex_test(&self, p: &str, s: &str) -> Option<bool> {
        if let Some(re) = self.regexes.borrow().get(p) {
            return re.as_ref().map(|re| re.is_match(s));
        }
        // A pattern ECMAScript rejects failed the compile already; here it matches everything.
        let re = shared_regex(p).ok().flatten();
        let result = re.as_ref().map(|re| re.is_match(s));
        self.regexes.borrow_mut().insert(p.to_string(), re);
        result
    }
}

/// A value's address: its identity, as JS compares objects (and as the caches key nodes).
pub(crate) fn addr<T>(x: &T) -> usize {
    x as *const T as usize
}
