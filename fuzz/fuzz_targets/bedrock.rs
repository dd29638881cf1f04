//! The bedrock-converse-stream response mapper on an arbitrary body (see provider.rs).
#![no_main]

#[path = "provider.rs"]
mod provider;

libfuzzer_sys::fuzz_target!(|data: &[u8]| provider::check("bedrock-converse-stream", "amazon-bedrock", data));
