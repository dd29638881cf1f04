//! `hostname` and `idn-hostname`: TypeBox's IDNA checks with RFC 3492 punycode.

use std::sync::OnceLock;

use crate::schema::formats::{own_regex, LazyRegex};
use crate::schema::js::string::utf16_len;

// --- hostnames (TypeBox's IDNA checks) -------------------------------------------------------

pub(crate) static CLS_COMBINING: LazyRegex = OnceLock::new();
pub(crate) static CLS_PERMITTED: LazyRegex = OnceLock::new();
pub(crate) static CLS_JAPANESE: LazyRegex = OnceLock::new();
pub(crate) static CLS_GREEK: LazyRegex = OnceLock::new();
pub(crate) static CLS_HEBREW: LazyRegex = OnceLock::new();
pub(crate) static CLS_ARABIC_LETTER: LazyRegex = OnceLock::new();
pub(crate) static CLS_LETTER: LazyRegex = OnceLock::new();
pub(crate) static CLS_NONSPACING: LazyRegex = OnceLock::new();

/// Whether `c` is in the character class regex `src` (compiled once into `cell`).
pub(crate) fn in_class(cell: &'static LazyRegex, src: &str, c: char) -> bool {
    let mut buf = [0u8; 4];
    own_regex(cell, src).is_some_and(|re| re.is_match(c.encode_utf8(&mut buf)))
}

pub(crate) fn is_combining(c: char) -> bool {
    in_class(&CLS_COMBINING, r"^[\p{Mn}\p{Mc}\p{Me}]$", c)
}
pub(crate) fn is_greek(c: char) -> bool {
    in_class(&CLS_GREEK, r"^\p{Script=Greek}$", c)
}
pub(crate) fn is_hebrew(c: char) -> bool {
    in_class(&CLS_HEBREW, r"^\p{Script=Hebrew}$", c)
}

pub(crate) const VIRAMAS: &[u32] = &[
    0x094d, 0x09cd, 0x0a4d, 0x0acd, 0x0b4d, 0x0bcd, 0x0c4d, 0x0ccd, 0x0d3b, 0x0d3c, 0x0d4d, 0x0dca,
    0x1b44, 0x1baa, 0x1bab, 0xa9c0, 0x11046, 0x1107f, 0x110b9, 0x11133, 0x11134, 0x111c0, 0x11235,
    0x1134d, 0x11442, 0x114c2, 0x115bf, 0x1163f, 0x116b6, 0x11c3f, 0x11d44, 0x11d45,
];

/// RFC 5893 bidi class, as coarsely as the reference computes it.
pub(crate) fn bidi_class(c: char) -> &'static str {
    let cp = c as u32;
    if c.is_ascii_digit() || (0x06f0..=0x06f9).contains(&cp) {
        "EN"
    } else if (0x0660..=0x0669).contains(&cp) {
        "AN"
    } else if in_class(&CLS_NONSPACING, r"^\p{Mn}$", c) {
        "NSM"
    } else if is_hebrew(c) {
        "R"
    } else if in_class(
        &CLS_ARABIC_LETTER,
        r"^[\p{Script=Arabic}\p{Script=Syriac}\p{Script=Thaana}\p{Script=Mandaic}]$",
        c,
    ) {
        "AL"
    } else if in_class(&CLS_LETTER, r"^\p{L}$", c) {
        "L"
    } else {
        "ON"
    }
}

pub(crate) fn has_rtl(s: &str) -> bool {
    s.chars()
        .any(|c| matches!(bidi_class(c), "R" | "AL" | "AN"))
}

pub(crate) fn satisfies_bidi(s: &str) -> bool {
    let mut rtl = false;
    let (mut saw_en, mut saw_an) = (false, false);
    for (i, c) in s.chars().enumerate() {
        let class = bidi_class(c);
        if i == 0 {
            if !matches!(class, "L" | "R" | "AL") {
                return false;
            }
            rtl = class != "L";
        }
        let allowed = if rtl {
            matches!(
                class,
                "R" | "AL" | "AN" | "EN" | "ES" | "CS" | "ET" | "ON" | "BN" | "NSM"
            )
        } else {
            matches!(class, "L" | "EN" | "ES" | "CS" | "ET" | "ON" | "BN" | "NSM")
        };
        if !allowed {
            return false;
        }
        saw_en |= class == "EN";
        saw_an |= class == "AN";
    }
    !(rtl && saw_en && saw_an)
}

