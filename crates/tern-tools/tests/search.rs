mod common;

use common::{assert_texts, err, ok, ok_text, text, Sandbox};
use serde_json::json;
use tern_tools::{find_tool, grep_tool, ls_tool};

fn project() -> Sandbox {
    let sb = Sandbox::new();
    sb.write(".gitignore", "target/\n*.log\n");
    sb.write(
        "src/main.rs",
        "fn main() {\n    // TODO: greet\n    println!(\"Hello\");\n}\n",
    );
    sb.write("src/lib.rs", "pub fn todo() {}\n// todo lower\n");
    sb.write("src/nested/deep.rs", "// TODO deep\n");
    sb.write("README.md", "# Demo\nTODO: docs\n");
    sb.write("target/out.rs", "// TODO ignored build output\n");
    sb.write("debug.log", "TODO ignored log\n");
    sb.write(".hidden.rs", "// TODO hidden but not ignored\n");
    sb.write("data.bin", b"TODO\0binary");
    sb
}

#[tokio::test]
async fn ls_lists_sorted_with_directory_slashes_and_dotfiles() {
    let sb = project();
    let r = ok(&ls_tool(&sb.config), json!({})).await;
    assert_eq!(
        text(&r),
        ".gitignore\n.hidden.rs\ndata.bin\ndebug.log\nREADME.md\nsrc/\ntarget/"
    );
    let r = ok(&ls_tool(&sb.config), json!({"path": "src"})).await;
    assert_eq!(text(&r), "lib.rs\nmain.rs\nnested/");
}

#[tokio::test]
async fn ls_limit_empty_and_errors() {
    let sb = project();
    let r = ok(&ls_tool(&sb.config), json!({"limit": 2})).await;
    assert_eq!(
        text(&r),
        ".gitignore\n.hidden.rs\n\n[2 entries limit reached. Use limit=4 for more]"
    );
    std::fs::create_dir(sb.work().join("empty")).unwrap();
    assert_eq!(
        ok_text(&ls_tool(&sb.config), json!({"path": "empty"})).await,
        "(empty directory)"
    );
    assert_eq!(
        err(&ls_tool(&sb.config), json!({"path": "nope"})).await,
        "Path not found: nope"
    );
    assert_eq!(
        err(&ls_tool(&sb.config), json!({"path": "README.md"})).await,
        "Not a directory: README.md"
    );
}

#[tokio::test]
async fn grep_finds_lines_with_numbers_and_respects_gitignore() {
    let sb = project();
    let r = ok(&grep_tool(&sb.config), json!({"pattern": "TODO"})).await;
    assert_eq!(
        text(&r),
        ".hidden.rs:1: // TODO hidden but not ignored\nREADME.md:2: TODO: docs\nsrc/main.rs:2:     // TODO: greet\nsrc/nested/deep.rs:1: // TODO deep"
    );
}

