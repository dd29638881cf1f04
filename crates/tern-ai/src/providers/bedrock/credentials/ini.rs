//! The shared `config` and `credentials` files as the AWS SDK reads them: `[name]` sections
//! in the credentials file, `[profile name]` (and `[default]`) in the config file, `key =
//! value` lines, `#` / `;` comment lines, and indented sub-properties under a key with an
//! empty value (kept as `key.sub`, so they never shadow a top-level key).

use std::collections::HashMap;

/// The settings of one profile.
pub(crate) type Settings = HashMap<String, String>;

/// Which file a text came from: the config file names profiles `[profile x]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// `~/.aws/config`.
    Config,
    /// `~/.aws/credentials`.
    Credentials,
}

/// The sections of one file.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    /// Profiles by name.
    pub profiles: HashMap<String, Settings>,
    /// The config file's `[sso-session name]` sections by name.
    pub sso_sessions: HashMap<String, Settings>,
}

/// Whether a section holds a profile or an SSO session.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    Profile,
    SsoSession,
}

/// The profiles of one file, by name (sections that are not profiles are left out).
#[cfg(test)]
pub(crate) fn parse(text: &str, kind: FileKind) -> HashMap<String, Settings> {
    parse_file(text, kind).profiles
}

/// The profiles and SSO sessions of one file (other sections are left out).
pub(crate) fn parse_file(text: &str, kind: FileKind) -> Parsed {
    let mut parsed = Parsed::default();
    // The profile lines belong to; `None` inside a section that is no profile.
    let mut current: Option<(Section, String)> = None;
    let mut parent: Option<String> = None;
    for raw in text.lines() {
        let indented = raw.starts_with([' ', '\t']);
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = section_header(line) {
            current = section(header, kind);
            parent = None;
            if let Some((section, name)) = &current {
                parsed.map(*section).entry(name.clone()).or_default();
            }
            continue;
        }
        let Some((section, name)) = &current else {
            continue;
        };
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() {
            continue;
        }
        let settings = parsed.map(*section).entry(name.clone()).or_default();
        match (&parent, indented) {
            (Some(p), true) => {
                settings.insert(format!("{p}.{key}"), value.to_string());
            }
            _ if value.is_empty() => parent = Some(key.to_string()),
            _ => {
                parent = None;
                settings.insert(key.to_string(), value.to_string());
            }
        }
    }
    parsed
}

impl Parsed {
    fn map(&mut self, section: Section) -> &mut HashMap<String, Settings> {
        match section {
            Section::Profile => &mut self.profiles,
            Section::SsoSession => &mut self.sso_sessions,
        }
    }
}

/// What a section header names in a file of `kind`, if anything the chain reads.
fn section(header: &str, kind: FileKind) -> Option<(Section, String)> {
    if kind == FileKind::Config {
        if let Some(rest) = header.strip_prefix("sso-session") {
            let name = rest.trim();
            return (rest.starts_with([' ', '\t']) && !name.is_empty())
                .then(|| (Section::SsoSession, name.to_string()));
        }
    }
    profile_name(header, kind).map(|n| (Section::Profile, n))
}

/// The name inside `[ ... ]`, a trailing comment allowed after the bracket.
fn section_header(line: &str) -> Option<&str> {
    let rest = line.strip_prefix('[')?;
    let end = rest.find(']')?;
    let after = rest.get(end + 1..)?.trim();
    if !(after.is_empty() || after.starts_with('#') || after.starts_with(';')) {
        return None;
    }
    let name = rest.get(..end)?.trim();
    (!name.is_empty()).then_some(name)
}

/// The profile a section header names in a file of `kind`, if it names one.
fn profile_name(header: &str, kind: FileKind) -> Option<String> {
    match kind {
        FileKind::Credentials => Some(header.to_string()),
        FileKind::Config => {
            if header == "default" {
                return Some(header.to_string());
            }
            let rest = header.strip_prefix("profile")?;
            // `[profile x]` needs the space; `[profilex]` is no profile.
            if !rest.starts_with([' ', '\t']) {
                return None;
            }
            let name = rest.trim();
            (!name.is_empty()).then(|| name.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_sections_need_the_profile_prefix_but_default() {
        let text = "[default]\nregion = eu-west-1\n[profile dev]\nregion=us-west-2\n\
                    [plain]\nregion = x\n[sso-session s]\nsso_region = y\n[profilex]\na=b\n";
        let p = parse(text, FileKind::Config);
        assert_eq!(p["default"]["region"], "eu-west-1");
        assert_eq!(p["dev"]["region"], "us-west-2");
        assert_eq!(p.len(), 2, "{p:?}");
        let sessions = parse_file(text, FileKind::Config).sso_sessions;
        assert_eq!(sessions["s"]["sso_region"], "y");
        let c = parse("[plain]\naws_access_key_id = AK\n", FileKind::Credentials);
        assert_eq!(c["plain"]["aws_access_key_id"], "AK");
    }

    #[test]
    fn comments_sub_properties_and_later_values() {
        let text = "# top\n[ dev ] ; note\n; comment\nregion = a\ns3 =\n  region = nested\n\
                    region = b\n  stray = 1\nkey = v = w\n";
        let p = parse(text, FileKind::Credentials);
        let dev = &p["dev"];
        assert_eq!(dev["region"], "b");
        assert_eq!(dev["s3.region"], "nested");
        assert_eq!(dev["key"], "v = w");
        // An indented line outside a sub-section is an ordinary key, as the SDK reads it.
        assert_eq!(dev["stray"], "1");
    }

    #[test]
    fn broken_text_never_panics_and_yields_what_it_can() {
        let samples = [
            "",
            "[",
            "]",
            "[]",
            "[profile]",
            "[profile ]\na=b",
            "=\n==\n[x\n[x]]\n",
            "[d]\n=novalue\n  =\n\u{0}\u{ffff}=é\n",
            "[d] trailing\nk=v",
            "\r\n[d]\r\nk = v\r\n",
        ];
        for s in samples {
            let _ = parse(s, FileKind::Config);
            let _ = parse(s, FileKind::Credentials);
        }
        assert_eq!(
            parse("\r\n[d]\r\nk = v\r\n", FileKind::Credentials)["d"]["k"],
            "v"
        );
        assert!(parse("[d] trailing\nk=v", FileKind::Credentials).is_empty());
        // Every prefix of a real file parses.
        let text = "[profile a]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = b\n";
        for end in 0..=text.len() {
            if let Some(t) = text.get(..end) {
                let _ = parse(t, FileKind::Config);
            }
        }
    }
}
