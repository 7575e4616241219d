//! Tests of the sidecar configuration: flags, env fallbacks, substitutions.

use super::*;

fn setup(version: &str) -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let version_file = dir.path().join("version");
    std::fs::write(&version_file, format!("{version}\n")).unwrap();
    let args = vec![
        "--version-file".to_owned(),
        version_file.display().to_string(),
    ];
    (dir, args)
}

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn parse(extra: &[&str], env_pairs: &[(&str, &str)]) -> Result<SidecarConfig, ConfigError> {
    let (_dir, mut args) = setup("7.1.57");
    args.extend(extra.iter().map(|s| s.to_string()));
    SidecarConfig::from_args(args, &env(env_pairs))
}

#[test]
fn substitutions_apply_fallbacks() {
    let config = parse(
        &["--main-container-version", "7.1.57"],
        &[
            ("FDB_POD_IP", "10.0.0.2"),
            ("HOSTNAME", "pod-1"),
            ("FDB_INSTANCE_ID", "storage-1"),
        ],
    )
    .unwrap();
    let s = &config.substitutions;
    assert_eq!(s["FDB_PUBLIC_IP"], "10.0.0.2");
    assert_eq!(s["FDB_MACHINE_ID"], "pod-1");
    assert_eq!(s["FDB_ZONE_ID"], "pod-1");
    assert_eq!(s["FDB_INSTANCE_ID"], "storage-1");
    assert_eq!(s["BINARY_DIR"], "/usr/bin");
    assert_eq!(config.bind_address, Some("10.0.0.2:8080".parse().unwrap()));
}

#[test]
fn binary_dir_points_at_staged_binaries_on_mismatch() {
    let config = parse(&["--main-container-version", "7.1.50"], &[]).unwrap();
    assert_eq!(
        config.substitutions["BINARY_DIR"],
        "/var/dynamic-conf/bin/7.1.57"
    );
    assert!(config.version_mismatch());
    let same = parse(&["--main-container-version", "7.1.57"], &[]).unwrap();
    assert_eq!(same.substitutions["BINARY_DIR"], "/usr/bin");
    assert!(!same.version_mismatch());
}

#[test]
fn omitted_main_container_version_counts_as_a_mismatch() {
    let config = parse(&[], &[]).unwrap();
    assert_eq!(
        config.substitutions["BINARY_DIR"],
        "/var/dynamic-conf/bin/7.1.57"
    );
    assert!(config.version_mismatch());
}

#[test]
fn ip_family_selects_and_brackets() {
    let config = parse(
        &["--public-ip-family", "6"],
        &[
            ("FDB_POD_IP", "10.0.0.2,fd00::2"),
            ("FDB_PUBLIC_IP", "10.0.0.3,fd00::3"),
        ],
    )
    .unwrap();
    assert_eq!(config.substitutions["FDB_POD_IP"], "[fd00::2]");
    assert_eq!(config.substitutions["FDB_PUBLIC_IP"], "[fd00::3]");
    assert_eq!(config.bind_address, Some("[fd00::2]:8080".parse().unwrap()));
    let err = parse(&["--public-ip-family", "6"], &[("FDB_POD_IP", "10.0.0.2")]).unwrap_err();
    assert!(err.to_string().contains("FDB_POD_IP"), "{err}");
}

#[test]
fn extra_variables_come_from_the_env_map() {
    let config = parse(
        &[
            "--substitute-variable",
            "FDB_DNS_NAME",
            "--substitute-variable",
            "FDB_POD_IP",
        ],
        &[("FDB_DNS_NAME", "x.svc"), ("FDB_POD_IP", "10.0.0.9")],
    )
    .unwrap();
    assert_eq!(config.substitutions["FDB_DNS_NAME"], "x.svc");
    assert_eq!(config.substitutions["FDB_POD_IP"], "10.0.0.9");
    let err = parse(&["--substitute-variable", "NOPE"], &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "--substitute-variable NOPE: environment variable NOPE is not set"
    );
}

#[test]
fn deprecated_env_is_an_error_naming_it() {
    let err = parse(&[], &[("COPY_ONCE", "1")]).unwrap_err();
    assert!(err.to_string().contains("COPY_ONCE"), "{err}");
}

