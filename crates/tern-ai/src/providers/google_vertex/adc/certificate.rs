//! Workload identity federation with an X.509 certificate
//! (`credential_source.certificate`), as google-auth-library's
//! `CertificateSubjectTokenSupplier` does it: the certificate config file
//! (`certificate_config_location`, else `GOOGLE_API_CERTIFICATE_CONFIG`, else gcloud's
//! `certificate_config.json` under `CLOUDSDK_CONFIG` or `~/.config/gcloud`) names the
//! workload's certificate and key (`cert_configs.workload.cert_path` / `key_path`). The
//! subject token is the certificate chain as a JSON array of base64 DER certificates: the
//! leaf (the certificate file's first certificate) alone, or with the `trust_chain_path`
//! file's certificates (the leaf prepended unless it already leads them). The STS exchange
//! and the impersonation then go through a client presenting that certificate and key
//! (mutual TLS).
//!
//! The client trusts the roots the shared client trusts (Mozilla's, as Node does) and, as
//! Node does for the reference, the certificates of the PEM file `NODE_EXTRA_CA_CERTS` names
//! (a file that cannot be read is skipped, as Node skips it with a warning).

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::Value;

use super::external::{text, truthy};
use crate::stream_fn::StreamOptions;

/// The variable naming the certificate config file when the credentials name none.
const CONFIG_VARIABLE: &str = "GOOGLE_API_CERTIFICATE_CONFIG";

/// The checks the SDK makes when it reads the credentials, before any file is opened.
pub(super) fn check(certificate: &Value) -> Result<(), String> {
    let default = truthy(certificate.get("use_default_certificate_config"));
    let location = truthy(certificate.get("certificate_config_location"));
    match (default, location) {
        (false, false) => Err("Either `useDefaultCertificateConfig` must be true or a \
                               `certificateConfigLocation` must be provided."
            .into()),
        (true, true) => Err(
            "Both `useDefaultCertificateConfig` and `certificateConfigLocation` cannot be \
             provided."
                .into(),
        ),
        _ => Ok(()),
    }
}

/// True when `path` is a regular file itself (a symbolic link is not followed, as the SDK's
/// `lstat` check does not follow it).
fn is_file(path: &str) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

/// The certificate config file: the credentials' location, else the variable's, else
/// gcloud's well-known one.
fn config_path(certificate: &Value, options: &StreamOptions) -> Result<String, String> {
    if let Some(path) = text(certificate, "certificate_config_location").filter(|p| !p.is_empty()) {
        return if is_file(&path) {
            Ok(path)
        } else {
            Err(format!(
                "Provided certificate config path is invalid: {path}"
            ))
        };
    }
    if let Some(path) = options.env_var(CONFIG_VARIABLE).filter(|p| !p.is_empty()) {
        return if is_file(&path) {
            Ok(path)
        } else {
            Err(format!(
                "Path from environment variable \"{CONFIG_VARIABLE}\" is invalid: {path}"
            ))
        };
    }
    let dir = options
        .env_var("CLOUDSDK_CONFIG")
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| {
            let home = options.env_var("HOME").unwrap_or_default();
            std::path::Path::new(&home)
                .join(".config/gcloud")
                .display()
                .to_string()
        });
    let path = std::path::Path::new(&dir)
        .join("certificate_config.json")
        .display()
        .to_string();
    if is_file(&path) {
        return Ok(path);
    }
    Err(format!(
        "Could not find certificate configuration file. Searched override path, the \
         \"{CONFIG_VARIABLE}\" env var, and the gcloud path ({path})."
    ))
}

