//! Custom providers and models in pi's `models.json` format (pi's `docs/models.md` and
//! `models-configuration.md`): a provider's `baseUrl`, `api`, `apiKey`, `headers`,
//! `authHeader`, `compat`, its `models` (added, or replacing a built-in of the same id, with
//! pi's defaults: 128000-token window, 16384 output tokens, text input) and its
//! `modelOverrides` of built-in models.
//!
//! The files read, later ones winning: pi's (`$PI_CODING_AGENT_DIR/models.json`, else
//! `~/.pi/agent/models.json`), then tern's (`models.json` in tern's config folder). The
//! result, the catalog with both applied, is set once at start-up ([`init`]) and read through
//! [`models`], [`get_model`] and [`api_key`] by every place that looks a model up.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::{json, Map, Value};
use tern_ai::providers::catalog;
use tern_ai::Model;

/// The catalog with the `models.json` files applied, and the providers' resolved keys.
#[derive(Debug, Default)]
pub struct Registry {
    models: Vec<Model>,
    keys: BTreeMap<String, String>,
}

static REGISTRY: OnceLock<Registry> = OnceLock::new();

/// The `models.json` files tern reads, in the order they apply: pi's, then tern's.
pub fn paths() -> Vec<PathBuf> {
    let pi = crate::system_prompt::context_files::pi_agent_dir();
    let tern = crate::config::config_dir();
    pi.into_iter()
        .chain(tern)
        .map(|d| d.join("models.json"))
        .collect()
}

/// Loads the files of `paths` that exist over the catalog and makes the result the one
/// [`models`] returns. A malformed file is an error that names it.
pub fn init(paths: &[PathBuf]) -> Result<&'static Registry, String> {
    let registry = load(paths)?;
    Ok(REGISTRY.get_or_init(|| registry))
}

/// The catalog with `paths` applied (a missing file is skipped).
pub fn load(paths: &[PathBuf]) -> Result<Registry, String> {
    let mut registry = Registry {
        models: catalog::models().to_vec(),
        keys: BTreeMap::new(),
    };
    for path in paths {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        apply_text(&mut registry, &text)
            .map_err(|e| format!("{} is not valid: {e}", path.display()))?;
    }
    Ok(registry)
}

impl Registry {
    /// The resolved keys of the providers that have one (for redaction).
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.keys.values().map(String::as_str)
    }
}

/// Every model: the catalog's, with the `models.json` files applied once [`init`] ran.
pub fn models() -> &'static [Model] {
    match REGISTRY.get() {
        Some(r) => &r.models,
        None => catalog::models(),
    }
}

/// The model `id` of `provider`.
pub fn get_model(provider: &str, id: &str) -> Option<Model> {
    catalog::find_model(models(), provider, id)
}

/// The providers that have models, in first-seen order.
pub fn providers() -> Vec<String> {
    catalog::providers_of(models())
}

/// The `apiKey` a `models.json` file gives `provider`, resolved.
pub fn api_key(provider: &str) -> Option<String> {
    REGISTRY.get()?.keys.get(provider).cloned()
}

/// Whether `provider` has a key: `explicit` (`--api-key` or the config's), a `models.json`
/// one, the provider's environment variable, or other credentials in the environment
/// ([`catalog::has_ambient_credentials`]: AWS, Google ADC, Entra ID).
pub fn has_key(provider: &str, explicit: bool) -> bool {
    explicit
        || api_key(provider).is_some()
        || catalog::env_api_key(provider).is_some()
        || catalog::has_ambient_credentials(provider)
}

/// pi's value syntax for `apiKey` and header values: `$NAME` or `${NAME}` is the variable,
/// `!command` the command's output (run once, at start-up), `$$` and `$!` a literal `$` and
/// `!`, anything else the text itself.
pub fn resolve_value(raw: &str) -> Result<String, String> {
    if let Some(rest) = raw.strip_prefix("$$").or_else(|| raw.strip_prefix("$!")) {
        return Ok(format!("{}{rest}", &raw[1..2]));
    }
    if let Some(command) = raw.strip_prefix('!') {
        let out = std::process::Command::new("sh")
            .args(["-c", command])
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("cannot run `{command}`: {e}"))?;
        if !out.status.success() {
            return Err(format!("`{command}` failed ({})", out.status));
        }
        return Ok(String::from_utf8_lossy(&out.stdout).trim().to_string());
    }
    let var = raw
        .strip_prefix("${")
        .and_then(|r| r.strip_suffix('}'))
        .or_else(|| raw.strip_prefix('$'));
    match var {
        Some(name) if !name.is_empty() => Ok(std::env::var(name).unwrap_or_default()),
        _ => Ok(raw.to_string()),
    }
}

