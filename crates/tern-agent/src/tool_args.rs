//! [`ToolArgs`]: a call's validated arguments, shared with the call when validation changed
//! nothing.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Serialize, Serializer};
use serde_json::Value;
use tern_ai::ToolCall;

/// The validated arguments a tool receives in [`ToolCallInput`](crate::ToolCallInput).
///
/// Arguments that validation left as they were (the usual case) are the call's own, shared
/// with the assistant message it came from rather than copied; coerced or replaced
/// arguments are a value of their own. Either way a tool reads them as a [`Value`] through
/// `Deref`, parses them with [`parse`](Self::parse), or takes them with
/// [`into_value`](Self::into_value) (a copy only when they are shared).
///
/// ```
/// use serde_json::json;
/// use tern_agent::ToolArgs;
///
/// let args = ToolArgs::from(json!({ "path": "a.txt", "limit": 5 }));
/// assert_eq!(args["path"], "a.txt");
/// #[derive(serde::Deserialize)]
/// struct Read { path: String, limit: u32 }
/// let read: Read = args.parse().unwrap();
/// assert_eq!((read.path.as_str(), read.limit), ("a.txt", 5));
/// assert_eq!(args.into_value(), json!({ "path": "a.txt", "limit": 5 }));
/// ```
#[derive(Clone)]
pub struct ToolArgs(Repr);

#[derive(Clone)]
enum Repr {
    /// The call's `arguments`, unchanged.
    Call(Arc<ToolCall>),
    /// Boxed: coerced or replaced arguments are rare, and a `Value` beside the handle would
    /// make every copy of the arguments (each step of a call's future keeps one) 72 bytes
    /// instead of 16.
    Owned(Box<Value>),
}

impl ToolArgs {
    /// The arguments of `call`, shared with it.
    pub fn of_call(call: Arc<ToolCall>) -> Self {
        ToolArgs(Repr::Call(call))
    }

    /// The arguments as a value of their own (copied when they are shared with the call).
    pub fn into_value(self) -> Value {
        match self.0 {
            Repr::Call(call) => match Arc::try_unwrap(call) {
                Ok(call) => call.arguments,
                Err(call) => call.arguments.clone(),
            },
            Repr::Owned(v) => *v,
        }
    }

    /// The arguments as `T`, read in place.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(&**self)
    }
}

impl Deref for ToolArgs {
    type Target = Value;

    fn deref(&self) -> &Value {
        match &self.0 {
            Repr::Call(call) => &call.arguments,
            Repr::Owned(v) => v,
        }
    }
}

impl AsRef<Value> for ToolArgs {
    fn as_ref(&self) -> &Value {
        self
    }
}

impl Default for ToolArgs {
    /// `null`, as `Value::default()`.
    fn default() -> Self {
        ToolArgs(Repr::Owned(Box::new(Value::Null)))
    }
}

impl From<Value> for ToolArgs {
    fn from(v: Value) -> Self {
        ToolArgs(Repr::Owned(Box::new(v)))
    }
}

impl From<ToolArgs> for Value {
    fn from(args: ToolArgs) -> Self {
        args.into_value()
    }
}

/// Equal when the values are, shared or not.
impl PartialEq for ToolArgs {
    fn eq(&self, other: &ToolArgs) -> bool {
        **self == **other
    }
}

impl PartialEq<Value> for ToolArgs {
    fn eq(&self, other: &Value) -> bool {
        **self == *other
    }
}

impl fmt::Debug for ToolArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// The arguments' JSON text, as `Value` writes it.
impl fmt::Display for ToolArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl Serialize for ToolArgs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shared_arguments_read_and_copy_out_as_the_calls() {
        let call = Arc::new(ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: json!({ "path": "a" }),
            ..ToolCall::default()
        });
        let args = ToolArgs::of_call(call.clone());
        assert_eq!(args, json!({ "path": "a" }));
        assert_eq!(args, ToolArgs::from(json!({ "path": "a" })));
        assert_eq!(format!("{args:?}"), format!("{:?}", json!({ "path": "a" })));
        assert_eq!(serde_json::to_string(&args).unwrap(), r#"{"path":"a"}"#);
        // Taking them leaves the call as it was.
        let mut taken = args.into_value();
        taken["path"] = json!("b");
        assert_eq!(call.arguments, json!({ "path": "a" }));
        assert_eq!(ToolArgs::default(), Value::Null);
    }

    #[test]
    fn arguments_are_two_words() {
        // Every step of a call's future keeps a copy; a parallel batch keeps a future per call.
        assert_eq!(
            std::mem::size_of::<ToolArgs>(),
            2 * std::mem::size_of::<usize>()
        );
    }
}
