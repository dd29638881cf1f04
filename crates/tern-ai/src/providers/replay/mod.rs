//! Replay of recorded HTTP exchanges (the `testing` feature): a local HTTP server that
//! answers with a case's response chunk by chunk and captures the requests ([`server`]),
//! a sink that records events at emission time ([`recording`]), and the runner that drives
//! a provider against the server and renders the oracle's output document ([`case`],
//! `shared/providers/FORMAT.md`).

pub mod case;
pub mod recording;
pub mod server;

pub use case::{case_inputs, describe_request, headers_of_api, run_case, HEADERS_THAT_MATTER};
pub use recording::RecordingSink;
pub use server::{
    base64_decode, chunk_bytes, responses_of, start_server, CapturedRequest, ReplayServer,
};
