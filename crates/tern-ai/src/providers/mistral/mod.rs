//! Mistral's native chat completions (`POST {baseUrl}/v1/chat/completions`, `stream: true`),
//! the `mistral-conversations` API.
//!
//! [`request`] builds the request (tool-call ids of nine letters and digits, thinking as
//! `thinking` chunks, `reasoning_effort` or `prompt_mode`), [`stream`] maps the chunks: text and
//! thinking blocks in arrival order, tool calls by index, usage with cached prompt tokens.

mod request;
mod stream;

/// The `mistral-conversations` API (its halves: `request.rs` and `stream.rs`).
pub(crate) struct Mistral;