/// The workload's certificate and key paths from the config file.
fn cert_and_key_paths(config: &str) -> Result<(String, String), String> {
    let contents = std::fs::read_to_string(config)
        .map_err(|_| format!("Failed to read certificate config file at: {config}"))?;
    let doc: Value = serde_json::from_str(&contents)
        .map_err(|e| format!("Failed to parse certificate config from {config}: {e}"))?;
    let workload = doc.pointer("/cert_configs/workload");
    let field = |k: &str| {
        workload
            .and_then(|w| w.get(k))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    match (field("cert_path"), field("key_path")) {
        (Some(cert), Some(key)) => Ok((cert, key)),
        _ => Err(format!(
            "Certificate config file ({config}) is missing required \"cert_path\" or \
             \"key_path\" in the workload config."
        )),
    }
}

/// True when `der` is one DER SEQUENCE, spanning all of it, that opens with another
/// SEQUENCE (a certificate's outline: the signed part, then the signature).
fn is_certificate_der(der: &[u8]) -> bool {
    fn header(der: &[u8]) -> Option<(usize, usize)> {
        if *der.first()? != 0x30 {
            return None;
        }
        let first = *der.get(1)? as usize;
        if first < 0x80 {
            return Some((2, first));
        }
        let n = first - 0x80;
        if n == 0 || n > 4 {
            return None;
        }
        let bytes = der.get(2..2 + n)?;
        let len = bytes.iter().fold(0usize, |acc, b| (acc << 8) | *b as usize);
        Some((2 + n, len))
    }
    let Some((head, len)) = header(der) else {
        return false;
    };
    head.checked_add(len) == Some(der.len()) && header(&der[head..]).is_some()
}

/// The certificates of a PEM file (in order) and the first one checked as a certificate.
fn certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("it is not PEM ({e})"))?;
    match certs.first() {
        None => Err("it holds no PEM \"CERTIFICATE\" block".into()),
        Some(leaf) if !is_certificate_der(leaf) => {
            Err("its first certificate is not a DER X.509 certificate".into())
        }
        Some(_) => Ok(certs),
    }
}

/// The private key of a PEM file (PKCS#8, PKCS#1 RSA or SEC1 EC), checked as a key the TLS
/// stack can sign with.
fn private_key(pem: &[u8]) -> Result<PrivateKeyDer<'static>, String> {
    let key = PrivateKeyDer::from_pem_slice(pem).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => {
            "it holds no PEM private key (\"PRIVATE KEY\", \"RSA PRIVATE KEY\" or \"EC \
             PRIVATE KEY\")"
                .to_string()
        }
        other => format!("it is not PEM ({other})"),
    })?;
    rustls::crypto::ring::sign::any_supported_type(&key)
        .map_err(|e| format!("the key is not one tern can sign with ({e})"))?;
    Ok(key)
}

