//! The `cluster` section.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::data::{DataStatus, FaultTolerance, LogSystem, QosStatus, RecoveryState};
use super::processes::ProcessStatus;
use super::{lenient, lenient_shapes};
use crate::address::ProcessAddress;
use crate::api::DatabaseConfiguration;
use crate::connection_string::ConnectionString;
use crate::version::FdbVersion;

/// `cluster`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ClusterStatus {
    /// The processes, keyed by FoundationDB's process ID. Read in one go: an entry that
    /// is not an object is left out, a field of another type takes its default.
    #[serde(default, deserialize_with = "lenient_shapes::objects_by_key")]
    pub processes: BTreeMap<String, ProcessStatus>,
    /// The database configuration; `None` for an unconfigured database.
    #[serde(default, deserialize_with = "lenient::object_by_key")]
    pub configuration: Option<DatabaseConfiguration>,
    /// Data distribution state.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub data: DataStatus,
    /// Whether every piece of data has all its replicas.
    #[serde(default)]
    pub full_replication: Option<bool>,
    /// The log system generations.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub logs: Vec<LogSystem>,
    /// Ratekeeper's view: lags and queues.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub qos: QosStatus,
    /// How many zone failures the cluster survives.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub fault_tolerance: FaultTolerance,
    /// The zone under maintenance, if any.
    #[serde(default)]
    pub maintenance_zone: Option<String>,
    /// Seconds left of the maintenance window.
    #[serde(default)]
    pub maintenance_seconds_remaining: Option<f64>,
    /// Recovery state of the transaction system.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub recovery_state: RecoveryState,
    /// Whether a bounce right now is clean.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub bounce_impact: BounceImpact,
    /// Cluster-level messages (e.g. `unreachable_processes`, `status_incomplete`).
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub messages: Vec<ClusterMessage>,
    /// Connected clients, grouped by client version.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub clients: ConnectedClients,
    /// Addresses of peers that connect with an incompatible protocol.
    #[serde(default, deserialize_with = "lenient::vec_from_str")]
    pub incompatible_connections: Vec<ProcessAddress>,
    /// The current connection string.
    #[serde(default, deserialize_with = "lenient::from_str")]
    pub connection_string: Option<ConnectionString>,
    /// Layer status (backup agents).
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub layers: Layers,
    /// The transaction system generation, bumped by every recovery.
    #[serde(default, deserialize_with = "lenient::int")]
    pub generation: Option<i64>,
    /// The cluster's protocol version (hex).
    #[serde(default)]
    pub protocol_version: Option<String>,
    /// Whether the cluster controller considers the database available.
    #[serde(default)]
    pub database_available: Option<bool>,
}

impl ClusterStatus {
    /// Whether a cluster message of that name is present.
    pub fn has_message(&self, name: &str) -> bool {
        self.messages.iter().any(|m| m.name == name)
    }

    /// How many processes run each version (processes without a version are skipped).
    pub fn version_counts(&self) -> BTreeMap<FdbVersion, usize> {
        let mut counts = BTreeMap::new();
        for version in self.processes.values().filter_map(|p| p.version) {
            *counts.entry(version).or_insert(0) += 1;
        }
        counts
    }

    /// The version most processes run (the newest on a tie).
    pub fn running_version(&self) -> Option<FdbVersion> {
        self.version_counts()
            .into_iter()
            .max_by_key(|(version, count)| (*count, *version))
            .map(|(version, _)| version)
    }
}

/// `cluster.bounce_impact`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BounceImpact {
    /// Whether restarting all processes now avoids a long recovery.
    #[serde(default)]
    pub can_clean_bounce: Option<bool>,
    /// Why not, when it cannot.
    #[serde(default)]
    pub reason: Option<String>,
}

/// One entry of `cluster.messages[]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ClusterMessage {
    /// Machine-readable name.
    #[serde(default)]
    pub name: String,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// With `unreachable_processes`: which ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "lenient::or_default")]
    pub unreachable_processes: Vec<UnreachableProcess>,
}

/// An entry of an `unreachable_processes` message.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UnreachableProcess {
    /// The unreachable process's address.
    #[serde(default, deserialize_with = "lenient::from_str")]
    pub address: Option<ProcessAddress>,
}

/// `cluster.clients`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ConnectedClients {
    /// Number of connected clients.
    #[serde(default, deserialize_with = "lenient::int")]
    pub count: Option<i64>,
    /// Clients grouped by the versions they support.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub supported_versions: Vec<ClientVersionStatus>,
}

/// One entry of `cluster.clients.supported_versions[]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ClientVersionStatus {
    /// The client library version (e.g. `7.1.57`); `None` when unparsable.
    #[serde(default, deserialize_with = "lenient::from_str")]
    pub client_version: Option<FdbVersion>,
    /// Its protocol version (hex).
    #[serde(default)]
    pub protocol_version: Option<String>,
    /// Its source version (git hash).
    #[serde(default)]
    pub source_version: Option<String>,
    /// Number of clients supporting it.
    #[serde(default, deserialize_with = "lenient::int")]
    pub count: Option<i64>,
    /// The clients supporting it.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub connected_clients: Vec<ConnectedClient>,
    /// The clients for which it is their newest supported protocol.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub max_protocol_clients: Vec<ConnectedClient>,
}

/// A connected client.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ConnectedClient {
    /// The client's address (`IP:port`, possibly `:tls`).
    #[serde(default)]
    pub address: String,
    /// The client's log group.
    #[serde(default)]
    pub log_group: String,
}

/// `cluster.layers`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Layers {
    /// Whether the layer status could be read.
    #[serde(rename = "_valid", default)]
    pub valid: Option<bool>,
    /// Backup agents' status.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub backup: Option<BackupLayer>,
}

/// `cluster.layers.backup`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BackupLayer {
    /// Whether backup agents are paused.
    #[serde(default)]
    pub paused: Option<bool>,
    /// Backup agents reporting.
    #[serde(default, deserialize_with = "lenient::int")]
    pub instances_running: Option<i64>,
    /// Backups by tag.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub tags: BTreeMap<String, BackupTag>,
}

/// One backup tag.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BackupTag {
    /// The backup's container URL.
    #[serde(default)]
    pub current_container: Option<String>,
    /// Whether a backup is running on the tag.
    #[serde(default)]
    pub running_backup: Option<bool>,
    /// Whether it can be restored.
    #[serde(default)]
    pub running_backup_is_restorable: Option<bool>,
    /// How far behind the restorable point is.
    #[serde(default)]
    pub last_restorable_seconds_behind: Option<f64>,
    /// The last restorable version.
    #[serde(default, deserialize_with = "lenient::int")]
    pub last_restorable_version: Option<i64>,
}
