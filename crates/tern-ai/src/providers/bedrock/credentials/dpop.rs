//! The DPoP proof of a console-session refresh (RFC 9449), as
//! `@aws-sdk/credential-provider-login` builds it: an ES256 JWT whose header carries the
//! session key's public half (`{"alg": "ES256", "typ": "dpop+jwt", "jwk": {"kty": "EC",
//! "crv": "P-256", "x", "y"}}`) and whose claims name the request (`{"jti", "htm", "htu",
//! "iat"}`), signed with the P-256 key the cache file holds as a SEC1 PEM
//! (`-----BEGIN EC PRIVATE KEY-----`), the signature raw `r || s`. ring signs it (already in
//! the tree); the few DER fields of the key are read here.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::json;

/// The DER of `prime256v1` (1.2.840.10045.3.1.7).
const P256_OID: [u8; 8] = [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];

/// One DER element: its tag, its contents and what follows it.
fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = match first {
        n if n < 0x80 => (usize::from(n), rest),
        0x81 => (usize::from(*rest.first()?), rest.get(1..)?),
        0x82 => (
            usize::from(*rest.first()?) << 8 | usize::from(*rest.get(1)?),
            rest.get(2..)?,
        ),
        _ => return None,
    };
    Some((tag, rest.get(..len)?, rest.get(len..)?))
}

/// The private scalar and the uncompressed public point of a SEC1 `ECPrivateKey` on P-256.
fn sec1_parts(der: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String> {
    let bad = |why: &str| format!("the dpopKey is not a SEC1 P-256 key ({why})");
    let (0x30, body, _) = element(der).ok_or_else(|| bad("no DER sequence"))? else {
        return Err(bad("no DER sequence"));
    };
    let (0x02, [1], rest) = element(body).ok_or_else(|| bad("no version"))? else {
        return Err(bad("its version is not 1"));
    };
    let (0x04, private, mut rest) = element(rest).ok_or_else(|| bad("no private key"))? else {
        return Err(bad("no private key"));
    };
    let mut public = None;
    while let Some((tag, contents, next)) = element(rest) {
        match tag {
            0xa0 if element(contents).map(|(_, oid, _)| oid) != Some(&P256_OID[..]) => {
                return Err(bad("its curve is not P-256"));
            }
            0xa1 => match element(contents) {
                Some((0x03, [0, point @ ..], _)) => public = Some(point.to_vec()),
                _ => return Err(bad("its public key is not a bit string")),
            },
            _ => {}
        }
        rest = next;
    }
    let public = public.ok_or_else(|| bad("it holds no public key"))?;
    if private.len() != 32 || public.len() != 65 || public[0] != 4 {
        return Err(bad("the key sizes are not P-256's"));
    }
    Ok((private.to_vec(), public))
}

/// The DER inside the PEM block `label`.
fn pem_der(pem: &str, label: &str) -> Option<Vec<u8>> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = pem.find(&begin)? + begin.len();
    let stop = pem.get(start..)?.find(&end)? + start;
    let b64: String = pem
        .get(start..stop)?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    STANDARD.decode(b64).ok()
}

