//! Starting a session with a server: spawning a stdio program (in its own process group,
//! so wrappers such as `npx` stop with it) or opening a streamable-HTTP endpoint, then
//! `initialize`.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::Arc;

use parking_lot::Mutex;
use process_wrap::tokio::{CommandWrap, ProcessGroup};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::handler::Handler;
use crate::config::{ServerConfig, Transport, DEFAULT_TIMEOUT};
use crate::error::McpError;

/// The last lines a stdio server wrote to stderr, for error messages.
#[derive(Clone, Default)]
pub(crate) struct StderrTail(Arc<Mutex<VecDeque<String>>>);

const STDERR_LINES: usize = 8;

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.0.lock();
        if lines.len() == STDERR_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The kept lines joined with ` | `.
    pub(crate) fn text(&self) -> String {
        self.0
            .lock()
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join(" | ")
    }
}

/// A live session.
pub(crate) struct Connection {
    pub(crate) service: RunningService<RoleClient, Handler>,
    pub(crate) stderr: StderrTail,
    /// Tells this session from the one that replaces it.
    pub(crate) id: u64,
}

/// Starts the server and completes `initialize` within the entry's timeout, but at least
/// [`DEFAULT_TIMEOUT`]: starting a program (`npx` may download it first) is slower than a
/// request.
pub(crate) async fn open(
    name: &str,
    config: &ServerConfig,
    handler: Handler,
    id: u64,
) -> Result<Connection, McpError> {
    let stderr = StderrTail::default();
    let startup = config.timeout.max(DEFAULT_TIMEOUT);
    let fail = |message: String, stderr: &StderrTail| McpError::Connect {
        server: name.to_string(),
        message,
        stderr: stderr.text(),
    };
    let started = match &config.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).envs(env);
            if let Some(dir) = cwd {
                cmd.current_dir(dir);
            }
            let mut wrapped = CommandWrap::from(cmd);
            wrapped.wrap(ProcessGroup::leader());
            let (transport, err) = TokioChildProcess::builder(wrapped)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| fail(format!("cannot run {command}: {e}"), &stderr))?;
            if let Some(err) = err {
                let tail = stderr.clone();
                tokio::spawn(async move {
                    let mut lines = BufReader::new(err).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        tail.push(line);
                    }
                });
            }
            tokio::time::timeout(startup, handler.serve(transport))
                .await
                .map(|r| r.map_err(|e| e.to_string()))
        }
        Transport::Http { url, headers } => {
            let mut custom = HashMap::new();
            for (k, v) in headers {
                let name = http::HeaderName::try_from(k.as_str())
                    .map_err(|e| fail(format!("header {k}: {e}"), &stderr))?;
                let value = http::HeaderValue::try_from(v.as_str())
                    .map_err(|e| fail(format!("header {k}: {e}"), &stderr))?;
                custom.insert(name, value);
            }
            let transport = StreamableHttpClientTransport::from_config(
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom),
            );
            tokio::time::timeout(startup, handler.serve(transport))
                .await
                .map(|r| r.map_err(|e| e.to_string()))
        }
    };
    let service = match started {
        Ok(Ok(service)) => service,
        Ok(Err(message)) => return Err(fail(message, &stderr)),
        Err(_) => {
            return Err(fail(
                format!(
                    "no answer to initialize within {}s",
                    config.timeout.as_secs_f64()
                ),
                &stderr,
            ))
        }
    };
    Ok(Connection {
        service,
        stderr,
        id,
    })
}
