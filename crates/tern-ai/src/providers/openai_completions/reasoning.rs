//! OpenRouter-style `reasoning_details`: which entries are valid, how they are read back
//! from a thinking or tool-call signature, and how streamed entries merge.

use serde_json::Value;

pub(super) const REASONING_FIELDS: [&str; 3] = ["reasoning", "reasoning_content", "reasoning_text"];

pub(super) fn is_reasoning_detail(d: &Value) -> bool {
    let Some(o) = d.as_object() else { return false };
    let id_ok = matches!(
        o.get("id"),
        None | Some(Value::Null) | Some(Value::String(_))
    );
    let fmt_ok = matches!(o.get("format"), None | Some(Value::String(_)));
    let idx_ok = matches!(o.get("index"), None | Some(Value::Number(_)));
    if !(id_ok && fmt_ok && idx_ok) {
        return false;
    }
    match o.get("type").and_then(Value::as_str) {
        Some("reasoning.summary") => o.get("summary").is_some_and(Value::is_string),
        Some("reasoning.encrypted") => o.get("data").is_some_and(Value::is_string),
        Some("reasoning.text") => {
            o.get("text").is_some_and(Value::is_string)
                && matches!(
                    o.get("signature"),
                    None | Some(Value::Null) | Some(Value::String(_))
                )
        }
        _ => false,
    }
}

pub(super) fn parse_reasoning_details(sig: Option<&str>) -> Option<Vec<Value>> {
    let v: Value = serde_json::from_str(sig.filter(|s| !s.is_empty())?).ok()?;
    let arr = v.as_array()?;
    (!arr.is_empty() && arr.iter().all(is_reasoning_detail)).then(|| arr.clone())
}

pub(super) fn parse_legacy_encrypted(sig: Option<&str>) -> Option<Value> {
    let v: Value = serde_json::from_str(sig.filter(|s| !s.is_empty())?).ok()?;
    let ok = is_reasoning_detail(&v)
        && v.get("type").and_then(Value::as_str) == Some("reasoning.encrypted")
        && v.get("id")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
        && v.get("data")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty());
    ok.then_some(v)
}

pub(super) fn append_reasoning_detail(details: &mut Vec<Value>, detail: &Value) {
    let ty = detail.get("type").and_then(Value::as_str).unwrap_or("");
    if let Some(Value::Object(last)) = details.last_mut() {
        let last_ty = last
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let field = match (ty, last_ty.as_str()) {
            ("reasoning.text", "reasoning.text") => Some("text"),
            ("reasoning.summary", "reasoning.summary") => Some("summary"),
            _ => None,
        };
        if let Some(field) = field {
            let add = detail.get(field).and_then(Value::as_str).unwrap_or("");
            let cur = last
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            last.insert(field.into(), Value::String(cur + add));
            if field == "text" {
                let has_sig = last
                    .get("signature")
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty());
                if !has_sig {
                    if let Some(s) = detail.get("signature") {
                        last.insert("signature".into(), s.clone());
                    }
                }
            }
            if matches!(last.get("id"), None | Some(Value::Null)) {
                if let Some(v) = detail.get("id") {
                    last.insert("id".into(), v.clone());
                }
            }
            let fmt_empty = last
                .get("format")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty);
            if fmt_empty {
                if let Some(v) = detail.get("format") {
                    last.insert("format".into(), v.clone());
                }
            }
            if matches!(last.get("index"), None | Some(Value::Null)) {
                if let Some(v) = detail.get("index") {
                    last.insert("index".into(), v.clone());
                }
            }
            return;
        }
    }
    details.push(detail.clone());
}
