//! Gemini (`POST {baseUrl}/models/{id}:streamGenerateContent?alt=sse`): the request in
//! [`request`], the stream mapper in [`stream`], records split as the Gemini SDK does.

pub(super) mod request;
pub(super) mod stream;

/// The `google-generative-ai` API (its halves: `request.rs` and `stream.rs`).
pub(crate) struct Google;
