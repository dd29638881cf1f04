//! ISO 8601 timestamps as pi writes them in entries and file names. The time itself comes
//! from the session's [`Environment`](tern_ai::environment::Environment) (by default
//! [`tern_ai::clock::now_ms`], the one place tern reads the time).

pub use tern_ai::clock::iso_time;

/// The Unix time in milliseconds of a `YYYY-MM-DDTHH:MM:SS[.mmm]Z` timestamp (what
/// [`iso_time`] writes), or None for any other text.
///
/// ```
/// use tern_session::timestamp::parse_iso_ms;
/// assert_eq!(parse_iso_ms("2024-12-03T14:00:00.123Z"), Some(1_733_234_400_123));
/// assert_eq!(parse_iso_ms("yesterday"), None);
/// ```
pub fn parse_iso_ms(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let s = text.get(from..from + len)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())
            .flatten()
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || !text.ends_with('Z') {
        return None;
    }
    let (y, m, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hh, mm, ss) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    let ms = if b.get(19) == Some(&b'.') {
        num(20, 3)?
    } else {
        0
    };
    // Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1000) + ms)
}

/// The last timestamp formatted, for a writer that stamps many entries in one millisecond.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stamp {
    pub(crate) ms: Option<u64>,
    text: String,
}

impl Stamp {
    /// [`iso_time`] of `ms`, formatted again only when `ms` changed.
    pub(crate) fn iso(&mut self, ms: u64) -> &str {
        if self.ms != Some(ms) {
            self.text = iso_time(ms);
            self.ms = Some(ms);
        }
        &self.text
    }
}

/// The current time, as [`iso_time`] writes it.
pub fn iso_now() -> String {
    iso_time(tern_ai::clock::now_ms())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_time_formats_known_instants() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_time(1_733_234_400_000), "2024-12-03T14:00:00.000Z");
        // A leap day, and the last millisecond of a year.
        assert_eq!(iso_time(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso_time(1_704_067_199_999), "2023-12-31T23:59:59.999Z");
    }

    #[test]
    fn a_stamp_formats_each_millisecond_once_and_follows_the_clock() {
        let mut s = Stamp::default();
        assert_eq!(s.iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(s.iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(s.iso(1_733_234_400_123), "2024-12-03T14:00:00.123Z");
        assert_eq!(s.iso(0), "1970-01-01T00:00:00.000Z");
    }
}
