//! Where a Bedrock request goes and for which region it is signed, resolved as the
//! reference resolves it: the region of an inference-profile ARN, then the `region` option,
//! `AWS_REGION` / `AWS_DEFAULT_REGION`, then the region of a standard endpoint, then (with
//! `AWS_PROFILE`) the profile's `region` — none there is the SDK's `Region is missing` —,
//! else `us-east-1`.

use crate::model::Model;
use crate::stream_fn::StreamOptions;

/// The `region` option, else `AWS_REGION`, else `AWS_DEFAULT_REGION` (the request's `env`
/// first, then the process's).
pub(super) fn configured_region(options: &StreamOptions) -> Option<String> {
    options
        .option_or_env(&options.bedrock.region, "AWS_REGION")
        .or_else(|| options.env_var("AWS_DEFAULT_REGION"))
}

/// The region of `arn:aws[-partition]:bedrock:REGION:...`.
fn arn_region(id: &str) -> Option<&str> {
    let rest = id.strip_prefix("arn:aws")?;
    let (partition, rest) = rest.split_once(':')?;
    let partition_ok = partition.is_empty()
        || partition.strip_prefix('-').is_some_and(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        });
    let rest = rest.strip_prefix("bedrock:")?;
    let (region, _) = rest.split_once(':')?;
    let region_ok = !region.is_empty()
        && region
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    (partition_ok && region_ok).then_some(region)
}

/// The region of `https://bedrock-runtime[-fips].REGION.amazonaws.com[.cn]`.
fn endpoint_region(base_url: &str) -> Option<String> {
    let url = reqwest::Url::parse(base_url).ok()?;
    let host = url.host_str()?.to_ascii_lowercase();
    let host = host.strip_suffix(".cn").unwrap_or(&host);
    let rest = host.strip_suffix(".amazonaws.com")?;
    let region = rest
        .strip_prefix("bedrock-runtime-fips.")
        .or_else(|| rest.strip_prefix("bedrock-runtime."))?;
    let ok = !region.is_empty()
        && region
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    ok.then(|| region.to_string())
}

/// The endpoint (origin) and the signing region of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Target {
    /// `model.baseUrl`, or the region's standard endpoint.
    pub endpoint: String,
    /// The signing region.
    pub region: String,
    /// Nothing names the region while `AWS_PROFILE` is set: the SDK fails with `Region is
    /// missing` (and `region` is a placeholder, never used).
    pub missing: bool,
}

/// The SDK's words when no region can be found.
pub(super) const REGION_MISSING: &str = "Region is missing";

/// Resolves the target of `model` (the environment is read once, here); `profile_region`
/// is the `region` of `AWS_PROFILE`'s profile, which the SDK uses when nothing else names
/// one. Only the process's `AWS_PROFILE` counts as a configured profile here, as in pi-ai.
pub(super) fn target(
    model: &Model,
    options: &StreamOptions,
    profile_region: Option<String>,
) -> Target {
    let profile = std::env::var("AWS_PROFILE").is_ok_and(|p| !p.is_empty());
    resolve(
        model,
        configured_region(options),
        profile.then_some(profile_region),
    )
}

/// `profile`: `None` without `AWS_PROFILE`, else its profile's region if it has one.
fn resolve(model: &Model, configured: Option<String>, profile: Option<Option<String>>) -> Target {
    let from_endpoint = endpoint_region(&model.base_url);
    // A custom endpoint (VPC, proxy) is always kept; a standard one only when nothing
    // configures the region.
    let explicit = from_endpoint.is_none() || (configured.is_none() && profile.is_none());
    let with_profile = profile.is_some();
    let region = arn_region(&model.id)
        .map(str::to_string)
        .or(configured)
        .or(from_endpoint.filter(|_| explicit))
        .or(profile.flatten());
    let missing = region.is_none() && with_profile;
    let region = region.unwrap_or_else(|| "us-east-1".to_string());
    let endpoint = if explicit {
        model.base_url.trim_end_matches('/').to_string()
    } else {
        format!("https://bedrock-runtime.{region}.amazonaws.com")
    };
    Target {
        endpoint,
        region,
        missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(id: &str, base_url: &str) -> Model {
        Model {
            id: id.into(),
            base_url: base_url.into(),
            ..Model::default()
        }
    }

    const STANDARD: &str = "https://bedrock-runtime.us-east-1.amazonaws.com";

    #[test]
    fn an_arn_region_wins_over_everything() {
        let m = model(
            "arn:aws:bedrock:eu-west-3:123456789012:inference-profile/x",
            STANDARD,
        );
        let t = resolve(&m, Some("ap-south-1".into()), None);
        assert_eq!(t.region, "eu-west-3");
        let m = model("arn:aws-us-gov:bedrock:us-gov-west-1:1:x", STANDARD);
        assert_eq!(resolve(&m, None, None).region, "us-gov-west-1");
    }

    #[test]
    fn a_configured_region_moves_a_standard_endpoint_but_not_a_custom_one() {
        let m = model("anthropic.claude", STANDARD);
        assert_eq!(
            resolve(&m, Some("eu-central-1".into()), None),
            Target {
                endpoint: "https://bedrock-runtime.eu-central-1.amazonaws.com".into(),
                region: "eu-central-1".into(),
                missing: false
            }
        );
        let m = model("anthropic.claude", "http://127.0.0.1:9000/");
        assert_eq!(
            resolve(&m, Some("eu-central-1".into()), None),
            Target {
                endpoint: "http://127.0.0.1:9000".into(),
                region: "eu-central-1".into(),
                missing: false
            }
        );
    }

    #[test]
    fn without_configuration_the_endpoint_names_the_region() {
        let m = model("x", "https://bedrock-runtime-fips.us-west-2.amazonaws.com");
        assert_eq!(resolve(&m, None, None).region, "us-west-2");
        let m = model("x", "http://localhost:1");
        assert_eq!(resolve(&m, None, None).region, "us-east-1");
    }

    #[test]
    fn an_aws_profile_names_the_region_when_nothing_else_does() {
        let m = model("x", STANDARD);
        let t = resolve(&m, None, Some(Some("ap-northeast-1".into())));
        assert_eq!(
            t,
            Target {
                endpoint: "https://bedrock-runtime.ap-northeast-1.amazonaws.com".into(),
                region: "ap-northeast-1".into(),
                missing: false
            }
        );
        // A configured region still wins; a profile without one, with nothing else naming a
        // region, is the SDK's "Region is missing" (a custom endpoint names none either).
        let t = resolve(
            &m,
            Some("eu-west-1".into()),
            Some(Some("ap-northeast-1".into())),
        );
        assert_eq!(t.region, "eu-west-1");
        assert!(resolve(&m, None, Some(None)).missing);
        assert!(resolve(&model("x", "http://127.0.0.1:9"), None, Some(None)).missing);
        assert!(!resolve(&m, Some("eu-west-1".into()), Some(None)).missing);
        assert!(!resolve(&m, None, None).missing, "no profile: us-east-1");
        let custom = model("x", "http://127.0.0.1:9");
        assert_eq!(
            resolve(&custom, None, Some(Some("sa-east-1".into()))).region,
            "sa-east-1"
        );
    }
}
