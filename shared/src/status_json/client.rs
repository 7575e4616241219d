//! The `client` section: what the client sees of coordinators and availability.

use serde::{Deserialize, Serialize};

use super::lenient;
use crate::address::ProcessAddress;

/// `client`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ClientStatus {
    /// `client.coordinators`.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub coordinators: CoordinatorsStatus,
    /// `client.database_status`.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub database_status: DatabaseStatusFlags,
    /// `client.cluster_file`.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub cluster_file: ClusterFileStatus,
    /// `client.messages[]` (e.g. `quorum_not_reachable`).
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub messages: Vec<ClientMessage>,
    /// `client.timestamp` (unix seconds).
    #[serde(default, deserialize_with = "lenient::int")]
    pub timestamp: Option<i64>,
}

/// `client.coordinators`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CoordinatorsStatus {
    /// Each coordinator of the connection string.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub coordinators: Vec<CoordinatorStatus>,
    /// Whether a majority of coordinators is reachable.
    #[serde(default)]
    pub quorum_reachable: Option<bool>,
}

/// One entry of `client.coordinators.coordinators[]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CoordinatorStatus {
    /// The coordinator's address.
    #[serde(default, deserialize_with = "lenient::from_str")]
    pub address: Option<ProcessAddress>,
    /// Whether the client reached it.
    #[serde(default)]
    pub reachable: Option<bool>,
    /// The protocol version it speaks (hex).
    #[serde(default)]
    pub protocol: Option<String>,
}

/// `client.database_status`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DatabaseStatusFlags {
    /// Whether the database accepts transactions.
    #[serde(default)]
    pub available: Option<bool>,
    /// Whether the database is healthy.
    #[serde(default)]
    pub healthy: Option<bool>,
}

/// `client.cluster_file`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ClusterFileStatus {
    /// Path of the cluster file fdbcli used.
    #[serde(default)]
    pub path: Option<String>,
    /// Whether it matches the current connection string.
    #[serde(default)]
    pub up_to_date: Option<bool>,
}

/// One entry of `client.messages[]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ClientMessage {
    /// Machine-readable name.
    #[serde(default)]
    pub name: String,
    /// Human-readable description.
    #[serde(default)]
    pub description: Option<String>,
}
