//! A typed model of FoundationDB's `status json`.
//!
//! Every field is optional or defaulted and unknown fields are ignored, so documents
//! from any supported version (and partial documents from a degraded cluster) parse.
//! Typed values (addresses, classes, versions, connection strings) that fail to parse
//! come out as `None` instead of failing the whole document.

pub mod backup;
pub mod client;
pub mod cluster;
pub mod data;
mod lenient;
mod lenient_shapes;
pub mod parse;
pub mod processes;
pub mod schema;

use serde::{Deserialize, Serialize};

pub use backup::BackupStatus;
pub use client::{ClientStatus, CoordinatorStatus, CoordinatorsStatus, DatabaseStatusFlags};
pub use cluster::{
    ClientVersionStatus, ClusterMessage, ClusterStatus, ConnectedClient, ConnectedClients,
};
pub use data::{DataState, DataStatus, FaultTolerance, LogSystem, QosStatus, RecoveryState};
pub use parse::StatusParseError;
pub use processes::{ProcessLocality, ProcessMessage, ProcessRole, ProcessStatus};

/// The whole `status json` document.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DatabaseStatus {
    /// What the client (fdbcli) sees: coordinators, availability.
    #[serde(default)]
    pub client: ClientStatus,
    /// What the cluster controller reports.
    #[serde(default)]
    pub cluster: ClusterStatus,
}

impl DatabaseStatus {
    /// Whether the database is available, as the client sees it.
    pub fn is_available(&self) -> bool {
        self.client.database_status.available.unwrap_or(false)
    }

    /// Whether the database is healthy, as the client sees it.
    pub fn is_healthy(&self) -> bool {
        self.client.database_status.healthy.unwrap_or(false)
    }

    /// The process with that `locality_instance_id` (the first one; with several servers
    /// per pod there are several).
    pub fn processes_of_instance<'a>(
        &'a self,
        instance_id: &'a str,
    ) -> impl Iterator<Item = (&'a String, &'a ProcessStatus)> + 'a {
        self.cluster.processes.iter().filter(move |(_, process)| {
            process.locality.instance_id.as_deref() == Some(instance_id)
        })
    }
}
