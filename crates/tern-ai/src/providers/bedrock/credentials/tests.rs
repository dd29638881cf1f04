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
