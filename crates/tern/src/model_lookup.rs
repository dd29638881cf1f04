//! `--model PATTERN` resolved as pi's `model-resolver.js` resolves it (exact id, `provider/id`,
//! a fuzzy part of an id or name, a `:thinking` suffix), and `--list-models [SEARCH]` (pi's
//! `list-models.js`: the models with credentials, fuzzy-filtered, in a table).

use tern_ai::{Model, ThinkingLevel};

use crate::models_file;

/// What a pattern resolved to.
#[derive(Debug)]
pub enum Lookup<'a> {
    /// One model, and the thinking level of a `:level` suffix.
    Found(&'a Model, Option<ThinkingLevel>),
    /// Several providers offer it and credentials do not choose.
    Ambiguous(Vec<&'a Model>),
    /// Nothing matches.
    NotFound,
}

/// A known provider prefix of `text` (`provider/rest`), longest first, and the rest.
fn split_provider<'a>(text: &'a str, pool: &[&Model]) -> Option<(String, &'a str)> {
    let lower = text.to_lowercase();
    let mut best: Option<(String, &str)> = None;
    for m in pool {
        let prefix = m.provider.to_lowercase();
        if prefix.is_empty() || best.as_ref().is_some_and(|(p, _)| p.len() >= prefix.len()) {
            continue;
        }
        if lower.len() > prefix.len()
            && lower.starts_with(&prefix)
            && lower[prefix.len()..].starts_with('/')
        {
            let rest = text[prefix.len() + 1..].trim();
            if !rest.is_empty() {
                best = Some((m.provider.clone(), rest));
            }
        }
    }
    best
}

fn fuzzy_matches<'a>(text: &str, models: &[&'a Model]) -> Vec<&'a Model> {
    let lower = text.to_lowercase();
    models
        .iter()
        .copied()
        .filter(|m| m.id.to_lowercase().contains(&lower) || m.name.to_lowercase().contains(&lower))
        .collect()
}

/// An alias (`claude-sonnet-4-5`) rather than a dated version (`…-20250929`).
fn is_alias(id: &str) -> bool {
    let dated = id.len() > 9
        && id.as_bytes()[id.len() - 9] == b'-'
        && id[id.len() - 8..].bytes().all(|b| b.is_ascii_digit());
    id.ends_with("-latest") || !dated
}

/// pi's pick among fuzzy matches: aliases first, then the greatest id.
fn best_fuzzy<'a>(matches: &[&'a Model]) -> Option<&'a Model> {
    let aliases: Vec<&Model> = matches
        .iter()
        .copied()
        .filter(|m| is_alias(&m.id))
        .collect();
    let pool = if aliases.is_empty() {
        matches
    } else {
        &aliases
    };
    pool.iter().copied().max_by(|a, b| a.id.cmp(&b.id))
}

fn providers_of(models: &[&Model]) -> usize {
    let mut p: Vec<&str> = models.iter().map(|m| m.provider.as_str()).collect();
    p.sort_unstable();
    p.dedup();
    p.len()
}

fn select_reference<'a>(
    text: &str,
    pool: &[&'a Model],
    usable: &dyn Fn(&str) -> bool,
) -> Option<Lookup<'a>> {
    let lower = text.to_lowercase();
    let raw: Vec<&Model> = pool
        .iter()
        .copied()
        .filter(|m| m.id.to_lowercase() == lower)
        .collect();
    let named = split_provider(text, pool).and_then(|(provider, rest)| {
        let of_provider: Vec<&Model> = pool
            .iter()
            .copied()
            .filter(|m| m.provider == provider)
            .collect();
        let rest_lower = rest.to_lowercase();
        of_provider
            .iter()
            .copied()
            .find(|m| m.id.to_lowercase() == rest_lower)
            .or_else(|| raw.iter().copied().find(|m| m.provider == provider))
            .or_else(|| best_fuzzy(&fuzzy_matches(rest, &of_provider)))
    });
    let others: Vec<&Model> = raw
        .iter()
        .copied()
        .filter(|m| named.is_none_or(|n| !std::ptr::eq(*m, n)))
        .collect();
    let candidates: Vec<&Model> = named.into_iter().chain(others.iter().copied()).collect();
    if candidates.is_empty() {
        return None;
    }
    let found = |m: &'a Model| Some(Lookup::Found(m, None));
    if providers_of(&candidates) == 1 {
        return found(candidates[0]);
    }
    if let Some(n) = named.filter(|n| usable(&n.provider)) {
        return found(n);
    }
    let usable_others: Vec<&Model> = others
        .iter()
        .copied()
        .filter(|m| usable(&m.provider))
        .collect();
    match (usable_others.as_slice(), named) {
        ([one], _) => found(one),
        ([], Some(n)) => found(n),
        _ => Some(Lookup::Ambiguous(candidates)),
    }
}

