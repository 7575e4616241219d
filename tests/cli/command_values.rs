//! Issue 19, part A: spec values that would reach an fdbcli, fdbbackup or fdbrestore
//! command are refused by `explain` (exit 1, the manifest is invalid) with the field
//! named, e.g. the `writemode on; clearrange "" \xff` attack in each of them.

use super::fdb_operator;

const CLUSTER: &str = "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\nmetadata:\n  name: sample\nspec:\n  version: 7.1.57\n";
const BACKUP: &str = "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBBackup\nmetadata:\n  name: b\nspec:\n  clusterName: sample\n";
const RESTORE: &str = "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBRestore\nmetadata:\n  name: r\nspec:\n  destinationClusterName: sample\n";

/// The attack of the issue, as a YAML double-quoted string.
const ATTACK: &str = r#""x; writemode on; clearrange \"\" \\xff""#;

/// Runs `explain` (with `--kind` of the manifest) on the text.
fn explain(text: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("manifest.yaml");
    std::fs::write(&path, text).unwrap();
    let kind = text
        .lines()
        .find_map(|line| line.strip_prefix("kind: "))
        .unwrap();
    fdb_operator(&["explain", "--kind", kind, "-f", path.to_str().unwrap()])
}

/// Runs `explain` on the manifest; asserts exit 1, `valid: false` and an error naming
/// `field`; returns the errors.
fn refused(text: &str, field: &str) -> Vec<String> {
    let output = explain(text);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("no JSON: {}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(output.status.code(), Some(1), "{text}\n{json}");
    assert_eq!(json["valid"], false, "{json}");
    let errors: Vec<String> = json["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_owned())
        .collect();
    assert!(
        errors.iter().any(|e| e.starts_with(&format!("{field}:"))),
        "{field} not named in {errors:#?}"
    );
    errors
}

#[test]
fn fdbcli_values_are_refused_naming_the_field() {
    refused(
        &format!("{CLUSTER}  databaseConfiguration:\n    storage_migration_type: {ATTACK}\n"),
        "spec.databaseConfiguration.storage_migration_type",
    );
    let errors = refused(
        &format!("{CLUSTER}  databaseConfiguration:\n    storage_migration_type: fast\n"),
        "spec.databaseConfiguration.storage_migration_type",
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("disabled, aggressive, gradual")),
        "{errors:?}"
    );
    refused(
        &format!(
            "{CLUSTER}  databaseConfiguration:\n    perpetual_storage_wiggle_locality: {ATTACK}\n"
        ),
        "spec.databaseConfiguration.perpetual_storage_wiggle_locality",
    );
}

#[test]
fn backup_url_parts_are_refused_naming_the_field() {
    for (blob_store, field) in [
        (
            "{accountName: \"a@s3.example:443/x?bucket=evil\"}",
            "spec.blobStoreConfiguration.accountName",
        ),
        (
            "{accountName: a@s3.example, backupName: \"b?bucket=evil\"}",
            "spec.blobStoreConfiguration.backupName",
        ),
        (
            "{accountName: a@s3.example, bucket: \"mine&bucket=evil\"}",
            "spec.blobStoreConfiguration.bucket",
        ),
        (
            "{accountName: a@s3.example, urlParameters: [bucket=evil]}",
            "spec.blobStoreConfiguration.urlParameters[0]",
        ),
        (
            "{accountName: a@s3.example, urlParameters: [\"sc=0&bucket=evil\"]}",
            "spec.blobStoreConfiguration.urlParameters[0]",
        ),
    ] {
        refused(
            &format!("{BACKUP}  blobStoreConfiguration: {blob_store}\n"),
            field,
        );
        refused(
            &format!("{RESTORE}  blobStoreConfiguration: {blob_store}\n"),
            field,
        );
    }
}

#[test]
fn restore_key_ranges_are_refused_naming_the_field() {
    let base = format!("{RESTORE}  blobStoreConfiguration: {{accountName: a@s3.example}}\n");
    for (ranges, field) in [
        ("[{start: b, end: a}]", "spec.keyRanges[0]"),
        ("[{start: \"a\", end: \"a\"}]", "spec.keyRanges[0]"),
        (
            "[{start: \"\", end: \"\\\\xff\"}]",
            "spec.keyRanges[0].start",
        ),
        ("[{start: \" \", end: \" \"}]", "spec.keyRanges[0]"),
        ("[{start: a, end: \"\\\\xzz\"}]", "spec.keyRanges[0].end"),
        (
            "[{start: \\x00, end: \\xff}, {start: z, end: y}]",
            "spec.keyRanges[1]",
        ),
    ] {
        let errors = refused(&format!("{base}  keyRanges: {ranges}\n"), field);
        assert!(!errors.is_empty());
    }
}

#[test]
fn a_key_with_a_space_stays_one_key_in_the_restore_command() {
    let output = explain(&format!(
        "{RESTORE}  blobStoreConfiguration: {{accountName: a@s3.example}}\n  keyRanges: [{{start: \"a b\", end: \"a c\"}}]\n"
    ));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let command = json["startCommand"].as_str().unwrap_or_default();
    assert!(
        command.contains("-k 'a\\x20b a\\x20c'"),
        "{command} ({json})"
    );
}
