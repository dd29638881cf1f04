//! A reply cut at the output limit (`finish_reason: "length"`), and the context window and
//! output limit of a `--base-url` model.

mod common;

use common::{
    assert_contains, assert_exit, command, dirs, run, run_against, stderr, stdout, Reply, Server,
};

#[test]
fn a_reply_cut_at_the_output_limit_fails_print_mode_with_pis_message() {
    let (home, cwd) = dirs();
    let server = Server::start(vec![Reply::Truncated("The answer begins".into())]);
    let o = run_against(
        home.path(),
        cwd.path(),
        &server,
        &["--tools", "read", "-p", "Explain."],
    );
    assert_exit(&o, 1);
    // pi prints the text it got, then the error.
    assert_eq!(stdout(&o).trim(), "The answer begins");
    assert_contains(
        &stderr(&o),
        "Response was truncated: the model reached its output token limit.",
    );
    // pi's default output limit of a custom model.
    assert_eq!(server.requests()[0]["max_tokens"], 16384);

    // JSON mode reports the stop reason in its events and exits 0, as pi's does.
    let server = Server::start(vec![Reply::Truncated("Cut".into())]);
    let args = ["--tools", "read", "--mode", "json", "x"];
    let o = run_against(home.path(), cwd.path(), &server, &args);
    assert_exit(&o, 0);
    assert_contains(&stdout(&o), r#""stopReason":"length""#);
}

#[test]
fn the_output_limit_and_context_window_come_from_flags_or_the_config() {
    let (home, cwd) = dirs();
    let server = Server::answering(&["a", "b"]);
    let args = [
        "--tools",
        "read",
        "--context-window",
        "64000",
        "--max-output-tokens",
        "500",
        "-p",
        "x",
    ];
    let o = run_against(home.path(), cwd.path(), &server, &args);
    assert_exit(&o, 0);
    assert_eq!(server.requests()[0]["max_tokens"], 500);

    let mut c = command(home.path(), cwd.path());
    // After `command`, which writes an empty config.
    std::fs::write(home.path().join("config.toml"), "max_output_tokens = 700\n").unwrap();
    c.args(["--base-url", &server.url, "--tools", "read", "-p", "x"]);
    let o = run(c);
    assert_exit(&o, 0);
    assert_eq!(server.requests()[1]["max_tokens"], 700);

    let args = [
        "--context-window",
        "1000",
        "--max-output-tokens",
        "2000",
        "-p",
        "x",
    ];
    let o = run_against(home.path(), cwd.path(), &server, &args);
    assert_eq!(o.status.code(), Some(2));
    assert_contains(&stderr(&o), "larger than the context window");
}
