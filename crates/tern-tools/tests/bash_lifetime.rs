//! Every process a bash command starts ends with the call (abort, timeout) or with tern
//! (killed outright), also those that left the process group with `setsid`; a normal end
//! leaves background processes running, as pi does, and lists them.
//!
//! A harness-less test: the binary re-runs itself as the "tern" that gets killed.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

mod common;

use common::{input, runtime};
use serde_json::json;
use tern_agent::AgentTool;
use tern_tools::sandbox::{SandboxMode, SandboxPolicy};
use tern_tools::{bash_tool, ToolConfig};
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

/// One scenario: `Err` says what went wrong.
type Scenario = fn() -> Result<(), String>;

const HELPER_ENV: &str = "TERN_BASH_LIFETIME_HELPER";

/// Starts a plain background sleep and a `setsid` one, writes their pids, then waits.
const SPAWNS: &str =
    "sleep 300 & echo $! > bg.pid; setsid sleep 300 & echo $! > ss.pid; echo $$ > sh.pid; wait";

fn config(dir: &Path) -> ToolConfig {
    ToolConfig::new(dir).with_sandbox(SandboxPolicy::new(SandboxMode::FullAccess))
}

/// Whether `pid` is a live process (not a zombie).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

fn wait_for_pids(dir: &Path, names: &[&str]) -> Result<Vec<i32>, String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let pids: Vec<Option<i32>> = names
            .iter()
            .map(|n| {
                std::fs::read_to_string(dir.join(n))
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
            })
            .collect();
        if pids.iter().all(Option::is_some) {
            return Ok(pids.into_iter().flatten().collect());
        }
        if Instant::now() > deadline {
            return Err(format!("the command never wrote {names:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn all_dead(pids: &[i32]) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let live: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
        if live.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            for &p in &live {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(p),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            return Err(format!("still alive: {live:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A temporary folder, a full-access bash tool working in it, and a runtime to run it on.
fn bash_in_temp_dir() -> Result<(tempfile::TempDir, AgentTool, Runtime), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let tool = bash_tool(&config(dir.path()));
    Ok((dir, tool, runtime()))
}

/// Runs `command` with a 1 s timeout: `Err` unless the call ends with that timeout.
fn run_into_timeout(rt: &Runtime, tool: &AgentTool, command: &str) -> Result<(), String> {
    let input = input(
        json!({ "command": command, "timeout": 1 }),
        CancellationToken::new(),
    );
    let out = rt
        .block_on(tool.execute(input))
        .map(|_| ())
        .map_err(|e| e.to_string());
    match out {
        Err(e) if e.contains("Command timed out after 1 seconds") => Ok(()),
        other => Err(format!("expected a timeout, got {other:?}")),
    }
}

fn abort_kills_background_and_setsid_children() -> Result<(), String> {
    let (dir, tool, rt) = bash_in_temp_dir()?;
    let token = CancellationToken::new();
    let run = rt.spawn({
        let token = token.clone();
        let input = input(json!({ "command": SPAWNS }), token);
        async move {
            tool.execute(input)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
    });
    let pids = wait_for_pids(dir.path(), &["bg.pid", "ss.pid", "sh.pid"])?;
    token.cancel();
    let out = rt.block_on(run).map_err(|e| e.to_string())?;
    match out {
        Err(e) if e.contains("Command aborted") => {}
        other => return Err(format!("expected an abort, got {other:?}")),
    }
    all_dead(&pids)
}

fn timeout_kills_background_and_setsid_children() -> Result<(), String> {
    let (dir, tool, rt) = bash_in_temp_dir()?;
    run_into_timeout(&rt, &tool, SPAWNS)?;
    let pids = wait_for_pids(dir.path(), &["bg.pid", "ss.pid", "sh.pid"])?;
    all_dead(&pids)
}

/// A confined command that kills its guard (its parent) would orphan its children out of
/// the reaper's reach; Landlock's signal scope refuses the kill, and the timeout still ends
/// every process.
fn a_confined_command_cannot_kill_its_guard() -> Result<(), String> {
    if !tern_tools::sandbox::support().confines() {
        println!("(no Landlock here: only full-access runs, which has no such guarantee)");
        return Ok(());
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let config =
        ToolConfig::new(dir.path()).with_sandbox(SandboxPolicy::new(SandboxMode::WorkspaceWrite));
    let tool = bash_tool(&config);
    let rt = runtime();
    let command = format!(
        "guard=$PPID; kill -9 $guard; echo $? > kill.rc; kill -9 {tern}; echo $? > tern.rc; {SPAWNS}",
        tern = std::process::id()
    );
    run_into_timeout(&rt, &tool, &command)?;
    for rc in ["kill.rc", "tern.rc"] {
        let code = std::fs::read_to_string(dir.path().join(rc)).map_err(|e| e.to_string())?;
        if code.trim() == "0" {
            return Err(format!("the confined command's kill succeeded ({rc})"));
        }
    }
    let pids = wait_for_pids(dir.path(), &["bg.pid", "ss.pid", "sh.pid"])?;
    all_dead(&pids)
}

fn a_normal_end_lists_what_is_left_running() -> Result<(), String> {
    let (dir, tool, rt) = bash_in_temp_dir()?;
    let input = input(
        json!({ "command": "setsid sleep 300 & echo $! > ss.pid; echo done" }),
        CancellationToken::new(),
    );
    let r = rt
        .block_on(tool.execute(input))
        .map_err(|e| e.to_string())?;
    let pids = wait_for_pids(dir.path(), &["ss.pid"])?;
    let listed = r
        .details
        .as_ref()
        .and_then(|d| d["backgroundProcesses"].as_array().cloned())
        .unwrap_or_default();
    let still = alive(pids[0]);
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pids[0]),
        nix::sys::signal::Signal::SIGKILL,
    );
    if !still {
        return Err("the background process should be left running, as in pi".into());
    }
    if !listed
        .iter()
        .any(|p| p["pid"] == pids[0] && p["command"] == "sleep")
    {
        return Err(format!("not listed: {listed:?}"));
    }
    Ok(())
}

/// The "tern" process: runs the tool, never returns (it gets SIGKILLed).
fn helper(dir: &Path) -> ! {
    let config = config(dir);
    let tool = bash_tool(&config);
    let rt = runtime();
    let input = input(json!({ "command": SPAWNS }), CancellationToken::new());
    let _ = rt.block_on(tool.execute(input));
    std::process::exit(3);
}

fn killing_tern_kills_the_command_tree() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut tern = Command::new(exe)
        .env(HELPER_ENV, dir.path())
        .spawn()
        .map_err(|e| e.to_string())?;
    let pids = wait_for_pids(dir.path(), &["bg.pid", "ss.pid", "sh.pid"]);
    let were_alive = pids.as_ref().is_ok_and(|p| p.iter().all(|&p| alive(p)));
    let _ = tern.kill();
    let _ = tern.wait();
    let pids = pids?;
    if !were_alive {
        return Err("the command's processes were not running before tern was killed".into());
    }
    all_dead(&pids)
}

fn main() -> ExitCode {
    if let Some(dir) = std::env::var_os(HELPER_ENV) {
        helper(&PathBuf::from(dir));
    }
    let tests: [(&str, Scenario); 5] = [
        (
            "abort_kills_background_and_setsid_children",
            abort_kills_background_and_setsid_children,
        ),
        (
            "timeout_kills_background_and_setsid_children",
            timeout_kills_background_and_setsid_children,
        ),
        (
            "a_confined_command_cannot_kill_its_guard",
            a_confined_command_cannot_kill_its_guard,
        ),
        (
            "a_normal_end_lists_what_is_left_running",
            a_normal_end_lists_what_is_left_running,
        ),
        (
            "killing_tern_kills_the_command_tree",
            killing_tern_kills_the_command_tree,
        ),
    ];
    let mut failed = 0;
    for (name, test) in tests {
        match test() {
            Ok(()) => println!("test {name} ... ok"),
            Err(e) => {
                failed += 1;
                println!("test {name} ... FAILED: {e}");
            }
        }
    }
    println!("{} passed, {failed} failed", tests.len() - failed);
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
