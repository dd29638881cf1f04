//! PLACEHOLDER (to be replaced entirely by the validation port).
#![allow(missing_docs)]
pub fn validate_tool_arguments(
    tool_name: &str,
    _schema: &serde_json::Value,
    arguments: &serde_json::Value,
    arguments_error: Option<&str>,
) -> Result<serde_json::Value, String> {
    if let Some(e) = arguments_error {
        return Err(format!("Invalid arguments for tool \"{tool_name}\": {e}"));
    }
    Ok(arguments.clone())
}