fn select_fuzzy<'a>(matches: &[&'a Model], usable: &dyn Fn(&str) -> bool) -> Option<Lookup<'a>> {
    if matches.is_empty() {
        return None;
    }
    let usable_matches: Vec<&Model> = if providers_of(matches) > 1 {
        matches
            .iter()
            .copied()
            .filter(|m| usable(&m.provider))
            .collect()
    } else {
        Vec::new()
    };
    let pool = if usable_matches.is_empty() {
        matches
    } else {
        &usable_matches
    };
    let best = best_fuzzy(pool)?;
    let tied: Vec<&Model> = pool.iter().copied().filter(|m| m.id == best.id).collect();
    if providers_of(&tied) == 1 {
        Some(Lookup::Found(best, None))
    } else {
        Some(Lookup::Ambiguous(tied))
    }
}

/// `text` without a `:level` suffix that names a thinking level, and the level.
pub fn split_thinking(text: &str) -> Option<(&str, ThinkingLevel)> {
    let (base, suffix) = text.rsplit_once(':')?;
    ThinkingLevel::parse(suffix).map(|l| (base, l))
}

fn resolve_text<'a>(text: &str, pool: &[&'a Model], usable: &dyn Fn(&str) -> bool) -> Lookup<'a> {
    if let Some(found) = select_reference(text, pool, usable) {
        return found;
    }
    if let Some(found) = select_fuzzy(&fuzzy_matches(text, pool), usable) {
        return found;
    }
    // The whole text first: an id may hold a colon (`…:batch`); then a `:level` suffix.
    match split_thinking(text) {
        Some((base, level)) => match resolve_text(base, pool, usable) {
            Lookup::Found(m, _) => Lookup::Found(m, Some(level)),
            other => other,
        },
        None => Lookup::NotFound,
    }
}

/// Resolves `text` among the catalog's models (with `models.json` applied) (of `provider` only, when given); `usable`
/// says which providers have credentials, and only breaks ties between providers.
pub fn find(text: &str, provider: Option<&str>, usable: &dyn Fn(&str) -> bool) -> Lookup<'static> {
    let text = text.trim();
    if text.is_empty() {
        return Lookup::NotFound;
    }
    let pool: Vec<&Model> = models_file::models()
        .iter()
        .filter(|m| provider.is_none_or(|p| m.provider.eq_ignore_ascii_case(p)))
        .collect();
    resolve_text(text, &pool, usable)
}

/// A token of letters then digits, or digits then letters, the other way round (pi tries
/// `4o` for `o4`).
fn swapped(token: &str) -> Option<String> {
    let leading_digit = token.starts_with(|c: char| c.is_ascii_digit());
    let at = token.find(|c: char| c.is_ascii_digit() != leading_digit)?;
    let (a, b) = token.split_at(at);
    let letters = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase());
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    ((letters(a) && digits(b)) || (digits(a) && letters(b))).then(|| format!("{b}{a}"))
}

/// pi's match of one lowercase query token in `text`: its characters in order.
fn fuzzy_token(token: &str, text: &str) -> bool {
    let subsequence = |q: &str| {
        let mut rest = text.chars();
        q.chars().all(|c| rest.any(|t| t == c))
    };
    subsequence(token) || swapped(token).is_some_and(|t| subsequence(&t))
}

/// Whether `search` matches `provider id` as pi's `fuzzyFilter` does: every token (split at
/// spaces and `/`) a subsequence, case-insensitively.
pub fn list_matches(search: &str, model: &Model) -> bool {
    let text = format!("{} {}", model.provider, model.id).to_lowercase();
    search
        .to_lowercase()
        .split(|c: char| c.is_whitespace() || c == '/')
        .filter(|t| !t.is_empty())
        .all(|t| fuzzy_token(t, &text))
}

