//! OpenAI Responses (`POST {baseUrl}/responses`, `stream: true`): the request in
//! [`request`], the stream mapper in [`stream`].

pub(super) mod request;
pub(super) mod stream;

/// The `openai-responses` API (its halves: `request.rs` and `stream.rs`).
pub(crate) struct Responses;
