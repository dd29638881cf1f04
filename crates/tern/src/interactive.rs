//! Interactive mode (stub).
use crate::setup::Runtime;
use tern_tools::policy::AskFn;
pub fn asker() -> AskFn { std::sync::Arc::new(|_r, _s| Box::pin(async { false })) }
pub async fn run(_rt: Runtime, _prompt: String) -> i32 { 0 }
