//! Amazon Bedrock's `ConverseStream` (`POST {baseUrl}/model/{modelId}/converse-stream`), the
//! `bedrock-converse-stream` API.
//!
//! [`event_stream`] reads the AWS event-stream framing the body comes in, [`sigv4`] signs
//! requests with AWS credentials (a bearer token goes in `Authorization` instead).

#![allow(dead_code)] // wired into the provider table in the next step

mod event_stream;
mod sigv4;
