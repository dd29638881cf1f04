//! Amazon Bedrock's `ConverseStream` (`POST {endpoint}/model/{modelId}/converse-stream`), the
//! `bedrock-converse-stream` API.
//!
//! [`request`] authenticates (bearer token, or [`sigv4`] with the environment's keys or those
//! the AWS credential chain [`credentials`] resolves) and sends the body [`body`] builds,
//! to the endpoint and region [`region`] resolves; the response is the AWS event-stream
//! framing ([`event_stream`]), its events mapped by [`stream`]; [`errors`] words failures as
//! the AWS SDK and pi-ai do.

mod body;
mod credentials;
mod errors;
pub(crate) mod event_stream;
mod region;
mod request;
pub(crate) mod sigv4;
mod stream;

pub(crate) use credentials::parse_time;

/// The `bedrock-converse-stream` API.
pub(crate) struct Bedrock;
