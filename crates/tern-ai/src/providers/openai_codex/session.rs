//! The session-scoped WebSocket cache of the Codex transport and the per-session memory of
//! a fallback to SSE.
//!
//! A request with a session id leases the socket cached for its session and account: an
//! idle one is reused, one in use by another request makes this request open a socket of its
//! own (closed after use), and none (or one past its maximum age, or one the server closed)
//! makes it open one and cache it. A released socket waits, idle, in a watcher task that
//! notices the server closing it, closes it after [`IDLE_TTL`] and hands it back to the next
//! lease. With each cached socket goes the continuation of its last response (the
//! `previous_response_id` of the next request). A WebSocket failure marks the session, and
//! its later requests go straight to SSE until [`reset_fallback`].

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;
use std::time::Duration;

use futures::StreamExt;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// An open WebSocket to the Codex backend.
pub(super) type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// How long a released socket is kept for its session.
pub(super) const IDLE_TTL: Duration = Duration::from_secs(5 * 60);

/// The age after which a cached socket is not leased again: the server closes sockets after
/// an hour, even mid-response, so new requests open a fresh one after 45 minutes.
pub(super) const MAX_AGE: Duration = Duration::from_secs(45 * 60);

/// What a socket's last response leaves for the next request on it.
#[derive(Clone, Debug)]
pub(super) struct Continuation {
    /// The whole body of the last request (before any continuation was applied).
    pub last_request_body: Value,
    /// The id of the last response.
    pub last_response_id: String,
    /// The last response as input items (tool outputs left out).
    pub last_response_items: Vec<Value>,
}

enum Command {
    /// Hand the socket to a new lease.
    Take(oneshot::Sender<Socket>),
    /// Close it with this reason.
    Close(&'static str),
}

enum Slot {
    /// Leased to a request.
    Busy,
    /// Waiting in its watcher task.
    Idle(oneshot::Sender<Command>),
}

struct Entry {
    id: u64,
    created: Instant,
    continuation: Option<Continuation>,
    slot: Slot,
}

/// The cached sockets by session id, then account id.
type Cache = HashMap<String, HashMap<String, Entry>>;

static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(|| Mutex::new(HashMap::new()));
static FALLBACK: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(|| Mutex::new(HashSet::new()));
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

#[derive(Clone, Debug)]
struct Key {
    session: String,
    account: String,
    id: u64,
}

/// A socket leased to one request.
pub(super) struct Lease {
    /// The socket.
    pub socket: Socket,
    /// The continuation of the cached socket's last response; what the request leaves here
    /// is kept with the socket when it is released to the cache.
    pub continuation: Option<Continuation>,
    /// The cache entry, for a cached socket.
    key: Option<Key>,
}

impl Lease {
    /// Whether the socket belongs to the session cache (the reference's `entry`).
    pub(super) fn cached(&self) -> bool {
        self.key.is_some()
    }
}

/// Whether an earlier WebSocket failure sent this session to SSE.
pub(super) fn fallback_active(session: &str) -> bool {
    FALLBACK.lock().contains(session)
}

/// Sends this session's later requests to SSE.
pub(super) fn remember_fallback(session: &str) {
    FALLBACK.lock().insert(session.to_string());
}

/// Forgets the SSE fallback of one session, or of every session (`None`), so their next
/// requests try the WebSocket again.
pub fn reset_fallback(session: Option<&str>) {
    let mut fallback = FALLBACK.lock();
    match session {
        Some(s) => {
            fallback.remove(s);
        }
        None => fallback.clear(),
    }
}

/// Closes the cached sockets of one session, or of every session (`None`), and forgets
/// their continuations (a session's resources released when it ends).
pub fn close_sessions(session: Option<&str>) {
    let removed: Vec<Entry> = {
        let mut cache = CACHE.lock();
        match session {
            Some(s) => cache
                .remove(s)
                .map(|m| m.into_values().collect())
                .unwrap_or_default(),
            None => cache.drain().flat_map(|(_, m)| m.into_values()).collect(),
        }
    };
    for entry in removed {
        if let Slot::Idle(tx) = entry.slot {
            let _ = tx.send(Command::Close("debug_close"));
        }
    }
}

/// Closes a socket without waiting for the server's answer (code 1000 with `reason`).
pub(super) fn close_socket(mut socket: Socket, reason: &'static str) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        let frame = CloseFrame {
            code: CloseCode::Normal,
            reason: reason.into(),
        };
        let _ = tokio::time::timeout(Duration::from_secs(5), socket.close(Some(frame))).await;
    });
}

