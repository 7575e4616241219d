//! The database configuration: what `fdbcli configure` sets.
//!
//! JSON names follow FoundationDB's snake_case (`redundancy_mode`, `storage_engine`, ...),
//! both in the cluster spec and in `status json`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::open_enum::open_string_enum;

open_string_enum! {
    /// How many copies of the data FoundationDB keeps, and across what.
    RedundancyMode {
        /// One copy; no fault tolerance.
        Single => "single",
        /// Two copies in distinct zones; tolerates one failure (the default).
        Double => "double",
        /// Three copies in distinct zones; tolerates two failures.
        Triple => "triple",
        /// Three data halls; tolerates the loss of a data hall plus one zone.
        ThreeDataHall => "three_data_hall",
        /// Three data halls, fallback mode while a hall is lost.
        ThreeDataHallFallback => "three_data_hall_fallback",
        /// Three datacenters.
        ThreeDatacenter => "three_datacenter",
        /// Three datacenters, fallback mode.
        ThreeDatacenterFallback => "three_datacenter_fallback",
    }
}

open_string_enum! {
    /// The storage engine of the storage servers.
    StorageEngine {
        /// B-tree on SQLite (`ssd-2`'s alias).
        Ssd => "ssd",
        /// Old SQLite engine.
        Ssd1 => "ssd-1",
        /// SQLite engine (the default).
        Ssd2 => "ssd-2",
        /// In-memory engine (`memory-2`'s alias).
        Memory => "memory",
        /// Old in-memory engine.
        Memory1 => "memory-1",
        /// In-memory engine.
        Memory2 => "memory-2",
        /// Radix-tree in-memory engine (beta).
        MemoryRadixtreeBeta => "memory-radixtree-beta",
        /// Redwood before it was final.
        SsdRedwood1Experimental => "ssd-redwood-1-experimental",
        /// Redwood (7.3 and later).
        SsdRedwood1 => "ssd-redwood-1",
        /// RocksDB.
        SsdRocksdbV1 => "ssd-rocksdb-v1",
        /// Sharded RocksDB (7.2 and later).
        SsdShardedRocksdb => "ssd-sharded-rocksdb",
        /// RocksDB under its name before 7.1 (the Go operator's CRD accepts it; no 7.x
        /// `configure` does).
        SsdRocksdbExperimental => "ssd-rocksdb-experimental",
        /// The radix-tree engine as 7.4 names it in `status json` (`memory-radixtree-beta`
        /// before; `fdbclient/FDBTypes.cpp`, `getStoreTypeStr`, release-7.4).
        MemoryRadixtree => "memory-radixtree",
        /// No engine: what 7.1.43 and later report as `perpetual_storage_wiggle_engine` when
        /// none is set, and a value `configure` takes for it.
        None => "none",
        /// What 7.1 reports as `storage_engine` for a log/storage engine pair it has no
        /// name for (`fdbclient/DatabaseConfiguration.cpp`, `toJSON`, release-7.1).
        Custom => "custom",
        /// What 7.3 and later report for an engine they cannot name (`getStoreTypeStr`).
        Unknown => "unknown",
        /// Empty: accepted by the Go operator's CRD, read as "not set".
        Unset => "",
    }
}

open_string_enum! {
    /// How FoundationDB migrates storage servers to a new storage engine
    /// (`storage_migration_type`): a closed set, as FoundationDB knows it.
    StorageMigrationType {
        /// No migration: the engine of existing storage servers is kept.
        Disabled => "disabled",
        /// Storage servers are replaced by new ones of the new engine at once.
        Aggressive => "aggressive",
        /// Storage servers migrate one at a time through the perpetual wiggle.
        Gradual => "gradual",
        /// Empty: accepted by the Go operator's CRD, read as "not set".
        Unset => "",
    }
}

impl RedundancyMode {
    /// The redundancy mode of a cluster that does not set one.
    pub const DEFAULT: Self = Self::Double;

    /// Whether the mode places replicas by `data_hall` locality: three_data_hall and its
    /// fallback. Both replicate the logs 4 times, in 2 zones of each of 2 data halls; the
    /// fallback keeps 2 storage replicas in distinct halls instead of 3
    /// (apple/foundationdb `fdbclient/ManagementAPI.actor.cpp`, `configForToken`).
    pub fn spreads_over_data_halls(&self) -> bool {
        matches!(self, Self::ThreeDataHall | Self::ThreeDataHallFallback)
    }
}

impl StorageEngine {
    /// The storage engine of a cluster that does not set one.
    pub const DEFAULT: Self = Self::Ssd2;

