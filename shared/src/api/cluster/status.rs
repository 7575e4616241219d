//! `status` of a FoundationDBCluster: what the operator last saw and what it still has to
//! do.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::conditions::{ProcessGroupCondition, ProcessGroupConditionType};
use crate::api::database_configuration::DatabaseConfiguration;
use crate::api::defaults::is_default;
use crate::api::process_class::ProcessClass;

/// The observed state of a FoundationDBCluster.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FoundationDBClusterStatus {
    /// The process groups of the cluster and their conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub process_groups: Vec<ProcessGroupStatus>,
    /// Whether the database has been configured (`configure new` ran).
    #[serde(default)]
    pub configured: bool,
    /// The connection string (cluster file contents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_string: Option<String>,
    /// The version most processes run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_version: Option<String>,
    /// The database configuration last seen in the database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database_configuration: Option<DatabaseConfiguration>,
    /// For each pending kind of work, the metadata.generation at which it was seen.
    #[serde(default, skip_serializing_if = "is_default")]
    pub generations: ClusterGenerationStatus,
    /// Health of the database.
    #[serde(default, skip_serializing_if = "is_default")]
    pub health: ClusterHealth,
    /// Which address kinds (TLS, non-TLS) processes must listen on.
    #[serde(default, skip_serializing_if = "is_default")]
    pub required_addresses: RequiredAddressSet,
    /// State of the lock system.
    #[serde(default, skip_serializing_if = "is_default")]
    pub locks: LockSystemStatus,
    /// The maintenance zone the operator set, if any.
    #[serde(default, skip_serializing_if = "is_default")]
    pub maintenance_mode_info: MaintenanceModeInfo,
    /// Whether the coordinators must be changed.
    #[serde(default)]
    pub needs_new_coordinators: bool,
    /// Whether the config map differs from the desired one.
    #[serde(default)]
    pub has_incorrect_config_map: bool,
    /// Whether a Service differs from the desired one.
    #[serde(default)]
    pub has_incorrect_service_config: bool,
    /// Whether every pod has the IPs its processes listen on.
    #[serde(default, rename = "hasListenIPsForAllPods")]
    pub has_listen_ips_for_all_pods: bool,
    /// Image types (`split`, `unified`) in use by the pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_types: Vec<String>,
    /// Distinct storage-servers-per-pod values in use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub storage_servers_per_disk: Vec<i32>,
    /// Distinct log-servers-per-pod values in use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_servers_per_disk: Vec<i32>,
    /// Number of process groups the spec asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_process_groups: Option<i32>,
    /// Number of process groups that are as desired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciled_process_groups: Option<i32>,
}

impl FoundationDBClusterStatus {
    /// A copy of everything but the process groups (left empty): the groups are most of
    /// a large cluster's status, and some callers replace or skip them anyway.
    pub fn without_process_groups(&self) -> Self {
        // Exhaustive on purpose: a new field must be copied here too.
        let Self {
            process_groups: _,
            configured,
            connection_string,
            running_version,
            database_configuration,
            generations,
            health,
            required_addresses,
            locks,
            maintenance_mode_info,
            needs_new_coordinators,
            has_incorrect_config_map,
            has_incorrect_service_config,
            has_listen_ips_for_all_pods,
            image_types,
            storage_servers_per_disk,
            log_servers_per_disk,
            desired_process_groups,
            reconciled_process_groups,
        } = self;
        Self {
            process_groups: Vec::new(),
            configured: *configured,
            connection_string: connection_string.clone(),
            running_version: running_version.clone(),
            database_configuration: database_configuration.clone(),
            generations: generations.clone(),
            health: health.clone(),
            required_addresses: required_addresses.clone(),
            locks: locks.clone(),
            maintenance_mode_info: maintenance_mode_info.clone(),
            needs_new_coordinators: *needs_new_coordinators,
            has_incorrect_config_map: *has_incorrect_config_map,
            has_incorrect_service_config: *has_incorrect_service_config,
            has_listen_ips_for_all_pods: *has_listen_ips_for_all_pods,
            image_types: image_types.clone(),
            storage_servers_per_disk: storage_servers_per_disk.clone(),
            log_servers_per_disk: log_servers_per_disk.clone(),
            desired_process_groups: *desired_process_groups,
            reconciled_process_groups: *reconciled_process_groups,
        }
    }
}

/// For each kind of pending work, the `metadata.generation` at which it was last seen;
/// `reconciled` is the generation that was fully reconciled.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterGenerationStatus {
    /// The last generation fully reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciled: Option<i64>,
    /// The database configuration must change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_configuration_change: Option<i64>,
    /// The coordinators must change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_coordinator_change: Option<i64>,
    /// Processes must be restarted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_bounce: Option<i64>,
    /// Pods must be deleted (rolling update).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_pod_deletion: Option<i64>,
    /// Process groups must be removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_shrink: Option<i64>,
    /// Process groups must be added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_grow: Option<i64>,
    /// Monitor confs must be updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_monitor_conf_update: Option<i64>,
    /// The database status could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_database_status: Option<i64>,
    /// Removals are in progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_pending_removal: Option<i64>,
    /// Some process is unhealthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_unhealthy_process: Option<i64>,
    /// Processes listen on addresses that are no longer needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_extra_listeners: Option<i64>,
    /// The lock configuration must change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_lock_configuration_changes: Option<i64>,
    /// Services must be updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_service_update: Option<i64>,
}

