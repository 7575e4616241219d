//! What makes a FoundationDBBackup or FoundationDBRestore spec unusable, each problem
//! naming its field. The controllers refuse such a spec (the status says why) instead
//! of running `fdbbackup` with it; `explain` reports the same problems.

use fdb_shared::api::backup::BackupState;
use fdb_shared::api::{FoundationDBBackup, FoundationDBRestore};
use fdb_shared::validation::backup_values::{backup_value_errors, restore_value_errors};
use fdb_shared::validation::names::{dns1123_subdomain_error, owner_name_errors};

use super::deployment::AGENTS_SUFFIX;

/// The deletion policies the operator knows.
pub const DELETION_POLICIES: [&str; 3] = ["noop", "stop", "cleanup"];

/// Problems (errors) and remarks (warnings) about a spec.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpecReport {
    /// What must be fixed before the operator acts on the resource.
    pub errors: Vec<String>,
    /// What works, but maybe not as the user expects.
    pub warnings: Vec<String>,
}

fn check_account(errors: &mut Vec<String>, account: Option<&str>) {
    if account.is_none_or(|a| a.trim().is_empty()) {
        errors.push(
            "spec.blobStoreConfiguration.accountName: must be set (the blob store account, \
             e.g. user@host:443)"
                .to_owned(),
        );
    }
}

/// The backup's name starts its agent Deployment's name (`<backup>-backup-agents`, also
/// a label value), and `spec.clusterName` goes into API paths: both must fit Kubernetes'
/// name rules.
fn backup_name_errors(backup: &FoundationDBBackup) -> Vec<String> {
    let mut errors = backup
        .metadata
        .name
        .as_deref()
        .map(|name| owner_name_errors("metadata.name", name, AGENTS_SUFFIX))
        .unwrap_or_default();
    errors.extend(cluster_reference_error(
        "spec.clusterName",
        &backup.spec.cluster_name,
    ));
    errors
}

/// `spec.destinationClusterName` goes into API paths: it must be a possible object name.
fn restore_name_errors(restore: &FoundationDBRestore) -> Option<String> {
    cluster_reference_error(
        "spec.destinationClusterName",
        &restore.spec.destination_cluster_name,
    )
}

/// Whether `name` can name an object (a DNS-1123 subdomain), so it may go into an API path.
pub fn is_object_name(name: &str) -> bool {
    dns1123_subdomain_error(name).is_none()
}

fn cluster_reference_error(field: &str, name: &str) -> Option<String> {
    if name.trim().is_empty() {
        return None;
    }
    dns1123_subdomain_error(name)
        .map(|problem| format!("{field}: {name:?} cannot name a FoundationDBCluster: {problem}"))
}

/// Checks a backup's spec.
pub fn validate_backup(backup: &FoundationDBBackup) -> SpecReport {
    let spec = &backup.spec;
    let mut report = SpecReport::default();
    if spec.cluster_name.trim().is_empty() {
        report
            .errors
            .push("spec.clusterName: must name the FoundationDBCluster to back up".to_owned());
    }
    report.errors.extend(backup_name_errors(backup));
    check_account(
        &mut report.errors,
        spec.blob_store_configuration.account_name.as_deref(),
    );
    if let Some(state) = spec.backup_state.as_ref().filter(|s| !s.is_known()) {
        report.errors.push(format!(
            "spec.backupState: {:?} is not one of {}",
            state.as_str(),
            BackupState::known_names()
        ));
    }
    if spec.snapshot_period_seconds() <= 0 {
        report
            .errors
            .push("spec.snapshotPeriodSeconds: must be positive".to_owned());
    }
    if spec.agent_count() < 0 {
        report
            .errors
            .push("spec.agentCount: must not be negative".to_owned());
    } else if spec.agent_count() == 0 {
        report.warnings.push(
            "spec.agentCount: 0 runs no backup agent, so a running backup makes no progress"
                .to_owned(),
        );
    }
    report
        .errors
        .extend(fdb_shared::validation::bounds::check_backup_bounds(spec));
    let policy = spec.deletion_policy();
    if !DELETION_POLICIES.contains(&policy) {
        report.errors.push(format!(
            "spec.deletionPolicy: {policy:?} is not one of noop, stop, cleanup"
        ));
    }
    if spec
        .version
        .as_deref()
        .is_some_and(|v| v.parse::<fdb_shared::FdbVersion>().is_err())
    {
        report
            .errors
            .push("spec.version: not a FoundationDB version (M.m.p)".to_owned());
    }
    let name = backup.metadata.name.as_deref().unwrap_or_default();
    report.errors.extend(backup_value_errors(spec, name));
    report
}

