//! What the credential tests share: a provider case's plain-text exchange, JSON answers of a
//! local endpoint, reading what a request carried, and a scratch folder.

#![allow(dead_code)]

use std::collections::HashMap;

use serde_json::{json, Value};
use tern_ai::providers::replay::CapturedRequest;

/// `tests/providers/streams/<api>/plain-text.json`.
pub fn plain_text_case(api: &str) -> Value {
    let path = format!(
        "{}/tests/providers/streams/{api}/plain-text.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A replay server's answer: `v` as a JSON body with this status.
pub fn json_answer(status: u16, v: Value) -> Value {
    json!({"status": status, "headers": {"content-type": "application/json"}, "chunks": [v.to_string()]})
}

/// [`json_answer`] with status 200.
pub fn json_response(v: Value) -> Value {
    json_answer(200, v)
}

/// The value of a request's header `name`.
pub fn header<'a>(r: &'a CapturedRequest, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The pairs of an `application/x-www-form-urlencoded` body.
pub fn url_form(body: &str) -> HashMap<String, String> {
    reqwest::Url::parse(&format!("http://form.invalid/?{body}"))
        .unwrap()
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// A fresh folder for one test's files, named for the test binary and this process.
pub fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "tern-{}-{}-{name}",
        env!("CARGO_CRATE_NAME"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
