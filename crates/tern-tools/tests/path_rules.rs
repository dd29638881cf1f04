//! A path rule matches the path a tool really opens, whatever way it was named, and walks
//! skip what a rule denies.

mod common;

use std::os::unix::fs::symlink;

use common::{err, ok, ok_text, text, Sandbox};
use serde_json::json;
use tern_tools::policy::{Action, Decision, Policy, Rule};
use tern_tools::{edit_tool, find_tool, grep_tool, ls_tool, read_tool, write_tool, ToolConfig};

fn secrets_policy(sb: &Sandbox) -> Policy {
    Policy::new(Action::Allow)
        .with_cwd(sb.work())
        .rule(Rule::deny("*").matching_glob("secrets/**").unwrap())
}

fn setup() -> (Sandbox, ToolConfig) {
    let sb = Sandbox::new();
    sb.write("secrets/key", "hunter2\n");
    sb.write("secrets/deep/more", "hunter3\n");
    sb.write("src/main.rs", "fn main() {} // hunter0\n");
    symlink("secrets", sb.work().join("s")).unwrap();
    let config = sb.config.clone().with_path_policy(secrets_policy(&sb));
    (sb, config)
}

#[test]
fn the_hook_denies_a_rule_named_another_way() {
    let (sb, _) = setup();
    let policy = secrets_policy(&sb);
    for path in [
        "secrets/key",
        "s/key",
        "./secrets/../secrets/key",
        "src/../s/deep/more",
        "@s/key",
    ] {
        assert!(
            matches!(
                policy.check("read", &json!({"path": path})),
                Decision::Deny(_)
            ),
            "{path} was not denied"
        );
    }
    let abs = sb.work().join("s/key");
    assert!(matches!(
        policy.check("edit", &json!({"path": abs})),
        Decision::Deny(_)
    ));
    assert_eq!(
        policy.check("read", &json!({"path": "src/main.rs"})),
        Decision::Allow
    );
}

#[tokio::test]
async fn file_tools_refuse_the_resolved_path() {
    let (sb, config) = setup();
    for path in ["s/key", "./secrets/../secrets/key", "secrets/key"] {
        let e = err(&read_tool(&config), json!({"path": path})).await;
        assert!(e.contains("refused by the tool policy"), "{path}: {e}");
    }
    let e = err(
        &edit_tool(&config),
        json!({"path": "s/key", "edits": [{"oldText": "hunter2", "newText": "x"}]}),
    )
    .await;
    assert!(e.contains("refused by the tool policy"), "{e}");
    let e = err(
        &write_tool(&config),
        json!({"path": "s/new", "content": "x"}),
    )
    .await;
    assert!(e.contains("refused by the tool policy"), "{e}");
    assert!(!sb.work().join("secrets/new").exists());
    assert_eq!(sb.read("secrets/key"), "hunter2\n");
}

#[tokio::test]
async fn walks_skip_denied_subtrees() {
    let (_sb, config) = setup();
    let t = ok_text(&grep_tool(&config), json!({"pattern": "hunter"})).await;
    assert_eq!(t, "src/main.rs:1: fn main() {} // hunter0");
    let t = ok_text(
        &grep_tool(&config),
        json!({"pattern": "hunter", "path": "secrets"}),
    )
    .await;
    assert_eq!(t, "No matches found");
    // The symlink is not followed by the walk, and naming it resolves to the folder.
    let t = ok_text(
        &grep_tool(&config),
        json!({"pattern": "hunter", "path": "s"}),
    )
    .await;
    assert_eq!(t, "No matches found");
    let t = ok_text(&find_tool(&config), json!({"pattern": "*"})).await;
    assert!(!t.contains("key") && !t.contains("more"), "{t}");
    assert!(t.contains("src/main.rs"), "{t}");
    let t = ok_text(&ls_tool(&config), json!({"path": "secrets"})).await;
    assert_eq!(t, "(empty directory)");
    let t = ok_text(&ls_tool(&config), json!({"path": "s"})).await;
    assert_eq!(t, "(empty directory)");
    let t = ok_text(&ls_tool(&config), json!({})).await;
    assert_eq!(t, "s/\nsecrets/\nsrc/");
}

#[tokio::test]
async fn an_allowed_root_opens_beneath_its_own_handle() {
    let sb = Sandbox::new();
    let shared = sb.outside().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::write(shared.join("doc.txt"), "shared doc\n").unwrap();
    let config = sb.config.clone().with_allowed_root(&shared);
    let r = ok(&read_tool(&config), json!({"path": "../shared/doc.txt"})).await;
    assert_eq!(text(&r), "shared doc");
    ok(
        &write_tool(&config),
        json!({"path": shared.join("new.txt"), "content": "n\n"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(shared.join("new.txt")).unwrap(),
        "n\n"
    );
    // Still confined elsewhere.
    let e = err(&read_tool(&config), json!({"path": "../secret.txt"})).await;
    assert!(e.contains("outside the working directory"), "{e}");
    // A link inside the allowed root that leads out of it is refused too.
    symlink(sb.outside().join("secret.txt"), shared.join("leak")).unwrap();
    let e = err(&read_tool(&config), json!({"path": "../shared/leak"})).await;
    assert!(e.contains("outside the working directory"), "{e}");
}

#[tokio::test]
async fn edit_refuses_files_over_its_cap_by_name() {
    let sb = Sandbox::new();
    sb.write("big.txt", "x".repeat(2000));
    let config = sb.config.clone().with_max_edit_bytes(1000);
    let e = err(
        &edit_tool(&config),
        json!({"path": "big.txt", "edits": [{"oldText": "x", "newText": "y"}]}),
    )
    .await;
    assert!(e.contains("over the 1000B limit for edit"), "{e}");
    assert!(e.contains("max_edit_bytes"), "{e}");
}
