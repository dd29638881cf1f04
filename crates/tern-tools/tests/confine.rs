mod common;

use std::os::unix::fs::symlink;

use common::{err, ok, ok_text, text, Sandbox};
use serde_json::{json, Value};
use tern_agent::AgentTool;
use tern_tools::{builtin_tools, edit_tool, find_tool, grep_tool, ls_tool, read_tool, write_tool};

fn assert_refused(e: &str) {
    assert!(
        e.contains("outside the working directory"),
        "not refused as outside: {e}"
    );
}

/// Every (tool, arguments) call is refused as outside the working directory.
async fn assert_all_refused(calls: Vec<(AgentTool, Value)>) {
    for (tool, args) in calls {
        assert_refused(&err(&tool, args).await);
    }
}

#[tokio::test]
async fn dot_dot_is_refused_by_every_path_tool() {
    let sb = Sandbox::new();
    assert_all_refused(vec![
        (read_tool(&sb.config), json!({"path": "../secret.txt"})),
        (
            write_tool(&sb.config),
            json!({"path": "../new.txt", "content": "x"}),
        ),
        (
            edit_tool(&sb.config),
            json!({"path": "../secret.txt", "edits": [{"oldText": "top", "newText": "x"}]}),
        ),
        (ls_tool(&sb.config), json!({"path": ".."})),
        (
            grep_tool(&sb.config),
            json!({"pattern": "secret", "path": ".."}),
        ),
        (
            find_tool(&sb.config),
            json!({"pattern": "*", "path": "../"}),
        ),
    ])
    .await;
    // A path that dips out and comes back in is fine.
    sb.write("a.txt", "in\n");
    let r = ok(&read_tool(&sb.config), json!({"path": "../work/a.txt"})).await;
    assert_eq!(text(&r), "in");
    assert!(!sb.outside().join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(sb.outside().join("secret.txt")).unwrap(),
        "top secret\n"
    );
}

#[tokio::test]
async fn absolute_paths_outside_are_refused_inside_allowed() {
    let sb = Sandbox::new();
    let secret = sb.outside().join("secret.txt");
    assert_all_refused(vec![
        (read_tool(&sb.config), json!({"path": secret})),
        (read_tool(&sb.config), json!({"path": "/etc/passwd"})),
        (
            write_tool(&sb.config),
            json!({"path": "/tmp/tern-escape.txt", "content": "x"}),
        ),
    ])
    .await;
    sb.write("a.txt", "in\n");
    let inside = sb.work().join("a.txt");
    assert_eq!(
        ok_text(&read_tool(&sb.config), json!({"path": inside})).await,
        "in"
    );
}

#[tokio::test]
async fn symlinks_pointing_out_are_refused() {
    let sb = Sandbox::new();
    symlink(sb.outside().join("secret.txt"), sb.work().join("link.txt")).unwrap();
    symlink(sb.outside(), sb.work().join("up")).unwrap();
    assert_all_refused(vec![
        (read_tool(&sb.config), json!({"path": "link.txt"})),
        (
            write_tool(&sb.config),
            json!({"path": "link.txt", "content": "pwned"}),
        ),
        (read_tool(&sb.config), json!({"path": "up/secret.txt"})),
        (
            write_tool(&sb.config),
            json!({"path": "up/new/file.txt", "content": "x"}),
        ),
        (ls_tool(&sb.config), json!({"path": "up"})),
        (
            grep_tool(&sb.config),
            json!({"pattern": "secret", "path": "up"}),
        ),
    ])
    .await;
    assert_eq!(
        std::fs::read_to_string(sb.outside().join("secret.txt")).unwrap(),
        "top secret\n"
    );
    assert!(!sb.outside().join("new").exists());
}

#[tokio::test]
async fn a_dangling_symlink_pointing_out_is_refused_for_write() {
    let sb = Sandbox::new();
    symlink(sb.outside().join("not-yet.txt"), sb.work().join("dangling")).unwrap();
    assert_refused(
        &err(
            &write_tool(&sb.config),
            json!({"path": "dangling", "content": "x"}),
        )
        .await,
    );
    assert!(!sb.outside().join("not-yet.txt").exists());
}

#[tokio::test]
async fn a_walk_does_not_follow_symlinks_out() {
    let sb = Sandbox::new();
    symlink(sb.outside(), sb.work().join("up")).unwrap();
    symlink(sb.outside().join("secret.txt"), sb.work().join("link.txt")).unwrap();
    let t = ok_text(&grep_tool(&sb.config), json!({"pattern": "secret"})).await;
    assert_eq!(t, "No matches found");
    let t = ok_text(&find_tool(&sb.config), json!({"pattern": "secret*"})).await;
    assert_eq!(t, "No files found matching pattern");
}

#[tokio::test]
async fn symlink_loops_are_an_error_not_a_hang() {
    let sb = Sandbox::new();
    symlink("loop-b", sb.work().join("loop-a")).unwrap();
    symlink("loop-a", sb.work().join("loop-b")).unwrap();
    symlink("self", sb.work().join("self")).unwrap();
    for path in ["loop-a", "self", "loop-a/x"] {
        let e = err(&read_tool(&sb.config), json!({"path": path})).await;
        assert!(e.contains("symbolic links"), "{path}: {e}");
        let e = err(
            &write_tool(&sb.config),
            json!({"path": path, "content": "x"}),
        )
        .await;
        assert!(e.contains("symbolic links"), "{path}: {e}");
    }
}

#[tokio::test]
async fn symlinks_inside_are_followed() {
    let sb = Sandbox::new();
    sb.write("real/file.txt", "hello\n");
    symlink("real", sb.work().join("alias")).unwrap();
    symlink("real/file.txt", sb.work().join("file-link")).unwrap();
    assert_eq!(
        ok_text(&read_tool(&sb.config), json!({"path": "alias/file.txt"})).await,
        "hello"
    );
    ok(
        &write_tool(&sb.config),
        json!({"path": "file-link", "content": "bye\n"}),
    )
    .await;
    assert_eq!(sb.read("real/file.txt"), "bye\n");
    assert!(std::fs::symlink_metadata(sb.work().join("file-link"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[tokio::test]
async fn allow_outside_lifts_confinement() {
    let sb = Sandbox::new();
    let config = sb.config.clone().with_allow_outside(true);
    let r = ok(&read_tool(&config), json!({"path": "../secret.txt"})).await;
    assert_eq!(text(&r), "top secret");
    ok(
        &write_tool(&config),
        json!({"path": "../made.txt", "content": "x"}),
    )
    .await;
    assert!(sb.outside().join("made.txt").exists());
}

#[tokio::test]
async fn an_at_prefix_is_a_mention_not_part_of_the_path() {
    let sb = Sandbox::new();
    sb.write("a.txt", "hi\n");
    assert_eq!(
        ok_text(&read_tool(&sb.config), json!({"path": "@a.txt"})).await,
        "hi"
    );
    assert_eq!(builtin_tools(&sb.config).len(), 7);
}
