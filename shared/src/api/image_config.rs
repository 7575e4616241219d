//! Image selection settings shared by clusters and backups, and the container overrides
//! (`spec.mainContainer`, `spec.sidecarContainer`) that carry them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One rule for building a container image name. Rules are tried in order; for each of
/// the base image, tag and tag suffix, the first rule whose `version` is empty or equal to
/// the desired version and that sets the field wins.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageConfig {
    /// The FoundationDB version this rule applies to; empty for every version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 20))]
    pub version: Option<String>,
    /// Image repository without tag, e.g. `foundationdb/foundationdb`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 200))]
    pub base_image: Option<String>,
    /// Full tag to use; overrides `<version><tagSuffix>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 100))]
    pub tag: Option<String>,
    /// Suffix appended to the version to build the tag, e.g. `-1` for sidecar images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 50))]
    pub tag_suffix: Option<String>,
}

/// Settings of one of the FoundationDB containers (main or sidecar).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerOverrides {
    /// Whether the processes listen with TLS (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_tls: Option<bool>,
    /// FoundationDB peer verification rules (`tls_verify_peers`), at most 10000
    /// characters (the Go operator's CRD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 10000))]
    pub peer_verification_rules: Option<String>,
    /// Whether the container gets a liveness probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_liveness_probe: Option<bool>,
    /// Whether the container gets a readiness probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_readiness_probe: Option<bool>,
    /// Rules for the container image name; see `ImageConfig`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    pub image_configs: Vec<ImageConfig>,
}

impl ContainerOverrides {
    /// Whether TLS is enabled (default false).
    pub fn tls_enabled(&self) -> bool {
        self.enable_tls.unwrap_or(false)
    }
}
