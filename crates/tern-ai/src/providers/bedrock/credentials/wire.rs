//! What the credential sources share on the wire: one small HTTP exchange (bounded body,
//! timeout, abort), the ISO 8601 timestamps of `Expiration` fields and the few XML elements
//! of an STS answer. Nothing here panics on what a server or a file sends.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::{AwsCredentials, Fresh};
use crate::stream_fn::StreamOptions;

/// Answers larger than this are cut (a credentials document is a few KiB).
const MAX_BODY: usize = 256 * 1024;

/// One request to a credentials endpoint.
pub(crate) struct Exchange<'a> {
    /// `GET`, `PUT` or `POST`.
    pub method: &'a str,
    /// The full URL.
    pub url: &'a str,
    /// Headers to send.
    pub headers: &'a [(String, String)],
    /// The body (empty for none).
    pub body: String,
    /// How long the whole exchange may take.
    pub timeout: Duration,
}

fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            // A credentials answer never redirects; following one could leak a token.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_else(|_| reqwest::Client::new())
    })
}

/// Sends `x`; the status and the body text, or why nothing came back.
pub(crate) async fn exchange(
    x: Exchange<'_>,
    options: &StreamOptions,
) -> Result<(u16, String), String> {
    exchange_with_headers(x, options)
        .await
        .map(|(status, _, body)| (status, body))
}

/// [`exchange`] with the answer's headers (an AWS error's type travels in one).
pub(crate) async fn exchange_with_headers(
    x: Exchange<'_>,
    options: &StreamOptions,
) -> Result<(u16, reqwest::header::HeaderMap, String), String> {
    let method = reqwest::Method::from_bytes(x.method.as_bytes())
        .map_err(|_| format!("bad method {}", x.method))?;
    let mut builder = client().request(method, x.url).timeout(x.timeout);
    for (k, v) in x.headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    if !x.body.is_empty() {
        builder = builder.body(x.body);
    }
    let work = async {
        let mut response = builder.send().await.map_err(describe)?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(describe)? {
            let room = MAX_BODY.saturating_sub(body.len());
            body.extend_from_slice(chunk.get(..room.min(chunk.len())).unwrap_or_default());
            if body.len() >= MAX_BODY {
                break;
            }
        }
        Ok((status, headers, String::from_utf8_lossy(&body).into_owned()))
    };
    tokio::select! {
        biased;
        _ = options.signal.cancelled() => Err("aborted".to_string()),
        r = work => r,
    }
}

/// A reqwest error without the URL's query (which may carry a token).
fn describe(e: reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "could not connect".into()
    } else {
        e.without_url().to_string()
    }
}

/// The keys of a JSON credentials document whose fields are named `[id, secret, token]`
/// (each source names them its own way); `None` without a non-empty id and secret.
pub(crate) fn json_keys(doc: &Value, [id, secret, token]: [&str; 3]) -> Option<AwsCredentials> {
    let text = |k: &str| {
        doc.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    Some(AwsCredentials {
        access_key_id: text(id)?,
        secret_access_key: text(secret)?,
        session_token: text(token),
    })
}

/// A JSON document's `Expiration`: absent or null for long-lived keys, else an ISO 8601
/// string.
pub(crate) fn json_expiration(doc: &Value) -> Result<Option<SystemTime>, String> {
    match doc.get("Expiration") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => parse_time(s)
            .map(Some)
            .ok_or_else(|| format!("its Expiration {s:?} is not a time")),
        Some(_) => Err("its Expiration is not a string".into()),
    }
}

/// The keys and `Expiration` of a JSON credentials document (fields named as in
/// [`json_keys`]); `lacks` is the error without an id and secret.
pub(crate) fn json_fresh(doc: &Value, names: [&str; 3], lacks: &str) -> Result<Fresh, String> {
    let credentials = json_keys(doc, names).ok_or(lacks)?;
    let expires = json_expiration(doc)?;
    Ok(Fresh {
        credentials,
        expires,
    })
}

