//! `fdb-operator explain` for FoundationDBBackup and FoundationDBRestore manifests: what
//! the backup and restore controllers would do with them (the agents' Deployment, the
//! backup URL, the `fdbbackup`/`fdbrestore` command lines), as JSON.
//!
//! Same exit codes as the cluster's `explain`: 0 valid, 1 invalid, 2 unreadable.

use std::path::Path;

use fdb_shared::api::{FoundationDBBackup, FoundationDBRestore};
use fdb_shared::cluster_math::images::{DEFAULT_MAIN_BASE_IMAGE, select_image};
use fdb_shared::unknown_fields::decode_reporting_unknown_fields;
use fdb_shared::yaml_input;
use serde::Serialize;
use serde_json::Value;

use super::manifest::{API_VERSION, UnreadableManifest};
use crate::backup::deployment::deployment_name;
use crate::backup::plan::backup_url;
use crate::backup::validate::{validate_backup, validate_restore};
use crate::fdb::BackupStart;
use crate::fdb::fdbcli::backup_commands::{backup_start, display, restore_start};
use crate::restore::driver::restore_request;

/// The kinds `explain` reads besides FoundationDBCluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceKind {
    /// FoundationDBBackup.
    Backup,
    /// FoundationDBRestore.
    Restore,
}

impl ResourceKind {
    /// The kind's name in manifests.
    pub fn kind(self) -> &'static str {
        match self {
            Self::Backup => "FoundationDBBackup",
            Self::Restore => "FoundationDBRestore",
        }
    }
}

/// The agents' Deployment of a backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentDeployment {
    /// Its name.
    pub name: String,
    /// The agents' image; `null` when `spec.version` is unset (then the cluster's running
    /// version decides).
    pub image: Option<String>,
    /// Agent pods.
    pub replicas: i32,
}

/// What `explain` prints for a FoundationDBBackup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackupExplanation {
    /// Always `FoundationDBBackup`.
    pub kind: &'static str,
    /// Whether the operator would act on it.
    pub valid: bool,
    /// What must be fixed, each naming the field.
    pub errors: Vec<String>,
    /// Remarks, including unknown fields.
    pub warnings: Vec<String>,
    /// The resource's name.
    pub name: String,
    /// The cluster backed up.
    pub cluster_name: String,
    /// `Running`, `Paused` or `Stopped`.
    pub backup_state: String,
    /// The backup tag.
    pub tag: String,
    /// Where the backup goes.
    pub url: String,
    /// Seconds between snapshots.
    pub snapshot_period_seconds: i32,
    /// `noop`, `stop` or `cleanup`.
    pub deletion_policy: String,
    /// The agents.
    pub agent_deployment: AgentDeployment,
    /// The command that starts the backup.
    pub start_command: String,
}

/// What `explain` prints for a FoundationDBRestore.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoreExplanation {
    /// Always `FoundationDBRestore`.
    pub kind: &'static str,
    /// Whether the operator would act on it.
    pub valid: bool,
    /// What must be fixed, each naming the field.
    pub errors: Vec<String>,
    /// Remarks, including unknown fields.
    pub warnings: Vec<String>,
    /// The resource's name.
    pub name: String,
    /// The cluster restored into.
    pub destination_cluster_name: String,
    /// The backup restored.
    pub url: String,
    /// The version restored to (`null`: the latest restorable one).
    pub backup_version: Option<i64>,
    /// Key ranges restored, `[start, end]` (empty: everything).
    pub key_ranges: Vec<[String; 2]>,
    /// The command that starts the restore.
    pub start_command: String,
}

/// Either explanation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ResourceExplanation {
    /// A backup.
    Backup(Box<BackupExplanation>),
    /// A restore.
    Restore(Box<RestoreExplanation>),
    /// A manifest that could not be decoded at all.
    Invalid {
        /// The kind.
        kind: &'static str,
        /// Always false.
        valid: bool,
        /// Why.
        errors: Vec<String>,
        /// Remarks.
        warnings: Vec<String>,
    },
}

impl ResourceExplanation {
    /// Whether the manifest is valid.
    pub fn valid(&self) -> bool {
        match self {
            Self::Backup(b) => b.valid,
            Self::Restore(r) => r.valid,
            Self::Invalid { .. } => false,
        }
    }
}