    /// Whether `configure` can be given this name: not a value FoundationDB only reports
    /// (`custom`, `unknown`), not empty, not a name no supported version takes. Which
    /// version takes which name is validation's business (`shared/src/validation`).
    pub fn is_configurable(&self) -> bool {
        !matches!(
            self,
            Self::Custom
                | Self::Unknown
                | Self::Unset
                | Self::SsdRocksdbExperimental
                | Self::Other(_)
        )
    }
}

impl StorageMigrationType {
    /// Whether `configure` can be given this value (not empty, not unknown).
    pub fn is_configurable(&self) -> bool {
        !matches!(self, Self::Unset | Self::Other(_))
    }
}

/// A server excluded through the database configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ExcludedServer {
    /// `IP:port` or IP address of the excluded server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 48))]
    pub address: Option<String>,
    /// Locality of the excluded servers, e.g. `locality_instance_id:storage-1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 200))]
    pub locality: Option<String>,
}

impl ExcludedServer {
    /// Whether this entry is the exclusion `target` as fdbcli writes it
    /// (`locality_instance_id:storage-1`, or an address).
    pub fn is(&self, target: &str) -> bool {
        self.locality.as_deref() == Some(target) || self.address.as_deref() == Some(target)
    }
}

/// A datacenter in a region of a multi-region configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct DataCenter {
    /// The datacenter ID (`locality_dcid`).
    #[serde(default)]
    pub id: String,
    /// Priority of the datacenter for hosting the primary region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// 1 when the datacenter is a satellite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1))]
    pub satellite: Option<i32>,
}

/// A region of a multi-region configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Region {
    /// The datacenters of the region.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub datacenters: Vec<DataCenter>,
    /// Number of satellite logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub satellite_logs: Option<i32>,
    /// Redundancy mode of the satellites (e.g. `one_satellite_double`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 100))]
    pub satellite_redundancy_mode: Option<String>,
}

/// The database configuration (FoundationDB's `configure` settings), in the spec as
/// desired and in the status as last seen in the database.
///
/// Unset fields take their defaults from the redundancy mode (see the derived values);
/// "unset" stays distinguishable from an explicit value.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct DatabaseConfiguration {
    /// Redundancy mode (default `double`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redundancy_mode: Option<RedundancyMode>,
    /// Storage engine (default `ssd-2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_engine: Option<StorageEngine>,
    /// Desired number of transaction logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logs: Option<i32>,
    /// Desired number of proxies (before the split into commit and GRV proxies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxies: Option<i32>,
    /// Desired number of commit proxies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_proxies: Option<i32>,
    /// Desired number of GRV proxies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grv_proxies: Option<i32>,
    /// Desired number of resolvers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolvers: Option<i32>,
    /// Number of regions the data is replicated to (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usable_regions: Option<i32>,
    /// Regions of a multi-region configuration.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<Region>,
    /// Desired number of log routers (multi-region only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_routers: Option<i32>,
    /// Desired number of remote logs (multi-region only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_logs: Option<i32>,
    /// Desired number of storage servers (informational; the process counts rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<i32>,
    /// Servers excluded from the database.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1024))]
    pub excluded_servers: Vec<ExcludedServer>,
    /// Log spill mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_spill: Option<i32>,
    /// Log format version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_version: Option<i32>,
    /// Number of storage processes the perpetual storage wiggle works on at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perpetual_storage_wiggle: Option<i32>,
    /// Storage engine the perpetual wiggle migrates to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perpetual_storage_wiggle_engine: Option<StorageEngine>,
    /// Locality filter of the perpetual wiggle (`<key>:<value>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([\w.-]+:[\w.-]+|0)$"))]
    pub perpetual_storage_wiggle_locality: Option<String>,
    /// How storage engine migrations are done (`disabled`, `aggressive`, `gradual`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_migration_type: Option<StorageMigrationType>,
}

impl DatabaseConfiguration {
    /// Whether the exclusion list holds `target` ([`ExcludedServer::is`]).
    pub fn lists_exclusion(&self, target: &str) -> bool {
        self.excluded_servers.iter().any(|server| server.is(target))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_values_are_kept_for_validation() {
        let config: DatabaseConfiguration =
            serde_json::from_str(r#"{"redundancy_mode":"double","storage_engine":"ssd-9"}"#)
                .unwrap();
        assert_eq!(config.redundancy_mode, Some(RedundancyMode::Double));
        assert_eq!(
            config.storage_engine,
            Some(StorageEngine::Other("ssd-9".to_owned()))
        );
        assert!(!config.storage_engine.as_ref().unwrap().is_known());
        let back = serde_json::to_string(&config).unwrap();
        assert_eq!(
            back,
            r#"{"redundancy_mode":"double","storage_engine":"ssd-9"}"#
        );
    }
}
