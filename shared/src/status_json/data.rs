//! Data distribution, log system, QoS, fault tolerance and recovery state.

use serde::{Deserialize, Serialize};

use super::lenient;
use crate::address::ProcessAddress;

/// `cluster.data`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DataStatus {
    /// Overall data distribution state.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub state: DataState,
    /// Team trackers, one per region.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub team_trackers: Vec<TeamTracker>,
    /// Data being moved.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub moving_data: MovingData,
    /// Logical size of the data.
    #[serde(default, deserialize_with = "lenient::int")]
    pub total_kv_size_bytes: Option<i64>,
    /// Disk space used by the data.
    #[serde(default, deserialize_with = "lenient::int")]
    pub total_disk_used_bytes: Option<i64>,
    /// Number of shards.
    #[serde(default, deserialize_with = "lenient::int")]
    pub partitions_count: Option<i64>,
    /// Least free space of any storage server.
    #[serde(default, deserialize_with = "lenient::int")]
    pub least_operating_space_bytes_storage_server: Option<i64>,
    /// Least free space of any log server.
    #[serde(default, deserialize_with = "lenient::int")]
    pub least_operating_space_bytes_log_server: Option<i64>,
}

/// `cluster.data.state` and a team tracker's `state`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DataState {
    /// Whether data distribution is healthy.
    #[serde(default)]
    pub healthy: Option<bool>,
    /// State name (`healthy`, `healthy_repartitioning`, `healthy_removing_server`,
    /// `missing_data`, `initializing`, ...).
    #[serde(default)]
    pub name: Option<String>,
    /// Fewest replicas any piece of data has.
    #[serde(default, deserialize_with = "lenient::int")]
    pub min_replicas_remaining: Option<i64>,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// One entry of `cluster.data.team_trackers[]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TeamTracker {
    /// Whether this is the primary region's tracker.
    #[serde(default)]
    pub primary: Option<bool>,
    /// Bytes in flight.
    #[serde(default, deserialize_with = "lenient::int")]
    pub in_flight_bytes: Option<i64>,
    /// Number of unhealthy servers.
    #[serde(default, deserialize_with = "lenient::int")]
    pub unhealthy_servers: Option<i64>,
    /// The tracker's state.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub state: DataState,
}

/// `cluster.data.moving_data`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MovingData {
    /// Bytes being moved now.
    #[serde(default, deserialize_with = "lenient::int")]
    pub in_flight_bytes: Option<i64>,
    /// Bytes waiting to be moved.
    #[serde(default, deserialize_with = "lenient::int")]
    pub in_queue_bytes: Option<i64>,
    /// Priority of the most urgent movement.
    #[serde(default, deserialize_with = "lenient::int")]
    pub highest_priority: Option<i64>,
    /// Bytes moved so far.
    #[serde(default, deserialize_with = "lenient::int")]
    pub total_written_bytes: Option<i64>,
}

/// One entry of `cluster.logs[]`: a log system generation.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LogSystem {
    /// Whether it is the current generation.
    #[serde(default)]
    pub current: Option<bool>,
    /// Its epoch.
    #[serde(default, deserialize_with = "lenient::int")]
    pub epoch: Option<i64>,
    /// How many log failures it tolerates.
    #[serde(default, deserialize_with = "lenient::int")]
    pub log_fault_tolerance: Option<i64>,
    /// Copies of each mutation.
    #[serde(default, deserialize_with = "lenient::int")]
    pub log_replication_factor: Option<i64>,
    /// Its logs.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub log_interfaces: Vec<LogInterface>,
}

/// A log of a log system generation.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LogInterface {
    /// Address of the log process.
    #[serde(default, deserialize_with = "lenient::from_str")]
    pub address: Option<ProcessAddress>,
    /// Whether it is healthy.
    #[serde(default)]
    pub healthy: Option<bool>,
    /// The log's ID.
    #[serde(default)]
    pub id: Option<String>,
}

/// A lag in seconds and versions.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Lag {
    /// Lag in seconds.
    #[serde(default)]
    pub seconds: Option<f64>,
    /// Lag in versions.
    #[serde(default, deserialize_with = "lenient::int")]
    pub versions: Option<i64>,
}

/// What limits the transaction rate.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PerformanceLimitedBy {
    /// Reason name (`workload`, `storage_server_write_queue_size`, ...).
    #[serde(default)]
    pub name: Option<String>,
    /// Human-readable description.
    #[serde(default)]
    pub description: Option<String>,
}

/// `cluster.qos`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct QosStatus {
    /// Largest log server queue.
    #[serde(default, deserialize_with = "lenient::int")]
    pub worst_queue_bytes_log_server: Option<i64>,
    /// Largest storage server queue.
    #[serde(default, deserialize_with = "lenient::int")]
    pub worst_queue_bytes_storage_server: Option<i64>,
    /// Storage queue that limits the rate.
    #[serde(default, deserialize_with = "lenient::int")]
    pub limiting_queue_bytes_storage_server: Option<i64>,
    /// Worst storage data lag.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub worst_data_lag_storage_server: Lag,
    /// Storage data lag that limits the rate.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub limiting_data_lag_storage_server: Lag,
    /// Worst storage durability lag.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub worst_durability_lag_storage_server: Lag,
    /// Storage durability lag that limits the rate.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub limiting_durability_lag_storage_server: Lag,
    /// What limits the transaction rate.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub performance_limited_by: PerformanceLimitedBy,
}

/// `cluster.fault_tolerance`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FaultTolerance {
    /// Zone failures survivable without losing availability.
    #[serde(default, deserialize_with = "lenient::int")]
    pub max_zone_failures_without_losing_availability: Option<i64>,
    /// Zone failures survivable without losing data.
    #[serde(default, deserialize_with = "lenient::int")]
    pub max_zone_failures_without_losing_data: Option<i64>,
}

/// `cluster.recovery_state`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RecoveryState {
    /// State name (`fully_recovered`, `accepting_commits`, `recruiting_transaction_servers`,
    /// ...).
    #[serde(default)]
    pub name: Option<String>,
    /// Human-readable description.
    #[serde(default)]
    pub description: Option<String>,
    /// Seconds since the last recovery finished.
    #[serde(default)]
    pub seconds_since_last_recovered: Option<f64>,
    /// Number of active log generations (more than 1 while old logs drain).
    #[serde(default, deserialize_with = "lenient::int")]
    pub active_generations: Option<i64>,
}
