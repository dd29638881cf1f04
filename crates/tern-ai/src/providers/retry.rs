//! Retries before the first byte: which failures are retried and how long to wait
//! (the reference's `retryProviderRequest`).

use std::time::Duration;

use reqwest::header::HeaderMap;

/// Server-requested delays above this fail at once unless `maxRetryDelayMs` says otherwise.
pub const DEFAULT_MAX_RETRY_DELAY_MS: u64 = 60_000;

/// Whether a failed request may be retried: `x-should-retry` decides when present, else
/// 408, 409, 429, 5xx and connection errors (`status: None`).
pub fn is_retryable(status: Option<u16>, headers: Option<&HeaderMap>) -> bool {
    if let Some(v) = headers
        .and_then(|h| h.get("x-should-retry"))
        .and_then(|v| v.to_str().ok())
    {
        if v == "true" {
            return true;
        }
        if v == "false" {
            return false;
        }
    }
    match status {
        None => true,
        Some(s) => s == 408 || s == 409 || s == 429 || s >= 500,
    }
}

/// Why a retry was refused.
#[derive(Debug, Clone, PartialEq)]
pub struct DelayTooLong {
    /// The requested delay.
    pub delay_ms: f64,
    /// The cap.
    pub max_ms: u64,
}

impl DelayTooLong {
    /// The reference's message text, followed by the provider's error message.
    pub fn message(&self, provider_message: &str) -> String {
        format!(
            "Server requested {}s retry delay (max: {}s). {provider_message}",
            (self.delay_ms / 1000.0).ceil() as i64,
            (self.max_ms as f64 / 1000.0).ceil() as i64
        )
    }
}

fn validate(delay_ms: f64, max_retry_delay_ms: Option<u64>) -> Result<Duration, DelayTooLong> {
    let max = max_retry_delay_ms.unwrap_or(DEFAULT_MAX_RETRY_DELAY_MS);
    if max > 0 && delay_ms > max as f64 {
        return Err(DelayTooLong {
            delay_ms,
            max_ms: max,
        });
    }
    Ok(Duration::from_millis(delay_ms.max(0.0) as u64))
}

fn parse_float_prefix(s: &str) -> Option<f64> {
    let s = s.trim();
    let end = s
        .char_indices()
        .take_while(|(i, c)| {
            c.is_ascii_digit() || *c == '.' || (*i == 0 && (*c == '-' || *c == '+'))
        })
        .map(|(i, c)| i + c.len_utf8())
        .last()?;
    s[..end].parse().ok()
}

/// The delay before retry number `retry_index` (0-based): `retry-after-ms`, `retry-after`
/// (seconds or an HTTP date), else 0.5 s·2^k capped at 8 s with up to 25 % jitter.
pub fn retry_delay(
    headers: Option<&HeaderMap>,
    retry_index: u32,
    max_retry_delay_ms: Option<u64>,
    jitter: f64,
) -> Result<Duration, DelayTooLong> {
    let get = |name: &str| {
        headers
            .and_then(|h| h.get(name))
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    if let Some(v) = get("retry-after-ms").filter(|v| !v.is_empty()) {
        if let Some(ms) = parse_float_prefix(&v).filter(|f| f.is_finite()) {
            return validate(ms, max_retry_delay_ms);
        }
    }
    if let Some(v) = get("retry-after").filter(|v| !v.is_empty()) {
        let ms = match parse_float_prefix(&v) {
            Some(secs) => Some(secs * 1000.0),
            None => parse_http_date_ms(&v).map(|t| t - crate::clock::now_ms() as f64),
        };
        if let Some(ms) = ms.filter(|f| f.is_finite()) {
            return validate(ms, max_retry_delay_ms);
        }
    }
    let exp = (0.5 * 2f64.powi(retry_index.min(30) as i32)).min(8.0) * 1000.0;
    Ok(Duration::from_millis(
        (exp * (1.0 - jitter.clamp(0.0, 1.0) * 0.25)) as u64,
    ))
}

// IMF-fixdate, e.g. `Wed, 21 Oct 2015 07:28:00 GMT`, in ms since the epoch.
fn parse_http_date_ms(s: &str) -> Option<f64> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    if parts.len() < 5 {
        return None;
    }
    let day: i64 = parts[1].parse().ok()?;
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m.eq_ignore_ascii_case(parts[2]))? as i64
        + 1;
    let year: i64 = parts[3].parse().ok()?;
    let hms: Vec<i64> = parts[4].split(':').filter_map(|p| p.parse().ok()).collect();
    if hms.len() != 3 {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    Some(((days * 86400 + hms[0] * 3600 + hms[1] * 60 + hms[2]) * 1000) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn delays() {
        let mut h = HeaderMap::new();
        assert_eq!(
            retry_delay(None, 0, None, 0.0).unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(
            retry_delay(None, 10, None, 0.0).unwrap(),
            Duration::from_millis(8000)
        );
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(
            retry_delay(Some(&h), 0, None, 0.0).unwrap(),
            Duration::from_millis(2000)
        );
        h.insert("retry-after-ms", HeaderValue::from_static("120"));
        assert_eq!(
            retry_delay(Some(&h), 0, None, 0.0).unwrap(),
            Duration::from_millis(120)
        );
        h.insert("retry-after-ms", HeaderValue::from_static("90000"));
        let e = retry_delay(Some(&h), 0, None, 0.0).unwrap_err();
        assert_eq!(
            e.message("x"),
            "Server requested 90s retry delay (max: 60s). x"
        );
        assert!(parse_http_date_ms("Thu, 01 Jan 1970 00:00:01 GMT") == Some(1000.0));
    }

    #[test]
    fn retryable() {
        assert!(is_retryable(Some(429), None));
        assert!(is_retryable(Some(503), None));
        assert!(!is_retryable(Some(400), None));
        assert!(is_retryable(None, None));
        let mut h = HeaderMap::new();
        h.insert("x-should-retry", HeaderValue::from_static("false"));
        assert!(!is_retryable(Some(429), Some(&h)));
    }
}