/// Explains a decoded backup.
pub fn explain_backup(backup: &FoundationDBBackup, mut warnings: Vec<String>) -> BackupExplanation {
    let report = validate_backup(backup);
    warnings.extend(report.warnings);
    let spec = &backup.spec;
    let image = spec.version.as_ref().map(|version| {
        select_image(
            &spec.main_container.image_configs,
            version,
            DEFAULT_MAIN_BASE_IMAGE,
            "",
        )
    });
    if image.is_none() {
        warnings.push(
            "spec.version is not set: the agents run the cluster's running version".to_owned(),
        );
    }
    let url = backup_url(backup);
    let start = BackupStart {
        tag: spec.tag().to_owned(),
        url: url.clone(),
        snapshot_period_seconds: i64::from(spec.snapshot_period_seconds()),
        encryption_key_path: spec.encryption_key_path.clone(),
    };
    BackupExplanation {
        kind: ResourceKind::Backup.kind(),
        valid: report.errors.is_empty(),
        errors: report.errors,
        warnings,
        name: backup.metadata.name.clone().unwrap_or_default(),
        cluster_name: spec.cluster_name.clone(),
        backup_state: spec.backup_state().to_string(),
        tag: spec.tag().to_owned(),
        url,
        snapshot_period_seconds: spec.snapshot_period_seconds(),
        deletion_policy: spec.deletion_policy().to_owned(),
        agent_deployment: AgentDeployment {
            name: deployment_name(backup),
            image,
            replicas: spec.agent_count(),
        },
        start_command: display("fdbbackup", &backup_start(&start)),
    }
}

/// Explains a decoded restore.
pub fn explain_restore(
    restore: &FoundationDBRestore,
    mut warnings: Vec<String>,
) -> RestoreExplanation {
    let report = validate_restore(restore);
    warnings.extend(report.warnings);
    let name = restore.metadata.name.as_deref().unwrap_or_default();
    let request = restore_request(restore);
    RestoreExplanation {
        kind: ResourceKind::Restore.kind(),
        valid: report.errors.is_empty(),
        errors: report.errors,
        warnings,
        name: restore.metadata.name.clone().unwrap_or_default(),
        destination_cluster_name: restore.spec.destination_cluster_name.clone(),
        url: restore.spec.blob_store_configuration.url(name),
        backup_version: restore.spec.backup_version,
        key_ranges: restore
            .spec
            .key_ranges
            .iter()
            .map(|r| [r.start.clone(), r.end.clone()])
            .collect(),
        // No command from ranges that do not parse: it would restore other keys.
        start_command: request.map_or_else(
            |error| format!("(none: {error})"),
            |request| display("fdbrestore", &restore_start(&request)),
        ),
    }
}

/// The first document of `kind` in `documents` (with its index), and a warning when there
/// are more.
fn first_of_kind<'a>(
    path: &Path,
    documents: &'a [yaml_input::Document],
    kind: ResourceKind,
) -> Result<(usize, &'a yaml_input::Document, Vec<String>), UnreadableManifest> {
    let kind_of = |doc: &Value| doc.get("kind").and_then(Value::as_str).map(str::to_owned);
    let matching: Vec<(usize, &yaml_input::Document)> = documents
        .iter()
        .enumerate()
        .filter(|(_, doc)| kind_of(&doc.value).as_deref() == Some(kind.kind()))
        .collect();
    let Some((index, document)) = matching.first().copied() else {
        let found: Vec<String> = documents
            .iter()
            .filter(|doc| !doc.value.is_null())
            .map(|doc| kind_of(&doc.value).unwrap_or_else(|| "<none>".to_owned()))
            .collect();
        return Err(UnreadableManifest::NotAKind {
            path: path.to_owned(),
            kind: kind.kind(),
            found: if found.is_empty() {
                "none".to_owned()
            } else {
                found.join(", ")
            },
        });
    };
    let mut warnings = Vec::new();
    if matching.len() > 1 {
        warnings.push(format!(
            "{} holds {} {}s; only the first is explained",
            path.display(),
            matching.len(),
            kind.kind()
        ));
    }
    Ok((index, document, warnings))
}

