//! Short names that many messages carry (the api, provider and model of every assistant
//! message), stored once per process instead of once per message.

use std::borrow::Borrow;
use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;
use std::ops::Deref;
use std::sync::LazyLock;

use arcstr::ArcStr;
use parking_lot::Mutex;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A short, immutable name shared by every value that holds the same text.
///
/// Building one looks the text up in a process-wide table first, so ten thousand assistant
/// messages of one model hold one `"openai-completions"` between them. A name from the
/// table is never freed, so cloning or dropping it counts no references; a name of its own
/// ([`Name::unique`]) is reference-counted. It reads as a `&str` (it derefs to one and
/// compares with `str` and `String`), and builds from either with `.into()`.
///
/// ```
/// use tern_ai::message::Name;
/// let a: Name = "openai-completions".into();
/// let b = Name::from(String::from("openai-completions"));
/// assert_eq!(a, "openai-completions");
/// assert!(a.shares_text_with(&b));
/// assert_eq!(a.len(), 18); // any `str` method
/// ```
#[derive(Clone, Eq, PartialOrd, Ord)]
pub struct Name(
    // `None` is the empty name: the default of every name field (a message's api, a call's
    // id), built and dropped with no reference count to change. A non-empty text only.
    // One pointer: the text's length is in its buffer. The table's names are static
    // (`ArcStr::leak`): their clones and drops touch no count, which a run does for its
    // api, provider, model and tool names several times a turn.
    Option<ArcStr>,
);

impl PartialEq for Name {
    /// Texts of different lengths or last bytes (where generated ids such as `call_12` and
    /// `call_13` differ) are told apart first, which a parallel batch's starts do for every
    /// pair of call ids; one buffer is equal to itself without a comparison.
    #[inline]
    fn eq(&self, other: &Name) -> bool {
        let (a, b) = (self.as_str(), other.as_str());
        a.len() == b.len()
            && a.as_bytes().last() == b.as_bytes().last()
            && (self.shares_text_with(other) || a == b)
    }
}

impl std::hash::Hash for Name {
    // As the text hashes, consistent with `eq` (which compares the text).
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

/// Texts longer than this are not shared: a name is short, a long text is something else.
const MAX_SHARED_LEN: usize = 128;
/// The table stops growing here, so a stream of distinct texts (a session file full of
/// invented model ids) cannot grow it without bound; later texts get their own buffer. Its
/// names are never freed: at most 4,096 texts of at most 128 bytes.
const MAX_SHARED_NAMES: usize = 4096;

/// foldhash, seeded per process: the table is looked up for every assistant message, and
/// SipHash was most of the lookup's cost on these short keys.
type Table = HashSet<ArcStr, foldhash::fast::RandomState>;

thread_local! {
    /// The names this thread looked up last, newest first.
    static RECENT: RefCell<[Option<Name>; RECENT_NAMES]> = const { RefCell::new([const { None }; RECENT_NAMES]) };
}

/// How many names a thread keeps at hand ([`RECENT`]).
const RECENT_NAMES: usize = 8;

fn table() -> &'static Mutex<Table> {
    static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(Default::default);
    &TABLE
}

impl Name {
    /// The name as a `&str`.
    #[inline]
    pub fn as_str(&self) -> &str {
        self.0.as_deref().unwrap_or("")
    }

    /// The name, or `None` when it is empty (an empty name is left out of the JSON).
    pub(crate) fn non_empty(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// A name of its own, not looked up in nor added to the shared table: for texts that
    /// are unique, such as a tool call's id, which its clones (the call, its result, the
    /// tool's input) share without a copy.
    ///
    /// ```
    /// use tern_ai::message::Name;
    /// let id = Name::unique("call_1");
    /// assert_eq!(id, "call_1");
    /// assert!(!id.shares_text_with(&Name::unique("call_1")));
    /// assert!(id.shares_text_with(&id.clone()));
    /// ```
    pub fn unique(text: &str) -> Self {
        match text {
            "" => Name(None),
            text => Name(Some(ArcStr::from(text))),
        }
    }

    /// Whether both names hold the same buffer (not only equal text); empty names hold none
    /// and share it.
    pub fn shares_text_with(&self, other: &Name) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => ArcStr::ptr_eq(a, b),
            (a, b) => a.is_none() && b.is_none(),
        }
    }

    fn shared(text: &str) -> Self {
        if text.is_empty() || text.len() > MAX_SHARED_LEN {
            return Name::unique(text);
        }
        // A response names its api, provider and model again and again: the thread's recent
        // names answer without the process-wide lock and hash.
        // (`try_with`: a name built while the thread's locals are torn down skips them.)
        let recent = RECENT.try_with(|r| {
            r.borrow()
                .iter()
                .flatten()
                .find(|n| n.as_str() == text)
                .cloned()
        });
        if let Ok(Some(found)) = recent {
            return found;
        }
        let name = {
            let mut names = table().lock();
            match names.get(text) {
                Some(found) => Name(Some(found.clone())),
                None => {
                    let name = ArcStr::from(text);
                    if names.len() < MAX_SHARED_NAMES {
                        // Kept for the process's life: static, so that no clone counts.
                        let _: &'static str = name.leak();
                        names.insert(name.clone());
                    }
                    Name(Some(name))
                }
            }
        };
        let _ = RECENT.try_with(|r| {
            let mut r = r.borrow_mut();
            r.rotate_right(1);
            r[0] = Some(name.clone());
        });
        name
    }
}

