//! Freeform ("custom") tool input as both OpenAI APIs stream it: the input text is shown as
//! the arguments `{<property>: <text>}`, and the deltas are the pieces of that object's JSON
//! text (`{"<property>":"` once, the escaped pieces, `"}` at the close), as pi-ai's
//! grammar-tool helpers produce them. The property is the declared grammar tool's input
//! property (`constrained::grammar_inputs`), else [`FALLBACK_PROPERTY`].

use serde_json::{Map, Value};

use super::constrained::GrammarInputs;

/// The argument key of a custom tool call whose tool is not a declared grammar tool.
pub(crate) const FALLBACK_PROPERTY: &str = "input";

/// The argument key of a custom call of tool `name`.
pub(crate) fn property_of<'a>(inputs: &'a GrammarInputs, name: &str) -> &'a str {
    inputs.get(name).map_or(FALLBACK_PROPERTY, String::as_str)
}

/// The stream state of one custom tool call.
#[derive(Debug, Default)]
pub(crate) struct CustomInput {
    /// The argument key of the input.
    property: String,
    input: String,
    started: bool,
    closed: bool,
    /// JSON text produced before the block could send it (the Responses API's initial input).
    unsent: String,
}

/// A JSON string's text without its quotes (`JSON.stringify(s).slice(1, -1)`).
fn escaped(s: &str) -> String {
    let quoted = serde_json::to_string(s).unwrap_or_default();
    quoted
        .get(1..quoted.len().saturating_sub(1))
        .unwrap_or("")
        .to_string()
}

impl CustomInput {
    /// A custom input under argument `property` that starts with `initial`; its JSON
    /// opening is held until the first delta the caller sends.
    pub(crate) fn new(property: &str, initial: &str) -> Self {
        let mut c = CustomInput {
            property: property.to_string(),
            ..CustomInput::default()
        };
        c.unsent = c.append_raw(initial).unwrap_or(None).unwrap_or_default();
        c
    }

    /// The arguments object the block shows.
    pub(crate) fn arguments(&self) -> Value {
        let mut m = Map::new();
        m.insert(self.property.clone(), Value::String(self.input.clone()));
        Value::Object(m)
    }

    fn start(&mut self) -> String {
        if self.started {
            return String::new();
        }
        self.started = true;
        format!(
            "{{{}:\"",
            serde_json::to_string(&self.property).unwrap_or_default()
        )
    }

    fn append_raw(&mut self, delta: &str) -> Result<Option<String>, String> {
        if self.closed {
            return Err(self.changed_after_close());
        }
        if delta.is_empty() {
            return Ok(None);
        }
        self.input.push_str(delta);
        Ok(Some(self.start() + &escaped(delta)))
    }

    fn close_raw(&mut self, final_input: Option<&str>) -> Result<Option<String>, String> {
        if self.closed {
            return match final_input {
                None => Ok(None),
                Some(f) if f == self.input => Ok(None),
                Some(_) => Err(self.changed_after_close()),
            };
        }
        let rest = match final_input {
            Some(f) => match f.strip_prefix(self.input.as_str()) {
                Some(rest) => rest.to_string(),
                None => {
                    return Err(format!(
                        "grammar tool input for property \"{}\" changed non-monotonically",
                        self.property
                    ))
                }
            },
            None => String::new(),
        };
        if let Some(f) = final_input {
            self.input = f.to_string();
        }
        self.closed = true;
        Ok(Some(format!("{}{}\"}}", self.start(), escaped(&rest))))
    }

    /// The held opening (if any) in front of `piece`: what the block sends now.
    fn send(&mut self, piece: Option<String>) -> Option<String> {
        if self.unsent.is_empty() {
            return piece;
        }
        let sent = std::mem::take(&mut self.unsent) + piece.as_deref().unwrap_or("");
        Some(sent)
    }

    /// Appends a streamed piece of input; returns the JSON text to send, if any.
    pub(crate) fn append(&mut self, delta: &str) -> Result<Option<String>, String> {
        let piece = self.append_raw(delta)?;
        Ok(self.send(piece))
    }

    /// Closes the input, with the provider's complete input when it sent one; returns the
    /// JSON text to send, if any.
    pub(crate) fn close(&mut self, final_input: Option<&str>) -> Result<Option<String>, String> {
        let piece = self.close_raw(final_input)?;
        Ok(self.send(piece))
    }
}

impl CustomInput {
    fn changed_after_close(&self) -> String {
        format!(
            "grammar tool input for property \"{}\" changed after it was closed",
            self.property
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_form_the_arguments_json() {
        let mut c = CustomInput::new("input", "");
        let mut text = String::new();
        for d in ["a\"b", "\n", ""] {
            if let Ok(Some(p)) = c.append(d) {
                text.push_str(&p);
            }
        }
        if let Ok(Some(p)) = c.close(Some("a\"b\nc")) {
            text.push_str(&p);
        }
        assert_eq!(text, r#"{"input":"a\"b\nc"}"#);
        assert_eq!(c.arguments(), serde_json::json!({"input": "a\"b\nc"}));
        assert_eq!(c.close(None), Ok(None));
        assert!(c.close(Some("other")).is_err());
    }

    #[test]
    fn initial_input_is_sent_with_the_first_piece() {
        let mut c = CustomInput::new("input", "ab");
        assert_eq!(c.close(Some("abc")), Ok(Some(r#"{"input":"abc"}"#.into())));
        let mut d = CustomInput::new("input", "");
        assert_eq!(d.close(None), Ok(Some(r#"{"input":""}"#.into())));
        let mut e = CustomInput::new("input", "x");
        assert!(e.close(Some("y")).is_err());
        let mut f = CustomInput::new("query", "a");
        assert_eq!(f.close(None), Ok(Some(r#"{"query":"a"}"#.into())));
        assert_eq!(f.arguments(), serde_json::json!({"query": "a"}));
    }
}
