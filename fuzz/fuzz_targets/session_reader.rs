//! The session reader and writer on any file: loading never panics, and resuming then
//! appending keeps every complete entry: the reloaded branch is the old one plus the new
//! message, whatever damage the file held (torn tails, bad UTF-8, cycles, duplicate ids).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use tern_ai::Message;
use tern_session::{load, SessionFile};

fuzz_target!(|data: &[u8]| {
    // One folder per fuzzing process, reused by every input.
    let dir = std::env::temp_dir().join(format!("tern-fuzz-session-{}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let path = dir.join("s.jsonl");
    // A header first, so most inputs reach the entries; a leading `!` means the input
    // brings its own.
    let mut bytes = Vec::new();
    match data.split_first() {
        Some((b'!', rest)) => bytes.extend_from_slice(rest),
        _ => {
            bytes.extend_from_slice(b"{\"type\":\"session\",\"version\":3,\"id\":\"f\"}\n");
            bytes.extend_from_slice(data);
        }
    }
    if std::fs::write(&path, &bytes).is_err() {
        return;
    }
    let Ok(before) = load(&path) else {
        return;
    };
    let mut s = SessionFile::resume(&path, &before, Path::new("/p"));
    let added = Message::user_text("appended by the fuzzer");
    if s.append_message(&added).is_err() {
        return;
    }
    drop(s);
    let after = load(&path).expect("a file that loaded still loads after an append");
    let n = before.messages.len();
    assert_eq!(after.messages.len(), n + 1, "{:?}\n{:?}", before.warnings, after.warnings);
    assert_eq!(after.messages[..n], before.messages[..], "the old branch changed");
    assert_eq!(after.messages[n].role(), "user");
    assert_eq!(after.messages[n].content_json(), added.content_json());
});
