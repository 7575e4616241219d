//! `FoundationDBCluster`: the spec, the custom resource and the accessors that apply the
//! defaults.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::automation::AutomationOptions;
use super::locks::LockOptions;
use super::processes::{ProcessCounts, ProcessSettings, ProcessSettingsMap, settings_for_class};
use super::routing::RoutingConfig;
use super::settings::{
    BuggifyConfig, CoordinatorSelectionSetting, FaultDomain, LabelConfig, PartialConnectionString,
};
use super::status::FoundationDBClusterStatus;
use crate::api::database_configuration::{DatabaseConfiguration, RedundancyMode, StorageEngine};
use crate::api::defaults::is_default;
use crate::api::image_config::ContainerOverrides;
use crate::api::open_enum::open_string_enum;
use crate::api::process_class::ProcessClass;
use crate::version::{FdbVersion, ParseVersionError};

open_string_enum! {
    /// How the FoundationDB pods are built.
    ImageType {
        /// Main container with fdbmonitor plus the HTTP sidecar (the default here).
        Split => "split",
        /// The main container runs fdb-kubernetes-monitor, a second one its sidecar mode.
        Unified => "unified",
    }
}

/// The desired state of a FoundationDB cluster.
// Several printer columns share a type, which clippy mistakes for repeated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.foundationdb.org",
    version = "v1beta2",
    kind = "FoundationDBCluster",
    plural = "foundationdbclusters",
    singular = "foundationdbcluster",
    shortname = "fdb",
    namespaced,
    status = "FoundationDBClusterStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "FoundationDBCluster is a FoundationDB database run by the operator: its version, database configuration, process counts, pods and automation settings.",
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
        name = "Available",
        type_ = "boolean",
        json_path = ".status.health.available",
        description = "Whether the database is available"
    ),
    printcolumn(
        name = "FullReplication",
        type_ = "boolean",
        json_path = ".status.health.fullReplication",
        description = "Whether the data is fully replicated"
    ),
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".status.runningVersion",
        description = "Version the processes run"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct FoundationDBClusterSpec {
    /// FoundationDB version of the database, `MAJOR.MINOR.PATCH` (e.g. `7.1.57`).
    #[serde(default)]
    #[schemars(regex(pattern = r"(\d+)\.(\d+)\.(\d+)"))]
    pub version: String,
    /// Database configuration (`fdbcli configure`), in FoundationDB's snake_case names.
    /// Unset fields take defaults from the redundancy mode.
    #[serde(default, skip_serializing_if = "is_default")]
    pub database_configuration: DatabaseConfiguration,
    /// Desired number of process groups per class; 0 means the default, -1 none.
    #[serde(default, skip_serializing_if = "is_default")]
    pub process_counts: ProcessCounts,
    /// Pod, volume and command-line settings per process class (`general` for all).
    #[serde(default, skip_serializing_if = "ProcessSettingsMap::is_empty")]
    pub processes: ProcessSettingsMap,
    /// What the operator may do on its own.
    #[serde(default, skip_serializing_if = "is_default")]
    pub automation_options: AutomationOptions,
    /// Fault injection for tests.
    #[serde(default, skip_serializing_if = "is_default")]
    pub buggify: BuggifyConfig,
    /// Extra data merged into the `<cluster>-config` ConfigMap, and its metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        schema_with = "crate::api::embedded_schema::metadata_optional::<Option<ConfigMap>>"
    )]
    pub config_map: Option<ConfigMap>,
    /// Class priorities for choosing coordinators (default: log and transaction 1,
    /// storage 0).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub coordinator_selection: Vec<CoordinatorSelectionSetting>,
    /// Datacenter ID of the processes (`locality_dcid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_center: Option<String>,
    /// Data hall of the processes (`locality_data_hall`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_hall: Option<String>,
    /// What a fault domain (zone) is.
    #[serde(default, skip_serializing_if = "is_default")]
    pub fault_domain: FaultDomain,
    /// Whether the client compatibility check before incompatible upgrades is skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_upgradability_checks: Option<bool>,
    /// Pod model: `split` (main container + sidecar, the default here) or `unified`
    /// (fdb-kubernetes-monitor, configured through the Kubernetes API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_type: Option<ImageType>,
    /// Labels that identify the operator's resources.
    #[serde(default, skip_serializing_if = "is_default")]
    pub labels: LabelConfig,
    /// The global lock shared by operator instances of one database.
    #[serde(default, skip_serializing_if = "is_default")]
    pub lock_options: LockOptions,
    /// Log group of the processes' trace logs (default the cluster name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_group: Option<String>,
    /// Log servers per log pod (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_servers_per_pod: Option<i32>,
    /// Settings of the main `foundationdb` container.
    #[serde(default, skip_serializing_if = "is_default")]
    pub main_container: ContainerOverrides,
    /// Maximum number of zones with unavailable pods during deletions (default unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_zones_with_unavailable_pods: Option<i32>,
    /// Minimum uptime of every process before a bounce, in seconds (default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub minimum_uptime_seconds_for_bounce: Option<i32>,
    /// Parts of the connection string to keep.
    #[serde(default, skip_serializing_if = "is_default")]
    pub partial_connection_string: PartialConnectionString,
    /// Prefix of process group IDs; also this operator instance's lock ID.
    #[serde(
        default,
        rename = "processGroupIDPrefix",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(
        length(max = 43),
        regex(pattern = r"^[a-z0-9A-Z]([\-._a-z0-9A-Z])*[a-z0-9A-Z]$")
    )]
    pub process_group_id_prefix: Option<String>,
    /// Process group IDs to remove (they are excluded first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 500),
        inner(length(max = 63), regex(pattern = r"^(([\w-]+)-(\d+)|\*)$"))
    )]
    pub process_groups_to_remove: Vec<String>,
    /// Process group IDs to remove without exclusion (dangerous).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 500),
        inner(length(max = 63), regex(pattern = r"^(([\w-]+)-(\d+)|\*)$"))
    )]
    pub process_groups_to_remove_without_exclusion: Vec<String>,
    /// Whether bigger resource requests replace process groups instead of recreating pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace_instances_when_resources_change: Option<bool>,
    /// Addressing of the processes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub routing: RoutingConfig,
    /// Connection string of an existing database to join.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed_connection_string: Option<String>,
    /// Settings of the `foundationdb-kubernetes-sidecar` container.
    #[serde(default, skip_serializing_if = "is_default")]
    pub sidecar_container: ContainerOverrides,
    /// Environment variables the sidecar substitutes into the monitor conf.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sidecar_variables: Vec<String>,
    /// Whether reconciliation is skipped entirely.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<bool>,
    /// Storage servers per storage pod (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_servers_per_pod: Option<i32>,
    /// Trusted CA certificates (PEM), written to the ConfigMap as `ca-file`.
    #[serde(default, rename = "trustedCAs", skip_serializing_if = "Vec::is_empty")]
    pub trusted_cas: Vec<String>,
    /// Whether processes get an explicit `listen_address` (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_explicit_listen_address: Option<bool>,
}

