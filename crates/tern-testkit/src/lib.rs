//! Test support shared by the tern crates' tests and by `tern-bench`: one copy of the pieces
//! their scripted model servers and agent runs had each written again.
//!
//! Not published. Library crates take it only as a dev-dependency (`tern-bench`, itself
//! unpublished, as a dependency), so nothing here reaches a production build.
//!
//! | module | what |
//! | --- | --- |
//! | [`http`] | reading a request from a socket (blocking or tokio), the heads and bodies a test server writes, chunked framing, accept loops on 127.0.0.1 |
//! | [`chat`] | OpenAI Chat Completions streaming: SSE chunks, usage, the error answer, what a request body says |
//! | [`cli`] | the command line of a runner that takes one JSON file |
//! | [`rng`] | a seeded generator (SplitMix64): the same stream for a seed on every machine |
//! | [`agent`] | agent-run helpers: a model pointed at a local server, a scripted model that answers by the request, the tool results of a transcript |

pub mod agent;
pub mod chat;
pub mod cli;
pub mod http;
pub mod rng;

pub use rng::SplitMix64;
