//! The `FoundationDBBackup` resource: backup agents and a continuous backup to a blob
//! store.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::cluster::ImageType;
use crate::api::defaults::is_default;
use crate::api::image_config::ContainerOverrides;
use crate::api::open_enum::open_string_enum;

open_string_enum! {
    /// The desired state of a backup.
    BackupState {
        /// The backup runs (the default).
        Running => "Running",
        /// The backup is stopped.
        Stopped => "Stopped",
        /// The backup is paused.
        Paused => "Paused",
    }
}

/// Where backups are stored: a blob store account and bucket.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlobStoreConfiguration {
    /// Blob store account, `<user>@<host>[:<port>]` or a host name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 100))]
    pub account_name: Option<String>,
    /// Name of the backup in the bucket (default the name of the FoundationDBBackup or
    /// FoundationDBRestore resource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub backup_name: Option<String>,
    /// Bucket name (default `fdb-backups`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 3, max = 63))]
    pub bucket: Option<String>,
    /// Extra URL parameters of the backup URL, `key=value`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100), inner(length(max = 1024)))]
    pub url_parameters: Vec<String>,
}

impl BlobStoreConfiguration {
    /// Bucket name (default `fdb-backups`).
    pub fn bucket(&self) -> &str {
        self.bucket.as_deref().unwrap_or("fdb-backups")
    }

    /// Backup name (default `resource_name`, the backup's or restore's own name).
    pub fn backup_name<'a>(&'a self, resource_name: &'a str) -> &'a str {
        self.backup_name
            .as_deref()
            .filter(|name| !name.is_empty())
            .unwrap_or(resource_name)
    }

    /// The backup URL: `blobstore://<account>/<backup name>?bucket=<bucket>` followed by
    /// the URL parameters, `&`-separated; each part percent-encoded (see
    /// [`crate::blob_store_url::backup_url`]).
    pub fn url(&self, resource_name: &str) -> String {
        crate::blob_store_url::backup_url(
            self.account_name.as_deref().unwrap_or_default(),
            self.backup_name(resource_name),
            self.bucket(),
            &self.url_parameters,
        )
    }
}

/// The desired state of a backup of a FoundationDBCluster.
// Several printer columns share a type, which clippy mistakes for repeated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.foundationdb.org",
    version = "v1beta2",
    kind = "FoundationDBBackup",
    plural = "foundationdbbackups",
    singular = "foundationdbbackup",
    shortname = "fdbbackup",
    namespaced,
    status = "FoundationDBBackupStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "FoundationDBBackup runs backup agents for a FoundationDBCluster and a continuous backup to a blob store.",
    printcolumn(
        name = "Generation",
        type_ = "integer",
        json_path = ".metadata.generation",
        description = "Latest generation of the spec"
    ),
    printcolumn(
        name = "Reconciled",
        type_ = "integer",
        json_path = ".status.generations.reconciled",
        description = "Last generation fully reconciled"
    ),
    printcolumn(
        name = "Restorable",
        type_ = "boolean",
        json_path = ".status.backupDetails.restorable",
        description = "Whether the backup can be restored"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct FoundationDBBackupSpec {
    /// FoundationDB version of the backup agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Name of the FoundationDBCluster to back up.
    #[serde(default)]
    pub cluster_name: String,
    /// Desired state: `Running` (default), `Stopped` or `Paused`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_state: Option<BackupState>,
    /// Number of backup agents (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_count: Option<i32>,
    /// Whether the backup tag may be changed on a running backup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_tag_override: Option<bool>,
    /// Metadata of the backup agent Deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_deployment_metadata: Option<ObjectMeta>,
    /// Backup mode (e.g. continuous or one-time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub backup_mode: Option<String>,
    /// Backup type (e.g. `default` or `partitioned_log`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub backup_type: Option<String>,
    /// Where the backup is stored.
    #[serde(default, skip_serializing_if = "is_default")]
    pub blob_store_configuration: BlobStoreConfiguration,
    /// Extra `--knob` style parameters of the backup agents (at most 100 of at most 100
    /// characters, as the Go operator's CRD).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100), inner(length(max = 100)))]
    pub custom_parameters: Vec<String>,
    /// Datacenter of the backup agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_center: Option<String>,
    /// What happens to the backup when the resource is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub deletion_policy: Option<String>,
    /// Path of the encryption key file of the backup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub encryption_key_path: Option<String>,
    /// Pod model of the backup agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_type: Option<ImageType>,
    /// Settings of the main container of the agents.
    #[serde(default, skip_serializing_if = "is_default")]
    pub main_container: ContainerOverrides,
    /// Settings of the sidecar container of the agents.
    #[serde(default, skip_serializing_if = "is_default")]
    pub sidecar_container: ContainerOverrides,
    /// Pod template of the backup agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template_spec: Option<PodTemplateSpec>,
    /// Seconds between snapshots (default 864000, ten days).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_period_seconds: Option<i32>,
    /// Backup tag (default `default`). Immutable, at most 64 characters (the Go
    /// operator's CRD: `BackupTag is immutable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64), extend("x-kubernetes-validations" = [
        {"rule": "self == oldSelf", "message": "BackupTag is immutable"}
    ]))]
    pub tag: Option<String>,
}

impl FoundationDBBackupSpec {
    /// Desired backup state (default `Running`).
    pub fn backup_state(&self) -> BackupState {
        self.backup_state.clone().unwrap_or(BackupState::Running)
    }

    /// What happens to the backup when the resource is deleted (default `noop`).
    pub fn deletion_policy(&self) -> &str {
        self.deletion_policy.as_deref().unwrap_or("noop")
    }

    /// Number of backup agents (default 2).
    pub fn agent_count(&self) -> i32 {
        self.agent_count.unwrap_or(2)
    }

    /// Seconds between snapshots (default 864000).
    pub fn snapshot_period_seconds(&self) -> i32 {
        self.snapshot_period_seconds.unwrap_or(864_000)
    }

    /// Backup tag (default `default`).
    pub fn tag(&self) -> &str {
        self.tag.as_deref().unwrap_or("default")
    }
}

/// The observed state of a backup.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FoundationDBBackupStatus {
    /// Number of running backup agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_count: Option<i32>,
    /// Whether the agent Deployment is configured.
    #[serde(default)]
    pub deployment_configured: bool,
    /// Why the backup makes no progress, when it makes none (e.g. no backup agent runs);
    /// absent when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Details of the running backup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_details: Option<BackupDetails>,
    /// For each pending kind of work, the generation at which it was seen.
    #[serde(default, skip_serializing_if = "is_default")]
    pub generations: BackupGenerationStatus,
}

/// Details of a running backup, from `fdbbackup status`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupDetails {
    /// Backup URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Whether the backup is running.
    #[serde(default)]
    pub running: bool,
    /// Whether the backup is paused.
    #[serde(default)]
    pub paused: bool,
    /// Whether the backup can be restored.
    #[serde(default)]
    pub restorable: bool,
    /// The snapshot period of the running backup, in seconds (the Go operator's
    /// `SnapshotPeriodSeconds`, which it serializes under this name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_time: Option<i64>,
    /// Backup tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

/// Pending work of a backup, by the generation at which it was seen.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupGenerationStatus {
    /// The last generation fully reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciled: Option<i64>,
    /// The agents must be updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_backup_agent_update: Option<i64>,
    /// The backup must be started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_backup_start: Option<i64>,
    /// The backup must be stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_backup_stop: Option<i64>,
    /// The backup must be paused or resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_backup_pause_toggle: Option<i64>,
    /// The backup parameters must be modified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_backup_modification: Option<i64>,
}
