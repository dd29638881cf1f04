//! OpenAI Chat Completions (`POST {baseUrl}/chat/completions`, `stream: true`), which also
//! serves OpenRouter, Groq, DeepSeek, Ollama, llama.cpp, vLLM and LM Studio through
//! `baseUrl` and the compatibility flags detected from the provider and host.
//!
//! [`compat`] detects the host's flags, [`request`] builds the request, [`reasoning`]
//! handles `reasoning_details`, [`chunk`] reads a chunk's fields (the usual ones in one pass by
//! [`chunk_scan`], or by [`chunk_template`] when only a delta's text changed), [`stream`] maps them.

mod chunk;
mod chunk_scan;
mod chunk_template;
mod compat;
mod reasoning;
mod request;
mod stream;
#[cfg(feature = "testing")]
pub(crate) mod testing;

/// The `openai-completions` API (its halves: `request.rs` and `stream.rs`).
pub(crate) struct Completions;
