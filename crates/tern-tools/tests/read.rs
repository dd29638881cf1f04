mod common;

use common::{err, ok, text, Sandbox};
use serde_json::json;
use tern_ai::ContentBlock;
use tern_tools::read_tool;

#[tokio::test]
async fn reads_a_whole_small_file() {
    let sb = Sandbox::new();
    sb.write("a.txt", "one\ntwo\nthree\n");
    let r = ok(&read_tool(&sb.config), json!({"path": "a.txt"})).await;
    assert_eq!(text(&r), "one\ntwo\nthree");
    assert_eq!(r.is_error, None);
}

#[tokio::test]
async fn offset_and_limit_say_how_to_continue() {
    let sb = Sandbox::new();
    let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    sb.write("a.txt", body);
    let r = ok(
        &read_tool(&sb.config),
        json!({"path": "a.txt", "offset": 3, "limit": 2}),
    )
    .await;
    assert_eq!(
        text(&r),
        "line 3\nline 4\n\n[6 more lines in file. Use offset=5 to continue.]"
    );
    let r = ok(
        &read_tool(&sb.config),
        json!({"path": "a.txt", "offset": 9}),
    )
    .await;
    assert_eq!(text(&r), "line 9\nline 10");
}

#[tokio::test]
async fn long_file_is_truncated_with_a_notice() {
    let sb = Sandbox::new();
    let body: String = (1..=5000).map(|i| format!("{i}\n")).collect();
    sb.write("big.txt", body);
    let r = ok(&read_tool(&sb.config), json!({"path": "big.txt"})).await;
    let t = text(&r);
    assert!(t.starts_with("1\n2\n"));
    assert!(
        t.ends_with("[Showing lines 1-2000 of 5000. Use offset=2001 to continue.]"),
        "{t}"
    );
    assert_eq!(
        r.details.as_ref().unwrap()["truncation"]["truncatedBy"],
        "lines"
    );
}

#[tokio::test]
async fn byte_cap_truncates_too() {
    let sb = Sandbox::new();
    let line = "x".repeat(1000);
    let body: String = (0..200).map(|_| format!("{line}\n")).collect();
    sb.write("wide.txt", body);
    let r = ok(&read_tool(&sb.config), json!({"path": "wide.txt"})).await;
    let t = text(&r);
    assert!(
        t.contains("[Showing lines 1-51 of 200 (50.0KB limit). Use offset=52 to continue.]"),
        "{}",
        &t[t.len() - 120..]
    );
}

#[tokio::test]
async fn a_first_line_over_the_cap_points_to_bash() {
    let sb = Sandbox::new();
    sb.write("one-line.txt", "y".repeat(60 * 1024));
    let r = ok(&read_tool(&sb.config), json!({"path": "one-line.txt"})).await;
    assert!(text(&r).starts_with(
        "[Line 1 is 60.0KB, exceeds 50.0KB limit. Use bash: sed -n '1p' one-line.txt"
    ));
}

#[tokio::test]
async fn offset_beyond_end_is_an_error() {
    let sb = Sandbox::new();
    sb.write("a.txt", "a\nb\n");
    let e = err(
        &read_tool(&sb.config),
        json!({"path": "a.txt", "offset": 10}),
    )
    .await;
    assert_eq!(e, "Offset 10 is beyond end of file (2 lines total)");
}

#[tokio::test]
async fn missing_file_is_an_error() {
    let sb = Sandbox::new();
    let e = err(&read_tool(&sb.config), json!({"path": "nope.txt"})).await;
    assert_eq!(e, "File not found: nope.txt");
}

#[tokio::test]
async fn directory_is_an_error() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.work().join("d")).unwrap();
    let e = err(&read_tool(&sb.config), json!({"path": "d"})).await;
    assert!(e.contains("is a directory"), "{e}");
}

#[tokio::test]
async fn binary_file_is_refused() {
    let sb = Sandbox::new();
    sb.write("blob.bin", [0x7fu8, b'E', b'L', b'F', 0, 0, 1, 2, 3]);
    let e = err(&read_tool(&sb.config), json!({"path": "blob.bin"})).await;
    assert!(e.contains("binary file"), "{e}");
}

#[tokio::test]
async fn image_is_returned_as_image_content() {
    let sb = Sandbox::new();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend_from_slice(&[0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0, 0, 1]);
    sb.write("pic.png", &png);
    let r = ok(&read_tool(&sb.config), json!({"path": "pic.png"})).await;
    assert_eq!(text(&r), "Read image file [image/png]");
    match &r.content()[1] {
        ContentBlock::Image(img) => {
            assert_eq!(img.mime_type, "image/png");
            use base64::Engine;
            let back = base64::engine::general_purpose::STANDARD
                .decode(&img.data)
                .unwrap();
            assert_eq!(back, png);
        }
        other => panic!("expected an image block, got {other:?}"),
    }
}

#[tokio::test]
async fn empty_file_reads_as_empty() {
    let sb = Sandbox::new();
    sb.write("empty.txt", "");
    let r = ok(&read_tool(&sb.config), json!({"path": "empty.txt"})).await;
    assert_eq!(text(&r), "");
}

/// `read` prefers strict sampling (as pi's does), so a model in strict mode sends `null` for
/// each optional argument it leaves out: validation drops those nulls and the call runs as
/// if they were absent.
#[tokio::test]
async fn strict_mode_nulls_for_optional_arguments_are_dropped() {
    let sb = Sandbox::new();
    sb.write("a.txt", "one\ntwo\n");
    let tool = read_tool(&sb.config);
    let declaration = tool.declaration();
    assert_eq!(
        declaration.constrained_sampling,
        Some(json!({"type": "json_schema", "strict": "prefer"}))
    );
    let args = tern_ai::schema::validate_tool_arguments(
        "read",
        &declaration.parameters,
        &json!({"path": "a.txt", "offset": null, "limit": null}),
        None,
    )
    .expect("nulls for optional arguments pass");
    assert_eq!(args, json!({"path": "a.txt"}));
    let r = ok(&tool, args).await;
    assert_eq!(text(&r), "one\ntwo");
}
