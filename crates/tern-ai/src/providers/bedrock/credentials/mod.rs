//! The AWS SDK's default credential chain (`@aws-sdk/credential-provider-node`), for SigV4
//! when neither a bearer token nor environment keys are set: the profile (`AWS_PROFILE`,
//! else `default`) of the shared files ([`profile`]: static keys, an assumed role, a web
//! identity token file, a `credential_process`, IAM Identity Center's cached login), then the environment's web identity
//! (`AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN`), then the container endpoint or, when
//! none is configured, the instance metadata service ([`remote`]).
//!
//! A source that is not configured passes to the next; a configured one that fails ends
//! the chain with its error, as in the SDK. Credentials are kept per environment until
//! five minutes before they expire; the profile's region is kept with them.

mod dpop;
mod ini;
mod login;
mod process;
mod profile;
mod remote;
mod sso;
mod sts;
mod wire;

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;

pub(crate) use super::sigv4::AwsCredentials;
use crate::stream_fn::StreamOptions;
/// Also read by the Azure CLI's token expiry (`azure_responses`).
pub(crate) use wire::parse_time;

/// Credentials are refreshed this long before they expire (the SDK's window).
const REFRESH_WINDOW: Duration = Duration::from_secs(5 * 60);

/// The variables the chain reads.
const VARS: [&str; 24] = [
    "HOME",
    "AWS_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE",
    "AWS_EC2_METADATA_DISABLED",
    "AWS_ENDPOINT_URL_STS",
    "AWS_ENDPOINT_URL_SSO",
    "AWS_ENDPOINT_URL_SSO_OIDC",
    "AWS_ENDPOINT_URL_SIGNIN",
    "AWS_LOGIN_CACHE_DIRECTORY",
];

/// The chain's view of the environment: the variables it reads that are set and not empty.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct Env {
    vars: BTreeMap<&'static str, String>,
}

impl std::fmt::Debug for Env {
    // Names only: some values are secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.vars.keys()).finish()
    }
}

impl Env {
    /// The process environment's variables, read once.
    pub(crate) fn from_process() -> Self {
        Self::from_pairs(
            VARS.iter()
                .filter_map(|&k| Some((k, std::env::var(k).ok()?))),
        )
    }

    /// The variables of `pairs` that the chain reads.
    pub(crate) fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, String)>) -> Self {
        let vars = pairs
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .filter_map(|(k, v)| Some((*VARS.iter().find(|n| **n == k)?, v)))
            .collect();
        Self { vars }
    }

    /// This environment with `name` (one the chain reads) set to `value` (an empty value
    /// changes nothing, as an empty variable counts as unset).
    pub(crate) fn with(mut self, name: &str, value: &str) -> Self {
        if value.is_empty() {
            return self;
        }
        if let Some(known) = VARS.iter().find(|n| **n == name) {
            self.vars.insert(known, value.to_string());
        }
        self
    }

    /// A variable, if set and not empty.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }
}

/// Credentials and when they expire (`None`: long-lived).
#[derive(Clone, Debug)]
pub(crate) struct Fresh {
    /// The keys.
    pub credentials: AwsCredentials,
    /// Their expiry.
    pub expires: Option<SystemTime>,
}

impl Fresh {
    fn usable(&self, now: SystemTime) -> bool {
        self.expires.is_none_or(|e| {
            e.duration_since(now)
                .is_ok_and(|left| left > REFRESH_WINDOW)
        })
    }
}

/// `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`.
pub(crate) fn env_keys(env: &Env) -> Option<Fresh> {
    Some(Fresh {
        credentials: AwsCredentials {
            access_key_id: env.get("AWS_ACCESS_KEY_ID")?.to_string(),
            secret_access_key: env.get("AWS_SECRET_ACCESS_KEY")?.to_string(),
            session_token: env.get("AWS_SESSION_TOKEN").map(str::to_string),
        },
        expires: None,
    })
}

/// What one environment resolved to.
#[derive(Default)]
struct Prepared {
    credentials: Option<Fresh>,
    /// `None` until read; then the profile's `region`, if any.
    profile_region: Option<Option<String>>,
}

