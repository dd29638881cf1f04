mod common;

use common::{err, ok, text, Sandbox};
use serde_json::{json, Value};
use tern_agent::ToolResult;
use tern_tools::{edit_tool, write_tool};

#[tokio::test]
async fn write_creates_parents_and_replaces_atomically() {
    let sb = Sandbox::new();
    let tool = write_tool(&sb.config);
    let r = ok(
        &tool,
        json!({"path": "deep/er/new.txt", "content": "hello\n"}),
    )
    .await;
    assert_eq!(text(&r), "Successfully wrote 6 bytes to deep/er/new.txt");
    assert_eq!(sb.read("deep/er/new.txt"), "hello\n");

    ok(&tool, json!({"path": "deep/er/new.txt", "content": "bye"})).await;
    assert_eq!(sb.read("deep/er/new.txt"), "bye");
    // No temporary file is left behind.
    let names: Vec<_> = std::fs::read_dir(sb.work().join("deep/er"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["new.txt"]);
}

#[cfg(unix)]
#[tokio::test]
async fn write_keeps_permissions_of_the_replaced_file() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    sb.write("run.sh", "#!/bin/sh\n");
    std::fs::set_permissions(
        sb.work().join("run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    ok(
        &write_tool(&sb.config),
        json!({"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}),
    )
    .await;
    let mode = std::fs::metadata(sb.work().join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
}

#[tokio::test]
async fn write_to_a_directory_fails() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.work().join("d")).unwrap();
    let e = err(
        &write_tool(&sb.config),
        json!({"path": "d", "content": "x"}),
    )
    .await;
    assert!(e.contains("Could not write d"), "{e}");
}

/// A sandbox whose `path` holds `content`, after a successful `edit` with `args`.
async fn edited(path: &str, content: &str, args: Value) -> (Sandbox, ToolResult) {
    let sb = Sandbox::new();
    sb.write(path, content);
    let r = ok(&edit_tool(&sb.config), args).await;
    (sb, r)
}

/// A sandbox whose `path` holds `content`, and the error of an `edit` with `args`.
async fn edit_error(path: &str, content: &str, args: Value) -> (Sandbox, String) {
    let sb = Sandbox::new();
    sb.write(path, content);
    let e = err(&edit_tool(&sb.config), args).await;
    (sb, e)
}

#[tokio::test]
async fn edit_replaces_unique_text_and_returns_a_unified_diff() {
    let (sb, r) = edited(
        "a.rs",
        "fn main() {\n    println!(\"hi\");\n}\n",
        json!({"path": "a.rs", "edits": [{"oldText": "\"hi\"", "newText": "\"hello\""}]}),
    )
    .await;
    assert_eq!(text(&r), "Successfully replaced 1 block(s) in a.rs.");
    assert_eq!(
        sb.read("a.rs"),
        "fn main() {\n    println!(\"hello\");\n}\n"
    );
    let details = r.details.unwrap();
    let diff = details["diff"].as_str().unwrap();
    assert!(
        diff.starts_with("--- a.rs\n+++ a.rs\n@@ -1,3 +1,3 @@"),
        "{diff}"
    );
    assert!(
        diff.contains("-    println!(\"hi\");\n+    println!(\"hello\");"),
        "{diff}"
    );
    assert_eq!(details["firstChangedLine"], 2);
}

#[tokio::test]
async fn edit_with_several_disjoint_edits() {
    let (sb, _) = edited(
        "a.txt",
        "alpha\nbeta\ngamma\n",
        json!({"path": "a.txt", "edits": [
            {"oldText": "gamma", "newText": "GAMMA"},
            {"oldText": "alpha", "newText": "ALPHA"}
        ]}),
    )
    .await;
    assert_eq!(sb.read("a.txt"), "ALPHA\nbeta\nGAMMA\n");
}

#[tokio::test]
async fn edit_accepts_legacy_top_level_old_and_new_text() {
    let (sb, _) = edited(
        "a.txt",
        "one two\n",
        json!({"path": "a.txt", "oldText": "two", "newText": "three"}),
    )
    .await;
    assert_eq!(sb.read("a.txt"), "one three\n");
}

#[tokio::test]
async fn edit_text_that_occurs_several_times_says_how_many() {
    let (sb, e) = edit_error(
        "a.txt",
        "x = 1\nx = 1\nx = 1\n",
        json!({"path": "a.txt", "edits": [{"oldText": "x = 1", "newText": "x = 2"}]}),
    )
    .await;
    assert_eq!(e, "Found 3 occurrences of the text in a.txt. The text must be unique. Please provide more context to make it unique.");
    assert_eq!(sb.read("a.txt"), "x = 1\nx = 1\nx = 1\n");
}

#[tokio::test]
async fn edit_text_not_found() {
    let (_, e) = edit_error(
        "a.txt",
        "hello\n",
        json!({"path": "a.txt", "edits": [{"oldText": "bye", "newText": "x"}]}),
    )
    .await;
    assert!(
        e.starts_with("Could not find the exact text in a.txt."),
        "{e}"
    );
}

#[tokio::test]
async fn edit_overlapping_edits_are_refused() {
    let (_, e) = edit_error(
        "a.txt",
        "abcdef\n",
        json!({"path": "a.txt", "edits": [
            {"oldText": "abcd", "newText": "x"},
            {"oldText": "cdef", "newText": "y"}
        ]}),
    )
    .await;
    assert!(e.contains("overlap"), "{e}");
}

#[tokio::test]
async fn edit_missing_file_and_empty_old_text() {
    let sb = Sandbox::new();
    let e = err(
        &edit_tool(&sb.config),
        json!({"path": "nope.txt", "edits": [{"oldText": "a", "newText": "b"}]}),
    )
    .await;
    assert_eq!(e, "Could not edit file: nope.txt. File not found.");
    let (_, e) = edit_error(
        "a.txt",
        "a\n",
        json!({"path": "a.txt", "edits": [{"oldText": "", "newText": "b"}]}),
    )
    .await;
    assert_eq!(e, "oldText must not be empty in a.txt.");
}

#[tokio::test]
async fn edit_keeps_crlf_line_endings_and_bom() {
    let (sb, _) = edited(
        "win.txt",
        "\u{feff}first\r\nsecond\r\nthird\r\n",
        json!({"path": "win.txt", "edits": [{"oldText": "first\nsecond", "newText": "1st\n2nd"}]}),
    )
    .await;
    assert_eq!(sb.read("win.txt"), "\u{feff}1st\r\n2nd\r\nthird\r\n");
}