/// An `apiVersion` this operator does not serve makes the explanation invalid.
fn check_api_version(document: &Value, explanation: &mut ResourceExplanation) {
    let api_version = document.get("apiVersion").and_then(Value::as_str);
    if api_version != Some(API_VERSION) {
        let error = format!(
            "apiVersion: {:?} is not served by this operator (expected {})",
            api_version.unwrap_or(""),
            API_VERSION
        );
        match explanation {
            ResourceExplanation::Backup(b) => {
                b.errors.insert(0, error);
                b.valid = false;
            }
            ResourceExplanation::Restore(r) => {
                r.errors.insert(0, error);
                r.valid = false;
            }
            ResourceExplanation::Invalid { errors, .. } => errors.insert(0, error),
        }
    }
}

/// Explains the first manifest of `kind` in `text`; `path` names the file in errors.
pub fn explain_resource(
    path: &Path,
    text: &str,
    kind: ResourceKind,
) -> Result<ResourceExplanation, UnreadableManifest> {
    let documents = yaml_input::documents(text).map_err(|source| UnreadableManifest::NotYaml {
        path: path.to_owned(),
        source,
    })?;
    let (index, document, mut warnings) = first_of_kind(path, &documents, kind)?;
    let invalid = |errors: Vec<String>, warnings: Vec<String>| ResourceExplanation::Invalid {
        kind: kind.kind(),
        valid: false,
        errors,
        warnings,
    };
    if let Some(problem) = &document.problem {
        return Ok(invalid(vec![problem.to_string()], warnings));
    }
    let mut manifest = document.value.clone();
    if let Some(fields) = manifest.as_object_mut() {
        fields
            .entry("metadata")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
    }
    let located = |error: fdb_shared::unknown_fields::DecodeError| match yaml_input::line_of(
        text,
        index,
        &error.segments,
    ) {
        Some(line) => format!("{error} at line {line}"),
        None => error.to_string(),
    };
    let mut explanation = match kind {
        ResourceKind::Backup => {
            match decode_reporting_unknown_fields::<FoundationDBBackup>(&manifest) {
                Ok((backup, unknown)) => {
                    warnings.extend(unknown);
                    ResourceExplanation::Backup(Box::new(explain_backup(&backup, warnings)))
                }
                Err(error) => return Ok(invalid(vec![located(error)], warnings)),
            }
        }
        ResourceKind::Restore => {
            match decode_reporting_unknown_fields::<FoundationDBRestore>(&manifest) {
                Ok((restore, unknown)) => {
                    warnings.extend(unknown);
                    ResourceExplanation::Restore(Box::new(explain_restore(&restore, warnings)))
                }
                Err(error) => return Ok(invalid(vec![located(error)], warnings)),
            }
        }
    };
    check_api_version(&document.value, &mut explanation);
    Ok(explanation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_go_backup_sample_is_explained_beside_its_cluster() {
        let text = include_str!("../../../tests/cli/data/go-backup-sample.yaml");
        let explanation =
            explain_resource(Path::new("backup.yaml"), text, ResourceKind::Backup).unwrap();
        let ResourceExplanation::Backup(backup) = explanation else {
            panic!("not a backup: {explanation:?}");
        };
        assert!(backup.valid, "{backup:?}");
        assert_eq!(
            backup.url,
            "blobstore://seaweedfs@seaweedfs:8333/test-cluster?bucket=fdb-backups&secure_connection=0"
        );
        assert_eq!(backup.agent_deployment.replicas, 2);
        assert_eq!(
            backup.agent_deployment.image.as_deref(),
            Some("foundationdb/foundationdb:7.3.69")
        );
        assert_eq!(
            backup.start_command,
            format!("fdbbackup start -d {} -s 3600 -t default -z", backup.url)
        );
    }

    #[test]
    fn the_go_restore_sample_warns_of_its_unknown_field() {
        let text = include_str!("../../../tests/cli/data/go-restore-sample.yaml");
        let explanation =
            explain_resource(Path::new("restore.yaml"), text, ResourceKind::Restore).unwrap();
        let ResourceExplanation::Restore(restore) = explanation else {
            panic!("not a restore: {explanation:?}");
        };
        assert!(restore.valid, "{restore:?}");
        assert!(
            restore.warnings.iter().any(|w| w.contains("bucketName")),
            "{:?}",
            restore.warnings
        );
        assert_eq!(
            restore.start_command,
            "fdbrestore start -r blobstore://account@object-store.example:443/sample-cluster?bucket=fdb-backups"
        );
    }
}
