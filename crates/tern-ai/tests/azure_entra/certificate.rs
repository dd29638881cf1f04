//! A client certificate from the environment (`AZURE_CLIENT_CERTIFICATE_PATH`): the
//! assertion MSAL would send, checked field by field and by its signature, at a local
//! authority.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ring::signature::KeyPair as _;

use super::*;

fn data(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn decode(part: &str) -> Value {
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
}

/// The first certificate's DER, base64.
fn certificate_body(pem: &str) -> String {
    pem.lines()
        .skip_while(|l| !l.starts_with("-----BEGIN CERTIFICATE-----"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect()
}

/// `openssl x509 -noout -fingerprint -sha256` of tests/data/throwaway-test-rsa-cert.pem.
const SHA256_FINGERPRINT: &str = "138F6E527367C622E610BF73BAE03F048C94DB37E9888769861D6411C5F6C9C2";

#[test]
fn a_client_certificate_signs_the_assertion() {
    clear_process_env();
    runtime().block_on(async {
        let cert = data("throwaway-test-rsa-cert.pem");
        let key = data("throwaway-test-rsa-key.pem");
        let dir = scratch_dir("certificate");
        let path = format!("{dir}/client.pem");
        std::fs::write(&path, format!("{cert}{key}")).unwrap();
        let authority = start_server(vec![token_answer("entra-cert-token")]).await.unwrap();
        let vars = [
            ("AZURE_TENANT_ID", "tenant-c"),
            ("AZURE_CLIENT_ID", "client-c"),
            ("AZURE_CLIENT_CERTIFICATE_PATH", path.as_str()),
            ("AZURE_AUTHORITY_HOST", authority.origin.as_str()),
        ];
        let (m, sent) = once(&with_env(&vars)).await;
        assert_eq!(m.error_message, None);
        assert_eq!(
            header(&sent[0], "authorization"),
            Some("Bearer entra-cert-token")
        );
        let asked = authority.requests.lock().clone();
        assert_eq!(asked[0].path, "/tenant-c/oauth2/v2.0/token");
        let form = url_form(&asked[0].body);
        assert_eq!(form["grant_type"], "client_credentials");
        assert_eq!(form["client_id"], "client-c");
        assert_eq!(form["scope"], "https://cognitiveservices.azure.com/.default");
        assert_eq!(
            form["client_assertion_type"],
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        );
        assert!(!form.contains_key("client_secret"));
        let parts: Vec<&str> = form["client_assertion"].split('.').collect();
        assert_eq!(parts.len(), 3);
        let fingerprint: Vec<u8> = (0..32)
            .map(|i| u8::from_str_radix(&SHA256_FINGERPRINT[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        assert_eq!(
            decode(parts[0]),
            json!({"alg": "PS256", "typ": "JWT",
                   "x5t#S256": URL_SAFE_NO_PAD.encode(&fingerprint)})
        );
        let claims = decode(parts[1]);
        let audience = format!("{}/tenant-c/oauth2/v2.0/token", authority.origin);
        assert_eq!(claims["aud"], audience.as_str());
        assert_eq!(claims["iss"], "client-c");
        assert_eq!(claims["sub"], "client-c");
        assert_eq!(
            claims["exp"].as_u64().unwrap() - claims["nbf"].as_u64().unwrap(),
            600
        );
        assert_eq!(claims["jti"].as_str().unwrap().len(), 36);
        let der = STANDARD
            .decode(
                key.lines()
                    .filter(|l| !l.starts_with("-----"))
                    .collect::<String>(),
            )
            .unwrap();
        let pair = ring::signature::RsaKeyPair::from_pkcs8(&der).unwrap();
        ring::signature::UnparsedPublicKey::new(
            &ring::signature::RSA_PSS_2048_8192_SHA256,
            pair.public_key().as_ref(),
        )
        .verify(
            format!("{}.{}", parts[0], parts[1]).as_bytes(),
            &URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
        )
        .expect("the assertion is signed with the certificate's key");
        // Kept for the next request.
        let (m, _) = once(&with_env(&vars)).await;
        assert_eq!(m.error_message, None);
        assert_eq!(authority.requests.lock().len(), 1);

        // A PKCS#1 key, the chain sent as x5c (AZURE_CLIENT_SEND_CERTIFICATE_CHAIN).
        let pkcs1 = format!("{dir}/client-pkcs1.pem");
        std::fs::write(
            &pkcs1,
            format!("{}{cert}", data("throwaway-test-rsa-key-pkcs1.pem")),
        )
        .unwrap();
        let authority = start_server(vec![token_answer("entra-chain-token")]).await.unwrap();
        let vars = [
            ("AZURE_TENANT_ID", "tenant-c"),
            ("AZURE_CLIENT_ID", "client-c"),
            ("AZURE_CLIENT_CERTIFICATE_PATH", pkcs1.as_str()),
            ("AZURE_CLIENT_SEND_CERTIFICATE_CHAIN", "true"),
            ("AZURE_AUTHORITY_HOST", authority.origin.as_str()),
        ];
        let (m, sent) = once(&with_env(&vars)).await;
        assert_eq!(m.error_message, None);
        assert_eq!(
            header(&sent[0], "authorization"),
            Some("Bearer entra-chain-token")
        );
        let form = url_form(&authority.requests.lock()[0].body);
        let head = decode(form["client_assertion"].split('.').next().unwrap());
        assert_eq!(head["alg"], "PS256");
        assert_eq!(head["x5c"], json!([certificate_body(&cert)]));

        // A secret, when also set, wins (azure-identity's order).
        let vars = [
            ("AZURE_TENANT_ID", "tenant-s"),
            ("AZURE_CLIENT_ID", "client-c"),
            ("AZURE_CLIENT_SECRET", "both"),
            ("AZURE_CLIENT_CERTIFICATE_PATH", path.as_str()),
            ("AZURE_AUTHORITY_HOST", authority.origin.as_str()),
        ];
        let (m, _) = once(&with_env(&vars)).await;
        assert_eq!(m.error_message, None);
        let form = url_form(&authority.requests.lock()[1].body);
        assert_eq!(form["client_secret"], "both");
        assert!(!form.contains_key("client_assertion"));

        // An encrypted key and a missing file: named, with what to do; nothing sent.
        let encrypted = format!("{dir}/encrypted.pem");
        std::fs::write(
            &encrypted,
            format!("{cert}-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqhkiG9w0BBQ0w\n-----END ENCRYPTED PRIVATE KEY-----\n"),
        )
        .unwrap();
        for (file, why) in [
            (encrypted.as_str(), "is encrypted, which tern cannot open"),
            ("/nonexistent/tern-client.pem", "No such file"),
        ] {
            let vars = [
                ("AZURE_TENANT_ID", "tenant-e"),
                ("AZURE_CLIENT_ID", "client-c"),
                ("AZURE_CLIENT_CERTIFICATE_PATH", file),
                ("AZURE_CLIENT_CERTIFICATE_PASSWORD", "pw-not-quoted"),
                ("AZURE_AUTHORITY_HOST", authority.origin.as_str()),
            ];
            let (m, sent) = once(&with_env(&vars)).await;
            let message = m.error_message.unwrap();
            assert!(
                message.contains(&format!("AZURE_CLIENT_CERTIFICATE_PATH {file}: ")),
                "{message}"
            );
            assert!(message.contains(why), "{message}");
            assert!(
                message.ends_with(
                    "check AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_CERTIFICATE_PATH"
                ),
                "{message}"
            );
            assert!(!message.contains("pw-not-quoted"));
            assert!(sent.is_empty());
        }
        assert_eq!(authority.requests.lock().len(), 2);
    });
}
