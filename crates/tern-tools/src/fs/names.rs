//! A lossless text form for file names that are not valid UTF-8.
//!
//! Tool output is text, so a name such as `b"caf\xe9"` cannot be shown as it is. Names that
//! are valid UTF-8 are shown unchanged. A name (or path) that is not is shown with each byte
//! that is not part of valid UTF-8 as `\xHH` and each backslash doubled: `caf\xe9`. `read`,
//! `edit`, `write`, `ls`, `grep` and `find` accept that form back: an argument that decodes
//! to bytes that are not valid UTF-8 names that file, unless a file with the literal name
//! exists.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// A file name for output: unchanged when valid UTF-8, else the escaped form.
///
/// ```
/// use std::ffi::OsStr;
/// use std::os::unix::ffi::OsStrExt;
/// use tern_tools::fs::display_name;
/// assert_eq!(display_name(OsStr::new("plain")), "plain");
/// assert_eq!(display_name(OsStr::from_bytes(b"caf\xe9 a\\b")), "caf\\xe9 a\\\\b");
/// ```
pub fn display_name(name: &OsStr) -> String {
    let bytes = name.as_bytes();
    if let Ok(s) = std::str::from_utf8(bytes) {
        return s.to_string();
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// A path for output, in the same form as [`display_name`].
pub fn display_path(path: &Path) -> String {
    display_name(path.as_os_str())
}

/// The bytes an escaped argument stands for, when it is a valid escaped form of a name that
/// is not UTF-8 (`None` otherwise: the argument is taken literally).
///
/// ```
/// use std::os::unix::ffi::OsStrExt;
/// use tern_tools::fs::decode_path_arg;
/// let p = decode_path_arg("dir/caf\\xe9").unwrap();
/// assert_eq!(p.as_os_str().as_bytes(), b"dir/caf\xe9");
/// assert_eq!(decode_path_arg("C:\\x41"), None); // decodes to valid UTF-8: literal
/// ```
pub fn decode_path_arg(arg: &str) -> Option<PathBuf> {
    if !arg.contains('\\') {
        return None;
    }
    let src = arg.as_bytes();
    let mut out = Vec::with_capacity(src.len());
    let mut i = 0;
    while i < src.len() {
        if src[i] != b'\\' {
            out.push(src[i]);
            i += 1;
            continue;
        }
        match src.get(i + 1) {
            Some(b'\\') => {
                out.push(b'\\');
                i += 2;
            }
            Some(b'x') => {
                let hex = std::str::from_utf8(src.get(i + 2..i + 4)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 4;
            }
            _ => return None,
        }
    }
    if std::str::from_utf8(&out).is_ok() {
        return None;
    }
    Some(PathBuf::from(OsString::from_vec(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_string_round_trips() {
        let names: [&[u8]; 5] = [b"\xff", b"a\\b\xfe", b"\\x41\x80", b"ok\xc3", b"\xe2\x82"];
        for n in names {
            let shown = display_name(OsStr::from_bytes(n));
            let back = decode_path_arg(&shown).unwrap();
            assert_eq!(back.as_os_str().as_bytes(), n, "{shown}");
        }
        assert_eq!(decode_path_arg("plain\\name"), None);
        assert_eq!(decode_path_arg("bad\\x4"), None);
    }
}
