mod common;

use std::time::{Duration, Instant};

use common::{err, ok, run_with, text, Sandbox};
use serde_json::json;
use tern_tools::bash_tool;
use tokio_util::sync::CancellationToken;

/// Live (non-zombie) processes whose process group is `pgid`, read from /proc.
fn live_group_members(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp ..." — comm may hold spaces, so split after the last ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2
            && fields[2].parse::<i32>() == Ok(pgid)
            && fields[0] != "Z"
            && fields[0] != "X"
        {
            out.push(pid);
        }
    }
    out
}

async fn wait_for_pid_file(path: &std::path::Path) -> i32 {
    for _ in 0..200 {
        if let Ok(s) = std::fs::read_to_string(path) {
            if let Ok(pid) = s.trim().parse() {
                return pid;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the command never wrote its pid");
}

async fn wait_until_dead(pgid: i32) -> Vec<i32> {
    for _ in 0..100 {
        let live = live_group_members(pgid);
        if live.is_empty() {
            return live;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    live_group_members(pgid)
}

#[tokio::test]
async fn runs_a_command_in_the_working_directory() {
    let sb = Sandbox::new();
    sb.write("here.txt", "");
    let r = ok(&bash_tool(&sb.config), json!({"command": "pwd; ls"})).await;
    let t = text(&r);
    assert!(t.ends_with("work\nhere.txt\n"), "{t}");
    assert_eq!(r.is_error, None);
    assert_eq!(r.details.unwrap()["exitCode"], 0);
}

#[tokio::test]
async fn no_output_says_so() {
    let sb = Sandbox::new();
    let r = ok(&bash_tool(&sb.config), json!({"command": "true"})).await;
    assert_eq!(text(&r), "(no output)");
}

#[tokio::test]
async fn non_zero_exit_is_an_error_result_with_output_and_code() {
    let sb = Sandbox::new();
    let r = ok(
        &bash_tool(&sb.config),
        json!({"command": "echo out; echo err >&2; exit 3"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    let t = text(&r);
    assert!(t.contains("out\n") && t.contains("err\n"), "{t}");
    assert!(t.ends_with("\n\nCommand exited with code 3"), "{t}");
    assert_eq!(r.details.unwrap()["exitCode"], 3);
}

#[tokio::test]
async fn command_not_found_exits_127() {
    let sb = Sandbox::new();
    let r = ok(
        &bash_tool(&sb.config),
        json!({"command": "definitely-not-a-command-tern"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    let t = text(&r);
    assert!(
        t.contains("command not found") || t.contains("not found"),
        "{t}"
    );
    assert!(t.ends_with("Command exited with code 127"), "{t}");
}

#[tokio::test]
async fn huge_output_keeps_the_tail_and_says_what_was_cut() {
    let sb = Sandbox::new();
    let r = ok(&bash_tool(&sb.config), json!({"command": "seq 1 100000"})).await;
    let t = text(&r);
    let (body, notice) = t.rsplit_once("\n\n").unwrap();
    assert!(body.ends_with("\n100000"), "{}", &body[body.len() - 50..]);
    assert!(!body.starts_with("1\n"));
    assert!(body.len() <= 50 * 1024);
    assert!(
        notice.starts_with("[Showing lines 98001-100000 of 100000;"),
        "{notice}"
    );
    assert!(notice.contains("of earlier output cut"), "{notice}");
    let details = r.details.unwrap();
    assert_eq!(details["truncation"]["totalLines"], 100000);
    assert_eq!(details["truncation"]["truncated"], true);
}

#[tokio::test]
async fn byte_capped_output_is_configurable() {
    let sb = Sandbox::new();
    let config = sb.config.clone().with_max_output_bytes(100);
    let r = ok(
        &bash_tool(&config),
        json!({"command": "for i in $(seq 1 50); do echo line-$i; done"}),
    )
    .await;
    let t = text(&r);
    assert!(t.contains("line-50\n\n[Showing lines"), "{t}");
    assert!(!t.contains("line-1\n"));
}

#[tokio::test]
async fn timeout_kills_the_whole_group() {
    let sb = Sandbox::new();
    let started = Instant::now();
    let e = err(
        &bash_tool(&sb.config),
        json!({"command": "echo $$ > pid; echo started; sleep 100 & sleep 100", "timeout": 0.5}),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(e.starts_with("started\n"), "{e}");
    assert!(e.ends_with("Command timed out after 0.5 seconds"), "{e}");
    let pgid: i32 = sb.read("pid").trim().parse().unwrap();
    assert_eq!(wait_until_dead(pgid).await, Vec::<i32>::new());
}

#[tokio::test]
async fn default_timeout_comes_from_the_config() {
    let sb = Sandbox::new();
    let config = sb
        .config
        .clone()
        .with_bash_timeout(Some(Duration::from_millis(300)));
    let e = err(&bash_tool(&config), json!({"command": "sleep 100"})).await;
    assert!(e.contains("Command timed out after 0.3 seconds"), "{e}");
}

#[tokio::test]
async fn invalid_timeout_is_refused() {
    let sb = Sandbox::new();
    let e = err(
        &bash_tool(&sb.config),
        json!({"command": "true", "timeout": -1}),
    )
    .await;
    assert!(e.starts_with("Invalid timeout"), "{e}");
}

#[tokio::test]
async fn abort_kills_the_command_and_its_children() {
    let sb = Sandbox::new();
    let tool = bash_tool(&sb.config);
    let token = CancellationToken::new();
    let signal = token.clone();
    let call = tokio::spawn(async move {
        run_with(
            &tool,
            json!({"command": "echo $$ > pid; sleep 100 & sleep 100"}),
            signal,
        )
        .await
    });
    let pgid = wait_for_pid_file(&sb.work().join("pid")).await;
    // Both sleeps and the shell are in the group before the abort.
    let mut before = Vec::new();
    for _ in 0..100 {
        before = live_group_members(pgid);
        if before.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        before.len() >= 2,
        "expected the shell and its sleeps, saw {before:?}"
    );

    token.cancel();
    let out = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the call ends promptly after the abort")
        .unwrap();
    let e = out
        .expect_err("an aborted command fails the call")
        .to_string();
    assert!(e.ends_with("Command aborted"), "{e}");
    assert_eq!(wait_until_dead(pgid).await, Vec::<i32>::new());
    // kill -0 on the group agrees: nothing left to signal except zombies awaiting reaping.
    for pid in before {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(')')
            .map(|(_, r)| r.trim().chars().next())
            .unwrap_or(None);
        assert!(
            matches!(state, None | Some('Z') | Some('X')),
            "pid {pid} still alive: {stat}"
        );
    }
}

#[tokio::test]
async fn dropping_the_call_kills_the_group() {
    let sb = Sandbox::new();
    let tool = bash_tool(&sb.config);
    let call = tokio::spawn(async move {
        run_with(
            &tool,
            json!({"command": "echo $$ > pid; sleep 100 & sleep 100"}),
            CancellationToken::new(),
        )
        .await
    });
    let pgid = wait_for_pid_file(&sb.work().join("pid")).await;
    call.abort();
    let _ = call.await;
    assert_eq!(wait_until_dead(pgid).await, Vec::<i32>::new());
}

#[tokio::test]
async fn a_background_process_holding_the_pipe_does_not_hang_the_call() {
    let sb = Sandbox::new();
    let started = Instant::now();
    let r = ok(
        &bash_tool(&sb.config),
        json!({"command": "echo $$ > pid; sleep 30 & echo done"}),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(text(&r), "done\n");
    // Clean up the deliberate background sleep.
    let pgid: i32 = sb.read("pid").trim().parse().unwrap();
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pgid),
        nix::sys::signal::Signal::SIGKILL,
    );
}

#[tokio::test]
async fn already_cancelled_token_runs_nothing() {
    let sb = Sandbox::new();
    let token = CancellationToken::new();
    token.cancel();
    let out = run_with(
        &bash_tool(&sb.config),
        json!({"command": "touch ran"}),
        token,
    )
    .await;
    assert_eq!(out.unwrap_err().to_string(), "Operation aborted");
    assert!(!sb.work().join("ran").exists());
}

/// A busy runtime (other tasks holding the workers for a while, as 1,000 agents in one
/// process do) must not lose a command's output, however late the readers run: once the
/// command is gone and nothing it started holds the pipes, what it wrote is read to the
/// end; with a background process holding them, what waits in them is read too.
#[test]
fn output_is_kept_when_the_runtime_is_busy() {
    busy_runtime_keeps_output("echo out-{i}");
    busy_runtime_keeps_output("sleep 1 & echo out-{i}");
}

fn busy_runtime_keeps_output(command: &str) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let rt = common::runtime();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let tool = Arc::new(bash_tool(&tern_tools::ToolConfig::new(dir.path())));
        let stop = Arc::new(AtomicBool::new(false));
        // Many tasks that keep the workers' queues full (2 ms of work, then yield), and a
        // few that hold a worker for longer than the quiet period.
        let hogs: Vec<_> = (0..200)
            .map(|k| {
                let stop = stop.clone();
                tokio::spawn(async move {
                    let ms = if k % 50 == 0 { 150 } else { 2 };
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(std::time::Duration::from_millis(ms));
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        let calls: Vec<_> = (0..60)
            .map(|i| {
                let tool = tool.clone();
                let command = command.replace("{i}", &i.to_string());
                tokio::spawn(async move {
                    let r = ok(&tool, json!({ "command": command })).await;
                    (i, text(&r))
                })
            })
            .collect();
        let mut lost = Vec::new();
        for c in calls {
            let (i, out) = c.await.unwrap();
            if !out.contains(&format!("out-{i}")) {
                lost.push((i, out));
            }
        }
        stop.store(true, Ordering::Relaxed);
        for h in hogs {
            h.await.unwrap();
        }
        assert!(
            lost.is_empty(),
            "{command}: {} of 60 outputs lost: {lost:?}",
            lost.len()
        );
    });
}
