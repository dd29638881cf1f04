//! What a message carries beyond its typed fields: the fields tern has no type for, and which
//! typed fields were absent from the JSON it was read from.
//!
//! The reference's messages are plain objects, so a field it does not know (an extension's, a
//! fork's, a newer provider's) survives into requests, events and session files, and a field
//! that was never set stays absent. tern keeps both facts out of line, in a box allocated only
//! when there is something to keep, so the common message stays as small as before.

use std::sync::LazyLock;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::JsonObject;

/// Which typed fields were absent from the JSON a value was read from.
///
/// A typed field that was absent reads as its default; it is written absent again as long as
/// it still holds that default (set another value and it is written as usual).
///
/// ```
/// use tern_ai::message::Absent;
/// let mut a = Absent::default();
/// a.insert(Absent::TIMESTAMP);
/// assert!(a.contains(Absent::TIMESTAMP) && !a.contains(Absent::IS_ERROR));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Absent(u8);

impl Absent {
    /// `timestamp` (every role).
    pub const TIMESTAMP: Absent = Absent(1);
    /// `stopReason` (assistant).
    pub const STOP_REASON: Absent = Absent(1 << 1);
    /// `usage` (assistant).
    pub const USAGE: Absent = Absent(1 << 2);
    /// `isError` (toolResult).
    pub const IS_ERROR: Absent = Absent(1 << 3);

    /// Whether every field of `fields` is marked absent.
    pub fn contains(self, fields: Absent) -> bool {
        self.0 & fields.0 == fields.0
    }

    /// Marks `fields` absent.
    pub fn insert(&mut self, fields: Absent) {
        self.0 |= fields.0;
    }

    /// Marks `fields` present.
    pub fn remove(&mut self, fields: Absent) {
        self.0 &= !fields.0;
    }

    /// Whether no field is marked absent.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Marks `field` absent when `value` is `None`, and gives the value or the default.
    pub(crate) fn read<T: Default>(&mut self, field: Absent, value: Option<T>) -> T {
        value.unwrap_or_else(|| {
            self.insert(field);
            T::default()
        })
    }

    /// The value to write for `field`: `None` (leave the key out) when it was absent and
    /// still holds the default.
    pub(crate) fn write<T: Default + PartialEq>(self, field: Absent, value: &T) -> Option<&T> {
        (!(self.contains(field) && *value == T::default())).then_some(value)
    }
}

/// The out-of-line part of a system, user or tool-result message: fields without a type
/// here, and the typed fields that were absent.
///
/// ```
/// use tern_ai::Message;
/// let text = r#"{"role":"user","content":"hi","pinned":true}"#;
/// let m: Message = serde_json::from_str(text).unwrap();
/// assert_eq!(serde_json::to_string(&m).unwrap(), text); // no `timestamp` added, `pinned` kept
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MessageExtra {
    /// Fields tern has no type for, in the order they were read; written after the typed ones.
    pub fields: JsonObject,
    /// Typed fields that were absent.
    pub absent: Absent,
}

impl MessageExtra {
    /// Boxed for a message's `extra`; `None` when there is nothing to keep.
    pub fn into_option(self) -> Option<Box<Self>> {
        (!self.is_empty()).then(|| Box::new(self))
    }

    /// Whether there are no unknown fields and no absent ones.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty() && self.absent.is_empty()
    }

    /// The extra of a message just read: `fields` and `absent`, boxed; `None` when both are
    /// empty.
    pub(crate) fn keep(fields: JsonObject, absent: Absent) -> Option<Box<Self>> {
        MessageExtra { fields, absent }.into_option()
    }

    /// The empty extra, for reading through a message that has none.
    pub fn none() -> &'static MessageExtra {
        static NONE: LazyLock<MessageExtra> = LazyLock::new(MessageExtra::default);
        &NONE
    }
}

/// The empty object, for reading the unknown fields of a block that has none.
pub(crate) fn no_fields() -> &'static JsonObject {
    static NONE: LazyLock<JsonObject> = LazyLock::new(JsonObject::new);
    &NONE
}

/// Boxes the unknown fields of a block; `None` when there are none.
pub(crate) fn boxed_fields(fields: JsonObject) -> Option<Box<JsonObject>> {
    (!fields.is_empty()).then(|| Box::new(fields))
}

/// Removes the `type` tag from fields read from a standalone block (inside a
/// [`ContentBlock`](super::ContentBlock) the tag is consumed before the block sees it).
pub(crate) fn drop_tag(fields: &mut JsonObject, tag: &str) {
    if fields.get("type").and_then(|t| t.as_str()) == Some(tag) {
        fields.shift_remove("type");
    }
}

/// Equality as JSON sees it: an allocated but empty extra equals none.
pub(crate) fn same_extra<T: PartialEq + Default>(a: Option<&T>, b: Option<&T>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        (Some(x), None) | (None, Some(x)) => *x == T::default(),
        (None, None) => true,
    }
}

/// One flat JSON object being written: the typed fields in the reference's order, then the
/// fields tern has no type for. It writes the same map a derived view struct with a
/// flattened `fields` would, without declaring such a view per type.
pub(crate) struct FlatMap<M> {
    map: M,
    /// The fields the value was read without (see [`FlatMap::tracked`]).
    absent: Absent,
}

/// Starts writing a value as a [`FlatMap`]; `absent`: the typed fields it was read without.
pub(crate) fn flat_map<S: Serializer>(
    s: S,
    absent: Absent,
) -> Result<FlatMap<S::SerializeMap>, S::Error> {
    let map = s.serialize_map(None)?;
    Ok(FlatMap { map, absent })
}