pub(crate) fn is_ace_prefixed(s: &str) -> bool {
    s.to_lowercase().starts_with("xn--")
}

pub(crate) fn has_bidi_chars(label: &str) -> bool {
    if is_ace_prefixed(label) {
        return label
            .get(4..)
            .and_then(|body| puny_decode(&body.to_lowercase()))
            .is_some_and(|decoded| has_rtl(&decoded));
    }
    has_rtl(label)
}

pub(crate) fn puny_adapt(delta: u64, points: u64, first: bool) -> u64 {
    let mut delta = if first { delta / 700 } else { delta >> 1 };
    delta += delta / points.max(1);
    let mut k = 0;
    while delta > (35 * 26) >> 1 {
        delta /= 35;
        k += 36;
    }
    k + (36 * delta) / (delta + 38)
}

pub(crate) fn puny_threshold(k: u64, bias: u64) -> u64 {
    if k <= bias {
        1
    } else if k >= bias + 26 {
        26
    } else {
        k - bias
    }
}

/// RFC 3492 decoding of a label body (lowercase); None where the reference throws.
pub(crate) fn puny_decode(input: &str) -> Option<String> {
    let units: Vec<u16> = input.encode_utf16().collect();
    let mut output: Vec<u32> = Vec::new();
    let (mut n, mut i, mut bias) = (128u64, 0u64, 72u64);
    let delim = units.iter().rposition(|u| *u == u16::from(b'-'));
    if let Some(d) = delim.filter(|d| *d > 0) {
        for u in &units[..d] {
            if *u >= 128 {
                return None;
            }
            output.push(u32::from(*u));
        }
    }
    let mut idx = delim.map_or(0, |d| d + 1);
    while idx < units.len() {
        let old_i = i;
        let (mut w, mut k) = (1u64, 36u64);
        loop {
            let ch = *units.get(idx)?;
            idx += 1;
            let digit = match ch {
                0x61..=0x7a => u64::from(ch - 0x61),
                0x30..=0x39 => u64::from(ch - 0x30) + 26,
                _ => return None,
            };
            i = i.checked_add(digit.checked_mul(w)?)?;
            let t = puny_threshold(k, bias);
            if digit < t {
                break;
            }
            w = w.checked_mul(36 - t)?;
            k += 36;
        }
        let len = output.len() as u64 + 1;
        bias = puny_adapt(i - old_i, len, old_i == 0);
        n = n.checked_add(i / len)?;
        i %= len;
        output.insert(usize::try_from(i).ok()?, u32::try_from(n).ok()?);
        i += 1;
    }
    output.into_iter().map(char::from_u32).collect()
}

/// The length of the RFC 3492 encoding of `input` (the A-label's payload).
pub(crate) fn puny_encoded_len(input: &str) -> usize {
    let cps: Vec<u64> = input.chars().map(|c| u64::from(u32::from(c))).collect();
    let basic = cps.iter().filter(|c| **c < 128).count();
    let mut len = basic + usize::from(basic > 0);
    let (mut n, mut delta, mut bias, mut handled) = (128u64, 0u64, 72u64, basic as u64);
    while (handled as usize) < cps.len() {
        let Some(m) = cps.iter().copied().filter(|c| *c >= n).min() else {
            break;
        };
        delta = delta.saturating_add((m - n).saturating_mul(handled + 1));
        n = m;
        for &c in &cps {
            if c < n {
                delta = delta.saturating_add(1);
            }
            if c == n {
                let mut q = delta;
                let mut k = 36;
                loop {
                    let t = puny_threshold(k, bias);
                    if q < t {
                        break;
                    }
                    len += 1;
                    q = (q - t) / (36 - t);
                    k += 36;
                }
                len += 1;
                bias = puny_adapt(delta, handled + 1, handled == basic as u64);
                delta = 0;
                handled += 1;
            }
        }
        delta += 1;
        n += 1;
    }
    len
}