impl FoundationDBClusterSpec {
    /// The desired version, parsed.
    pub fn parsed_version(&self) -> Result<FdbVersion, ParseVersionError> {
        self.version.parse()
    }

    /// Redundancy mode (default `double`).
    pub fn redundancy_mode(&self) -> RedundancyMode {
        self.database_configuration
            .redundancy_mode
            .clone()
            .unwrap_or(RedundancyMode::DEFAULT)
    }

    /// Storage engine (default `ssd-2`).
    pub fn storage_engine(&self) -> StorageEngine {
        self.database_configuration
            .storage_engine
            .clone()
            .unwrap_or(StorageEngine::DEFAULT)
    }

    /// Number of usable regions (default 1).
    pub fn usable_regions(&self) -> i32 {
        self.database_configuration.usable_regions.unwrap_or(1)
    }

    /// Image type as the spec alone says it (default `split` in this project). What the
    /// operator builds is [`FoundationDBCluster::image_type`], which also keeps what a
    /// running cluster runs when the spec sets none.
    pub fn image_type(&self) -> ImageType {
        self.image_type.clone().unwrap_or(ImageType::Split)
    }

    /// Trace log group of the processes (default the cluster name).
    pub fn log_group<'a>(&'a self, cluster_name: &'a str) -> &'a str {
        self.log_group.as_deref().unwrap_or(cluster_name)
    }

