//! The `FoundationDBRestore` resource: restoring a backup into a cluster.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::backup::BlobStoreConfiguration;
use crate::api::defaults::is_default;

/// A key range to restore; keys in FoundationDB's printable form.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FoundationDBKeyRange {
    /// First key of the range (inclusive).
    #[serde(default)]
    #[schemars(regex(pattern = r"^[A-Za-z0-9\/\\-]+$"))]
    pub start: String,
    /// End of the range (exclusive).
    #[serde(default)]
    #[schemars(regex(pattern = r"^[A-Za-z0-9\/\\-]+$"))]
    pub end: String,
}

/// The desired restore of a backup into a FoundationDBCluster.
// Several printer columns share a type, which clippy mistakes for repeated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.foundationdb.org",
    version = "v1beta2",
    kind = "FoundationDBRestore",
    plural = "foundationdbrestores",
    singular = "foundationdbrestore",
    shortname = "fdbrestore",
    namespaced,
    status = "FoundationDBRestoreStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "FoundationDBRestore restores a backup from a blob store into a FoundationDBCluster.",
    printcolumn(
        name = "State",
        type_ = "string",
        json_path = ".status.state",
        description = "State of the restore"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct FoundationDBRestoreSpec {
    /// Name of the FoundationDBCluster to restore into.
    #[serde(default)]
    pub destination_cluster_name: String,
    /// Version of the backup to restore to (default the latest restorable version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_version: Option<i64>,
    /// Where the backup is stored.
    #[serde(default, skip_serializing_if = "is_default")]
    pub blob_store_configuration: BlobStoreConfiguration,
    /// Extra parameters of `fdbrestore` (at most 100 of at most 100 characters, as the
    /// Go operator's CRD).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100), inner(length(max = 100)))]
    pub custom_parameters: Vec<String>,
    /// Path of the encryption key file of the backup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub encryption_key_path: Option<String>,
    /// Key ranges to restore (default everything).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub key_ranges: Vec<FoundationDBKeyRange>,
}

/// The observed state of a restore.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FoundationDBRestoreStatus {
    /// Whether the restore is running.
    #[serde(default)]
    pub running: bool,
    /// State of the restore as reported by `fdbrestore status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}
