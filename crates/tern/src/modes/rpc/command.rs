//! RPC commands as pi names them (`docs/rpc-commands.md`): one JSON object per line, its kind
//! in `type`. The fields tern reads are typed here; a field that is missing or of the wrong
//! shape fails the command with the same message tern has always given, so a client sees
//! `{"success": false, "error": ...}` and not a crash.

use serde::de::{Deserializer, Error as _};
use serde::Deserialize;
use serde_json::Value;
use tern_agent::QueueMode;
use tern_ai::{Content, ContentBlock, ImageContent, Message, ThinkingLevel, UserMessage};

/// A command read from stdin.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// Runs a prompt, or queues it while a run is going (`streamingBehavior`).
    Prompt {
        /// The prompt.
        #[serde(flatten)]
        input: UserInput,
        /// What to do with it while the agent runs.
        #[serde(
            default,
            rename = "streamingBehavior",
            deserialize_with = "streaming_behavior"
        )]
        streaming_behavior: Option<StreamingBehavior>,
    },
    /// Queues a steering message.
    Steer(UserInput),
    /// Queues a follow-up message.
    FollowUp(UserInput),
    /// Aborts the running turn; answered once idle.
    Abort,
    /// Empties both queues, answering with what they held.
    ClearQueue,
    /// Starts a new session.
    NewSession,
    /// Finishes the session's interrupted run, streaming its events like a prompt; the
    /// response says whether a run was interrupted.
    Recover,
    /// Compacts the transcript (pi's `compact`), answering with the result.
    Compact {
        /// What the summary should focus on.
        #[serde(default, rename = "customInstructions")]
        custom_instructions: Option<String>,
    },
    /// The agent's state.
    GetState,
    /// The transcript.
    GetMessages,
    /// The text of the last assistant message that has some.
    GetLastAssistantText,
    /// Changes the model.
    SetModel {
        /// Provider id.
        #[serde(default, deserialize_with = "string_or_empty")]
        provider: String,
        /// Model id.
        #[serde(default, rename = "modelId", deserialize_with = "string_or_empty")]
        model_id: String,
    },
    /// Changes the thinking level.
    SetThinkingLevel {
        /// The level.
        level: Level,
    },
    /// How steering messages are delivered.
    SetSteeringMode {
        /// The mode.
        mode: Mode,
    },
    /// How follow-up messages are delivered.
    SetFollowUpMode {
        /// The mode.
        mode: Mode,
    },
    /// Moves to the next available model (`null` data when there is only one).
    CycleModel,
    /// The models whose provider has a key, and the current one.
    GetAvailableModels,
    /// Moves to the next thinking level the model supports (`null` data without reasoning).
    CycleThinkingLevel,
    /// The thinking levels the model supports.
    GetAvailableThinkingLevels,
    /// Turns automatic compaction on or off.
    SetAutoCompaction {
        /// On or off.
        #[serde(deserialize_with = "flag")]
        enabled: bool,
    },
    /// Turns automatic retry of transient provider errors on or off.
    SetAutoRetry {
        /// On or off.
        #[serde(deserialize_with = "flag")]
        enabled: bool,
    },
    /// Cancels a retry that is waiting.
    AbortRetry,
    /// Runs a shell command and keeps its output for the next prompt.
    Bash {
        /// The command line.
        #[serde(deserialize_with = "command_line")]
        command: String,
        /// Keep the output in the session but out of the model's context.
        #[serde(default, rename = "excludeFromContext")]
        exclude_from_context: bool,
    },
    /// Kills the running `bash` command.
    AbortBash,
    /// Token, cost and context-window figures of the session.
    GetSessionStats,
    /// Writes the session as an HTML page.
    ExportHtml {
        /// Where (default: `tern-session-<id>.html` in the working directory).
        #[serde(default, rename = "outputPath")]
        output_path: Option<String>,
    },
    /// Continues another session file.
    SwitchSession {
        /// Its path.
        #[serde(rename = "sessionPath", deserialize_with = "session_path")]
        session_path: String,
    },
    /// A new session holding the branch up to (not including) a user message.
    Fork {
        /// The user message's entry id.
        #[serde(rename = "entryId", deserialize_with = "entry_id")]
        entry_id: String,
    },
    /// A new session holding the active branch.
    Clone,
    /// The user messages of the active branch, to fork from.
    GetForkMessages,
    /// The session's entries in append order, optionally after `since`.
    GetEntries {
        /// An entry id: only entries after it.
        #[serde(default)]
        since: Option<String>,
    },
    /// The session's entries as a tree.
    GetTree,
    /// Names the session.
    SetSessionName {
        /// The display name.
        #[serde(deserialize_with = "session_name")]
        name: String,
    },
    /// The prompt templates and skills a prompt can run as `/name`.
    GetCommands,
    /// A `type` tern does not know (answered with `Unknown command: TYPE`).
    #[serde(other)]
    Unknown,
}

