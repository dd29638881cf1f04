//! A client certificate's assertion (azure-identity's `ClientCertificateCredential`, as
//! MSAL signs it): a JWT for the token endpoint, `{"alg": "PS256", "typ": "JWT",
//! "x5t#S256": base64url(SHA-256 of the certificate's DER)}` (plus `x5c`, the PEM's
//! certificates, when `AZURE_CLIENT_SEND_CERTIFICATE_CHAIN` is `true` or `1`), claims `aud`
//! (the token endpoint), `iss` and `sub` (the client id), `nbf`, `exp` (ten minutes on) and a
//! random `jti`, signed with the file's RSA key.
//!
//! The file is PEM with the certificate and an unencrypted private key, PKCS#8 (`PRIVATE
//! KEY`) or PKCS#1 (`RSA PRIVATE KEY`). An encrypted key (`ENCRYPTED PRIVATE KEY`, which
//! azure-identity opens with `AZURE_CLIENT_CERTIFICATE_PASSWORD`) is refused with the
//! `openssl` command that decrypts it: tern has no PBES2 cipher in its tree.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ring::digest;
use ring::rand::SystemRandom;
use ring::signature::RsaKeyPair;
use serde_json::{json, Map, Value};

/// How long an assertion is valid (MSAL's ten minutes).
const LIFETIME_SECS: u64 = 600;

/// A certificate file's signing key and what the assertion's header says about it.
pub(super) struct Certificate {
    key: RsaKeyPair,
    /// SHA-256 of the first certificate's DER.
    thumbprint: Vec<u8>,
    /// The file's certificates (base64 DER, in file order), when the chain is sent.
    chain: Option<Vec<String>>,
}

/// The base64 bodies of every `-----BEGIN {label}-----` block of `pem`, in order.
fn blocks(pem: &str, label: &str) -> Vec<String> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let mut out = Vec::new();
    let mut rest = pem;
    while let Some(start) = rest.find(&begin) {
        let body = &rest[start + begin.len()..];
        let Some(stop) = body.find(&end) else { break };
        out.push(
            body[..stop]
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect(),
        );
        rest = &body[stop + end.len()..];
    }
    out
}

impl Certificate {
    /// Reads the certificate and the key of a PEM file's text; `send_chain` keeps the
    /// certificates for `x5c`. The error says what is wrong with the file, never its text.
    pub(super) fn from_pem(pem: &str, send_chain: bool) -> Result<Self, String> {
        let certificates = blocks(pem, "CERTIFICATE");
        let first = certificates
            .first()
            .ok_or("the file has no PEM certificate (-----BEGIN CERTIFICATE-----)")?;
        let der = STANDARD
            .decode(first)
            .map_err(|_| "the file's first certificate is not valid base64")?;
        let thumbprint = digest::digest(&digest::SHA256, &der).as_ref().to_vec();
        let key = if let Some(body) = blocks(pem, "PRIVATE KEY").first() {
            let der = STANDARD
                .decode(body)
                .map_err(|_| "the file's private key is not valid base64")?;
            RsaKeyPair::from_pkcs8(&der).map_err(|e| {
                format!("the file's PKCS#8 private key is not an RSA key ring accepts ({e})")
            })?
        } else if let Some(body) = blocks(pem, "RSA PRIVATE KEY").first() {
            let der = STANDARD
                .decode(body)
                .map_err(|_| "the file's private key is not valid base64")?;
            RsaKeyPair::from_der(&der).map_err(|e| {
                format!("the file's PKCS#1 private key is not an RSA key ring accepts ({e})")
            })?
        } else if pem.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
            return Err(
                "the file's private key is encrypted, which tern cannot open; write \
                 an unencrypted copy (`openssl pkcs8 -in FILE -nocrypt -out KEY.pem`, then the \
                 certificate and KEY.pem in one file) and point AZURE_CLIENT_CERTIFICATE_PATH \
                 at it"
                    .into(),
            );
        } else {
            return Err(
                "the file has no unencrypted RSA private key (-----BEGIN PRIVATE \
                 KEY----- or -----BEGIN RSA PRIVATE KEY-----)"
                    .into(),
            );
        };
        Ok(Certificate {
            key,
            thumbprint,
            chain: send_chain.then_some(certificates),
        })
    }

    /// The signed client assertion of `client_id` for the token endpoint `audience`.
    pub(super) fn assertion(&self, client_id: &str, audience: &str) -> Result<String, String> {
        let rng = SystemRandom::new();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let mut header = Map::new();
        header.insert("alg".into(), json!("PS256"));
        header.insert("typ".into(), json!("JWT"));
        header.insert(
            "x5t#S256".into(),
            json!(URL_SAFE_NO_PAD.encode(&self.thumbprint)),
        );
        if let Some(chain) = &self.chain {
            header.insert("x5c".into(), json!(chain));
        }
        let claims = json!({
            "aud": audience,
            "exp": now + LIFETIME_SECS,
            "iss": client_id,
            "sub": client_id,
            "nbf": now,
            "jti": crate::providers::uuid::v4(&rng, "client assertion")?,
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(Value::Object(header).to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let mut signature = vec![0u8; self.key.public().modulus_len()];
        self.key
            .sign(
                &ring::signature::RSA_PSS_SHA256,
                &rng,
                signing_input.as_bytes(),
                &mut signature,
            )
            .map_err(|_| "signing the client assertion failed".to_string())?;
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_found_in_order() {
        let pem = "x\n-----BEGIN CERTIFICATE-----\nQUJD\nREVG\n-----END CERTIFICATE-----\n\
                   -----BEGIN CERTIFICATE-----\r\nR0hJ\r\n-----END CERTIFICATE-----\n\
                   -----BEGIN CERTIFICATE-----\nunterminated";
        assert_eq!(blocks(pem, "CERTIFICATE"), ["QUJDREVG", "R0hJ"]);
        assert!(blocks(pem, "PRIVATE KEY").is_empty());
    }

    #[test]
    fn files_without_a_usable_key_say_why() {
        let cert = "-----BEGIN CERTIFICATE-----\nQUJD\n-----END CERTIFICATE-----\n";
        let err = |pem: &str| Certificate::from_pem(pem, false).err().unwrap_or_default();
        assert!(err("").contains("no PEM certificate"));
        assert!(err(cert).contains("no unencrypted RSA private key"));
        let encrypted = format!(
            "{cert}-----BEGIN ENCRYPTED PRIVATE KEY-----\nQUJD\n-----END ENCRYPTED PRIVATE KEY-----\n"
        );
        assert!(err(&encrypted).contains("openssl pkcs8"));
        let garbage =
            format!("{cert}-----BEGIN PRIVATE KEY-----\nQUJD\n-----END PRIVATE KEY-----\n");
        assert!(err(&garbage).contains("not an RSA key"));
    }
}
