use super::*;

fn env(pairs: &[(&str, &str)]) -> Env {
    Env::from_pairs(pairs.iter().map(|(k, v)| (*k, v.to_string())))
}

#[test]
fn the_environment_view_keeps_only_set_chain_variables_and_shows_no_value() {
    let e = env(&[
        ("AWS_SECRET_ACCESS_KEY", "s3cr3t"),
        ("AWS_PROFILE", ""),
        ("PATH", "/bin"),
    ]);
    assert_eq!(e.get("AWS_SECRET_ACCESS_KEY"), Some("s3cr3t"));
    assert_eq!(e.get("AWS_PROFILE"), None);
    assert_eq!(e.get("PATH"), None);
    let shown = format!("{e:?}");
    assert!(!shown.contains("s3cr3t"), "{shown}");
    assert!(shown.contains("AWS_SECRET_ACCESS_KEY"), "{shown}");
    assert_eq!(
        env_keys(&env(&[("AWS_ACCESS_KEY_ID", "A")])).map(|f| f.expires),
        None
    );
}

#[test]
fn credentials_are_used_until_five_minutes_before_they_expire() {
    let now = SystemTime::now();
    let fresh = |expires| Fresh {
        credentials: AwsCredentials {
            access_key_id: "A".into(),
            secret_access_key: "S".into(),
            session_token: None,
        },
        expires,
    };
    assert!(fresh(None).usable(now));
    assert!(fresh(Some(now + Duration::from_secs(301))).usable(now));
    assert!(!fresh(Some(now + Duration::from_secs(299))).usable(now));
    assert!(!fresh(Some(now - Duration::from_secs(1))).usable(now));
    assert!(!format!("{:?}", fresh(None)).contains("\"S\""));
}

#[test]
fn prepare_keeps_the_profile_region_and_static_profile_keys_per_environment() {
    let dir = std::env::temp_dir().join(format!("tern-aws-unit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config");
    std::fs::write(
        &config,
        "[profile p]\nregion = ca-central-1\naws_access_key_id = AKP\naws_secret_access_key = SP\n",
    )
    .unwrap();
    let e = env(&[
        ("HOME", dir.to_str().unwrap()),
        ("AWS_PROFILE", "p"),
        ("AWS_CONFIG_FILE", config.to_str().unwrap()),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(credentials(&e), None);
    rt.block_on(prepare(&e, false, &StreamOptions::default()))
        .unwrap();
    assert_eq!(profile_region(&e).as_deref(), Some("ca-central-1"));
    assert_eq!(credentials(&e), None, "not asked for");
    rt.block_on(prepare(&e, true, &StreamOptions::default()))
        .unwrap();
    assert_eq!(credentials(&e).unwrap().access_key_id, "AKP");
    // Another profile is another entry.
    let other = env(&[
        ("HOME", dir.to_str().unwrap()),
        ("AWS_PROFILE", "q"),
        ("AWS_CONFIG_FILE", config.to_str().unwrap()),
        ("AWS_EC2_METADATA_DISABLED", "1"),
    ]);
    let err = rt
        .block_on(prepare(&other, true, &StreamOptions::default()))
        .unwrap_err();
    assert!(err.contains("profile q in"), "{err}");
    assert_eq!(profile_region(&other), None);
    let _ = std::fs::remove_dir_all(&dir);
}

mod hostile_input {
    use proptest::prelude::*;

    use super::super::ini::{parse_file, FileKind};
    use super::super::wire::{parse_time, xml_text};
    use super::super::{process, remote, sso, sts};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn no_reader_panics_on_arbitrary_text(s in "(\\PC|[\\[\\]=#;<>&/\n\t ]){0,200}") {
            let _ = parse_file(&s, FileKind::Config);
            let _ = parse_file(&s, FileKind::Credentials);
            let _ = parse_time(&s);
            let _ = xml_text(&s, "Credentials");
            let _ = sts::parse_credentials(&s);
            let _ = remote::parse_json(&s);
            let _ = sso::parse_role_credentials(&s);
            let _ = process::parse(s.as_bytes(), std::time::SystemTime::now());
        }

        #[test]
        fn no_reader_panics_on_arbitrary_bytes(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = process::parse(&b, std::time::SystemTime::now());
            let s = String::from_utf8_lossy(&b);
            let _ = parse_file(&s, FileKind::Config);
            let _ = sts::parse_credentials(&s);
        }

        #[test]
        fn a_written_profile_reads_back(name in "[a-z0-9_-]{1,12}", key in "[A-Z0-9]{4,20}", secret in "[!-~]{1,40}") {
            let text = format!("[profile {name}]\naws_access_key_id = {key}\naws_secret_access_key = {secret}\n");
            let parsed = parse_file(&text, FileKind::Config);
            prop_assert_eq!(&parsed.profiles[&name]["aws_access_key_id"], &key);
            prop_assert_eq!(&parsed.profiles[&name]["aws_secret_access_key"], &secret);
        }
    }
}