/// The DPoP proof for `method` `url` at `iat` (seconds since 1970), signed with the SEC1
/// PEM key `pem`. Errors say what is wrong with the key, never what it holds.
pub(crate) fn proof(pem: &str, method: &str, url: &str, iat: u64) -> Result<String, String> {
    let der = pem_der(pem, "EC PRIVATE KEY")
        .ok_or("the dpopKey is not a PEM \"EC PRIVATE KEY\" block")?;
    let (private, public) = sec1_parts(&der)?;
    let rng = SystemRandom::new();
    let key = EcdsaKeyPair::from_private_key_and_public_key(
        &ECDSA_P256_SHA256_FIXED_SIGNING,
        &private,
        &public,
        &rng,
    )
    .map_err(|e| format!("the dpopKey is not a usable P-256 key ({e})"))?;
    let header = json!({"alg": "ES256", "typ": "dpop+jwt", "jwk": {
        "kty": "EC", "crv": "P-256",
        "x": URL_SAFE_NO_PAD.encode(&public[1..33]),
        "y": URL_SAFE_NO_PAD.encode(&public[33..65]),
    }});
    let claims = json!({"jti": crate::providers::uuid::v4(&rng, "proof")?, "htm": method, "htu": url, "iat": iat});
    let message = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = key
        .sign(&rng, message.as_bytes())
        .map_err(|_| "signing the DPoP proof failed".to_string())?;
    Ok(format!(
        "{message}.{}",
        URL_SAFE_NO_PAD.encode(signature.as_ref())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};

    /// A throwaway key Node's `crypto.generateKeyPairSync('ec', {namedCurve: 'P-256'})`
    /// exported as SEC1 PEM (what `aws login` caches).
    const KEY: &str = "-----BEGIN EC PRIVATE KEY-----\n\
        MHcCAQEEIMvC1A5YIpcsAem25uzk55NpEdwrhxhaRLlR0MHvTAhhoAoGCCqGSM49\n\
        AwEHoUQDQgAEYm5wnDcN0gQQv0d1HLWmHRqVGP5JI+kWS7Y8cDdPnFip/z7ZFHdS\n\
        19Pzx9l1nOKHiOVYZWD9LPXtDclJ19qlbA==\n\
        -----END EC PRIVATE KEY-----\n";

    fn part(p: &str) -> serde_json::Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).unwrap()).unwrap()
    }

    #[test]
    fn the_proof_is_an_es256_jwt_verifiable_with_its_own_jwk() {
        let proof = proof(
            KEY,
            "POST",
            "https://us-east-1.signin.aws.amazon.com/v1/token",
            1_700_000_000,
        )
        .unwrap();
        let parts: Vec<&str> = proof.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header = part(parts[0]);
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["jwk"]["kty"], "EC");
        assert_eq!(header["jwk"]["crv"], "P-256");
        let keys: Vec<&String> = header.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["alg", "typ", "jwk"]);
        let claims = part(parts[1]);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(
            claims["htu"],
            "https://us-east-1.signin.aws.amazon.com/v1/token"
        );
        assert_eq!(claims["iat"], 1_700_000_000);
        let jti = claims["jti"].as_str().unwrap();
        assert_eq!((jti.len(), &jti[14..15]), (36, "4"));
        let mut point = vec![4u8];
        point.extend(
            URL_SAFE_NO_PAD
                .decode(header["jwk"]["x"].as_str().unwrap())
                .unwrap(),
        );
        point.extend(
            URL_SAFE_NO_PAD
                .decode(header["jwk"]["y"].as_str().unwrap())
                .unwrap(),
        );
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        assert_eq!(signature.len(), 64);
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point)
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .expect("signed with the cached key");
        // A fresh jti each time.
        let again = super::proof(KEY, "POST", "u", 1).unwrap();
        assert_ne!(part(again.split('.').nth(1).unwrap())["jti"], claims["jti"]);
    }

    #[test]
    fn broken_keys_are_refused_without_quoting_them() {
        for bad in [
            "",
            "-----BEGIN EC PRIVATE KEY-----\nx\n-----END EC PRIVATE KEY-----\n",
            "-----BEGIN EC PRIVATE KEY-----\nMAMCAQE=\n-----END EC PRIVATE KEY-----\n",
            "-----BEGIN PRIVATE KEY-----\nMAMCAQE=\n-----END PRIVATE KEY-----\n",
        ] {
            let e = proof(bad, "POST", "u", 1).unwrap_err();
            assert!(e.starts_with("the dpopKey"), "{e}");
        }
        // A key whose public half is not its own.
        let mut der = pem_der(KEY, "EC PRIVATE KEY").unwrap();
        let last = der.len() - 1;
        der[last] ^= 1;
        let (private, public) = sec1_parts(&der).unwrap();
        assert!(EcdsaKeyPair::from_private_key_and_public_key(
            &ECDSA_P256_SHA256_FIXED_SIGNING,
            &private,
            &public,
            &SystemRandom::new()
        )
        .is_err());
    }
}
