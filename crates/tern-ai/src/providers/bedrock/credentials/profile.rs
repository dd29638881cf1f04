//! A profile of the shared files, resolved as the SDK's `fromIni` does: a role profile
//! (`role_arn` with `source_profile` or `credential_source`) assumes its role with the
//! source's credentials (a source profile's static keys win over its own role); otherwise
//! static keys, a web identity token file, a `credential_process`, an SSO login ([`sso`]),
//! in that order.

use std::collections::{HashMap, HashSet};

use super::ini::{parse_file, FileKind, Settings};
use super::sts::{assume_role, assume_role_with_web_identity, Role};
use super::{login, process, remote, sso, Env, Fresh};
use crate::stream_fn::StreamOptions;

/// How many `source_profile` hops a chain may take.
const MAX_HOPS: usize = 16;

/// The profiles of both shared files (the credentials file's keys win), and where they are.
pub(crate) struct Files {
    /// Profiles by name.
    pub profiles: HashMap<String, Settings>,
    /// The config file's `[sso-session]` sections by name.
    pub sso_sessions: HashMap<String, Settings>,
    /// The credentials file's path, for messages.
    pub credentials_path: String,
    /// The config file's path, for messages.
    pub config_path: String,
}

/// `var`'s path (a leading `~/` is the home folder), else `~/.aws/{file}`.
fn path(env: &Env, var: &str, file: &str) -> String {
    let home = env.get("HOME").unwrap_or("~");
    match env.get(var) {
        Some(p) => match p.strip_prefix("~/") {
            Some(rest) => format!("{home}/{rest}"),
            None => p.to_string(),
        },
        None => format!("{home}/.aws/{file}"),
    }
}

async fn read(path: &str) -> Result<String, String> {
    match tokio::fs::read(path).await {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(format!("cannot read {path}: {e}")),
    }
}

/// Reads both shared files (a missing file has no profiles).
pub(crate) async fn load(env: &Env) -> Result<Files, String> {
    let credentials_path = path(env, "AWS_SHARED_CREDENTIALS_FILE", "credentials");
    let config_path = path(env, "AWS_CONFIG_FILE", "config");
    let config = parse_file(&read(&config_path).await?, FileKind::Config);
    let mut profiles = config.profiles;
    let credentials = parse_file(&read(&credentials_path).await?, FileKind::Credentials);
    for (name, settings) in credentials.profiles {
        profiles.entry(name).or_default().extend(settings);
    }
    Ok(Files {
        profiles,
        sso_sessions: config.sso_sessions,
        credentials_path,
        config_path,
    })
}

/// `AWS_PROFILE`, else `default`.
pub(crate) fn name(env: &Env) -> &str {
    env.get("AWS_PROFILE").unwrap_or("default")
}

fn get<'a>(s: &'a Settings, key: &str) -> Option<&'a str> {
    s.get(key).map(String::as_str).filter(|v| !v.is_empty())
}

fn static_keys(s: &Settings) -> Option<Fresh> {
    Some(Fresh {
        credentials: super::AwsCredentials {
            access_key_id: get(s, "aws_access_key_id")?.to_string(),
            secret_access_key: get(s, "aws_secret_access_key")?.to_string(),
            session_token: get(s, "aws_session_token").map(str::to_string),
        },
        expires: None,
    })
}

fn is_role(s: &Settings) -> bool {
    get(s, "role_arn").is_some()
        && (get(s, "source_profile").is_some() || get(s, "credential_source").is_some())
}