#[test]
fn deprecated_env_set_but_empty_is_ignored() {
    let empty: Vec<(&str, &str)> = DEPRECATED_ENV_VARS.iter().map(|n| (*n, "")).collect();
    parse(&[], &empty).unwrap();
}

#[test]
fn without_ip_env_the_sidecar_binds_to_the_host_address() {
    let config = parse(&[], &[("HOSTNAME", "localhost")]).unwrap();
    let public_ip = &config.substitutions["FDB_PUBLIC_IP"];
    let ip: IpAddr = public_ip
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .unwrap();
    assert!(ip.is_loopback(), "{public_ip}");
    assert_eq!(config.bind_address, Some(SocketAddr::new(ip, 8080)));
    let env_public = parse(&[], &[("FDB_PUBLIC_IP", "10.0.0.5")]).unwrap();
    assert_eq!(
        env_public.bind_address,
        Some("10.0.0.5:8080".parse().unwrap())
    );
    // No address anywhere: no listen address (the binary reports it clearly).
    let nowhere = parse(&[], &[("HOSTNAME", "no-such-host.invalid")]).unwrap();
    assert_eq!(nowhere.bind_address, None);
}

#[test]
fn tls_needs_all_files_and_takes_env_fallbacks() {
    let err = parse(&["--tls"], &[("FDB_TLS_CERTIFICATE_FILE", "/c.pem")]).unwrap_err();
    assert!(err.to_string().contains("--tls-key-file"), "{err}");
    let config = parse(
        &["--tls", "--tls-ca-file", "/flag-ca.pem"],
        &[
            ("FDB_TLS_CERTIFICATE_FILE", "/c.pem"),
            ("FDB_TLS_KEY_FILE", "/k.pem"),
            ("FDB_TLS_CA_FILE", "/env-ca.pem"),
            ("FDB_TLS_VERIFY_PEERS", "S.CN=op"),
        ],
    )
    .unwrap();
    let tls = config.tls.unwrap();
    assert_eq!(tls.ca_file, PathBuf::from("/flag-ca.pem"));
    assert_eq!(tls.key_file, PathBuf::from("/k.pem"));
    let err = parse(
        &["--tls", "--tls-verify-peers", "X.CN=a"],
        &[
            ("FDB_TLS_CERTIFICATE_FILE", "/c"),
            ("FDB_TLS_KEY_FILE", "/k"),
            ("FDB_TLS_CA_FILE", "/ca"),
        ],
    )
    .unwrap_err();
    assert!(matches!(err, ConfigError::PeerRules(_)), "{err}");
}

#[test]
fn unsafe_names_are_rejected() {
    for (flag, value) in [
        ("--copy-file", "../etc/passwd"),
        ("--copy-file", "/etc/passwd"),
        ("--copy-binary", "a/b"),
        ("--copy-library", ".."),
        ("--input-monitor-conf", ""),
    ] {
        let err = parse(&[flag, value], &[]).unwrap_err();
        assert!(
            matches!(err, ConfigError::UnsafeName { .. }),
            "{flag} {value}: {err}"
        );
    }
    parse(&["--copy-file", "sub/fdb.cluster"], &[]).unwrap();
}

#[test]
fn bad_version_file_is_reported() {
    let err = SidecarConfig::from_args(
        [
            "--version-file".to_owned(),
            "/nonexistent/version".to_owned(),
        ],
        &BTreeMap::new(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("/nonexistent/version"), "{err}");
    let (dir, args) = setup("garbage");
    let err = SidecarConfig::from_args(args, &BTreeMap::new()).unwrap_err();
    assert!(err.to_string().contains("garbage"), "{err}");
    drop(dir);
}

#[test]
fn bind_address_flag_accepts_ipv6() {
    let config = parse(&["--bind-address", "[::1]:9090"], &[]).unwrap();
    assert_eq!(config.bind_address, Some("[::1]:9090".parse().unwrap()));
    assert!(parse(&["--bind-address", "nonsense"], &[]).is_err());
}
