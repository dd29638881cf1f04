//! Errors of the library API.

/// What went wrong talking to Temporal, with what to check.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The address is not a valid URL (`HOST:PORT` or `http://HOST:PORT`).
    #[error("`{address}` is not a Temporal address (expected HOST:PORT): {reason}")]
    Address {
        /// The address given.
        address: String,
        /// Why it was rejected.
        reason: String,
    },
    /// The server could not be reached.
    #[error("cannot connect to Temporal at {address}: {reason} (is the server running?)")]
    Connect {
        /// The address tried.
        address: String,
        /// The client's error.
        reason: String,
    },
    /// Starting a session's workflow failed.
    #[error("cannot start session `{session}`: {reason}")]
    Start {
        /// The session (workflow id).
        session: String,
        /// The client's error.
        reason: String,
    },
    /// A prompt, steering or follow-up message was rejected or not committed.
    #[error("session `{session}` did not take the {what}: {reason}")]
    Update {
        /// The session.
        session: String,
        /// `prompt`, `steer` or `follow_up`.
        what: &'static str,
        /// The validator's or the client's error.
        reason: String,
    },
    /// The session refused a prompt, continue, steering or follow-up message (its reason
    /// is the Agent's text for the same refusal: a run is active, nothing to continue from,
    /// the session is closed).
    #[error("session `{session}` refused the {what}: {reason}")]
    Rejected {
        /// The session.
        session: String,
        /// `prompt`, `continue`, `reset`, `steer` or `follow_up`.
        what: &'static str,
        /// The session's reason.
        reason: String,
    },
    /// A query failed (the session does not exist, or no worker serves its task queue).
    #[error("cannot read session `{session}`: {reason} (is a worker running on its task queue?)")]
    Query {
        /// The session.
        session: String,
        /// The client's error.
        reason: String,
    },
    /// Closing or awaiting the session failed.
    #[error("session `{session}` did not end cleanly: {reason}")]
    End {
        /// The session.
        session: String,
        /// The client's error.
        reason: String,
    },
    /// The worker could not be built or stopped with an error.
    #[error("the worker failed: {0}")]
    Worker(String),
}
