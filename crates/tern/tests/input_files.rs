//! `@file` arguments as pi: a text file inlined in a `<file>` block with its absolute path,
//! an image attached (or left out with a note when the model takes none), and each further
//! message argument its own prompt.

mod common;

use common::{assert_contains, command, dirs, messages, run, stderr, Reply, Server};

#[test]
fn an_image_for_a_text_only_model_is_left_out_with_a_note() {
    let (home, cwd) = dirs();
    std::fs::write(cwd.path().join("pic.png"), b"\x89PNG\r\n\x1a\n0000").unwrap();
    std::fs::write(cwd.path().join("notes.txt"), "NOTE-BODY").unwrap();
    let server = Server::start(vec![Reply::text("ok")]);
    let mut c = command(home.path(), cwd.path());
    c.args([
        "--base-url",
        &server.url,
        "-p",
        "@notes.txt",
        "@pic.png",
        "describe",
    ]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_contains(&stderr(&o), "takes no images; 1 attached image(s) not sent");
    let reqs = server.requests();
    let user = messages(&reqs[0])
        .into_iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap();
    let text = user["content"].to_string();
    let root = cwd.path().canonicalize().unwrap();
    let notes = format!(
        "<file name=\\\"{}\\\">\\nNOTE-BODY\\n</file>\\n",
        root.join("notes.txt").display()
    );
    let pic = format!(
        "<file name=\\\"{}\\\"></file>\\ndescribe",
        root.join("pic.png").display()
    );
    assert!(text.contains(&notes), "{text}");
    assert!(text.contains(&pic), "{text}");
    assert!(!text.contains("image_url"), "{text}");
}

#[test]
fn a_missing_file_is_named() {
    let (home, cwd) = dirs();
    let mut c = command(home.path(), cwd.path());
    c.args(["--base-url", "http://127.0.0.1:9/v1", "-p", "@gone.txt"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_contains(&stderr(&o), "File not found: ");
}