impl<M: SerializeMap> FlatMap<M> {
    /// Writes `key` (always present).
    pub(crate) fn field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), M::Error> {
        self.map.serialize_entry(key, value)
    }

    /// Writes `key` when `value` is `Some` (`skip_serializing_if = "Option::is_none"`).
    pub(crate) fn opt<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: Option<&T>,
    ) -> Result<(), M::Error> {
        match value {
            Some(v) => self.map.serialize_entry(key, v),
            None => Ok(()),
        }
    }

    /// Writes `key` unless `field` was absent and `value` is still the default (see
    /// [`Absent::write`]).
    pub(crate) fn tracked<T: Serialize + Default + PartialEq>(
        &mut self,
        key: &'static str,
        field: Absent,
        value: &T,
    ) -> Result<(), M::Error> {
        self.opt(key, self.absent.write(field, value))
    }

    /// Writes the fields tern has no type for and closes the object.
    pub(crate) fn end(mut self, fields: &JsonObject) -> Result<M::Ok, M::Error> {
        for (k, v) in fields {
            self.map.serialize_entry(k, v)?;
        }
        self.map.end()
    }
}

/// `extra()` and `extra_mut()` for a type whose rarely present fields are boxed out of line
/// in an `extra: Option<Box<$extra>>` field.
macro_rules! extra_accessors {
    ($ty:ty, $extra:ty, $doc:literal) => {
        impl $ty {
            #[doc = $doc]
            pub fn extra(&self) -> &$extra {
                static NONE: std::sync::LazyLock<$extra> =
                    std::sync::LazyLock::new(<$extra>::default);
                self.extra.as_deref().unwrap_or(&NONE)
            }

            /// The same, for changing them (allocated on first use).
            pub fn extra_mut(&mut self) -> &mut $extra {
                self.extra.get_or_insert_with(Default::default)
            }
        }
    };
}
pub(crate) use extra_accessors;

/// `PartialEq` as JSON sees it for a type with an `extra` box: the listed fields, then the
/// extras, an allocated but empty one equal to none. The destructuring fails to compile when
/// a field is added but not listed.
macro_rules! eq_as_json {
    ($ty:ident { $($field:ident),+ $(,)? }) => {
        impl PartialEq for $ty {
            fn eq(&self, other: &Self) -> bool {
                let $ty { $($field,)+ extra } = self;
                $(*$field == other.$field &&)+
                    $crate::message::extra::same_extra(extra.as_deref(), other.extra.as_deref())
            }
        }
    };
}
pub(crate) use eq_as_json;

/// One field of a flat JSON object, by its kind: `req` always written, `id` a required
/// [`Name`](super::Name) read as [`Name::unique`](super::Name::unique), `opt` (an `Option`)
/// written when set, `tracked [FLAG]` written unless it was absent (the [`Absent`] flag) and
/// still holds its default. `@write` writes it to a [`FlatMap`]; `@wire` is its type as read
/// (a tracked field may be missing: `Option`); `@read` turns what was read into the value.
macro_rules! flat_field {
    (@write $m:ident, req [], $key:literal, $value:expr) => {
        $m.field($key, &$value)?
    };
    (@write $m:ident, id [], $key:literal, $value:expr) => {
        $m.field($key, &$value)?
    };
    (@write $m:ident, opt [], $key:literal, $value:expr) => {
        $m.opt($key, $value.as_ref())?
    };
    (@write $m:ident, tracked [$flag:ident], $key:literal, $value:expr) => {
        $m.tracked($key, $crate::message::Absent::$flag, &$value)?
    };
    (@wire req [], $ty:ty) => { $ty };
    (@wire id [], $ty:ty) => { $crate::message::name::UniqueName };
    (@wire opt [], $ty:ty) => { $ty };
    (@wire tracked [$flag:ident], $ty:ty) => { Option<$ty> };
    (@read $absent:ident, req [], $value:expr) => { $value };
    (@read $absent:ident, id [], $value:expr) => { $value.0 };
    (@read $absent:ident, opt [], $value:expr) => { $value };
    (@read $absent:ident, tracked [$flag:ident], $value:expr) => {
        $absent.read($crate::message::Absent::$flag, $value)
    };
}
pub(crate) use flat_field;

/// A system, user or tool-result message's JSON, from its fields in the reference's order
/// (`kind name: Type = "key"`, kinds as in [`flat_field`]); the fields tern has no type for
/// last. Also `extra()`, `extra_mut()` and equality as JSON sees it.
macro_rules! message_serde {
    ($ty:ident { $($kind:ident $([$flag:ident])? $field:ident: $fty:ty = $key:literal),+ $(,)? }) => {
        $crate::message::extra::extra_accessors!(
            $ty,
            MessageExtra,
            "Fields tern has no type for and absent typed fields (empty when there are none)."
        );

        $crate::message::extra::eq_as_json!($ty { $($field),+ });

        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let extra = self.extra();
                let mut m = $crate::message::extra::flat_map(s, extra.absent)?;
                $($crate::message::extra::flat_field!(
                    @write m, $kind [$($flag)?], $key, self.$field
                );)+
                m.end(&extra.fields)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                // The wire form, named as the message for serde's messages (it shadows the
                // message's name here; `Self` is the message). A missing `Option` reads as
                // `None`.
                #[derive(Deserialize)]
                struct $ty {
                    $(
                        #[serde(rename = $key)]
                        $field: $crate::message::extra::flat_field!(@wire $kind [$($flag)?], $fty),
                    )+
                    #[serde(flatten)]
                    fields: JsonObject,
                }
                let w = $ty::deserialize(d)?;
                let mut absent = $crate::message::Absent::default();
                Ok(Self {
                    $($field: $crate::message::extra::flat_field!(
                        @read absent, $kind [$($flag)?], w.$field
                    ),)+
                    extra: MessageExtra::keep(w.fields, absent),
                })
            }
        }
    };
}
pub(crate) use message_serde;
