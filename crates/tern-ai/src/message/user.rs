//! The user message.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::extra::{eq_as_json, extra_accessors, flat_map, Absent, MessageExtra};
use super::{Content, JsonObject, Timestamp};

/// A user message.
#[derive(Clone, Debug, Default)]
pub struct UserMessage {
    /// A string, or text and image blocks.
    pub content: Content,
    /// Creation time.
    pub timestamp: Timestamp,
    /// Fields tern has no type for and absent typed fields (`None`: neither).
    pub extra: Option<Box<MessageExtra>>,
}

extra_accessors!(
    UserMessage,
    MessageExtra,
    "Fields tern has no type for and absent typed fields (empty when there are none)."
);

eq_as_json!(UserMessage { content, timestamp });

impl Serialize for UserMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let extra = self.extra();
        let mut m = flat_map(s, extra.absent)?;
        m.field("content", &self.content)?;
        m.tracked("timestamp", Absent::TIMESTAMP, &self.timestamp)?;
        m.end(&extra.fields)
    }
}

#[derive(Deserialize)]
#[serde(rename = "UserMessage")]
struct UserWire {
    content: Content,
    #[serde(default)]
    timestamp: Option<Timestamp>,
    #[serde(flatten)]
    fields: JsonObject,
}

impl<'de> Deserialize<'de> for UserMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = UserWire::deserialize(d)?;
        let mut absent = Absent::default();
        let timestamp = absent.read(Absent::TIMESTAMP, w.timestamp);
        Ok(UserMessage {
            content: w.content,
            timestamp,
            extra: MessageExtra::keep(w.fields, absent),
        })
    }
}