    /// Log servers per pod (default 1).
    pub fn log_servers_per_pod(&self) -> i32 {
        self.log_servers_per_pod.unwrap_or(1)
    }

    /// Storage servers per pod (default 1).
    pub fn storage_servers_per_pod(&self) -> i32 {
        self.storage_servers_per_pod.unwrap_or(1)
    }

    /// Minimum uptime before a bounce, in seconds (default 600).
    pub fn minimum_uptime_seconds_for_bounce(&self) -> i32 {
        self.minimum_uptime_seconds_for_bounce.unwrap_or(600)
    }

    /// Process group ID prefix (default none).
    pub fn process_group_id_prefix(&self) -> &str {
        self.process_group_id_prefix.as_deref().unwrap_or("")
    }

    /// Whether the client compatibility check is skipped (default false).
    pub fn ignore_upgradability_checks(&self) -> bool {
        self.ignore_upgradability_checks.unwrap_or(false)
    }

    /// Whether bigger resource requests replace process groups (default false).
    pub fn replace_instances_when_resources_change(&self) -> bool {
        self.replace_instances_when_resources_change
            .unwrap_or(false)
    }

    /// Whether reconciliation is skipped (default false).
    pub fn skip(&self) -> bool {
        self.skip.unwrap_or(false)
    }

    /// Whether processes get an explicit listen address (default true).
    pub fn use_explicit_listen_address(&self) -> bool {
        self.use_explicit_listen_address.unwrap_or(true)
    }

    /// The DNS domain of the Kubernetes cluster (default `cluster.local`).
    pub fn dns_domain(&self) -> &str {
        self.routing.dns_domain()
    }

    /// Coordinator class priorities (default: log, transaction and coordinator 1, storage
    /// 0).
    pub fn coordinator_selection(&self) -> Vec<CoordinatorSelectionSetting> {
        if !self.coordinator_selection.is_empty() {
            return self.coordinator_selection.clone();
        }
        [
            (ProcessClass::Log, 1),
            (ProcessClass::Transaction, 1),
            (ProcessClass::Storage, 0),
            (ProcessClass::Coordinator, 1),
        ]
        .into_iter()
        .map(|(process_class, priority)| CoordinatorSelectionSetting {
            process_class,
            priority,
        })
        .collect()
    }

    /// The pod, volume and parameter settings of a class, falling back to `general`.
    pub fn process_settings(&self, class: ProcessClass) -> ProcessSettings {
        settings_for_class(&self.processes, class)
    }

    /// Whether TLS is enabled on the main container (default false).
    pub fn tls_enabled(&self) -> bool {
        self.main_container.tls_enabled()
    }
}

/// Where the pod model of [`FoundationDBCluster::image_type`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageTypeSource {
    /// `spec.imageType` is set.
    Spec,
    /// Unset, and every pod runs unified (`status.imageTypes`): a cluster the Go operator
    /// v2 made, whose default is unified.
    Status,
    /// Unset, and no pod runs unified alone: this operator's default, `split`.
    Default,
}

impl FoundationDBCluster {
    /// The pod model the operator builds, and why: `spec.imageType` when set; unset, the
    /// model the pods run when `status.imageTypes` names `unified` alone (the Go operator
    /// v2 defaults to unified, this operator to split: taking over a Go cluster must not
    /// roll every pod to another model), else `split`. A mixed status (a migration under
    /// way) keeps the default: set `imageType` to choose.
    pub fn image_type_and_source(&self) -> (ImageType, ImageTypeSource) {
        if let Some(image_type) = &self.spec.image_type {
            return (image_type.clone(), ImageTypeSource::Spec);
        }
        let running = self
            .status
            .as_ref()
            .map(|status| status.image_types.as_slice())
            .unwrap_or_default();
        if !running.is_empty() && running.iter().all(|t| t == ImageType::Unified.as_str()) {
            (ImageType::Unified, ImageTypeSource::Status)
        } else {
            (ImageType::Split, ImageTypeSource::Default)
        }
    }

    /// The pod model the operator builds (see [`Self::image_type_and_source`]).
    pub fn image_type(&self) -> ImageType {
        self.image_type_and_source().0
    }
}