fn apply_text(registry: &mut Registry, text: &str) -> Result<(), String> {
    let file: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let providers = file
        .get("providers")
        .and_then(Value::as_object)
        .ok_or("it needs a \"providers\" object")?;
    for (id, config) in providers {
        let config = config
            .as_object()
            .ok_or_else(|| format!("Provider {id}: not an object"))?;
        apply_provider(registry, id, config)?;
    }
    Ok(())
}

fn str_field<'a>(o: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    o.get(key).and_then(Value::as_str)
}

/// `over`'s fields over `base`'s (both objects; anything else is `over`).
fn merged(base: Option<&Value>, over: Option<&Value>) -> Option<Value> {
    match (base, over) {
        (Some(Value::Object(b)), Some(Value::Object(o))) => {
            let mut m = b.clone();
            m.extend(o.iter().map(|(k, v)| (k.clone(), v.clone())));
            Some(Value::Object(m))
        }
        (b, None) => b.cloned(),
        (_, o) => o.cloned(),
    }
}

/// The resolved values of a `headers` object.
fn headers_of(o: Option<&Value>, what: &str) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for (k, v) in o.and_then(Value::as_object).into_iter().flatten() {
        let raw = v
            .as_str()
            .ok_or_else(|| format!("{what}: header {k} is not a string"))?;
        let value = resolve_value(raw).map_err(|e| format!("{what}: header {k}: {e}"))?;
        out.insert(k.clone(), Value::String(value));
    }
    Ok(out)
}

fn apply_provider(
    registry: &mut Registry,
    id: &str,
    config: &Map<String, Value>,
) -> Result<(), String> {
    let has = |k: &str| config.contains_key(k);
    let definitions = config.get("models").and_then(Value::as_array);
    let overrides = config.get("modelOverrides").and_then(Value::as_object);
    if definitions.is_none_or(|d| d.is_empty())
        && overrides.is_none_or(|o| o.is_empty())
        && !["baseUrl", "headers", "compat", "apiKey", "authHeader"]
            .iter()
            .any(|k| has(k))
    {
        return Err(format!(
            "Provider {id}: must specify \"baseUrl\", \"headers\", \"compat\", \"modelOverrides\", or \"models\"."
        ));
    }
    let key = match str_field(config, "apiKey") {
        Some(raw) => Some(resolve_value(raw).map_err(|e| format!("Provider {id}: apiKey: {e}"))?),
        None => None,
    };
    if let Some(k) = key.as_ref().filter(|k| !k.is_empty()) {
        registry.keys.insert(id.to_string(), k.clone());
    }
    let mut headers = headers_of(config.get("headers"), &format!("Provider {id}"))?;
    if config.get("authHeader").and_then(Value::as_bool) == Some(true) {
        let key = key
            .as_ref()
            .filter(|k| !k.is_empty())
            .ok_or_else(|| format!("Provider {id}: authHeader requires a resolved API key"))?;
        headers.insert("Authorization".into(), json!(format!("Bearer {key}")));
    }
    let base_url = str_field(config, "baseUrl");
    // The provider's own models: its baseUrl and compat apply to the built-in ones too.
    let mut edited: Vec<Value> = Vec::new();
    for m in registry.models.iter().filter(|m| m.provider == id) {
        let mut v = serde_json::to_value(m).map_err(|e| e.to_string())?;
        if let Some(url) = base_url {
            v["baseUrl"] = json!(url);
        }
        if let Some(c) = merged(v.get("compat"), config.get("compat")) {
            v["compat"] = c;
        }
        edited.push(v);
    }
    for definition in definitions.into_iter().flatten() {
        let model = model_from_json(id, definition, config, &edited)?;
        let model_id = model["id"].clone();
        match edited.iter_mut().find(|m| m["id"] == model_id) {
            Some(slot) => *slot = model,
            None => edited.push(model),
        }
    }
    for (model_id, o) in overrides.into_iter().flatten() {
        if let Some(slot) = edited.iter_mut().find(|m| m["id"] == json!(model_id)) {
            apply_override(slot, o, id)?;
        }
    }
    let mut models = Vec::with_capacity(edited.len());
    for mut v in edited {
        let mut h = headers.clone();
        h.extend(
            v.get("headers")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        );
        if !h.is_empty() {
            v["headers"] = Value::Object(h);
        }
        let model: Model = serde_json::from_value(v)
            .map_err(|e| format!("Provider {id}: a model does not read as one: {e}"))?;
        models.push(model);
    }
    // The provider's models keep their place (or go last, for a new provider).
    let at = registry.models.iter().position(|m| m.provider == id);
    registry.models.retain(|m| m.provider != id);
    let at = at.unwrap_or(registry.models.len());
    registry.models.splice(at..at, models);
    Ok(())
}