/// Checks a restore's spec.
pub fn validate_restore(restore: &FoundationDBRestore) -> SpecReport {
    let spec = &restore.spec;
    let mut report = SpecReport::default();
    if spec.destination_cluster_name.trim().is_empty() {
        report.errors.push(
            "spec.destinationClusterName: must name the FoundationDBCluster to restore into"
                .to_owned(),
        );
    }
    report.errors.extend(restore_name_errors(restore));
    check_account(
        &mut report.errors,
        spec.blob_store_configuration.account_name.as_deref(),
    );
    if spec.backup_version.is_some_and(|v| v < 0) {
        report
            .errors
            .push("spec.backupVersion: must not be negative".to_owned());
    }
    let name = restore.metadata.name.as_deref().unwrap_or_default();
    report.errors.extend(restore_value_errors(spec, name));
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backup_and_restore_custom_parameters_are_knobs_only() {
        let backup: FoundationDBBackup = serde_yaml_ng::from_str(
            "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBBackup\n\
             metadata: {name: b}\nspec: {clusterName: sample, \
             blobStoreConfiguration: {accountName: a@b}, \
             customParameters: [knob_http_verbose_level=3, \"dest-cluster-file=/x\"]}\n",
        )
        .unwrap();
        let errors = validate_backup(&backup).errors;
        assert!(
            errors.len() == 1 && errors[0].starts_with("spec.customParameters[1]: "),
            "{errors:?}"
        );
        let restore: FoundationDBRestore = serde_yaml_ng::from_str(
            "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBRestore\n\
             metadata: {name: r}\nspec: {destinationClusterName: sample, \
             blobStoreConfiguration: {accountName: a@b}, \
             customParameters: [\"dest-cluster-file=/x\"]}\n",
        )
        .unwrap();
        let errors = validate_restore(&restore).errors;
        assert!(
            errors.len() == 1 && errors[0].starts_with("spec.customParameters[0]: "),
            "{errors:?}"
        );
    }

    #[test]
    fn names_that_reach_objects_or_api_paths_must_fit_kubernetes_rules() {
        let backup = |name: &str, cluster: &str| -> FoundationDBBackup {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBBackup",
                "metadata": {"name": name},
                "spec": {"clusterName": cluster, "blobStoreConfiguration": {"accountName": "a@b"}}
            }))
            .unwrap()
        };
        assert_eq!(
            validate_backup(&backup("b", "sample")).errors,
            Vec::<String>::new()
        );
        let long = "b".repeat(50);
        let errors = validate_backup(&backup(&long, "sample")).errors;
        assert!(
            errors.len() == 1
                && errors[0].starts_with("metadata.name: ")
                && errors[0]
                    .contains("<name>-backup-agents would exceed 63 characters; at most 49"),
            "{errors:?}"
        );
        let errors = validate_backup(&backup("b", "x/../../secrets")).errors;
        assert!(
            errors.len() == 1
                && errors[0].starts_with("spec.clusterName: \"x/../../secrets\" cannot name"),
            "{errors:?}"
        );
        assert!(!is_object_name("x/../../secrets") && is_object_name("sample.a"));
        let restore: FoundationDBRestore = serde_yaml_ng::from_str(
            "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBRestore\n\
             metadata: {name: r}\nspec: {destinationClusterName: \"a?b\", \
             blobStoreConfiguration: {accountName: a@b}}\n",
        )
        .unwrap();
        let errors = validate_restore(&restore).errors;
        assert!(
            errors.len() == 1 && errors[0].starts_with("spec.destinationClusterName: \"a?b\""),
            "{errors:?}"
        );
    }

    #[test]
    fn problems_name_their_fields() {
        let backup: FoundationDBBackup = serde_yaml_ng::from_str(
            "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBBackup\n\
             metadata: {name: b}\nspec: {snapshotPeriodSeconds: 0, deletionPolicy: keep, \
             backupState: Sleeping}\n",
        )
        .unwrap();
        let report = validate_backup(&backup);
        let fields: Vec<&str> = report
            .errors
            .iter()
            .map(|e| e.split(':').next().unwrap_or_default())
            .collect();
        assert_eq!(
            fields,
            [
                "spec.clusterName",
                "spec.blobStoreConfiguration.accountName",
                "spec.backupState",
                "spec.snapshotPeriodSeconds",
                "spec.deletionPolicy"
            ]
        );
        let restore: FoundationDBRestore = serde_yaml_ng::from_str(
            "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBRestore\n\
             metadata: {name: r}\nspec: {destinationClusterName: c, \
             blobStoreConfiguration: {accountName: a@b}, keyRanges: [{start: b, end: a}]}\n",
        )
        .unwrap();
        assert_eq!(
            validate_restore(&restore).errors,
            ["spec.keyRanges[0]: start \"b\" must come before end \"a\""]
        );
    }
}