fn cache() -> &'static Mutex<HashMap<Env, Prepared>> {
    static CACHE: OnceLock<Mutex<HashMap<Env, Prepared>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Resolves what a request for `env` needs before it is built: the credentials (when
/// `credentials` is set) and the region of an `AWS_PROFILE`; both are kept for
/// [`credentials`] and [`profile_region`].
pub(crate) async fn prepare(
    env: &Env,
    credentials: bool,
    options: &StreamOptions,
) -> Result<(), String> {
    // Concurrent requests wait for one resolution instead of each asking STS or IMDS.
    static RESOLVING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _one_at_a_time = tokio::select! {
        biased;
        _ = options.signal.cancelled() => return Err("aborted".into()),
        guard = RESOLVING.lock() => guard,
    };
    let (need_keys, need_region) = {
        let cache = cache().lock();
        let entry = cache.get(env);
        let now = SystemTime::now();
        (
            credentials
                && !entry
                    .and_then(|e| e.credentials.as_ref())
                    .is_some_and(|c| c.usable(now)),
            env.get("AWS_PROFILE").is_some() && entry.is_none_or(|e| e.profile_region.is_none()),
        )
    };
    if !need_keys && !need_region {
        return Ok(());
    }
    let files = profile::load(env).await?;
    let region = need_region.then(|| profile::region(&files, profile::name(env)));
    let fresh = match need_keys {
        true => Some(chain(env, &files, options).await?),
        false => None,
    };
    let mut cache = cache().lock();
    let entry = cache.entry(env.clone()).or_default();
    if let Some(region) = region {
        entry.profile_region = Some(region);
    }
    if let Some(fresh) = fresh {
        entry.credentials = Some(fresh);
    }
    Ok(())
}

/// The credentials [`prepare`] resolved for `env`.
pub(crate) fn credentials(env: &Env) -> Option<AwsCredentials> {
    let cache = cache().lock();
    Some(cache.get(env)?.credentials.as_ref()?.credentials.clone())
}

/// The `region` of `env`'s `AWS_PROFILE`, as [`prepare`] read it.
pub(crate) fn profile_region(env: &Env) -> Option<String> {
    cache().lock().get(env)?.profile_region.clone()?
}

/// The chain after the environment's keys.
async fn chain(
    env: &Env,
    files: &profile::Files,
    options: &StreamOptions,
) -> Result<Fresh, String> {
    let name = profile::name(env);
    let mut tried = vec![
        "the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not both set)"
            .to_string(),
    ];
    match profile::resolve(env, files, name, options).await {
        Ok(Some(fresh)) => return Ok(fresh),
        Ok(None) => tried.push(format!(
            "profile {name} in {} and {} ({})",
            files.credentials_path,
            files.config_path,
            if files.profiles.contains_key(name) {
                "no credentials in it"
            } else {
                "no such profile"
            }
        )),
        Err(e) => return Err(failed(&format!("profile {name}"), e)),
    }
    match (
        env.get("AWS_WEB_IDENTITY_TOKEN_FILE"),
        env.get("AWS_ROLE_ARN"),
    ) {
        (Some(file), Some(arn)) => {
            return web_identity(env, file, arn, options)
                .await
                .map_err(|e| failed("web identity", e))
        }
        _ => tried.push(
            "web identity (AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN are not both set)".into(),
        ),
    }
    if remote::container_configured(env) {
        return remote::container(env, options)
            .await
            .map_err(|e| failed("container credentials", e));
    }
    tried.push(
        "container credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI / _FULL_URI unset)".into(),
    );
    if remote::imds_disabled(env) {
        tried.push("instance metadata (AWS_EC2_METADATA_DISABLED is set)".into());
    } else {
        match remote::instance(env, options).await {
            Ok(fresh) => return Ok(fresh),
            Err(e) => tried.push(e),
        }
    }
    Err(format!(
        "Could not load credentials from any providers (tried {}); set \
         AWS_BEARER_TOKEN_BEDROCK, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE \
         naming a profile with credentials",
        tried.join("; ")
    ))
}

/// The message of a configured source that failed.
fn failed(source: &str, e: String) -> String {
    if e == "aborted" {
        return e;
    }
    format!("Could not load credentials from {source}: {e}")
}

/// `AssumeRoleWithWebIdentity` with the environment's token file and role.
async fn web_identity(
    env: &Env,
    file: &str,
    arn: &str,
    options: &StreamOptions,
) -> Result<Fresh, String> {
    let token = tokio::fs::read_to_string(file)
        .await
        .map_err(|e| format!("AWS_WEB_IDENTITY_TOKEN_FILE {file}: {e}"))?;
    let region = env.get("AWS_REGION").unwrap_or("us-east-1");
    let role = sts::Role {
        arn,
        session_name: env.get("AWS_ROLE_SESSION_NAME"),
        external_id: None,
        duration_seconds: None,
        region,
    };
    sts::assume_role_with_web_identity(env, token.trim(), &role, options).await
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