/// Removes the entry `key` names, if it is still that one.
fn forget(key: &Key) -> Option<Entry> {
    let mut cache = CACHE.lock();
    let accounts = cache.get_mut(&key.session)?;
    if accounts.get(&key.account).map(|e| e.id) != Some(key.id) {
        return None;
    }
    let entry = accounts.remove(&key.account);
    if accounts.is_empty() {
        cache.remove(&key.session);
    }
    entry
}

enum Found {
    /// An idle cached socket: ask its watcher for it.
    Idle(Key, oneshot::Sender<Command>, Option<Continuation>),
    /// The cached socket is leased: open one outside the cache.
    Busy,
    /// Open one and cache it.
    Fresh,
}

fn find(session: &str, account: &str) -> Found {
    let mut cache = CACHE.lock();
    let Some(entry) = cache.get_mut(session).and_then(|m| m.get_mut(account)) else {
        return Found::Fresh;
    };
    if matches!(entry.slot, Slot::Busy) {
        return Found::Busy;
    }
    let key = Key {
        session: session.to_string(),
        account: account.to_string(),
        id: entry.id,
    };
    let expired = entry.created.elapsed() >= MAX_AGE;
    let Slot::Idle(tx) = std::mem::replace(&mut entry.slot, Slot::Busy) else {
        return Found::Busy;
    };
    if expired {
        drop(cache);
        forget(&key);
        let _ = tx.send(Command::Close("connection_age_limit"));
        return Found::Fresh;
    }
    let continuation = entry.continuation.take();
    Found::Idle(key, tx, continuation)
}

/// Leases a socket for a request of `session` (none: a socket of its own) and `account`,
/// opening one with `connect` when no cached one can serve.
pub(super) async fn acquire<E, F, Fut>(
    session: Option<&str>,
    account: &str,
    connect: F,
) -> Result<Lease, E>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<Socket, E>>,
{
    let Some(session) = session else {
        return Ok(Lease {
            socket: connect().await?,
            continuation: None,
            key: None,
        });
    };
    let cache_it = match find(session, account) {
        Found::Busy => false,
        Found::Fresh => true,
        Found::Idle(key, tx, continuation) => {
            let (reply, socket) = oneshot::channel();
            if tx.send(Command::Take(reply)).is_ok() {
                if let Ok(socket) = socket.await {
                    return Ok(Lease {
                        socket,
                        continuation,
                        key: Some(key),
                    });
                }
            }
            // The watcher is gone: the server closed the socket while it was idle.
            forget(&key);
            true
        }
    };
    let socket = connect().await?;
    if !cache_it {
        return Ok(Lease {
            socket,
            continuation: None,
            key: None,
        });
    }
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let replaced = CACHE.lock().entry(session.to_string()).or_default().insert(
        account.to_string(),
        Entry {
            id,
            created: Instant::now(),
            continuation: None,
            slot: Slot::Busy,
        },
    );
    if let Some(Entry {
        slot: Slot::Idle(tx),
        ..
    }) = replaced
    {
        let _ = tx.send(Command::Close("done"));
    }
    Ok(Lease {
        socket,
        continuation: None,
        key: Some(Key {
            session: session.to_string(),
            account: account.to_string(),
            id,
        }),
    })
}

/// Ends a lease: with `keep`, a cached socket waits for the session's next request (with the
/// lease's continuation); otherwise, or for a socket of its own, it is closed.
pub(super) fn release(lease: Lease, keep: bool) {
    let Lease {
        socket,
        continuation,
        key,
        ..
    } = lease;
    let Some(key) = key else {
        close_socket(socket, "done");
        return;
    };
    if !keep {
        forget(&key);
        close_socket(socket, "done");
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        // No runtime to keep it waiting on: not cached.
        forget(&key);
        return;
    };
    let mut cache = CACHE.lock();
    let entry = cache
        .get_mut(&key.session)
        .and_then(|m| m.get_mut(&key.account))
        .filter(|e| e.id == key.id);
    let Some(entry) = entry else {
        drop(cache);
        close_socket(socket, "done");
        return;
    };
    let (tx, rx) = oneshot::channel();
    entry.continuation = continuation;
    entry.slot = Slot::Idle(tx);
    drop(cache);
    runtime.spawn(watch(key, socket, rx));
}

enum Wake {
    Command(Option<Command>),
    Expired,
    /// The server sent something; `false` when it closed the socket.
    Message(bool),
}

