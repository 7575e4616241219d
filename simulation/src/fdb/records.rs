//! What the simulated database keeps in its `State` (`state.rs`) beside the
//! processes and the data: where the transaction system is and the recoveries seen, the
//! recruited roles, the outages, and the data's state at a glance. A leaf: the files
//! that recover, recruit, assess and render the database all build on it.

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::address::ProcessAddress;

use super::processes::DiskKey;

/// Where the transaction system is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Recovery {
    /// No database yet (not configured).
    #[default]
    Down,
    /// The transaction system is gone and cannot be recruited from the processes there
    /// are (or the coordinators have no quorum).
    Waiting { reason: String },
    /// A recovery runs since `started` (unix seconds).
    Recovering { started: i64, reason: String },
    /// Accepting commits.
    Recovered,
}

impl Recovery {
    /// Why the database is recovering, while it is.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Self::Waiting { reason } | Self::Recovering { reason, .. } => Some(reason),
            Self::Down | Self::Recovered => None,
        }
    }
}

/// One recovery, as the world saw it (the result's `fdb.recoveryLog`): what the spacing
/// of recoveries is judged from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecoveryRecord {
    /// When it started recovering (unix seconds).
    pub started: i64,
    /// When it completed (unix seconds); `None` while it runs, or when it went back to
    /// waiting for processes (the next record is its retry).
    pub recovered: Option<i64>,
    /// Why it happened.
    pub reason: String,
}

/// One recruited role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RoleAssignment {
    pub role: &'static str,
    pub address: ProcessAddress,
    /// Start time of the process when recruited: a restart invalidates the role.
    pub started_unix: i64,
}

/// The recruited transaction system of the current generation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct TransactionSystem {
    pub members: Vec<RoleAssignment>,
}

impl TransactionSystem {
    pub fn roles_of(&self, address: &ProcessAddress) -> Vec<&'static str> {
        self.members
            .iter()
            .filter(|m| &m.address == address)
            .map(|m| m.role)
            .collect()
    }

    pub fn logs(&self) -> Vec<&ProcessAddress> {
        self.members
            .iter()
            .filter(|m| m.role == "log")
            .map(|m| &m.address)
            .collect()
    }
}

/// A period during which the database was unavailable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outage {
    /// When it began (unix seconds).
    pub start: i64,
    /// When it ended (unix seconds); `None` while it lasts.
    pub end: Option<i64>,
    /// Why, in words ("recovery after kill of 3 processes", "no quorum of coordinators",
    /// "shards without a live replica"); later causes of the same outage are appended
    /// ("...; then ...").
    pub cause: String,
    /// The longest a recovery took while it lasted (the world's `recoverySeconds`, or a
    /// `slowRecovery` fault's): what the database itself needed, whoever caused it.
    pub recovery_seconds: i64,
}

/// The data's state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DataSummary {
    /// Whether the shards exist.
    pub placed: bool,
    /// Shards no live replica serves (lost ones included).
    pub without_live_replica: usize,
    /// Fewest live replicas of any shard, at most the replication factor.
    pub min_live_replicas: usize,
    /// Fewest distinct team domains (zones; data halls in three_data_hall) among any
    /// shard's live replicas.
    pub min_live_zones: usize,
    /// Shards with fewer live replicas in distinct zones than the replication factor.
    pub under_replicated: usize,
    /// Replicas on excluded or failed disks, waiting to be moved away.
    pub leaving_replicas: usize,
    /// Replicas written with an older storage engine.
    pub stale_replicas: usize,
    /// Storage disks holding replicas whose process is not serving.
    pub silent_disks: usize,
    /// Data distribution's view, which team trackers report: a replica counts until its
    /// server is declared failed (silent for `failureDetectionSeconds`, never while its
    /// zone is in maintenance), where the counts above want it served now.
    pub teams: TeamCounts,
}

/// Replica counts as data distribution's team trackers see them (see
/// [`DataSummary::teams`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TeamCounts {
    /// Shards without a replica on a server that is not failed.
    pub without_replica: usize,
    /// Fewest such replicas of any shard, at most the replication factor.
    pub min_replicas: usize,
    /// Shards with fewer such replicas in distinct zones than the replication factor.
    pub under_replicated: usize,
}

/// Which disks hold the database's coordinated state.
#[derive(Debug, Default)]
pub(crate) struct CoordinatedState {
    /// The database's identity in the state, fixed when it is first written (by the
    /// first recovery after `configure new`); `None` before: no state exists yet.
    pub database: Option<String>,
    /// The disks holding it.
    pub disks: BTreeSet<DiskKey>,
}

impl CoordinatedState {
    /// The content of each coordination file of a disk holding the state.
    pub fn file_content(&self) -> Option<String> {
        self.database
            .as_ref()
            .map(|id| format!("FoundationDB coordinated state of database {id}\n"))
    }

    /// Whether a coordinator on `disk` can serve the state: it holds it, or no state
    /// exists yet (a new database starts from empty registers).
    pub fn serves(&self, disk: &DiskKey) -> bool {
        self.database.is_none() || self.disks.contains(disk)
    }
}

/// The logs of the last recovered transaction system, and a forced recovery asked for.
#[derive(Debug, Default)]
pub(crate) struct Failover {
    /// The last generation: its primary datacenter and its logs.
    pub last: Option<LogGeneration>,
    /// The datacenter a user forced the next recovery into.
    pub forced_into: Option<String>,
    /// Every forced recovery and what it lost.
    pub forced: Vec<ForcedRecovery>,
}

/// The logs of one generation, by datacenter (`None` without a `dcid`).
#[derive(Debug, Clone)]
pub(crate) struct LogGeneration {
    pub primary: Option<String>,
    /// The remote region's datacenter (where its log routers ran).
    pub remote: Option<String>,
    pub logs: BTreeMap<Option<String>, Vec<DiskKey>>,
}

/// A forced recovery, as the result reports it (`fdb.forcedRecoveries`): always a
/// user's fdbcli command (the operator never forces one), so what it lost is the
/// user's doing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ForcedRecovery {
    /// When fdbcli asked for it (seconds since the start of the run).
    pub at: i64,
    /// The datacenter it recovered into.
    pub data_center: String,
    /// The last version the datacenter had: later commits are lost.
    pub kept_version: i64,
    /// Workload writes lost (committed after `kept_version`).
    pub lost_writes: u64,
}
