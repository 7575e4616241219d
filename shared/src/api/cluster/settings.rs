//! Smaller groups of cluster settings: fault domains, labels, coordinator selection, the
//! partial connection string and buggify (fault injection).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::process_class::ProcessClass;

/// Label naming the cluster of a resource.
pub const CLUSTER_NAME_LABEL: &str = "foundationdb.org/fdb-cluster-name";
/// Label naming the process class of a resource.
pub const PROCESS_CLASS_LABEL: &str = "foundationdb.org/fdb-process-class";
/// Label naming the process group of a resource.
pub const PROCESS_GROUP_ID_LABEL: &str = "foundationdb.org/fdb-process-group-id";
/// Fault domain key of the default: one zone per Kubernetes node.
pub const DEFAULT_FAULT_DOMAIN_KEY: &str = "kubernetes.io/hostname";
/// Fault domain key that disables fault domains (every pod is its own zone).
pub const NO_FAULT_DOMAIN_KEY: &str = "foundationdb.org/none";
/// Fault domain key that puts the whole Kubernetes cluster in one fixed zone.
pub const KUBERNETES_CLUSTER_FAULT_DOMAIN_KEY: &str = "foundationdb.org/kubernetes-cluster";
/// `faultDomain.valueFrom` naming the pod's `FDB_INSTANCE_ID` variable (the Go operator's
/// environment-variable convention): every process group is its own zone. The only
/// `$VARIABLE` the operator defines itself, so the only one known to resolve.
pub const INSTANCE_ID_FAULT_DOMAIN_VALUE_FROM: &str = "$FDB_INSTANCE_ID";

/// `spec.faultDomain`: what a zone (fault domain) is.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FaultDomain {
    /// Node label key of the zone (default `kubernetes.io/hostname`);
    /// `foundationdb.org/none` makes every pod its own zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Fixed zone value (with `foundationdb.org/kubernetes-cluster`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Pod field the zone comes from (default `spec.nodeName`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_from: Option<String>,
    /// Number of Kubernetes clusters (zones) the database spans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_count: Option<i32>,
    /// Index of this Kubernetes cluster among `zoneCount`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_index: Option<i32>,
}

impl FaultDomain {
    /// Fault domain key (default `kubernetes.io/hostname`).
    pub fn key(&self) -> &str {
        self.key.as_deref().unwrap_or(DEFAULT_FAULT_DOMAIN_KEY)
    }

    /// Pod field the zone comes from (default `spec.nodeName`; `metadata.name` when fault
    /// domains are disabled).
    pub fn value_from(&self) -> &str {
        match (&self.value_from, self.key()) {
            (Some(value_from), _) => value_from,
            (None, NO_FAULT_DOMAIN_KEY) => "metadata.name",
            (None, _) => "spec.nodeName",
        }
    }
}

/// `spec.labels`: which labels identify the operator's resources.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelConfig {
    /// Labels that select the cluster's resources
    /// (default `foundationdb.org/fdb-cluster-name: <cluster>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
    /// Extra labels put on every resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_labels: Option<BTreeMap<String, String>>,
    /// Label keys holding the process class (default `[foundationdb.org/fdb-process-class]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 100))]
    pub process_class_labels: Option<Vec<String>>,
    /// Label keys holding the process group ID
    /// (default `[foundationdb.org/fdb-process-group-id]`).
    #[serde(
        default,
        rename = "processGroupIDLabels",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(length(max = 100))]
    pub process_group_id_labels: Option<Vec<String>>,
    /// Whether listed resources are also filtered by owner reference (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter_on_owner_reference: Option<bool>,
}

impl LabelConfig {
    /// The labels that select the resources of the cluster named `cluster_name`.
    pub fn match_labels(&self, cluster_name: &str) -> BTreeMap<String, String> {
        self.match_labels.clone().unwrap_or_else(|| {
            BTreeMap::from([(CLUSTER_NAME_LABEL.to_owned(), cluster_name.to_owned())])
        })
    }

    /// Label keys holding the process class.
    pub fn process_class_labels(&self) -> Vec<String> {
        self.process_class_labels
            .clone()
            .unwrap_or_else(|| vec![PROCESS_CLASS_LABEL.to_owned()])
    }

    /// Label keys holding the process group ID.
    pub fn process_group_id_labels(&self) -> Vec<String> {
        self.process_group_id_labels
            .clone()
            .unwrap_or_else(|| vec![PROCESS_GROUP_ID_LABEL.to_owned()])
    }
}

/// One entry of `spec.coordinatorSelection`: a class that may host coordinators and its
/// priority when coordinators are chosen (higher first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CoordinatorSelectionSetting {
    /// A process class that may host coordinators (`storage`, `log`, `transaction` or
    /// `coordinator`); with a selection, only the classes it names do.
    pub process_class: ProcessClass,
    /// Priority of the class; higher is preferred.
    #[serde(default)]
    pub priority: i32,
}

/// `spec.partialConnectionString`: parts of the connection string to keep, e.g. when
/// taking over an existing database (the Go API calls this type `ConnectionString`; a
/// parsed cluster file is `connection_string::ConnectionString`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PartialConnectionString {
    /// Database name (the part before `:` in the cluster file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database_name: Option<String>,
    /// Generation ID (the part between `:` and `@`).
    #[serde(
        default,
        rename = "generationID",
        skip_serializing_if = "Option::is_none"
    )]
    pub generation_id: Option<String>,
    /// Coordinator addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub coordinators: Vec<String>,
}

/// `spec.buggify`: fault injection for testing.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BuggifyConfig {
    /// Process group IDs whose main container crash-loops (`*` for all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 1000),
        inner(length(max = 63), regex(pattern = r"^(([\w-]+)-(\d+)|\*)$"))
    )]
    pub crash_loop: Vec<String>,
    /// Containers to crash-loop, with their process group IDs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    pub crash_loop_containers: Vec<CrashLoopContainerObject>,
    /// Process group IDs whose pods cannot be scheduled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 1000),
        inner(length(max = 63), regex(pattern = r"^(([\w-]+)-(\d+)|\*)$"))
    )]
    pub no_schedule: Vec<String>,
    /// Process group IDs that are never removed, even when marked for removal (they are
    /// still excluded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 1000),
        inner(length(max = 63), regex(pattern = r"^(([\w-]+)-(\d+)|\*)$"))
    )]
    pub block_removal: Vec<String>,
    /// Process group IDs whose processes the operator never restarts (bounces and the
    /// kill of an upgrade).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 1000),
        inner(length(max = 63), regex(pattern = r"^(([\w-]+)-(\d+)|\*)$"))
    )]
    pub ignore_during_restart: Vec<String>,
    /// Whether every monitor conf is rendered empty (no processes run; nothing is
    /// replaced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub empty_monitor_conf: Option<bool>,
}

/// A container to crash-loop and the process groups concerned.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CrashLoopContainerObject {
    /// Container name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub container_name: Option<String>,
    /// Process group IDs (`*` for all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 10000),
        inner(length(max = 63), regex(pattern = r"^(([\w-]+)-(\d+)|\*)$"))
    )]
    pub targets: Vec<String>,
}
