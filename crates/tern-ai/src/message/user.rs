//! The user message.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::extra::{message_serde, MessageExtra};
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

message_serde!(UserMessage {
    req content: Content = "content",
    tracked[TIMESTAMP] timestamp: Timestamp = "timestamp",
});
