//! A provider that redirects to another origin never gets tern's key there, for every
//! wire API, whether the key came from `--api-key` or the environment; and the key shows
//! in no output and no session file on the way.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::thread;

use common::{command, dirs, run, stderr, stdout};

const KEY: &str = "sk-redirect-test-5f1e2d3c4b5a69788796a5b4";

/// A server that answers every request with `answer` and keeps each request's head.
struct Recorder {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn start(answer: impl Fn() -> String + Send + Sync + 'static) -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("local addr").port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (seen, answer) = (heads.clone(), Arc::new(answer));
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut head = String::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    head.push_str(&line);
                }
                seen.lock().unwrap().push(head);
                let _ = stream.write_all(answer().as_bytes());
            }
        });
        Recorder { port, heads }
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

/// Runs one print-mode request at a server that redirects to another port.
fn redirected(provider: &str, model: &str, key_from_env: Option<&str>) {
    let other = Recorder::start(|| {
        "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string()
    });
    let target = format!("http://127.0.0.1:{}/stolen", other.port);
    let first = Recorder::start(move || {
        format!(
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: {target}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
    });
    let (home, cwd) = dirs();
    let session = home.path().join("s.jsonl");
    let mut c = command(home.path(), cwd.path());
    c.args(["-p", "--provider", provider, "--model", model])
        .args(["--base-url", &format!("http://127.0.0.1:{}/v1", first.port)])
        .args(["--max-retries", "0", "--session"])
        .arg(&session);
    match key_from_env {
        Some(var) => {
            c.env(var, KEY);
        }
        None => {
            c.args(["--api-key", KEY]);
        }
    }
    c.arg("hello");
    let o = run(c);
    let what = format!("{provider}/{model} (key from {key_from_env:?})");
    assert_eq!(o.status.code(), Some(1), "{what}: {}", stderr(&o));
    assert!(
        stderr(&o).contains("redirected to another origin"),
        "{what}: {}",
        stderr(&o)
    );
    // The key went to the server it was meant for, and nowhere else.
    let sent = first.heads();
    assert_eq!(sent.len(), 1, "{what}: {sent:?}");
    assert!(
        sent[0].contains(KEY),
        "{what}: no key was sent at all: {}",
        sent[0]
    );
    assert!(other.heads().is_empty(), "{what}: {:?}", other.heads());
    let file = std::fs::read_to_string(&session).unwrap_or_default();
    for (place, text) in [
        ("stdout", stdout(&o)),
        ("stderr", stderr(&o)),
        ("session", file),
    ] {
        assert!(!text.contains(KEY), "{what}: the key is in {place}: {text}");
    }
}

#[test]
fn no_key_follows_a_redirect_to_another_origin() {
    for (provider, model, env) in [
        ("local", "local", None),
        ("openai", "gpt-4.1-mini", Some("OPENAI_API_KEY")),
        ("openai", "gpt-4.1-mini", None),
        ("anthropic", "claude-sonnet-4-5", Some("ANTHROPIC_API_KEY")),
        ("anthropic", "claude-sonnet-4-5", None),
        ("google", "gemini-2.5-flash", Some("GEMINI_API_KEY")),
        ("google", "gemini-2.5-flash", None),
    ] {
        redirected(provider, model, env);
    }
}