pub(crate) fn is_unicode_label(value: &str) -> bool {
    if !value.is_ascii() && puny_encoded_len(value) + 4 > 63 {
        return false;
    }
    if has_rtl(value) && !satisfies_bidi(value) {
        return false;
    }
    let chars: Vec<char> = value.chars().collect();
    let (Some(first), Some(last)) = (chars.first(), chars.last()) else {
        return true;
    };
    if *first == '-' || *last == '-' || chars.iter().skip(2).take(2).collect::<String>() == "--" {
        return false;
    }
    if is_combining(*first) {
        return false;
    }
    const DISALLOWED: &[u32] = &[
        0x0640, 0x07fa, 0x302e, 0x302f, 0x3031, 0x3032, 0x3033, 0x3034, 0x3035, 0x303b,
    ];
    let permitted = r"^[\p{L}\-+.,:/\p{Nd}\p{Mn}\p{Mc}\x{b7}\x{375}\x{5f3}\x{5f4}\x{200c}\x{200d}\x{30fb}\x{df}\x{3c2}\x{6fd}\x{6fe}\x{f0b}\x{3007}]$";
    let mut japanese = false;
    for (i, &c) in chars.iter().enumerate() {
        let cp = c as u32;
        if DISALLOWED.contains(&cp) || !in_class(&CLS_PERMITTED, permitted, c) {
            return false;
        }
        japanese |= in_class(
            &CLS_JAPANESE,
            r"^[\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Han}]$",
            c,
        );
        let prev = i.checked_sub(1).and_then(|p| chars.get(p)).copied();
        let next = chars.get(i + 1).copied();
        let ok = match cp {
            0x00b7 => prev == Some('l') && next == Some('l'),
            0x0375 => next.is_some_and(is_greek),
            0x05f3 | 0x05f4 => prev.is_some_and(is_hebrew),
            0x200c => prev.is_some_and(|p| (p as u32) >= 0x80 || VIRAMAS.contains(&(p as u32))),
            0x200d => prev.is_some_and(|p| VIRAMAS.contains(&(p as u32))),
            _ => true,
        };
        if !ok {
            return false;
        }
    }
    japanese || !value.contains('\u{30fb}')
}

pub(crate) fn is_puny_label(value: &str) -> bool {
    if !is_ace_prefixed(value) {
        return false;
    }
    let Some(body) = value.get(4..).map(str::to_lowercase) else {
        return false;
    };
    if body.rfind('-') == Some(0) {
        return false;
    }
    match puny_decode(&body) {
        Some(decoded) => !decoded.is_ascii() && is_unicode_label(&decoded),
        None => false,
    }
}

pub(crate) fn is_ascii_label(value: &str) -> bool {
    !value.starts_with('-')
        && !value.ends_with('-')
        && value.get(2..4) != Some("--")
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-')
}

pub(crate) fn is_hostname(value: &str) -> bool {
    let len = utf16_len(value);
    if len == 0 || len > 253 || value.ends_with('.') {
        return false;
    }
    value.split('.').all(|label| {
        let n = utf16_len(label);
        (1..=63).contains(&n) && (is_puny_label(label) || is_ascii_label(label))
    })
}

/// `idn-hostname` (without the reference's NFC normalization, see the module notes).
pub(crate) fn is_idn_hostname(value: &str) -> bool {
    if value.is_empty() || value.contains(' ') {
        return false;
    }
    let normalized: String = value
        .chars()
        .map(|c| match c as u32 {
            cp @ 0xff01..=0xff5e => char::from_u32(cp - 0xfee0).unwrap_or(c),
            _ => c,
        })
        .filter(|c| {
            !matches!(*c as u32, 0xad | 0x34f | 0x180b..=0x180d | 0x200b | 0xfe00..=0xfe0f | 0xe0100..=0xe01ef)
        })
        .map(|c| if matches!(c, '\u{3002}' | '\u{ff0e}' | '\u{ff61}') { '.' } else { c })
        .collect();
    if utf16_len(&normalized) > 253 {
        return false;
    }
    let labels: Vec<&str> = normalized.split('.').collect();
    let bidi = labels.iter().any(|l| has_bidi_chars(l));
    labels.iter().all(|label| {
        let n = utf16_len(label);
        (1..=63).contains(&n)
            && (is_puny_label(label) || is_unicode_label(label))
            && (!bidi || satisfies_bidi(label))
    })
}