/// pi's token counts: `200K`, `1M`, `1.5M`.
fn tokens(n: u64) -> String {
    let f = |v: f64, unit: &str| {
        if v.fract() == 0.0 {
            format!("{v}{unit}")
        } else {
            format!("{v:.1}{unit}")
        }
    };
    if n >= 1_000_000 {
        f(n as f64 / 1e6, "M")
    } else if n >= 1_000 {
        f(n as f64 / 1e3, "K")
    } else {
        n.to_string()
    }
}

/// The `--list-models` output: a table of the models whose provider has a key (or a line
/// that says none has, or none matches), sorted by provider, then id.
pub fn list(search: Option<&str>, usable: &dyn Fn(&str) -> bool) -> String {
    let mut models: Vec<&Model> = models_file::models()
        .iter()
        .filter(|m| usable(&m.provider))
        .collect();
    if models.is_empty() {
        return format!(
            "No models available: no provider has an API key here.\n{}",
            crate::model_choice::provider_help()
        );
    }
    if let Some(s) = search.filter(|s| !s.trim().is_empty()) {
        models.retain(|m| list_matches(s, m));
        if models.is_empty() {
            return format!("No models matching \"{s}\"");
        }
    }
    models.sort_by(|a, b| (&a.provider, &a.id).cmp(&(&b.provider, &b.id)));
    let yes = |b: bool| if b { "yes" } else { "no" };
    let mut rows = vec![[
        "provider".to_string(),
        "model".into(),
        "context".into(),
        "max-out".into(),
        "thinking".into(),
        "images".into(),
    ]];
    rows.extend(models.iter().map(|m| {
        [
            m.provider.clone(),
            m.id.clone(),
            tokens(m.context_window),
            tokens(m.max_tokens),
            yes(m.reasoning).into(),
            yes(m.input.iter().any(|i| i == "image")).into(),
        ]
    }));
    let widths: Vec<usize> = (0..6)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    rows.iter()
        .map(|r| {
            r.iter()
                .zip(&widths)
                .map(|(cell, w)| format!("{cell:<w$}"))
                .collect::<Vec<_>>()
                .join("  ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str, provider: Option<&str>) -> (String, Option<ThinkingLevel>) {
        match find(text, provider, &|_| false) {
            Lookup::Found(m, level) => (format!("{}/{}", m.provider, m.id), level),
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn exact_prefixed_fuzzy_and_suffixed_patterns_resolve_as_pi() {
        assert_eq!(
            found("groq/llama-3.3-70b-versatile", None).0,
            "groq/llama-3.3-70b-versatile"
        );
        assert_eq!(found("70b", Some("groq")).0, "groq/llama-3.3-70b-versatile");
        assert_eq!(found("groq/8b", None).0, "groq/llama-3.1-8b-instant");
        assert_eq!(
            found("groq/8b:high", None),
            (
                "groq/llama-3.1-8b-instant".into(),
                Some(ThinkingLevel::High)
            )
        );
        assert!(matches!(
            find("no-such-model-xyz", None, &|_| false),
            Lookup::NotFound
        ));
        // An exact id wins over ids that only end with it (`openai/gpt-oss-120b`).
        assert_eq!(found("gpt-oss-120b", None).0, "cerebras/gpt-oss-120b");
        // Offered by several providers, none with a key: pi asks for --provider.
        assert!(matches!(
            find("claude-haiku-4-5", None, &|_| false),
            Lookup::Ambiguous(_)
        ));
        // A key decides.
        match find("claude-haiku-4-5", None, &|p| p == "opencode") {
            Lookup::Found(m, _) => assert_eq!(m.provider, "opencode"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn list_search_and_token_counts_follow_pi() {
        let m = models_file::get_model("groq", "llama-3.3-70b-versatile").expect("in the catalog");
        assert!(list_matches("groq 70b", &m));
        assert!(list_matches("grq/llm", &m));
        assert!(!list_matches("anthropic", &m));
        assert_eq!(
            (tokens(200_000), tokens(1_000_000), tokens(1_500_000)),
            ("200K".into(), "1M".into(), "1.5M".into())
        );
        assert_eq!(tokens(131_072), "131.1K");
        assert!(is_alias("claude-sonnet-4-5") && !is_alias("claude-sonnet-4-5-20250929"));
        assert_eq!(swapped("o4").as_deref(), Some("4o"));
        assert_eq!(swapped("gpt4o"), None);
    }
}
