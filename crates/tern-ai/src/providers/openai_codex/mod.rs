//! ChatGPT's Codex backend (`POST {baseUrl}/codex/responses`, server-sent events), the
//! `openai-codex-responses` API: the Responses input with tools declared in
//! `additional_tools` items and effort in `configuration_update` items, a ChatGPT OAuth token
//! (its account id sent as `chatgpt-account-id`), Codex's event mapping in front of the
//! Responses mapper.
//!
//! tern speaks the SSE transport only; the reference tries a WebSocket first unless
//! `transport` is `sse`.

mod request;
mod stream;

/// The `openai-codex-responses` API.
pub(crate) struct Codex;
