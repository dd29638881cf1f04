//! Anthropic Messages (`POST {baseUrl}/v1/messages?beta=true`, `stream: true`): the request
//! in [`request`], the stream mapper in [`stream`].

mod request;
mod stream;

/// The `anthropic-messages` API (its halves: `request.rs` and `stream.rs`).
pub(crate) struct Anthropic;