impl Default for Name {
    /// The empty name (no buffer, no lookup).
    fn default() -> Self {
        Name(None)
    }
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl From<&str> for Name {
    fn from(text: &str) -> Self {
        Name::shared(text)
    }
}

impl From<&String> for Name {
    fn from(text: &String) -> Self {
        Name::shared(text)
    }
}

impl From<String> for Name {
    fn from(text: String) -> Self {
        Name::shared(&text)
    }
}

impl From<&Name> for Name {
    fn from(name: &Name) -> Self {
        name.clone()
    }
}

impl From<Name> for String {
    fn from(name: Name) -> Self {
        name.as_str().to_string()
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Name> for String {
    fn eq(&self, other: &Name) -> bool {
        *self == other.as_str()
    }
}

impl Serialize for Name {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(NameVisitor { unique: false })
    }
}

/// A [`Name::unique`] as a wire type: the ids of calls and results, which are read without
/// a look-up.
pub(crate) struct UniqueName(pub(crate) Name);

impl<'de> Deserialize<'de> for UniqueName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(NameVisitor { unique: true })
            .map(UniqueName)
    }
}

struct NameVisitor {
    unique: bool,
}

impl serde::de::Visitor<'_> for NameVisitor {
    type Value = Name;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    // Borrowed or not, the text is only looked up or copied once: no `String` in between.
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Name, E> {
        Ok(match self.unique {
            true => Name::unique(v),
            false => Name::shared(v),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_equal_by_text_and_hash_as_their_text() {
        use std::hash::BuildHasher;
        let hasher = std::collections::hash_map::RandomState::new();
        let (a, b) = (Name::unique("call_12"), Name::unique("call_12"));
        assert!(!a.shares_text_with(&b));
        assert_eq!(a, b);
        assert_eq!(a, a.clone());
        assert_eq!(hasher.hash_one(&a), hasher.hash_one(&b));
        assert_eq!(hasher.hash_one(&a), hasher.hash_one("call_12"));
        // Same length, same last byte, different middle; then other lengths and last bytes.
        for other in ["cell_12", "call_13", "call_1", "call_120", ""] {
            assert_ne!(a, Name::unique(other), "{other}");
        }
        assert_eq!(Name::unique(""), Name::unique(""));
    }

    #[test]
    fn ids_read_from_json_are_their_own_and_names_are_shared() {
        let text =
            r#"{"type":"toolCall","id":"tern-id-test","name":"tern-tool-test","arguments":{}}"#;
        let a: crate::ToolCall = serde_json::from_str(text).unwrap();
        let b: crate::ToolCall = serde_json::from_str(text).unwrap();
        assert_eq!(a.id, b.id);
        assert!(!a.id.shares_text_with(&b.id), "an id is not looked up");
        assert!(a.name.shares_text_with(&b.name), "a tool's name is");
        assert!(!table().lock().contains("tern-id-test"));
        let r: crate::ToolResultMessage = serde_json::from_str(
            r#"{"role":"toolResult","toolCallId":"tern-id-test","toolName":"tern-tool-test","content":[],"isError":false,"timestamp":1}"#,
        )
        .unwrap();
        assert!(!r.tool_call_id.shares_text_with(&a.id));
        assert!(r.tool_name.shares_text_with(&a.name));
        assert!(!table().lock().contains("tern-id-test"));
    }

    #[test]
    fn equal_texts_share_one_buffer_however_they_arrive() {
        let a = Name::from("tern-name-test-api");
        let b: Name = serde_json::from_str(r#""tern-name-test-api""#).unwrap();
        let c = Name::from(String::from("tern-name-test-api"));
        assert!(a.shares_text_with(&b) && a.shares_text_with(&c));
        assert_eq!(
            serde_json::to_string(&b).unwrap(),
            r#""tern-name-test-api""#
        );
        assert!(!a.shares_text_with(&Name::from("tern-name-test-other")));
    }

    #[test]
    fn long_texts_are_kept_but_not_shared() {
        let long = "m".repeat(MAX_SHARED_LEN + 1);
        let a = Name::from(long.as_str());
        let b = Name::from(long.as_str());
        assert_eq!(a, b);
        assert_eq!(a, long);
        assert!(!a.shares_text_with(&b));
    }

    #[test]
    fn the_empty_name_is_one_however_it_is_built() {
        let empties = [
            Name::default(),
            Name::from(""),
            Name::from(String::new()),
            Name::unique(""),
            serde_json::from_str("\"\"").unwrap(),
        ];
        let a = Name::from("a");
        for e in &empties {
            assert_eq!(*e, Name::default());
            assert_eq!(e.as_str(), "");
            assert!(e.shares_text_with(&Name::default()));
            assert_eq!(e.non_empty(), None);
            assert_eq!(serde_json::to_string(e).unwrap(), "\"\"");
            assert!(*e < a, "the empty name orders first");
            assert_ne!(*e, Name::unique("a"));
        }
        assert!(!Name::default().shares_text_with(&Name::from("a")));
        assert_eq!(Name::from("a").non_empty(), Some("a"));
    }

    #[test]
    fn reads_and_compares_as_text() {
        let n = Name::from("bench");
        assert_eq!(n, "bench");
        assert_eq!("bench", n);
        assert_eq!(String::from("bench"), n);
        assert_eq!(n.as_str().len(), 5);
        assert_eq!(format!("{n}/{n:?}"), "bench/\"bench\"");
        assert_eq!(Name::default(), "");
        assert_eq!(String::from(n), "bench");
    }
}
