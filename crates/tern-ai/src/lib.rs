//! # tern-ai
//!
//! The LLM vocabulary of tern: [messages](Message) with the Pi reference's JSON, the
//! [assistant-message event protocol](AssistantMessageEvent) and its
//! [stream](AssistantMessageEventStream), [transcript helpers](transcript) (system prompt
//! and tool-set replay), [tool-argument validation](schema), [models](Model), the
//! [stream-function contract](StreamFn) and a scripted [faux model](faux) for tests.
//!
//! ```
//! use tern_ai::faux::{FauxModel, FauxResponse};
//! use tern_ai::{Context, Message, Model, StreamFn, StreamOptions};
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let model = FauxModel::new(vec![FauxResponse::text("Hello!")]);
//! let stream = model
//!     .stream(&Model::default(), Context::new(vec![Message::user_text("hi")]), &StreamOptions::default())
//!     .unwrap();
//! assert_eq!(stream.result().await.text(), "Hello!");
//! # });
//! ```

#![warn(missing_docs)]

pub mod clock;
pub mod cow;
pub mod environment;
pub mod event;
pub mod faux;
pub mod json_parse;
pub mod message;
pub mod model;
pub mod providers;
pub mod schema;
pub mod sse;
pub mod stream;
pub mod stream_fn;
pub mod transcript;

pub use event::{AssistantMessageEvent, Delta, PartialMessage};
pub use message::{
    content_text, Absent, AssistantExtra, AssistantMessage, Content, ContentBlock, Cost,
    CustomMessage, ImageContent, JsonObject, Message, MessageExtra, Name, StopReason,
    SystemMessage, TextContent, ThinkingContent, ThinkingLevel, Timestamp, ToolCall, ToolCallExtra,
    ToolDeclaration, ToolReference, ToolResultMessage, Usage, UsageBox, UserMessage,
};
pub use model::{Model, ModelCost};
pub use stream::{
    assistant_stream, event_stream, AssistantMessageEventSender, AssistantMessageEventStream,
    EventSender, EventStream, StreamEvent,
};
pub use stream_fn::{
    AzureOptions, AzureTokenProvider, BedrockOptions, BoxError, Context, StreamFn, StreamOptions,
    StreamStart, ThinkingBudgets, ThinkingDisplay, Transport,
};
