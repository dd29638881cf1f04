//! The user message.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::extra::{same_extra, Absent, MessageExtra};
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

impl UserMessage {
    /// Fields tern has no type for and absent typed fields (empty when there are none).
    pub fn extra(&self) -> &MessageExtra {
        self.extra.as_deref().unwrap_or(MessageExtra::none())
    }

    /// The same, for changing them (allocated on first use).
    pub fn extra_mut(&mut self) -> &mut MessageExtra {
        self.extra.get_or_insert_with(Default::default)
    }
}

impl PartialEq for UserMessage {
    fn eq(&self, other: &Self) -> bool {
        self.content == other.content
            && self.timestamp == other.timestamp
            && same_extra(self.extra.as_deref(), other.extra.as_deref())
    }
}

#[derive(Serialize)]
struct UserView<'a> {
    content: &'a Content,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<&'a Timestamp>,
    #[serde(flatten)]
    fields: &'a JsonObject,
}

impl Serialize for UserMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let extra = self.extra();
        UserView {
            content: &self.content,
            timestamp: extra.absent.write(Absent::TIMESTAMP, &self.timestamp),
            fields: &extra.fields,
        }
        .serialize(s)
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
            extra: MessageExtra {
                fields: w.fields,
                absent,
            }
            .into_option(),
        })
    }
}
