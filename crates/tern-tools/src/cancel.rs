//! Running a tool body so that the cancellation token ends it.

use std::future::Future;

use tokio_util::sync::CancellationToken;

/// The error text of a call ended by its cancellation token (pi's text).
pub const ABORTED: &str = "Operation aborted";

/// Runs `fut` unless or until `signal` fires; then returns [`ABORTED`].
pub(crate) async fn until_cancelled<T>(
    signal: &CancellationToken,
    fut: impl Future<Output = Result<T, String>>,
) -> Result<T, String> {
    if signal.is_cancelled() {
        return Err(ABORTED.to_string());
    }
    tokio::select! {
        biased;
        _ = signal.cancelled() => Err(ABORTED.to_string()),
        out = fut => out,
    }
}

/// Runs blocking filesystem work on tokio's blocking pool, raced against `signal`.
///
/// The closure gets the token too, so long walks stop early instead of running on unseen.
pub(crate) async fn blocking<T, F>(signal: &CancellationToken, f: F) -> Result<T, String>
where
    T: Send + 'static,
    F: FnOnce(CancellationToken) -> Result<T, String> + Send + 'static,
{
    let token = signal.clone();
    until_cancelled(signal, async move {
        tokio::task::spawn_blocking(move || f(token))
            .await
            .map_err(|e| format!("Tool task failed: {e}"))?
    })
    .await
}

/// Runs blocking work that must not be abandoned half-way (a file mutation): the token is
/// checked before it starts and after it ends, but the work itself always completes, so an
/// abort never leaves the caller thinking a write did not happen when it did.
pub(crate) async fn blocking_to_completion<T, F>(
    signal: &CancellationToken,
    f: F,
) -> Result<T, String>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, String> + Send + 'static,
{
    if signal.is_cancelled() {
        return Err(ABORTED.to_string());
    }
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("Tool task failed: {e}"))?
}
