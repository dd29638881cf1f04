//! The terminal UI in tmux: a pane running tern on a tmux server of its own, read and typed
//! into by the tests.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Whether tmux is installed; when not, says the test is skipped.
pub fn available() -> bool {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("SKIPPED: tmux is not installed (apt-get install -y tmux)");
        return false;
    }
    true
}

/// One tmux session running tern; killed when dropped (also when the test fails).
pub struct Pane {
    name: String,
}

impl Pane {
    /// Starts `tern FLAGS` (shell words) in `cwd` with the home `home` in a 120×30 pane, named
    /// from `tag` and this process's id. The shell sleeps after tern exits, so the screen stays.
    pub fn tern(tag: &str, home: &Path, cwd: &Path, flags: &str) -> Pane {
        let name = format!("tern-{tag}-{}", std::process::id());
        let shell = format!(
            "cd '{}' && env HOME='{}' TERN_SESSION_DIR='{}/sessions' TERN_CONFIG=/dev/null '{}' \
             {flags}; sleep 30",
            cwd.display(),
            home.display(),
            home.display(),
            super::tern().display(),
        );
        let p = Pane { name };
        let started = p.tmux(&[
            "new-session",
            "-d",
            "-s",
            &p.name,
            "-x",
            "120",
            "-y",
            "30",
            &shell,
        ]);
        assert!(started.status.success(), "{started:?}");
        p
    }

    /// Runs a tmux command against this pane's server.
    pub fn tmux(&self, args: &[&str]) -> Output {
        // A server of its own per pane: another test's server shutting down (tmux's
        // "server exited unexpectedly") cannot take this one along.
        Command::new("tmux")
            .args(["-L", &self.name])
            .args(args)
            .output()
            .expect("run tmux")
    }

    /// The screen and the last 200 lines above it.
    pub fn text(&self) -> String {
        let o = self.tmux(&["capture-pane", "-p", "-S", "-200", "-t", &self.name]);
        String::from_utf8_lossy(&o.stdout).to_string()
    }

    /// Waits (20 s at most) until `text` shows.
    pub fn wait_for(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let p = self.text();
            if p.contains(text) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "expected {text:?} on screen; the pane was:\n{p}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Types `keys` (tmux key names or text).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.name];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// The tern process the pane's shell runs.
    pub fn tern_pid(&self) -> String {
        let shell = self.tmux(&["display", "-p", "-t", &self.name, "#{pane_pid}"]);
        let shell = String::from_utf8_lossy(&shell.stdout).trim().to_string();
        let children = Command::new("pgrep")
            .args(["-P", &shell])
            .output()
            .expect("pgrep");
        let pids = String::from_utf8_lossy(&children.stdout).to_string();
        pids.lines().next().unwrap_or_default().trim().to_string()
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        self.tmux(&["kill-session", "-t", &self.name]);
    }
}