#[tokio::test]
async fn grep_options_ignore_case_literal_glob_context() {
    let sb = project();
    let t = ok_text(
        &grep_tool(&sb.config),
        json!({"pattern": "todo", "ignoreCase": true, "glob": "*.rs"}),
    )
    .await;
    assert!(t.contains("src/lib.rs:1: pub fn todo() {}"), "{t}");
    assert!(t.contains("src/lib.rs:2: // todo lower"), "{t}");
    assert!(!t.contains("README"), "{t}");

    assert_texts(
        &grep_tool(&sb.config),
        &[
            (
                json!({"pattern": "src/nested/*.rs", "glob": "src/nested/*.rs"}),
                "No matches found",
            ),
            (
                json!({"pattern": "TODO", "glob": "src/nested/*.rs"}),
                "src/nested/deep.rs:1: // TODO deep",
            ),
            (
                json!({"pattern": "println!(", "literal": true}),
                "src/main.rs:3:     println!(\"Hello\");",
            ),
            (
                json!({"pattern": "Hello", "context": 1, "path": "src"}),
                "main.rs-2-     // TODO: greet\nmain.rs:3:     println!(\"Hello\");\nmain.rs-4- }",
            ),
            (
                json!({"pattern": "Hello", "path": "src/main.rs"}),
                "main.rs:3:     println!(\"Hello\");",
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn grep_match_limit_and_bad_input() {
    let sb = project();
    let t = ok_text(
        &grep_tool(&sb.config),
        json!({"pattern": "TODO", "limit": 2}),
    )
    .await;
    assert_eq!(
        t,
        ".hidden.rs:1: // TODO hidden but not ignored\nREADME.md:2: TODO: docs\n\n[2 matches limit reached. Use limit=4 for more, or refine pattern]"
    );
    let e = err(&grep_tool(&sb.config), json!({"pattern": "("})).await;
    assert!(e.starts_with("Invalid pattern"), "{e}");
    let t = ok_text(&grep_tool(&sb.config), json!({"pattern": "zzz-nothing"})).await;
    assert_eq!(t, "No matches found");
    let e = err(
        &grep_tool(&sb.config),
        json!({"pattern": "x", "path": "nope"}),
    )
    .await;
    assert_eq!(e, "Path not found: nope");
}

#[tokio::test]
async fn grep_long_lines_are_cut() {
    let sb = Sandbox::new();
    sb.write("long.txt", format!("needle {}\n", "z".repeat(900)));
    let t = ok_text(&grep_tool(&sb.config), json!({"pattern": "needle"})).await;
    assert!(t.contains("... [truncated]"), "{t}");
    assert!(t.ends_with("[Some lines truncated to 500 chars. Use read tool to see full lines]"));
}

#[tokio::test]
async fn find_by_name_and_by_path_respecting_gitignore() {
    let sb = project();
    assert_texts(
        &find_tool(&sb.config),
        &[
            (
                json!({"pattern": "*.rs"}),
                ".hidden.rs\nsrc/lib.rs\nsrc/main.rs\nsrc/nested/deep.rs",
            ),
            (json!({"pattern": "src/*.rs"}), "src/lib.rs\nsrc/main.rs"),
            (
                json!({"pattern": "./src/**/*.rs"}),
                "src/lib.rs\nsrc/main.rs\nsrc/nested/deep.rs",
            ),
            (json!({"pattern": "nested"}), "src/nested/"),
            (json!({"pattern": "*.rs", "path": "src/nested"}), "deep.rs"),
            // Smart case: an all-lowercase pattern ignores case.
            (json!({"pattern": "readme*"}), "README.md"),
        ],
    )
    .await;
}

#[tokio::test]
async fn find_limit_and_no_match() {
    let sb = project();
    assert_texts(
        &find_tool(&sb.config),
        &[
            (
                json!({"pattern": "*.rs", "limit": 1}),
                ".hidden.rs\n\n[1 results limit reached. Use limit=2 for more, or refine pattern]",
            ),
            (
                json!({"pattern": "*.zzz"}),
                "No files found matching pattern",
            ),
        ],
    )
    .await;
    let e = err(&find_tool(&sb.config), json!({"pattern": "[", "path": "."})).await;
    assert!(e.starts_with("Invalid glob pattern"), "{e}");
}

#[tokio::test]
async fn cancelled_token_stops_the_read_only_tools() {
    let sb = project();
    for (tool, args) in [
        (ls_tool(&sb.config), json!({})),
        (grep_tool(&sb.config), json!({"pattern": "x"})),
        (find_tool(&sb.config), json!({"pattern": "*"})),
        (
            tern_tools::read_tool(&sb.config),
            json!({"path": "README.md"}),
        ),
        (
            tern_tools::write_tool(&sb.config),
            json!({"path": "w.txt", "content": "x"}),
        ),
        (
            tern_tools::edit_tool(&sb.config),
            json!({"path": "README.md", "edits": [{"oldText": "Demo", "newText": "X"}]}),
        ),
    ] {
        let token = tokio_util::sync::CancellationToken::new();
        token.cancel();
        let out = common::run_with(&tool, args, token).await;
        assert_eq!(
            out.unwrap_err().to_string(),
            "Operation aborted",
            "{}",
            tool.name()
        );
    }
    assert!(!sb.work().join("w.txt").exists());
    assert_eq!(sb.read("README.md"), "# Demo\nTODO: docs\n");
}

#[test]
fn execution_modes() {
    use tern_agent::ToolExecutionMode::{Parallel, Sequential};
    let sb = Sandbox::new();
    let modes: Vec<_> = tern_tools::builtin_tools(&sb.config)
        .iter()
        .map(|t| (t.name().to_string(), t.execution_mode()))
        .collect();
    assert_eq!(
        modes,
        [
            ("read".to_string(), Some(Parallel)),
            ("write".to_string(), Some(Sequential)),
            ("edit".to_string(), Some(Sequential)),
            ("bash".to_string(), Some(Sequential)),
            ("ls".to_string(), Some(Parallel)),
            ("grep".to_string(), Some(Parallel)),
            ("find".to_string(), Some(Parallel)),
        ]
    );
}