/// One PEM block.
fn pem_block(label: &str, der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The subject token: the chain as the SDK builds it.
fn chain_token(leaf: &CertificateDer<'_>, trust_chain: Option<&str>) -> Result<String, String> {
    let Some(path) = trust_chain else {
        return Ok(Value::from(vec![STANDARD.encode(leaf)]).to_string());
    };
    let pems = std::fs::read(path)
        .map_err(|e| format!("Failed to process certificate chain from {path}: {e}"))?;
    let pems = String::from_utf8_lossy(&pems);
    let blocks = regex::Regex::new("-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----")
        .map_err(|e| format!("the certificate block pattern is invalid ({e})"))?;
    let mut chain = Vec::new();
    for (index, block) in blocks.find_iter(&pems).enumerate() {
        let der = CertificateDer::from_pem_slice(block.as_str().as_bytes())
            .ok()
            .filter(|der| is_certificate_der(der))
            .ok_or_else(|| {
                format!(
                    "Failed to parse certificate at index {index} in trust chain file {path}: \
                     it is not a DER X.509 certificate"
                )
            })?;
        chain.push(der);
    }
    let chain = match chain.iter().position(|c| c.as_ref() == leaf.as_ref()) {
        None => std::iter::once(leaf.clone().into_owned())
            .chain(chain)
            .collect(),
        Some(0) => chain,
        Some(index) => {
            return Err(format!(
                "Leaf certificate exists in the trust chain but is not the first entry (found \
                 at index {index})."
            ))
        }
    };
    let encoded: Vec<String> = chain.iter().map(|c| STANDARD.encode(c)).collect();
    Ok(Value::from(encoded).to_string())
}

/// The client presenting the workload's certificate (the certificate file's certificates,
/// in order) and key.
fn mtls_client(
    certs: &[CertificateDer<'_>],
    key: &PrivateKeyDer<'_>,
    options: &StreamOptions,
) -> Result<reqwest::Client, String> {
    let label = match key {
        PrivateKeyDer::Pkcs1(_) => "RSA PRIVATE KEY",
        PrivateKeyDer::Sec1(_) => "EC PRIVATE KEY",
        _ => "PRIVATE KEY",
    };
    let mut pem = pem_block(label, key.secret_der());
    for cert in certs {
        pem.push_str(&pem_block("CERTIFICATE", cert));
    }
    let identity = reqwest::Identity::from_pem(pem.as_bytes())
        .map_err(|e| format!("the workload certificate and key cannot be used for TLS ({e})"))?;
    let mut builder = crate::providers::http::client_builder().identity(identity);
    let extra = options
        .env_var("NODE_EXTRA_CA_CERTS")
        .filter(|p| !p.is_empty())
        .and_then(|path| std::fs::read(path).ok())
        .and_then(|pem| reqwest::Certificate::from_pem_bundle(&pem).ok())
        .unwrap_or_default();
    for root in extra {
        builder = builder.add_root_certificate(root);
    }
    builder
        .build()
        .map_err(|e| format!("the mutual TLS client cannot be built ({e})"))
}

/// The subject token (the certificate chain) and the mutual TLS client for the token
/// requests.
pub(super) async fn subject_token(
    certificate: &Value,
    options: &StreamOptions,
) -> Result<(String, reqwest::Client), String> {
    let config = config_path(certificate, options)?;
    let (cert_path, key_path) = cert_and_key_paths(&config)?;
    let certs = std::fs::read(&cert_path)
        .map_err(|e| e.to_string())
        .and_then(|pem| certificates(&pem))
        .map_err(|e| format!("Failed to read certificate file at {cert_path}: {e}"))?;
    let key = std::fs::read(&key_path)
        .map_err(|e| e.to_string())
        .and_then(|pem| private_key(&pem))
        .map_err(|e| format!("Failed to read private key file at {key_path}: {e}"))?;
    let trust_chain = text(certificate, "trust_chain_path").filter(|p| !p.is_empty());
    let leaf = certs
        .first()
        .ok_or_else(|| format!("Failed to read certificate file at {cert_path}"))?;
    let token = chain_token(leaf, trust_chain.as_deref())?;
    let client = mtls_client(&certs, &key, options)?;
    Ok((token, client))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exactly_one_config_choice_is_required() {
        assert!(check(&json!({})).unwrap_err().starts_with("Either"));
        assert!(check(&json!({"use_default_certificate_config": false,
                               "certificate_config_location": ""}))
        .is_err());
        assert!(check(&json!({"use_default_certificate_config": true,
                               "certificate_config_location": "/x"}))
        .unwrap_err()
        .starts_with("Both"));
        assert_eq!(
            check(&json!({"use_default_certificate_config": true})),
            Ok(())
        );
        assert_eq!(check(&json!({"certificate_config_location": "/x"})), Ok(()));
    }

    #[test]
    fn a_certificate_outline_is_recognised() {
        assert!(is_certificate_der(&[0x30, 0x02, 0x30, 0x00]));
        assert!(!is_certificate_der(&[0x30, 0x03, 0x30, 0x00]));
        assert!(!is_certificate_der(&[0x30, 0x01, 0x05]));
        assert!(!is_certificate_der(b"not der"));
        let mut long = vec![0x30, 0x82, 0x01, 0x00, 0x30, 0x81, 0xfc];
        long.resize(4 + 0x100, 0);
        assert!(is_certificate_der(&long));
    }
}