/// pi's `modelFromJson`: a model entry with the provider's and pi's defaults.
fn model_from_json(
    provider: &str,
    definition: &Value,
    config: &Map<String, Value>,
    existing: &[Value],
) -> Result<Value, String> {
    let d = definition
        .as_object()
        .ok_or_else(|| format!("Provider {provider}: a models entry is not an object"))?;
    let id = str_field(d, "id")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("Provider {provider}: a models entry has no \"id\""))?;
    // pi's defaults: the same id, else a model of the same API, else an OpenAI-compatible one.
    let api_asked = str_field(d, "api").or(str_field(config, "api"));
    let defaults = existing
        .iter()
        .find(|m| m["id"] == json!(id))
        .or_else(|| api_asked.and_then(|a| existing.iter().find(|m| m["api"] == json!(a))))
        .or_else(|| {
            existing
                .iter()
                .find(|m| m["api"] == json!("openai-completions"))
        })
        .or(existing.first());
    let from_defaults = |k: &str| defaults.and_then(|m| m.get(k)).and_then(Value::as_str);
    let api = api_asked.or(from_defaults("api")).ok_or_else(|| {
        format!(
            "Provider {provider}, model {id}: no \"api\" specified. Set at provider or model level."
        )
    })?;
    let base_url = str_field(d, "baseUrl")
        .or(str_field(config, "baseUrl"))
        .or(from_defaults("baseUrl"))
        .ok_or_else(|| {
            format!("Provider {provider}: \"baseUrl\" is required when defining custom models.")
        })?;
    for limit in ["contextWindow", "maxTokens"] {
        if d.get(limit)
            .is_some_and(|v| v.as_f64().is_none_or(|n| n <= 0.0))
        {
            return Err(format!("Provider {provider}, model {id}: invalid {limit}"));
        }
    }
    let mut m = json!({
        "id": id,
        "name": str_field(d, "name").unwrap_or(id),
        "api": api,
        "provider": provider,
        "baseUrl": base_url,
        "reasoning": d.get("reasoning").cloned().unwrap_or(json!(false)),
        "input": d.get("input").cloned().unwrap_or(json!(["text"])),
        "cost": d.get("cost").cloned().unwrap_or(json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0})),
        "contextWindow": d.get("contextWindow").cloned().unwrap_or(json!(crate::model_choice::DEFAULT_CONTEXT_WINDOW)),
        "maxTokens": d.get("maxTokens").cloned().unwrap_or(json!(crate::model_choice::DEFAULT_MAX_OUTPUT_TOKENS)),
    });
    for k in [
        "thinkingLevelMap",
        "inputLimits",
        "promptCache",
        "samplingParams",
        "samplingParamsByThinkingLevel",
    ] {
        if let Some(v) = d.get(k) {
            m[k] = v.clone();
        }
    }
    if let Some(c) = merged(config.get("compat"), d.get("compat")) {
        m["compat"] = c;
    }
    let headers = headers_of(
        d.get("headers"),
        &format!("Provider {provider}, model {id}"),
    )?;
    if !headers.is_empty() {
        m["headers"] = Value::Object(headers);
    }
    Ok(m)
}

/// pi's `applyModelOverride`: object fields merge field by field, others replace.
fn apply_override(model: &mut Value, o: &Value, provider: &str) -> Result<(), String> {
    let o = o
        .as_object()
        .ok_or_else(|| format!("Provider {provider}: a modelOverrides entry is not an object"))?;
    for (k, v) in o {
        let value = match k.as_str() {
            "headers" => {
                let h = headers_of(Some(v), &format!("Provider {provider}, override"))?;
                merged(model.get(k), Some(&Value::Object(h)))
            }
            "cost" | "thinkingLevelMap" | "promptCache" | "inputLimits" | "compat" => {
                merged(model.get(k), Some(v))
            }
            _ => Some(v.clone()),
        };
        if let Some(value) = value {
            model[k.as_str()] = value;
        }
    }
    Ok(())
}

