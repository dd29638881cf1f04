//! `--context-window auto`: a served model's context window and output limit read from the
//! server's model list (`GET {base_url}/models`), in the shapes local servers report them:
//! llama.cpp's `meta.n_ctx` (the served context) and `meta.n_ctx_train`, vLLM's
//! `max_model_len`, LM Studio's `loaded_context_length` / `max_context_length`, and the
//! `context_length` / `top_provider.max_completion_tokens` of OpenRouter-style lists.

use std::str::FromStr;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

/// A context window setting: a number of tokens, or `auto` (ask the server).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowSetting {
    /// This many tokens.
    Tokens(u64),
    /// What the server's `/models` reports.
    Auto,
}

impl FromStr for WindowSetting {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s.eq_ignore_ascii_case("auto") {
            return Ok(WindowSetting::Auto);
        }
        s.parse()
            .map(WindowSetting::Tokens)
            .map_err(|_| format!("{s} is neither a number of tokens nor `auto`"))
    }
}

impl<'de> Deserialize<'de> for WindowSetting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Tokens(u64),
            Word(String),
        }
        match Raw::deserialize(d)? {
            Raw::Tokens(n) => Ok(WindowSetting::Tokens(n)),
            Raw::Word(w) => w.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// What a server's model list says about one model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reported {
    /// Context window, in tokens.
    pub context_window: Option<u64>,
    /// Output limit, in tokens.
    pub max_tokens: Option<u64>,
}

/// The first positive number among `paths` (each a list of keys) in `entry`.
fn first_number(entry: &Value, paths: &[&[&str]]) -> Option<u64> {
    paths.iter().find_map(|path| {
        path.iter()
            .try_fold(entry, |v, k| v.get(k))
            .and_then(Value::as_u64)
            .filter(|n| *n > 0)
    })
}

/// The limits of model `id` in a `/models` answer (OpenAI's `data` list, or a `models`
/// list). A list of one model answers for any id: a local server serves what it loaded.
pub fn from_listing(body: &Value, id: &str) -> Reported {
    let list = body
        .get("data")
        .or_else(|| body.get("models"))
        .and_then(Value::as_array);
    let Some(list) = list else {
        return Reported::default();
    };
    let named = |e: &&Value| {
        ["id", "name", "model"]
            .iter()
            .any(|k| e.get(k).and_then(Value::as_str) == Some(id))
    };
    let entry = match list.iter().find(named) {
        Some(e) => e,
        None if list.len() == 1 => &list[0],
        None => return Reported::default(),
    };
    // The served context before the trained one: a server may run with less than the model
    // was trained for, and requests beyond the served context fail.
    let context_window = first_number(
        entry,
        &[
            &["meta", "n_ctx"],
            &["max_model_len"],
            &["loaded_context_length"],
            &["context_length"],
            &["context_window"],
            &["max_context_length"],
            &["meta", "n_ctx_train"],
        ],
    );
    let max_tokens = first_number(
        entry,
        &[
            &["max_output_tokens"],
            &["max_completion_tokens"],
            &["top_provider", "max_completion_tokens"],
        ],
    );
    Reported {
        context_window,
        max_tokens,
    }
}

/// Asks `{base_url}/models` for model `id`'s limits (5 s at most, no redirect followed, so
/// the key goes nowhere else).
pub async fn query(base_url: &str, id: &str, api_key: Option<&str>) -> Result<Reported, String> {
    let url = format!("{}/models", base_url.trim_end_matches('/'));
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
    let mut request = client.get(&url);
    if let Some(key) = api_key.filter(|k| !k.is_empty()) {
        request = request.bearer_auth(key);
    }
    let response = request
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("GET {url}: HTTP {status}"));
    }
    let bytes = response
        .bytes()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    let body: Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("GET {url}: not a JSON model list: {e}"))?;
    Ok(from_listing(&body, id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_servers_shape_gives_its_limits() {
        let cases = [
            // llama.cpp: the served context wins over the trained one.
            (
                json!({"data": [{"id": "m", "meta": {"n_ctx": 8192, "n_ctx_train": 131072}}]}),
                (Some(8192), None),
            ),
            (
                json!({"data": [{"id": "m", "meta": {"n_ctx_train": 32768}}]}),
                (Some(32768), None),
            ),
            // vLLM.
            (
                json!({"object": "list", "data": [{"id": "other", "max_model_len": 1}, {"id": "m", "max_model_len": 40960}]}),
                (Some(40960), None),
            ),
            // LM Studio.
            (
                json!({"data": [{"id": "m", "loaded_context_length": 4096, "max_context_length": 32768}]}),
                (Some(4096), None),
            ),
            // OpenRouter-style.
            (
                json!({"data": [{"id": "m", "context_length": 200000, "top_provider": {"max_completion_tokens": 8192}}]}),
                (Some(200000), Some(8192)),
            ),
            // Ollama's /v1/models says nothing of limits.
            (
                json!({"data": [{"id": "m", "object": "model"}]}),
                (None, None),
            ),
            // The one model a server has answers for any id.
            (
                json!({"data": [{"id": "loaded.gguf", "max_model_len": 2048}]}),
                (Some(2048), None),
            ),
            (
                json!({"data": [{"id": "a", "max_model_len": 1}, {"id": "b", "max_model_len": 2}]}),
                (None, None),
            ),
            (json!({"error": "nope"}), (None, None)),
        ];
        for (body, (window, output)) in cases {
            let r = from_listing(&body, "m");
            assert_eq!((r.context_window, r.max_tokens), (window, output), "{body}");
        }
    }

    #[test]
    fn a_setting_is_tokens_or_auto() {
        assert_eq!("auto".parse(), Ok(WindowSetting::Auto));
        assert_eq!("AUTO".parse(), Ok(WindowSetting::Auto));
        assert_eq!("4096".parse(), Ok(WindowSetting::Tokens(4096)));
        assert!("big".parse::<WindowSetting>().is_err());
        #[derive(Deserialize)]
        struct C {
            w: WindowSetting,
        }
        let n: C = toml::from_str("w = 1000").unwrap();
        let a: C = toml::from_str("w = \"auto\"").unwrap();
        assert_eq!(
            (n.w, a.w),
            (WindowSetting::Tokens(1000), WindowSetting::Auto)
        );
        assert!(toml::from_str::<C>("w = \"lots\"").is_err());
    }
}
