//! AWS's published examples: the SigV4 test suite (`aws-sig-v4-test-suite`: get-vanilla,
//! get-vanilla-query-order-key-case, post-vanilla, get-utf8) and the IAM `ListUsers` walk-
//! through of the signing documentation (canonical request, its hash, the string to sign,
//! the derived key and the signature).

use std::time::{Duration, UNIX_EPOCH};

use super::*;

/// 2015-08-30T12:36:00Z, the time of every published example.
fn example_time() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_440_938_160)
}

fn example_credentials() -> AwsCredentials {
    AwsCredentials {
        access_key_id: "AKIDEXAMPLE".into(),
        secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
        session_token: None,
    }
}

fn suite(method: &str, path: &str, query: &str) -> Signature {
    let request = Signable {
        method,
        host: "example.amazonaws.com",
        path,
        query,
        headers: &[],
        payload: b"",
    };
    let scope = Scope {
        region: "us-east-1",
        service: "service",
        at: example_time(),
    };
    sign(&request, &example_credentials(), &scope, false)
}

const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

#[test]
fn get_vanilla() {
    let s = suite("GET", "/", "");
    assert_eq!(
        s.canonical_request,
        format!("GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n{EMPTY_SHA256}")
    );
    assert_eq!(
        s.string_to_sign,
        "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\nbb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63"
    );
    assert_eq!(
        s.signature,
        "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
    );
    assert_eq!(
        s.headers,
        vec![
            ("x-amz-date".to_string(), "20150830T123600Z".to_string()),
            (
                "authorization".to_string(),
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31".to_string()
            ),
        ]
    );
}

#[test]
fn get_vanilla_query_order_key_case() {
    let s = suite("GET", "/", "Param2=value2&Param1=value1");
    assert!(s
        .canonical_request
        .starts_with("GET\n/\nParam1=value1&Param2=value2\n"));
    assert_eq!(
        s.signature,
        "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"
    );
}

#[test]
fn post_vanilla() {
    assert_eq!(
        suite("POST", "/", "").signature,
        "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"
    );
}

#[test]
fn get_utf8() {
    let s = suite("GET", "/ሴ", "");
    assert!(s.canonical_request.starts_with("GET\n/%E1%88%B4\n"));
    assert_eq!(
        s.signature,
        "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"
    );
}

#[test]
fn the_iam_list_users_walkthrough() {
    let headers = [(
        "Content-Type".to_string(),
        "application/x-www-form-urlencoded; charset=utf-8".to_string(),
    )];
    let request = Signable {
        method: "GET",
        host: "iam.amazonaws.com",
        path: "/",
        query: "Action=ListUsers&Version=2010-05-08",
        headers: &headers,
        payload: b"",
    };
    let scope = Scope {
        region: "us-east-1",
        service: "iam",
        at: example_time(),
    };
    let s = sign(&request, &example_credentials(), &scope, false);
    assert_eq!(
        s.canonical_request,
        format!("GET\n/\nAction=ListUsers&Version=2010-05-08\ncontent-type:application/x-www-form-urlencoded; charset=utf-8\nhost:iam.amazonaws.com\nx-amz-date:20150830T123600Z\n\ncontent-type;host;x-amz-date\n{EMPTY_SHA256}")
    );
    assert_eq!(
        s.string_to_sign,
        "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/iam/aws4_request\nf536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59"
    );
    let key = signing_key(
        "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        "20150830",
        "us-east-1",
        "iam",
    );
    // The documented derived key signs the empty string to this tag.
    let expected_key = hmac::Key::new(
        hmac::HMAC_SHA256,
        &(0..32)
            .map(|i| {
                u8::from_str_radix(
                    &"c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9"
                        [2 * i..2 * i + 2],
                    16,
                )
                .unwrap()
            })
            .collect::<Vec<u8>>(),
    );
    assert_eq!(
        hmac::sign(&key, b"").as_ref(),
        hmac::sign(&expected_key, b"").as_ref()
    );
    assert_eq!(
        s.signature,
        "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
    );
}

#[test]
fn bedrock_headers_the_sdk_adds() {
    let credentials = AwsCredentials {
        session_token: Some("TOKEN".into()),
        ..example_credentials()
    };
    let headers = [
        ("content-type".to_string(), "application/json".to_string()),
        ("User-Agent".to_string(), "tern".to_string()),
    ];
    let request = Signable {
        method: "POST",
        host: "bedrock-runtime.us-east-1.amazonaws.com",
        path: "/model/anthropic.claude-v2%3A1/converse-stream",
        query: "",
        headers: &headers,
        payload: b"{}",
    };
    let scope = Scope {
        region: "us-east-1",
        service: "bedrock",
        at: example_time(),
    };
    let s = sign(&request, &credentials, &scope, true);
    // The encoded path is encoded again; user-agent is never signed.
    assert!(s
        .canonical_request
        .starts_with("POST\n/model/anthropic.claude-v2%253A1/converse-stream\n\ncontent-type:application/json\nhost:"));
    let names: Vec<&str> = s.headers.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "x-amz-date",
            "x-amz-content-sha256",
            "x-amz-security-token",
            "authorization"
        ]
    );
    assert!(s.headers[3].1.contains(
        "SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token,"
    ));
    assert_eq!(
        s.headers[1].1,
        "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    );
}

#[test]
fn dates_format_in_utc() {
    assert_eq!(
        timestamps(example_time()),
        ("20150830".to_string(), "20150830T123600Z".to_string())
    );
    // A leap day and the last second of a year.
    let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
    assert_eq!(timestamps(leap).1, "20000229T000000Z");
    let eoy = UNIX_EPOCH + Duration::from_secs(1_704_067_199);
    assert_eq!(timestamps(eoy).1, "20231231T235959Z");
}
