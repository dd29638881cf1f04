//! The bash sandbox on a real kernel: files, network, and what a kernel without Landlock does.
//!
//! Folders live under cargo's target tmp dir, not /tmp: `workspace-write` may write the temp
//! dirs, so "outside" must be somewhere else.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{run, text};
use serde_json::json;
use tern_tools::sandbox::{default_deny_read, support, SandboxMode, SandboxPolicy};
use tern_tools::{bash_tool, ToolConfig};

struct Place {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Place {
    /// `work/` (the cwd), `outside/` beside it, and `home/` with a `.ssh` key.
    fn new() -> Self {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for d in ["work", "outside", "home/.ssh"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("home/.ssh/id_ed25519"), "PRIVATE KEY\n").unwrap();
        std::fs::write(root.join("home/notes.txt"), "notes\n").unwrap();
        std::fs::write(root.join("outside/readme.txt"), "readable\n").unwrap();
        Place { _dir: dir, root }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn config(&self, mode: SandboxMode, network: bool) -> ToolConfig {
        let policy = SandboxPolicy {
            mode,
            network,
            deny_read: default_deny_read(&self.path("home")),
            write_temp: false,
            ..SandboxPolicy::default()
        };
        ToolConfig::new(self.path("work")).with_sandbox(policy)
    }
}

/// Runs `command`; returns (exit code, output). A refused start is code -1.
async fn sh(config: &ToolConfig, command: &str) -> (i64, String) {
    match run(&bash_tool(config), json!({ "command": command })).await {
        Ok(r) => (
            r.details
                .as_ref()
                .map_or(-2, |d| d["exitCode"].as_i64().unwrap_or(-2)),
            text(&r),
        ),
        Err(e) => (-1, e.to_string()),
    }
}

fn confines() -> bool {
    support().confines()
}

#[tokio::test]
async fn a_kernel_without_landlock_refuses_confined_modes_and_says_what_to_do() {
    let p = Place::new();
    if confines() {
        assert!(support().landlock_abi.is_some_and(|v| v >= 1));
        return;
    }
    let (code, out) = sh(&p.config(SandboxMode::WorkspaceWrite, false), "true").await;
    assert_eq!(code, -1);
    assert!(
        out.contains("no Landlock") && out.contains("--sandbox full-access"),
        "{out}"
    );
    let (code, _) = sh(&p.config(SandboxMode::FullAccess, false), "true").await;
    assert_eq!(code, 0);
}

#[tokio::test]
async fn read_only_reads_but_not_the_deny_list_and_writes_nowhere() {
    if !confines() {
        return;
    }
    let p = Place::new();
    let c = p.config(SandboxMode::ReadOnly, false);
    let (code, out) = sh(
        &c,
        &format!("cat {}", p.path("outside/readme.txt").display()),
    )
    .await;
    assert_eq!((code, out.as_str()), (0, "readable\n"));
    let (code, out) = sh(&c, &format!("cat {}", p.path("home/notes.txt").display())).await;
    assert_eq!((code, out.as_str()), (0, "notes\n"));
    let key = p.path("home/.ssh/id_ed25519");
    let (code, out) = sh(&c, &format!("cat {}", key.display())).await;
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("Permission denied") && !out.contains("PRIVATE"),
        "{out}"
    );
    let (code, out) = sh(&c, "cat ../home/.ssh/id_ed25519; ls ../home/.ssh").await;
    assert_ne!(code, 0);
    assert!(
        !out.contains("PRIVATE") && !out.contains("id_ed25519\n"),
        "{out}"
    );
    let (code, _) = sh(&c, "echo x > here.txt").await;
    assert_ne!(code, 0);
    assert!(!p.path("work/here.txt").exists());
    let (code, _) = sh(&c, "echo x > /dev/null && ls > /dev/null").await;
    assert_eq!(code, 0, "/dev/null stays writable");
}

#[tokio::test]
async fn workspace_write_writes_the_workspace_only() {
    if !confines() {
        return;
    }
    let p = Place::new();
    let c = p.config(SandboxMode::WorkspaceWrite, false);
    let (code, out) = sh(
        &c,
        "mkdir -p sub && echo hi > sub/a.txt && mv sub/a.txt b.txt && cat b.txt",
    )
    .await;
    assert_eq!((code, out.as_str()), (0, "hi\n"));
    for target in ["../outside/x", "../home/x"] {
        let (code, out) = sh(&c, &format!("echo x > {target}")).await;
        assert_ne!(code, 0, "{target}: {out}");
        assert!(out.contains("Permission denied"), "{out}");
    }
    let (code, _) = sh(&c, "cp ../outside/readme.txt . && rm ../outside/readme.txt").await;
    assert_ne!(code, 0);
    assert!(p.path("outside/readme.txt").exists());
    assert!(!p.path("outside/x").exists() && !p.path("home/x").exists());
    let (_, out) = sh(&c, "cat ../home/.ssh/id_ed25519").await;
    assert!(!out.contains("PRIVATE"), "{out}");
}

#[tokio::test]
async fn full_access_reaches_everything() {
    let p = Place::new();
    let c = p.config(SandboxMode::FullAccess, false);
    let (code, out) = sh(&c, "echo x > ../outside/x && cat ../home/.ssh/id_ed25519").await;
    assert_eq!((code, out.as_str()), (0, "PRIVATE KEY\n"));
}

/// Tries a TCP connection to a listener of ours; returns whether the listener saw it.
async fn connects(config: &ToolConfig) -> (bool, String) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let (_, out) = sh(
        config,
        &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo hello >&3 && echo connected"),
    )
    .await;
    let mut seen = false;
    for _ in 0..50 {
        if let Ok((mut s, _)) = listener.accept() {
            s.set_nonblocking(false).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let mut buf = [0u8; 6];
            seen = s.read_exact(&mut buf).is_ok() && &buf == b"hello\n";
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    (seen, out)
}

#[tokio::test]
async fn no_network_unless_allowed() {
    if !confines() {
        return;
    }
    let p = Place::new();
    let (seen, out) = connects(&p.config(SandboxMode::WorkspaceWrite, false)).await;
    assert!(!seen, "{out}");
    assert!(
        !out.contains("connected") && out.contains("not permitted"),
        "{out}"
    );
    let (seen, out) = connects(&p.config(SandboxMode::ReadOnly, false)).await;
    assert!(!seen, "{out}");
    let (seen, out) = connects(&p.config(SandboxMode::WorkspaceWrite, true)).await;
    assert!(seen && out.contains("connected"), "{out}");
    let (seen, out) = connects(&p.config(SandboxMode::FullAccess, false)).await;
    assert!(seen, "{out}");
}

#[test]
fn mode_names_round_trip() {
    for m in [
        SandboxMode::ReadOnly,
        SandboxMode::WorkspaceWrite,
        SandboxMode::FullAccess,
    ] {
        assert_eq!(m.as_str().parse::<SandboxMode>(), Ok(m));
    }
    assert_eq!(SandboxPolicy::default().mode, SandboxMode::WorkspaceWrite);
    let err = "open".parse::<SandboxMode>().unwrap_err();
    assert!(
        err.contains("read-only, workspace-write or full-access"),
        "{err}"
    );
    let home = Path::new("/home/u");
    assert!(default_deny_read(home).contains(&home.join(".ssh")));
}
