//! `date`, `time`, `date-time` and `idn-email`.

use crate::schema::formats::{own_regex, IDN_EMAIL, RE_TIME, TIME};

// `u32::is_multiple_of` is newer than the workspace's minimum Rust version.
#[allow(unknown_lints, clippy::manual_is_multiple_of)]
pub(crate) fn is_leap_year(year: u32) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// RFC 3339 full-date, with the day checked against the month.
pub(crate) fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = s.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    const DAYS: [u32; 13] = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let max = if month == 2 && is_leap_year(year) {
        29
    } else {
        DAYS.get(month as usize).copied().unwrap_or(0)
    };
    (1..=12).contains(&month) && day >= 1 && day <= max
}

/// RFC 3339 full-time (an offset required), leap seconds only at 23:59:60 UTC.
pub(crate) fn is_time(s: &str) -> bool {
    let Some(re) = own_regex(&TIME, RE_TIME) else {
        return true;
    };
    let Some(c) = re.captures(s) else {
        return false;
    };
    let num = |i: usize| {
        c.get(i)
            .and_then(|m| m.as_str().parse::<i64>().ok())
            .unwrap_or(0)
    };
    let zulu = c.get(4).is_some();
    let sign = c.get(5).map(|m| m.as_str());
    if !zulu && sign.is_none() {
        return false;
    }
    let (hr, min, sec) = (num(1), num(2), num(3));
    if hr > 23 || min > 59 || sec > 60 {
        return false;
    }
    let (tz_h, tz_m) = (num(6), num(7));
    if sign.is_some() && (tz_h > 23 || tz_m > 59) {
        return false;
    }
    if sec < 60 {
        return true;
    }
    let tz_sign = if sign == Some("-") { -1 } else { 1 };
    let utc = hr * 60 + min - tz_sign * (tz_h * 60 + tz_m);
    utc.rem_euclid(1440) == 1439
}

pub(crate) fn is_date_time(s: &str) -> bool {
    let parts: Vec<&str> = s.split(['T', 't']).collect();
    parts.len() == 2 && is_date(parts[0]) && is_time(parts[1])
}

/// `idn-email` (without the reference's NFC normalization, see the module notes).
pub(crate) fn is_idn_email(s: &str) -> bool {
    // No `(?i)`: every class that names letters holds both cases already.
    const SRC: &str = r#"^(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~\x{80}-\x{10FFFF}\-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~\x{80}-\x{10FFFF}\-]+)*|"(?:[^"\\]|\\[^\n\r\x{2028}\x{2029}])*")@([\p{L}\p{N}][\p{L}\p{N}\-]{0,62}(?:\.[\p{L}\p{N}][\p{L}\p{N}\-]{0,62})*)$"#;
    let Some(re) = own_regex(&IDN_EMAIL, SRC) else {
        return true;
    };
    let Some(c) = re.captures(s) else {
        return false;
    };
    // No domain label may end with a hyphen (a lookbehind in the reference).
    c.get(1)
        .is_none_or(|d| d.as_str().split('.').all(|label| !label.ends_with('-')))
}
