//! The generated catalog against the reference: every chat model pi-ai 1.6.0 lists for the
//! wire APIs tern implements, field for field as tern loads and renders it.
//!
//! `tests/data/catalog_expected.json` is written from the reference's `getModels()` by
//! `node scripts/gen-catalog.mjs` (after `npm ci` in `tests/providers/reference`).

use std::collections::BTreeMap;

use serde_json::Value;
use tern_ai::providers::catalog;

fn expected() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/catalog_expected.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_model_list_is_the_references_for_the_implemented_apis() {
    let expected = expected();
    let actual: Vec<Value> = catalog::models()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    let key = |m: &Value| (m["provider"].to_string(), m["id"].to_string());
    let want: BTreeMap<_, _> = expected.iter().map(|m| (key(m), m)).collect();
    let have: BTreeMap<_, _> = actual.iter().map(|m| (key(m), m)).collect();
    let missing: Vec<_> = want.keys().filter(|k| !have.contains_key(*k)).collect();
    let extra: Vec<_> = have.keys().filter(|k| !want.contains_key(*k)).collect();
    assert!(missing.is_empty(), "missing: {missing:?}");
    assert!(extra.is_empty(), "not in the reference: {extra:?}");
    assert_eq!(expected.len(), actual.len(), "duplicates");
    for (k, w) in &want {
        assert_eq!(have[k], *w, "{k:?}");
    }
    for m in &expected {
        let api = m["api"].as_str().unwrap();
        assert!(tern_ai::providers::APIS.contains(&api), "{api}");
    }
}

#[test]
fn every_implemented_api_has_models_and_providers_their_key_variables() {
    for api in tern_ai::providers::APIS {
        assert!(catalog::models().iter().any(|m| m.api == api), "{api}");
    }
    // Only Bedrock and ChatGPT's Codex have no key variable: AWS credentials come from the
    // SDK's credential chain, Codex's token from an OAuth login.
    let without: Vec<String> = catalog::providers()
        .into_iter()
        .filter(|p| catalog::env_api_key_vars(p).is_empty())
        .collect();
    assert_eq!(without, ["amazon-bedrock", "openai-codex"]);
    let m = catalog::get_model("anthropic", "claude-haiku-5-5").unwrap();
    assert_eq!(m.cost.extra["tiers"][0]["inputTokensAbove"], 100000);
}
