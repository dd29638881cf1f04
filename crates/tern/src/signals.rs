//! The signals that end a run as an abort: SIGINT (Ctrl+C), SIGTERM (`kill`, a supervisor
//! stopping tern) and SIGHUP (the terminal went away). Each aborts like Ctrl+C, so the
//! aborted assistant message is recorded, the running tool's processes are killed, and the
//! exit code is 130.

/// Resolves when one of the signals arrives; never, when none can be watched.
pub async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let (Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) {
            tokio::select! {
                r = tokio::signal::ctrl_c() => if r.is_err() { std::future::pending::<()>().await },
                _ = term.recv() => {}
                _ = hup.recv() => {}
            }
            return;
        }
    }
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}