/// Health of the database as last seen.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterHealth {
    /// Whether the database is available.
    #[serde(default)]
    pub available: bool,
    /// Whether the database is healthy (no data movement for repair).
    #[serde(default)]
    pub healthy: bool,
    /// Whether all data is fully replicated.
    #[serde(default)]
    pub full_replication: bool,
    /// Priority of the current data movement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_movement_priority: Option<i32>,
}

/// Address kinds the processes must listen on.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequiredAddressSet {
    /// TLS addresses are needed.
    #[serde(default)]
    pub tls: bool,
    /// Non-TLS addresses are needed.
    #[serde(default, rename = "nonTLS")]
    pub non_tls: bool,
}

impl RequiredAddressSet {
    /// The set a cluster needs: the kind the spec asks for (`mainContainer.enableTls`),
    /// plus the kind of each current coordinator, which must stay reachable until the
    /// coordinators move (as the Go operator's UpdateStatus does).
    pub fn needed(spec_tls: bool, coordinators_tls: impl IntoIterator<Item = bool>) -> Self {
        let mut set = Self {
            tls: spec_tls,
            non_tls: !spec_tls,
        };
        for tls in coordinators_tls {
            if tls {
                set.tls = true;
            } else {
                set.non_tls = true;
            }
        }
        set
    }

    /// Whether both kinds are needed: TLS is being turned on or off, and the processes
    /// listen on both addresses.
    pub fn both(&self) -> bool {
        self.tls && self.non_tls
    }
}

/// State of the lock system.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LockSystemStatus {
    /// Lock IDs currently on the deny list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lock_deny_list: Vec<String>,
}

/// The maintenance zone the operator set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceModeInfo {
    /// When the maintenance zone was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_timestamp: Option<Time>,
    /// The zone in maintenance.
    #[serde(default, rename = "zoneID", skip_serializing_if = "Option::is_none")]
    pub zone_id: Option<String>,
    /// The process groups being restarted in that zone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub process_groups: Vec<String>,
}

/// Status of one process group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessGroupStatus {
    /// The process group ID, `[prefix-]<class>-<n>`.
    #[serde(rename = "processGroupID")]
    pub process_group_id: String,
    /// The process class of the group.
    pub process_class: ProcessClass,
    /// Addresses the group has been seen with (all of them while marked for removal).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<String>,
    /// When the group was marked for removal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removal_timestamp: Option<Time>,
    /// When the group was fully excluded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclusion_timestamp: Option<Time>,
    /// Whether the group is removed without exclusion.
    #[serde(default)]
    pub exclusion_skipped: bool,
    /// The targets given to `exclude` for this group (`locality_instance_id:<id>`, IP
    /// addresses), recorded before the command is sent: exactly these are included again
    /// when the group is removed, whatever options or versions change meanwhile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded_targets: Vec<String>,
    /// The fault domain (zone) of the group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_domain: Option<String>,
    /// Conditions of the group, each with the time it was first seen.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub process_group_conditions: Vec<ProcessGroupCondition>,
}

impl ProcessGroupStatus {
    /// Whether the group is marked for removal.
    pub fn is_marked_for_removal(&self) -> bool {
        self.removal_timestamp.is_some()
    }

    /// When the condition was first seen, if the group has it.
    pub fn condition_since(&self, condition: &ProcessGroupConditionType) -> Option<i64> {
        self.process_group_conditions
            .iter()
            .find(|c| &c.condition_type == condition)
            .map(|c| c.timestamp)
    }
}

#[cfg(test)]
mod tests {
    use super::RequiredAddressSet;

    #[test]
    fn the_coordinators_kind_stays_required_until_they_move() {
        let both = RequiredAddressSet {
            tls: true,
            non_tls: true,
        };
        // Turning TLS on: the coordinators still use plain addresses.
        assert_eq!(
            RequiredAddressSet::needed(true, [false, false, false]),
            both
        );
        // Turning TLS off: one coordinator left on TLS is enough to keep both.
        assert_eq!(
            RequiredAddressSet::needed(false, [false, true, false]),
            both
        );
        assert!(RequiredAddressSet::needed(true, [true, true, true]).tls);
        assert!(!RequiredAddressSet::needed(true, [true, true, true]).both());
        assert!(!RequiredAddressSet::needed(false, []).both());
        assert!(RequiredAddressSet::needed(false, []).non_tls);
    }
}