/// `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)` as a time; `None` for anything else.
pub(crate) fn parse_time(s: &str) -> Option<SystemTime> {
    let s = s.trim();
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = s.get(from..from + len)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let (y, mo, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (h, mi, sec) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    let seps = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if seps.iter().any(|&(i, c)| s.as_bytes().get(i) != Some(&c))
        || !matches!(s.as_bytes().get(10), Some(b'T' | b't' | b' '))
        || !(1..=12).contains(&mo)
        || !(1..=31).contains(&d)
        || h > 23
        || mi > 59
        || sec > 60
    {
        return None;
    }
    let mut rest = s.get(19..)?;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        rest = frac.get(digits..)?;
    }
    let offset = match rest {
        "Z" | "z" | "" => 0,
        _ => {
            let sign = match rest.as_bytes().first() {
                Some(b'+') => 1,
                Some(b'-') => -1,
                _ => return None,
            };
            let (oh, om) = rest.get(1..)?.split_once(':')?;
            let (oh, om): (i64, i64) = (oh.parse().ok()?, om.parse().ok()?);
            sign * (oh * 3600 + om * 60)
        }
    };
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset;
    let secs = u64::try_from(secs).ok()?;
    UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The text of the first `<tag>...</tag>` in `xml`, entities decoded.
pub(crate) fn xml_text(xml: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = xml.find(&open)? + open.len();
    let len = xml.get(start..)?.find(&close)?;
    let raw = xml.get(start..start + len)?;
    Some(decode_entities(raw.trim()))
}

fn decode_entities(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(rest.get(..i).unwrap_or(""));
        let after = rest.get(i..).unwrap_or("");
        let end = after.find(';').filter(|&e| e <= 10);
        let entity = end.and_then(|e| after.get(1..e));
        let decoded = match entity {
            Some("amp") => Some('&'),
            Some("lt") => Some('<'),
            Some("gt") => Some('>'),
            Some("quot") => Some('"'),
            Some("apos") => Some('\''),
            Some(e) if e.starts_with("#x") => e
                .get(2..)
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .and_then(char::from_u32),
            Some(e) if e.starts_with('#') => e
                .get(1..)
                .and_then(|n| n.parse().ok())
                .and_then(char::from_u32),
            _ => None,
        };
        match (decoded, end) {
            (Some(c), Some(e)) => {
                out.push(c);
                rest = after.get(e + 1..).unwrap_or("");
            }
            _ => {
                out.push('&');
                rest = after.get(1..).unwrap_or("");
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(t: SystemTime) -> u64 {
        t.duration_since(UNIX_EPOCH).unwrap().as_secs()
    }

    #[test]
    fn timestamps_of_sts_imds_and_processes() {
        // 2011-07-15T23:28:33Z is 1310772513 (independently: date -u -d @1310772513).
        assert_eq!(
            secs(parse_time("2011-07-15T23:28:33.359Z").unwrap()),
            1_310_772_513
        );
        assert_eq!(
            secs(parse_time("2011-07-15T23:28:33Z").unwrap()),
            1_310_772_513
        );
        assert_eq!(
            secs(parse_time("2011-07-16T01:28:33+02:00").unwrap()),
            1_310_772_513
        );
        assert_eq!(
            secs(parse_time("2000-02-29T00:00:00Z").unwrap()),
            951_782_400
        );
        for bad in [
            "",
            "2011",
            "2011-07-15",
            "2011-13-15T23:28:33Z",
            "2011-07-15X23:28:33Z",
            "2011-07-15T23:28:33Q",
            "１２３４-07-15T23:28:33Z",
            "2011-07-15T23:28:33+2",
            "1900-01-01T00:00:00Z",
            "2011-07-15T2é:28:33Z",
        ] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn xml_elements_and_entities() {
        let xml = "<R><Credentials><AccessKeyId>AK</AccessKeyId><SessionToken> a&amp;b&lt;&#65;&#x42;&bogus;&</SessionToken></Credentials></R>";
        assert_eq!(xml_text(xml, "AccessKeyId").as_deref(), Some("AK"));
        assert_eq!(
            xml_text(xml, "SessionToken").as_deref(),
            Some("a&b<AB&bogus;&")
        );
        assert_eq!(xml_text(xml, "Missing"), None);
        assert_eq!(xml_text("<A>unclosed", "A"), None);
        for s in [
            "",
            "<",
            "<A>",
            "</A><A>",
            "<A>&#xFFFFFFFF;</A>",
            "<A>&#99999999999;</A>",
        ] {
            let _ = xml_text(s, "A");
        }
    }
}