/// Where the first credentials of a chain come from.
enum Base<'a> {
    Static(Fresh),
    CredentialSource(&'a str),
    WebIdentity(&'a Settings),
    Process(&'a str, &'a str),
    Sso(&'a Settings),
    Login(&'a str, &'a str, Option<&'a str>),
}

/// The credentials of profile `name`; `Ok(None)` when the profile is missing or has no
/// credential settings (the chain goes on), `Err` when configured credentials fail.
pub(crate) async fn resolve(
    env: &Env,
    files: &Files,
    name: &str,
    options: &StreamOptions,
) -> Result<Option<Fresh>, String> {
    let where_ = || format!("{} and {}", files.credentials_path, files.config_path);
    let Some(mut settings) = files.profiles.get(name) else {
        return Ok(None);
    };
    let mut current = name;
    let mut roles: Vec<(&str, &Settings)> = Vec::new();
    let mut visited = HashSet::new();
    let base = loop {
        visited.insert(current);
        let first = roles.is_empty();
        if is_role(settings) && (first || static_keys(settings).is_none()) {
            if get(settings, "mfa_serial").is_some() {
                // The SDK's words: pi-ai gives its credential chain no way to ask for a code.
                return Err(format!(
                    "Profile {current} requires multi-factor authentication, but no MFA code \
                     callback was provided."
                ));
            }
            roles.push((current, settings));
            if let Some(source) = get(settings, "credential_source") {
                break Base::CredentialSource(source);
            }
            let next = get(settings, "source_profile").unwrap_or_default();
            let Some(next_settings) = files.profiles.get(next) else {
                return Err(format!(
                    "profile {current}'s source_profile {next} is not in {}",
                    where_()
                ));
            };
            if (visited.contains(next) && static_keys(next_settings).is_none())
                || roles.len() > MAX_HOPS
            {
                return Err(format!(
                    "profile {name}'s source_profile chain loops at {next}"
                ));
            }
            current = next;
            settings = next_settings;
            continue;
        }
        if let Some(keys) = static_keys(settings) {
            break Base::Static(keys);
        }
        if get(settings, "web_identity_token_file").is_some() && get(settings, "role_arn").is_some()
        {
            break Base::WebIdentity(settings);
        }
        if let Some(command) = get(settings, "credential_process") {
            break Base::Process(current, command);
        }
        if settings.keys().any(|k| k.starts_with("sso_")) {
            break Base::Sso(settings);
        }
        if let Some(session) = get(settings, "login_session") {
            break Base::Login(current, session, get(settings, "region"));
        }
        if first {
            return Ok(None);
        }
        return Err(format!(
            "profile {current} (the source of {name}) has no credentials in {}",
            where_()
        ));
    };
    let region = |s: &Settings| {
        get(s, "region")
            .or_else(|| env.get("AWS_REGION"))
            .unwrap_or("us-east-1")
            .to_string()
    };
    let mut fresh = match base {
        Base::Static(keys) => keys,
        Base::CredentialSource(source) => match source {
            "Environment" => super::env_keys(env).ok_or_else(|| {
                format!(
                    "profile {current}'s credential_source Environment needs \
                     AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
                )
            })?,
            "Ec2InstanceMetadata" => remote::instance(env, options).await?,
            "EcsContainer" => remote::container(env, options).await?,
            other => {
                return Err(format!(
                    "profile {current}'s credential_source {other} is not one of \
                     Environment, Ec2InstanceMetadata, EcsContainer"
                ))
            }
        },
        Base::WebIdentity(s) => {
            let file = get(s, "web_identity_token_file").unwrap_or_default();
            let token = tokio::fs::read_to_string(file)
                .await
                .map_err(|e| format!("profile {current}'s web_identity_token_file {file}: {e}"))?;
            let region = region(s);
            let role = Role {
                arn: get(s, "role_arn").unwrap_or_default(),
                session_name: get(s, "role_session_name"),
                external_id: None,
                duration_seconds: get(s, "duration_seconds"),
                region: &region,
            };
            assume_role_with_web_identity(env, token.trim(), &role, options).await?
        }
        Base::Process(profile, command) => process::run(profile, command, options).await?,
        Base::Sso(s) => {
            let session = match get(s, "sso_session") {
                Some(name) => Some(files.sso_sessions.get_key_value(name).ok_or_else(|| {
                    format!(
                        "profile {current}'s sso_session {name} has no [sso-session {name}] \
                         section in {}",
                        files.config_path
                    )
                })?),
                None => None,
            };
            let request = sso::Sso {
                profile: current,
                settings: s,
                session: session.map(|(k, v)| (k.as_str(), v)),
            };
            sso::resolve(env, &request, options).await?
        }
        Base::Login(profile, session, region) => {
            let login = login::Login {
                profile,
                session,
                region,
            };
            login::resolve(env, &login, options).await?
        }
    };
    for (_, s) in roles.iter().rev() {
        let region = region(s);
        let role = Role {
            arn: get(s, "role_arn").unwrap_or_default(),
            session_name: get(s, "role_session_name"),
            external_id: get(s, "external_id"),
            duration_seconds: get(s, "duration_seconds"),
            region: &region,
        };
        fresh = assume_role(env, &fresh.credentials, &role, options).await?;
    }
    Ok(Some(fresh))
}

/// The `region` of profile `name`.
pub(crate) fn region(files: &Files, name: &str) -> Option<String> {
    files
        .profiles
        .get(name)
        .and_then(|s| get(s, "region"))
        .map(str::to_string)
}
