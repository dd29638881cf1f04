//! Typed reads of provider chunks that accept exactly the documents
//! `serde_json::from_str::<Value>` accepts, so a provider can read the fields it needs
//! straight from the text and keep `Value` only as the fallback for unusual chunks.
//!
//! Derived `Deserialize` impls would not do: they skip unknown fields with `IgnoredAny`,
//! which checks neither the nesting limit nor the range of numbers, and they read a JSON
//! array as a struct (fields by position). Here every value goes through the same
//! `serde_json` calls as for a `Value`: unknown fields are read (and dropped) by [`Any`],
//! objects must be objects, and a repeated key overwrites the earlier value as in `Value`.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON string, borrowed from the input unless it has escapes.
pub(crate) struct Str<'a>(pub Cow<'a, str>);

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// Reads an optional string field (`null` is `None`).
pub(crate) fn str_field<'de, A: MapAccess<'de>>(
    map: &mut A,
) -> Result<Option<Cow<'de, str>>, A::Error> {
    Ok(map.next_value::<Option<Str<'de>>>()?.map(|s| s.0))
}

/// Any JSON value, checked as `Value` would check it, then dropped.
pub(crate) struct Any;

impl<'de> Deserialize<'de> for Any {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Any)
    }
}

impl<'de> Visitor<'de> for Any {
    type Value = Any;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Any, E> {
        Ok(Any)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Any, E> {
        Ok(Any)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Any, E> {
        Ok(Any)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Any, E> {
        Ok(Any)
    }
    fn visit_str<E>(self, _: &str) -> Result<Any, E> {
        Ok(Any)
    }
    fn visit_unit<E>(self) -> Result<Any, E> {
        Ok(Any)
    }
    fn visit_none<E>(self) -> Result<Any, E> {
        Ok(Any)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Any, D::Error> {
        Any::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Any, A::Error> {
        while seq.next_element::<Any>()?.is_some() {}
        Ok(Any)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Any, A::Error> {
        while map.next_key::<Any>()?.is_some() {
            map.next_value::<Any>()?;
        }
        Ok(Any)
    }
}

/// A struct read from a JSON object by [`Object`].
pub(crate) trait Fields<'de>: Default {
    /// Reads the value of `key` into the struct when it is one of its fields (a repeated key
    /// overwrites); returns `false`, leaving the value unread, for any other key.
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error>;
}

/// `impl DeserializeSeed for $seed`: the seed is its own visitor, asked for with `$method`.
macro_rules! seed_visits_itself {
    ($seed:ident, $method:ident) => {
        impl<'de, T: Fields<'de>> DeserializeSeed<'de> for $seed<'_, T> {
            type Value = ();
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
                d.$method(self)
            }
        }
    };
}

/// Reads a JSON object into the fields of a `T` in place (nested structs are filled where
/// they lie rather than built and moved); anything but an object is an error.
pub(crate) struct Object<'t, T>(pub &'t mut T);

seed_visits_itself!(Object, deserialize_map);

impl<'de, T: Fields<'de>> Visitor<'de> for Object<'_, T> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Str<'de>>()? {
            if !self.0.field(&key.0, &mut map)? {
                map.next_value::<Any>()?;
            }
        }
        Ok(())
    }
}

/// Reads a `T` from a JSON object (for `Deserialize` impls).
pub(crate) fn object<'de, D: Deserializer<'de>, T: Fields<'de>>(d: D) -> Result<T, D::Error> {
    let mut t = T::default();
    Object(&mut t).deserialize(d)?;
    Ok(t)
}

/// Reads a whole JSON text into `target`, as `serde_json::from_str` would.
pub(crate) fn from_str<'de, T: Fields<'de>>(
    text: &'de str,
    target: &mut T,
) -> serde_json::Result<()> {
    let mut de = serde_json::Deserializer::from_str(text);
    Object(target).deserialize(&mut de)?;
    de.end()
}

/// What [`Nullable`] reads when the value is not `null`.
#[derive(Clone, Copy)]
enum Shape {
    /// An object.
    Object,
    /// An array of objects, of which the first is kept.
    FirstOf,
}

/// Reads `null` (as `None`) or a value of a [`Shape`] into an `Option`, in place.
pub(crate) struct Nullable<'t, T> {
    target: &'t mut Option<T>,
    shape: Shape,
}