/// The models a prompt can use: the catalog's (and `models.json`'s) whose provider has a key,
/// and the current model (which has a key, or tern would not have started) in its place.
pub fn available(current: &Model) -> Vec<Model> {
    let mut models: Vec<Model> = models()
        .iter()
        .filter(|m| {
            (m.provider == current.provider && m.id == current.id) || has_key(&m.provider, false)
        })
        .cloned()
        .collect();
    if !models
        .iter()
        .any(|m| m.provider == current.provider && m.id == current.id)
    {
        models.insert(0, current.clone());
    }
    models
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(text: &str) -> Result<Registry, String> {
        let mut r = Registry {
            models: catalog::models().to_vec(),
            keys: BTreeMap::new(),
        };
        apply_text(&mut r, text).map(|()| r)
    }

    #[test]
    fn a_custom_provider_gets_pis_defaults_and_the_providers_fields() {
        let r = registry(
            r#"{"providers": {"lab": {
                "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
                "apiKey": "sk-literal-123", "headers": {"X-Team": "blue"},
                "compat": {"supportsStore": false, "maxTokensField": "max_tokens"},
                "models": [
                    {"id": "small"},
                    {"id": "big", "name": "Big One", "contextWindow": 32768, "maxTokens": 4096,
                     "input": ["text", "image"], "compat": {"maxTokensField": "max_completion_tokens"}}
                ]}}}"#,
        )
        .unwrap();
        let lab: Vec<&Model> = r.models.iter().filter(|m| m.provider == "lab").collect();
        assert_eq!(lab.len(), 2);
        let (small, big) = (lab[0], lab[1]);
        assert_eq!(
            (small.context_window, small.max_tokens, small.input.clone()),
            (128_000, 16_384, vec!["text".to_string()])
        );
        assert_eq!(
            (small.name.as_str(), small.api.as_str()),
            ("small", "openai-completions")
        );
        assert_eq!(small.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(
            (big.name.as_str(), big.context_window, big.max_tokens),
            ("Big One", 32_768, 4_096)
        );
        assert_eq!(big.input, ["text", "image"]);
        // The model's compat wins field by field over the provider's.
        assert_eq!(
            big.extra["compat"],
            json!({"supportsStore": false, "maxTokensField": "max_completion_tokens"})
        );
        assert_eq!(big.headers.as_ref().unwrap()["X-Team"], "blue");
        assert_eq!(r.keys["lab"], "sk-literal-123");
    }

    #[test]
    fn a_built_in_provider_takes_a_base_url_overrides_and_replacements() {
        let r = registry(
            r#"{"providers": {"groq": {
                "baseUrl": "https://proxy.example/v1",
                "modelOverrides": {"llama-3.3-70b-versatile": {"name": "Seventy", "cost": {"input": 9}},
                                   "no-such-model": {"name": "ignored"}},
                "models": [{"id": "llama-3.1-8b-instant", "contextWindow": 1000}]
            }}}"#,
        )
        .unwrap();
        let groq: Vec<&Model> = r.models.iter().filter(|m| m.provider == "groq").collect();
        assert_eq!(
            groq.len(),
            catalog::models()
                .iter()
                .filter(|m| m.provider == "groq")
                .count()
        );
        assert!(groq
            .iter()
            .all(|m| m.base_url == "https://proxy.example/v1"));
        let seventy = groq
            .iter()
            .find(|m| m.id == "llama-3.3-70b-versatile")
            .unwrap();
        let built_in = catalog::get_model("groq", "llama-3.3-70b-versatile").unwrap();
        assert_eq!(seventy.name, "Seventy");
        assert_eq!(seventy.cost.input, 9.0);
        assert_eq!(seventy.cost.output, built_in.cost.output);
        let small = groq
            .iter()
            .find(|m| m.id == "llama-3.1-8b-instant")
            .unwrap();
        assert_eq!((small.context_window, small.max_tokens), (1000, 16_384));
        // The replacement keeps the built-in's API.
        assert_eq!(small.api, built_in.api);
    }

    #[test]
    fn malformed_entries_are_errors_in_pis_words() {
        let cases = [
            (r#"{"providers": {"x": {}}}"#, "Provider x: must specify"),
            (
                r#"{"providers": {"x": {"baseUrl": "http://h", "models": [{"id": "m"}]}}}"#,
                "Provider x, model m: no \"api\" specified",
            ),
            (
                r#"{"providers": {"x": {"api": "openai-completions", "models": [{"id": "m"}]}}}"#,
                "Provider x: \"baseUrl\" is required when defining custom models.",
            ),
            (
                r#"{"providers": {"x": {"api": "openai-completions", "baseUrl": "http://h", "models": [{"id": "m", "maxTokens": 0}]}}}"#,
                "Provider x, model m: invalid maxTokens",
            ),
            (r#"{"models": []}"#, "\"providers\""),
        ];
        for (text, want) in cases {
            let e = registry(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn values_resolve_as_pi_resolves_them() {
        let path = std::env::var("PATH").unwrap_or_default();
        assert_eq!(resolve_value("$PATH").unwrap(), path);
        assert_eq!(resolve_value("${PATH}").unwrap(), path);
        assert_eq!(
            resolve_value("!echo from-a-command").unwrap(),
            "from-a-command"
        );
        assert_eq!(resolve_value("$$literal").unwrap(), "$literal");
        assert_eq!(resolve_value("$!bang").unwrap(), "!bang");
        assert_eq!(resolve_value("plain-key").unwrap(), "plain-key");
        assert!(resolve_value("!exit 3").is_err());
    }
}