/// Keeps an idle socket: hands it to the next lease, closes it when told to or after
/// [`IDLE_TTL`], and drops the entry when the server closes it.
async fn watch(key: Key, mut socket: Socket, mut commands: oneshot::Receiver<Command>) {
    let expiry = tokio::time::sleep(IDLE_TTL);
    tokio::pin!(expiry);
    loop {
        let wake = tokio::select! {
            command = &mut commands => Wake::Command(command.ok()),
            () = &mut expiry => Wake::Expired,
            message = socket.next() => Wake::Message(matches!(message, Some(Ok(ref m)) if !m.is_close())),
        };
        match wake {
            Wake::Command(Some(Command::Take(reply))) => {
                if let Err(socket) = reply.send(socket) {
                    close_socket(socket, "done");
                }
                return;
            }
            Wake::Command(Some(Command::Close(reason))) => return close_socket(socket, reason),
            Wake::Command(None) => return close_socket(socket, "done"),
            Wake::Expired => {
                forget(&key);
                return close_socket(socket, "idle_timeout");
            }
            Wake::Message(true) => {}
            Wake::Message(false) => {
                forget(&key);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_tungstenite::tungstenite::protocol::Role;
    use tokio_tungstenite::tungstenite::Message;

    /// A connected client socket and the server's end of it.
    async fn pair() -> (Socket, WebSocketStream<TcpStream>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let client =
            WebSocketStream::from_raw_socket(MaybeTlsStream::Plain(client), Role::Client, None)
                .await;
        let server = WebSocketStream::from_raw_socket(server, Role::Server, None).await;
        (client, server)
    }

    fn cached(session: &str) -> bool {
        CACHE.lock().contains_key(session)
    }

    #[tokio::test(start_paused = true)]
    async fn a_socket_past_its_maximum_age_is_closed_not_leased() {
        let (tx, mut rx) = oneshot::channel();
        CACHE.lock().entry("age-test".into()).or_default().insert(
            "acct".into(),
            Entry {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                created: Instant::now(),
                continuation: None,
                slot: Slot::Idle(tx),
            },
        );
        tokio::time::advance(MAX_AGE - Duration::from_secs(1)).await;
        assert!(matches!(find("age-test", "acct"), Found::Idle(..)));
        // Leased and given back: idle again, one second short of the limit.
        if let Some(e) = CACHE
            .lock()
            .get_mut("age-test")
            .and_then(|m| m.get_mut("acct"))
        {
            let (tx, rx2) = oneshot::channel();
            e.slot = Slot::Idle(tx);
            rx = rx2;
        }
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(matches!(find("age-test", "acct"), Found::Fresh));
        assert!(matches!(
            rx.try_recv(),
            Ok(Command::Close("connection_age_limit"))
        ));
        assert!(!cached("age-test"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_released_socket_is_reused_then_closed_after_the_idle_ttl() {
        let (client, mut server) = pair().await;
        let lease = acquire(Some("ttl-test"), "acct", || async { Ok::<_, ()>(client) })
            .await
            .unwrap();
        assert!(lease.cached());
        release(lease, true);
        // The next request of the session gets the same socket back, without connecting.
        let lease = acquire(Some("ttl-test"), "acct", || async {
            Err::<Socket, _>("no second connection")
        })
        .await
        .unwrap();
        // While it is leased, another request of the session gets a socket of its own.
        let (other, _other_server) = pair().await;
        let own = acquire(Some("ttl-test"), "acct", || async { Ok::<_, ()>(other) })
            .await
            .unwrap();
        assert!(!own.cached());
        release(own, false);
        release(lease, true);
        tokio::time::sleep(IDLE_TTL + Duration::from_secs(1)).await;
        let closed = server.next().await;
        let reason = match closed {
            Some(Ok(Message::Close(Some(frame)))) => frame.reason.to_string(),
            other => panic!("expected a close frame, got {other:?}"),
        };
        assert_eq!(reason, "idle_timeout");
        assert!(!cached("ttl-test"));
    }

    #[tokio::test]
    async fn a_socket_the_server_closed_while_idle_is_replaced() {
        let (client, mut server) = pair().await;
        let lease = acquire(Some("closed-test"), "acct", || async {
            Ok::<_, ()>(client)
        })
        .await
        .unwrap();
        release(lease, true);
        server.close(None).await.unwrap();
        // The watcher notices the close and drops the entry.
        for _ in 0..200 {
            if !cached("closed-test") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(!cached("closed-test"));
        let (fresh, _fresh_server) = pair().await;
        let lease = acquire(Some("closed-test"), "acct", || async { Ok::<_, ()>(fresh) })
            .await
            .unwrap();
        assert!(lease.cached());
        release(lease, false);
        assert!(!cached("closed-test"));
    }
}