/// What a prompt sent while the agent runs becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamingBehavior {
    /// A steering message.
    Steer,
    /// A follow-up message.
    FollowUp,
}

/// A user message: `message` text and optional `images`.
#[derive(Debug, Deserialize)]
pub struct UserInput {
    message: Text,
    #[serde(default)]
    images: Images,
}

impl UserInput {
    /// The input with its text replaced by `f` of it (a prompt template's expansion).
    pub fn map_text(mut self, f: impl FnOnce(&str) -> String) -> Self {
        self.message.0 = f(&self.message.0);
        self
    }

    /// The message, stamped now.
    pub fn into_message(self) -> Message {
        let mut blocks = vec![ContentBlock::text(self.message.0)];
        blocks.extend(self.images.0.into_iter().map(ContentBlock::Image));
        Message::from(UserMessage {
            content: Content::Blocks(blocks),
            timestamp: tern_ai::clock::now_ms(),
            extra: None,
        })
    }
}

/// The `message` field: a string.
#[derive(Debug)]
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        required(
            d,
            |v| v.as_str().map(|s| Text(s.to_string())),
            || "missing string field `message`".into(),
        )
    }
}

/// The `images` field: pi's `ImageContent` objects (anything but an array is ignored).
#[derive(Debug, Default)]
struct Images(Vec<ImageContent>);

impl<'de> Deserialize<'de> for Images {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Value::Array(items) = Value::deserialize(d)? else {
            return Ok(Images::default());
        };
        items
            .into_iter()
            .map(|i| {
                serde_json::from_value(i).map_err(|e| {
                    D::Error::custom(format!("bad image (want {{type, data, mimeType}}): {e}"))
                })
            })
            .collect::<Result<_, _>>()
            .map(Images)
    }
}

/// The `level` field: a thinking level name.
#[derive(Debug)]
pub struct Level(pub ThinkingLevel);

impl<'de> Deserialize<'de> for Level {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        required(
            d,
            |v| v.as_str().and_then(ThinkingLevel::parse).map(Level),
            || "level must be off, minimal, low, medium, high, xhigh or max".into(),
        )
    }
}

/// The `mode` field: `all` or `one-at-a-time`.
#[derive(Debug)]
pub struct Mode(pub QueueMode);

impl<'de> Deserialize<'de> for Mode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let parse = |v: &Value| match v.as_str() {
            Some("all") => Some(Mode(QueueMode::All)),
            Some("one-at-a-time") => Some(Mode(QueueMode::OneAtATime)),
            _ => None,
        };
        required(d, parse, || {
            "mode must be \"all\" or \"one-at-a-time\"".into()
        })
    }
}

/// A field read with `parse`; missing, null or unparsable fails with `message`. Going
/// through `Option` is what lets a missing field reach `parse` instead of serde's own
/// "missing field" error.
fn required<'de, D: Deserializer<'de>, T>(
    d: D,
    parse: impl FnOnce(&Value) -> Option<T>,
    message: impl FnOnce() -> String,
) -> Result<T, D::Error> {
    Option::<Value>::deserialize(d)?
        .as_ref()
        .and_then(parse)
        .ok_or_else(|| D::Error::custom(message()))
}