/// Reads `null` (as `None`) or an object, in place.
pub(crate) fn optional<T>(target: &mut Option<T>) -> Nullable<'_, T> {
    Nullable {
        target,
        shape: Shape::Object,
    }
}

/// Reads `null` or an array of objects, keeping the first object in place (`None` for
/// `null` or `[]`); the other elements are checked and dropped.
pub(crate) fn first_of<T>(target: &mut Option<T>) -> Nullable<'_, T> {
    Nullable {
        target,
        shape: Shape::FirstOf,
    }
}

seed_visits_itself!(Nullable, deserialize_option);

impl<'de, T: Fields<'de>> Visitor<'de> for Nullable<'_, T> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.shape {
            Shape::Object => "an object or null",
            Shape::FirstOf => "an array or null",
        })
    }
    fn visit_none<E>(self) -> Result<(), E> {
        *self.target = None;
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        match self.shape {
            Shape::Object => Object(self.target.insert(T::default())).deserialize(d),
            // Back in `visit_seq` below.
            Shape::FirstOf => d.deserialize_seq(self),
        }
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if seq
            .next_element_seed(Object(self.target.insert(T::default())))?
            .is_none()
        {
            *self.target = None;
            return Ok(());
        }
        while seq.next_element::<Any>()?.is_some() {}
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[derive(Default, Debug, PartialEq)]
    struct T<'a> {
        a: Option<Cow<'a, str>>,
        /// `b[0].a`
        first: Option<Box<T<'a>>>,
    }

    impl<'de> Fields<'de> for T<'de> {
        fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
            match key {
                "a" => self.a = str_field(map)?,
                "b" => {
                    let mut first = None;
                    map.next_value_seed(first_of(&mut first))?;
                    self.first = first.map(Box::new);
                }
                _ => return Ok(false),
            }
            Ok(true)
        }
    }

    fn parse(text: &str) -> serde_json::Result<T<'_>> {
        let mut t = T::default();
        from_str(text, &mut t).map(|()| t)
    }

    fn get_a(v: &Value) -> Option<&str> {
        v.get("a").and_then(Value::as_str)
    }

    #[test]
    fn accepts_exactly_what_value_accepts() {
        let deep = format!("{{\"x\":{}1{}}}", "[".repeat(200), "]".repeat(200));
        let cases = [
            r#"{"a":"x","b":[{"a":"y","b":null},"y",{}]}"#,
            r#"{"b":[{"a":"y","b":[]}],"b":[{"x":1}]}"#,
            r#"{"a":"x\ty","a":null}"#,
            r#"{"\u0061":"\u00e9"}"#,
            r#"{"z":1e400}"#,
            r#"{"z":-1.5e-3,"y":18446744073709551616}"#,
            r#"{"z":"\ud800"}"#,
            r#"{"z":"\ud83d\ude00"}"#,
            r#"{"z":[1,]}"#,
            r#"{"z":{"k":1,}}"#,
            r#"{"z":nul}"#,
            r#" {"b":[]} "#,
            r#"{"a":"x"} x"#,
            &deep,
        ];
        for c in cases {
            let typed = parse(c);
            let value = serde_json::from_str::<Value>(c);
            assert_eq!(typed.is_ok(), value.is_ok(), "{c}: {typed:?} / {value:?}");
            if let (Ok(t), Ok(v)) = (typed, value) {
                assert_eq!(t.a.as_deref(), get_a(&v), "{c}");
                let first = v.get("b").and_then(|b| b.get(0));
                assert_eq!(t.first.is_some(), first.is_some(), "{c}");
                assert_eq!(
                    t.first.and_then(|f| f.a),
                    first.and_then(get_a).map(Cow::Borrowed)
                );
            }
        }
        // Valid JSON of another shape is rejected: the caller falls back to `Value`.
        for c in [
            r#"["x",[1]]"#,
            r#"{"a":5}"#,
            r#"{"b":{}}"#,
            r#"{"b":[1]}"#,
            r#"{"b":[["a"]]}"#,
        ] {
            assert!(serde_json::from_str::<Value>(c).is_ok());
            assert!(parse(c).is_err(), "{c}");
        }
        // Borrowed unless escaped.
        let t = parse(r#"{"a":"plain"}"#).unwrap();
        assert!(matches!(t.a, Some(Cow::Borrowed("plain"))));
    }
}
