use super::*;

fn config(account: &str) -> BlobStoreConfiguration {
    BlobStoreConfiguration {
        account_name: Some(account.to_owned()),
        ..Default::default()
    }
}

#[test]
fn accounts_are_user_host_and_port() {
    let parsed = parse_account("backup@s3.example:443").unwrap();
    assert_eq!(parsed.user, Some("backup"));
    assert_eq!(parsed.host, "s3.example");
    assert_eq!(parsed.port, Some(443));
    assert_eq!(parse_account("[fd00::1]:80").unwrap().host, "[fd00::1]");
    assert_eq!(parse_account("10.0.0.1").unwrap().port, None);
    for bad in [
        "",
        "a@b/evil",
        "a@b?bucket=other",
        "a@b:443/x?bucket=y",
        "a b@c",
        "a@b:0",
        "a@b:+1",
        "a@b:99999",
        "@b",
        "a@b#frag",
        "a@-b",
    ] {
        assert!(parse_account(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn each_url_part_is_refused_naming_its_field() {
    let mut bad = config("a@b/x?bucket=evil");
    bad.backup_name = Some("x?bucket=evil".into());
    bad.bucket = Some("evil&x=1".into());
    bad.url_parameters = vec!["bucket=other".into(), "sc=1&bucket=x".into(), "x".into()];
    let errors = blob_store_errors("spec.blobStoreConfiguration", &bad, "r");
    let fields: Vec<&str> = errors
        .iter()
        .map(|e| e.split(": ").next().unwrap_or_default())
        .collect();
    assert_eq!(
        fields,
        [
            "spec.blobStoreConfiguration.accountName",
            "spec.blobStoreConfiguration.backupName",
            "spec.blobStoreConfiguration.bucket",
            "spec.blobStoreConfiguration.urlParameters[0]",
            "spec.blobStoreConfiguration.urlParameters[1]",
            "spec.blobStoreConfiguration.urlParameters[2]",
        ],
        "{errors:#?}"
    );
    let mut good = config("backup@s3.example:443");
    good.url_parameters = vec!["secure_connection=0".into(), "header=x-amz-a:b".into()];
    assert!(blob_store_errors("f", &good, "my-backup").is_empty());
}

#[test]
fn the_url_keeps_valid_parts_and_encodes_the_rest() {
    let mut good = config("backup@s3.example:443");
    good.url_parameters = vec!["secure_connection=0".into()];
    assert_eq!(
        good.url("b"),
        "blobstore://backup@s3.example:443/b?bucket=fdb-backups&secure_connection=0"
    );
    // Validation skipped: every part stays its part.
    let mut bad = config("a@b/x?bucket=evil");
    bad.backup_name = Some("n?bucket=evil#".into());
    bad.bucket = Some("b&x=1".into());
    bad.url_parameters = vec!["k=v&bucket=evil".into(), "bucket=evil".into()];
    let url = bad.url("r");
    assert_eq!(url.matches('?').count(), 1, "{url}");
    assert_eq!(url.matches("bucket=").count(), 1, "{url}");
    assert_eq!(url.matches('&').count(), 1, "{url}");
    assert_eq!(url.matches('/').count(), 3, "{url}");
    assert!(!url.contains('#'));
}

#[test]
fn restore_keys_are_bytes_and_ranges_ordered() {
    assert_eq!(parse_key("a\\x00b").unwrap(), b"a\x00b");
    assert_eq!(parse_key("a b").unwrap(), b"a b");
    assert!(parse_key("").is_err());
    assert!(parse_key("\\x0").is_err());
    assert!(parse_key("\\q").is_err());
    let range = |start: &str, end: &str| FoundationDBKeyRange {
        start: start.into(),
        end: end.into(),
    };
    let errors = key_range_errors(
        "spec.keyRanges",
        &[
            range("a", "b"),
            range("b", "a"),
            range("\\x61", "a"),
            range("", "\\xff"),
            range("a", "\\xzz"),
            range(" ", "a"),
        ],
    );
    assert_eq!(
        errors,
        [
            "spec.keyRanges[1]: start \"b\" must come before end \"a\"",
            "spec.keyRanges[2]: start \"\\\\x61\" must come before end \"a\"",
            "spec.keyRanges[3].start: \"\" must not be empty (the first key is \\x00)",
            "spec.keyRanges[4].end: \"\\\\xzz\" invalid hex digits",
        ]
    );
}

#[test]
fn only_knobs_reach_the_backup_tools() {
    let parameters: Vec<String> = [
        "knob_http_verbose_level=3",
        "dest-cluster-file=/var/other/fdb.cluster",
        "knob_x=1\n--dest-cluster-file=/x",
        "knob x=1",
        "no-equals",
        "knob_ok-2=a b",
    ]
    .map(str::to_owned)
    .to_vec();
    let errors = tool_parameter_errors("spec.customParameters", &parameters);
    let indexes: Vec<&str> = errors
        .iter()
        .map(|e| e.split(':').next().unwrap_or_default())
        .collect();
    assert_eq!(
        indexes,
        [
            "spec.customParameters[1]",
            "spec.customParameters[2]",
            "spec.customParameters[3]",
            "spec.customParameters[4]",
        ],
        "{errors:?}"
    );
    assert!(errors[0].contains("\"dest-cluster-file\""), "{errors:?}");
}
