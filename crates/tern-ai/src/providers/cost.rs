//! Cost of a response from the model's price table (the reference's `calculateCost`).

use serde_json::Value;

use crate::message::Usage;
use crate::model::Model;

struct Rates {
    input: f64,
    output: f64,
    cache_read: f64,
    cache_write: f64,
}

/// Sets `usage.cost` from the model's prices: the tier with the largest `inputTokensAbove`
/// below `input + cacheRead + cacheWrite` replaces the base rates; 1-hour cache writes cost
/// twice the input price; `totalFromProvider` is false.
pub fn calculate_cost(model: &Model, usage: &mut Usage) {
    let tokens = usage.input as f64 + usage.cache_read as f64 + usage.cache_write as f64;
    let c = &model.cost;
    let mut rates = Rates {
        input: c.input,
        output: c.output,
        cache_read: c.cache_read,
        cache_write: c.cache_write,
    };
    let mut matched = -1.0f64;
    if let Some(Value::Array(tiers)) = c.extra.get("tiers") {
        for t in tiers {
            let above = t
                .get("inputTokensAbove")
                .and_then(Value::as_f64)
                .unwrap_or(f64::INFINITY);
            if tokens > above && above > matched {
                let f = |k: &str| t.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                rates = Rates {
                    input: f("input"),
                    output: f("output"),
                    cache_read: f("cacheRead"),
                    cache_write: f("cacheWrite"),
                };
                matched = above;
            }
        }
    }
    let long = usage.cache_write_1h.unwrap_or(0) as f64;
    let short = usage.cache_write as f64 - long;
    usage.cost.input = rates.input / 1e6 * usage.input as f64;
    usage.cost.output = rates.output / 1e6 * usage.output as f64;
    usage.cost.cache_read = rates.cache_read / 1e6 * usage.cache_read as f64;
    usage.cost.cache_write = (rates.cache_write * short + rates.input * 2.0 * long) / 1e6;
    usage.cost.total =
        usage.cost.input + usage.cost.output + usage.cost.cache_read + usage.cost.cache_write;
    usage.cost.total_from_provider = Some(false);
}

/// Scales all cost parts by `factor` (OpenAI service tiers), keeping the total consistent.
pub fn scale_cost(usage: &mut Usage, factor: f64) {
    if factor == 1.0 {
        return;
    }
    usage.cost.input *= factor;
    usage.cost.output *= factor;
    usage.cost.cache_read *= factor;
    usage.cost.cache_write *= factor;
    usage.cost.total =
        usage.cost.input + usage.cost.output + usage.cost.cache_read + usage.cost.cache_write;
}

fn valid_cost(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64)
        .filter(|f| f.is_finite() && *f >= 0.0)
}

/// OpenRouter's billed cost: `cost` when not BYOK; BYOK adds the upstream inference cost.
pub fn apply_openrouter_cost(usage: &mut Usage, reported: &Value) {
    let Some(cost) = valid_cost(reported.get("cost")) else {
        return;
    };
    match reported.get("is_byok").and_then(Value::as_bool) {
        Some(false) => {
            usage.cost.total = cost;
            usage.cost.total_from_provider = Some(true);
        }
        Some(true) => {
            let Some(details) = reported.get("cost_details") else {
                return;
            };
            let upstream = match details.get("upstream_inference_cost") {
                Some(Value::Null) => {
                    match (
                        valid_cost(details.get("upstream_inference_prompt_cost")),
                        valid_cost(details.get("upstream_inference_completions_cost")),
                    ) {
                        (Some(a), Some(b)) => Some(a + b),
                        _ => None,
                    }
                }
                other => valid_cost(other),
            };
            if let Some(u) = upstream {
                usage.cost.total = cost + u;
                usage.cost.total_from_provider = Some(true);
            }
        }
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tiers_and_long_writes() {
        let model: Model = serde_json::from_value(json!({
            "id": "m", "cost": {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75,
            "tiers": [{"inputTokensAbove": 200000, "input": 6.0, "output": 22.5, "cacheRead": 0.6, "cacheWrite": 7.5}]}
        }))
        .unwrap();
        let mut u = Usage {
            input: 1000,
            output: 100,
            cache_write: 300,
            cache_write_1h: Some(100),
            ..Usage::default()
        };
        calculate_cost(&model, &mut u);
        assert!((u.cost.cache_write - (3.75 * 200.0 + 6.0 * 100.0) / 1e6).abs() < 1e-15);
        u.input = 300_000;
        calculate_cost(&model, &mut u);
        assert!((u.cost.input - 6.0 * 0.3).abs() < 1e-12);
    }
}
