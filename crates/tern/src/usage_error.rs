//! The error that ends tern before anything runs: bad arguments, config or session choice.

/// A usage problem (exit code 2), with the text that tells the user what to do.
#[derive(Debug)]
pub struct UsageError(pub String);

impl From<tern_session::SessionError> for UsageError {
    fn from(e: tern_session::SessionError) -> Self {
        UsageError(e.to_string())
    }
}