/// A lenient string: anything else reads as empty (then fails as an unknown model).
fn string_or_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Value::deserialize(d)?
        .as_str()
        .unwrap_or_default()
        .to_string())
}

/// A boolean `enabled` field.
fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    required(d, Value::as_bool, || {
        "missing boolean field `enabled`".into()
    })
}

/// A required string field named in the error.
fn string_field<'de, D: Deserializer<'de>>(d: D, name: &str) -> Result<String, D::Error> {
    required(
        d,
        |v| v.as_str().map(str::to_string),
        || format!("missing string field `{name}`"),
    )
}

fn command_line<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    string_field(d, "command")
}

fn session_path<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    string_field(d, "sessionPath")
}

fn entry_id<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    string_field(d, "entryId")
}

fn session_name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    string_field(d, "name")
}

/// `steer` or `followUp`; anything else reads as none.
fn streaming_behavior<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<StreamingBehavior>, D::Error> {
    Ok(match Value::deserialize(d)?.as_str() {
        Some("steer") => Some(StreamingBehavior::Steer),
        Some("followUp") => Some(StreamingBehavior::FollowUp),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<Command, String> {
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    #[test]
    fn commands_read_with_their_fields() {
        let c = parse(
            json!({"id": "1", "type": "prompt", "message": "hi", "streamingBehavior": "followUp"}),
        );
        assert!(matches!(
            c,
            Ok(Command::Prompt {
                streaming_behavior: Some(StreamingBehavior::FollowUp),
                ..
            })
        ));
        let c = parse(json!({"type": "set_follow_up_mode", "mode": "all"}));
        assert!(matches!(
            c,
            Ok(Command::SetFollowUpMode {
                mode: Mode(QueueMode::All)
            })
        ));
        let c = parse(json!({"type": "get_last_assistant_text", "id": 7}));
        assert!(matches!(c, Ok(Command::GetLastAssistantText)));
        let c = parse(json!({"type": "teleport", "where": "moon"}));
        assert!(matches!(c, Ok(Command::Unknown)));
    }

    #[test]
    fn a_bad_field_fails_with_what_to_send() {
        let e = parse(json!({"type": "steer"})).unwrap_err();
        assert_eq!(e, "missing string field `message`");
        let e = parse(json!({"type": "prompt", "message": 3})).unwrap_err();
        assert_eq!(e, "missing string field `message`");
        let e = parse(json!({"type": "set_steering_mode", "mode": "sometimes"})).unwrap_err();
        assert_eq!(e, "mode must be \"all\" or \"one-at-a-time\"");
        let e = parse(json!({"type": "set_thinking_level"})).unwrap_err();
        assert_eq!(
            e,
            "level must be off, minimal, low, medium, high, xhigh or max"
        );
        let e =
            parse(json!({"type": "prompt", "message": "x", "images": [{"type": 1}]})).unwrap_err();
        assert!(
            e.starts_with("bad image (want {type, data, mimeType}): "),
            "{e}"
        );
    }

    #[test]
    fn lenient_fields_stay_lenient() {
        let c = parse(
            json!({"type": "prompt", "message": "x", "images": "none", "streamingBehavior": "later"}),
        );
        let Ok(Command::Prompt {
            input,
            streaming_behavior,
        }) = c
        else {
            panic!("{c:?}")
        };
        assert_eq!(streaming_behavior, None);
        assert_eq!(
            input.into_message().content_json(),
            json!([{"type": "text", "text": "x"}])
        );
        let c = parse(json!({"type": "set_model", "provider": 5}));
        assert!(
            matches!(c, Ok(Command::SetModel { provider, model_id }) if provider.is_empty() && model_id.is_empty())
        );
    }
}
