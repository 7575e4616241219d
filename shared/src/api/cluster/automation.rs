//! `spec.automationOptions`: what the operator may do on its own, and how carefully.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::defaults::is_default;
use crate::api::open_enum::open_string_enum;

open_string_enum! {
    /// How many pods the operator deletes at once when it rolls out a pod change.
    DeletionMode {
        /// One fault domain (zone) at a time (the default).
        Zone => "Zone",
        /// One process group at a time.
        ProcessGroup => "ProcessGroup",
        /// Every pod at once.
        All => "All",
        /// Never delete pods automatically.
        None => "None",
    }
}

open_string_enum! {
    /// How pod spec changes are rolled out.
    PodUpdateStrategy {
        /// Replace every process group with a new one.
        Replace => "Replace",
        /// Replace log and stateless process groups; delete and recreate storage pods
        /// (the default).
        ReplaceTransactionSystem => "ReplaceTransactionSystem",
        /// Delete and recreate pods in place.
        Delete => "Delete",
    }
}

/// The log group of the operator's own clients, ignored by the client compatibility check
/// unless `ignoreLogGroupsForUpgrade` is set.
pub const DEFAULT_IGNORED_LOG_GROUP: &str = "fdb-kubernetes-operator";

/// `spec.automationOptions`: switches and limits for the operator's automatic actions.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomationOptions {
    /// Whether the operator runs `configure` to change the database configuration
    /// (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configure_database: Option<bool>,
    /// Whether the operator restarts processes with `kill` (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill_processes: Option<bool>,
    /// Whether one `status json` is reused for a whole reconciliation pass (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_database_status_for_reconciliation: Option<bool>,
    /// How the operator talks to the database (e.g. through fdbcli or the management API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub database_interaction_mode: Option<String>,
    /// How many pods are deleted at once during rolling updates: `Zone` (default),
    /// `ProcessGroup`, `All` or `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_mode: Option<DeletionMode>,
    /// How many process groups are removed at once: `Zone` (default), `ProcessGroup`,
    /// `All` or `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removal_mode: Option<DeletionMode>,
    /// How pod spec changes are rolled out: `Replace`, `ReplaceTransactionSystem`
    /// (default) or `Delete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_update_strategy: Option<PodUpdateStrategy>,
    /// Seconds a pod may fail before it counts as failed (default 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_pod_duration_seconds: Option<i64>,
    /// Client log groups ignored by the upgrade compatibility check
    /// (default `[fdb-kubernetes-operator]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 10), inner(length(max = 256)))]
    pub ignore_log_groups_for_upgrade: Option<Vec<String>>,
    /// Seconds a process may be missing before MissingProcesses is acted upon (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_missing_processes_seconds: Option<i64>,
    /// How long a pending pod is ignored, in nanoseconds (default 5 minutes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_pending_pods_duration: Option<i64>,
    /// Seconds a terminating pod is waited for before it is ignored (default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_terminating_pods_seconds: Option<i64>,
    /// How the operator uses FoundationDB's maintenance mode.
    #[serde(default, skip_serializing_if = "is_default")]
    pub maintenance_mode_options: MaintenanceModeOptions,
    /// Maximum number of process groups replaced at once because of a misconfiguration
    /// (default unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_concurrent_replacements: Option<i32>,
    /// Automatic replacement of failed process groups.
    #[serde(default, skip_serializing_if = "is_default")]
    pub replacements: AutomaticReplacementOptions,
    /// How several operator instances of a multi-cluster setup coordinate (`local` or
    /// `global`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synchronization_mode: Option<String>,
    /// Whether exclusions use `locality_instance_id` where the version supports it
    /// (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_localities_for_exclusion: Option<bool>,
    /// Whether the management API is used instead of fdbcli where possible (default false).
    #[serde(
        default,
        rename = "useManagementAPI",
        skip_serializing_if = "Option::is_none"
    )]
    pub use_management_api: Option<bool>,
    /// Whether exclusions are started without waiting for them (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_non_blocking_excludes: Option<bool>,
    /// Minimum seconds between two removals (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_between_removals_seconds: Option<i64>,
}

/// `spec.automationOptions.maintenanceModeOptions`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceModeOptions {
    /// Whether storage pods are deleted only with their zone in maintenance mode, so that
    /// FoundationDB does not re-replicate their data (default false).
    #[serde(
        default,
        rename = "UseMaintenanceModeChecker",
        skip_serializing_if = "Option::is_none"
    )]
    pub use_maintenance_mode_checker: Option<bool>,
    /// How long the maintenance zone is set for, in seconds (default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintenance_mode_time_seconds: Option<i64>,
    /// Whether the operator resets the maintenance zone once the processes are back
    /// (default true when the checker is used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_maintenance_mode: Option<bool>,
}

/// `spec.automationOptions.replacements`: automatic replacement of failed process groups.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomaticReplacementOptions {
    /// Whether failed process groups are replaced automatically (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Seconds a process group must have failed before it is replaced (default 7200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_detection_time_seconds: Option<i64>,
    /// Whether failures are counted per fault domain rather than per process group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_domain_based_replacements: Option<bool>,
    /// Maximum number of process groups marked for removal but not yet excluded
    /// (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_concurrent_replacements: Option<i32>,
    /// Maximum number (or percentage, e.g. `"10%"`) of fault domains with tainted
    /// process groups that may be replaced at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_fault_domains_with_tainted_process_groups: Option<IntOrString>,
    /// Node taints that make the process groups on the node be replaced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub taint_replacement_options: Vec<TaintReplacementOption>,
    /// Seconds a node must have been tainted before its process groups are replaced
    /// (default 1800).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taint_replacement_time_seconds: Option<i64>,
}

/// A node taint that leads to replacement of the process groups on the node.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaintReplacementOption {
    /// Taint key; `*` matches every taint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256), regex(pattern = r"^([\-._\/a-z0-9A-Z\*])*$"))]
    pub key: Option<String>,
    /// Seconds the taint must have been present before replacement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub duration_in_seconds: Option<i64>,
}

impl AutomationOptions {
    /// Whether the operator configures the database (default true).
    pub fn configure_database(&self) -> bool {
        self.configure_database.unwrap_or(true)
    }

    /// Whether the operator may kill processes (default true).
    pub fn kill_processes(&self) -> bool {
        self.kill_processes.unwrap_or(true)
    }

    /// Whether one `status json` is reused for a whole pass (default false).
    pub fn cache_database_status_for_reconciliation(&self) -> bool {
        self.cache_database_status_for_reconciliation
            .unwrap_or(false)
    }

    /// Pod deletion mode of rolling updates (default `Zone`).
    pub fn deletion_mode(&self) -> DeletionMode {
        self.deletion_mode.clone().unwrap_or(DeletionMode::Zone)
    }

    /// Removal mode (default `Zone`).
    pub fn removal_mode(&self) -> DeletionMode {
        self.removal_mode.clone().unwrap_or(DeletionMode::Zone)
    }

    /// Pod update strategy (default `ReplaceTransactionSystem`).
    pub fn pod_update_strategy(&self) -> PodUpdateStrategy {
        self.pod_update_strategy
            .clone()
            .unwrap_or(PodUpdateStrategy::ReplaceTransactionSystem)
    }

    /// Seconds before a failing pod counts as failed (default 300).
    pub fn failed_pod_duration_seconds(&self) -> i64 {
        self.failed_pod_duration_seconds.unwrap_or(300)
    }

    /// Client log groups ignored by the upgrade check (default `[fdb-kubernetes-operator]`).
    pub fn ignore_log_groups_for_upgrade(&self) -> Vec<String> {
        self.ignore_log_groups_for_upgrade
            .clone()
            .unwrap_or_else(|| vec![DEFAULT_IGNORED_LOG_GROUP.to_owned()])
    }

    /// Seconds a missing process is tolerated (default 30).
    pub fn ignore_missing_processes_seconds(&self) -> i64 {
        self.ignore_missing_processes_seconds.unwrap_or(30)
    }

    /// How long a pending pod is ignored, in seconds (default 300; the field is in
    /// nanoseconds).
    pub fn ignore_pending_pods_seconds(&self) -> i64 {
        self.ignore_pending_pods_duration
            .map_or(300, |nanos| nanos / 1_000_000_000)
    }

    /// Seconds a terminating pod is waited for (default 600).
    pub fn ignore_terminating_pods_seconds(&self) -> i64 {
        self.ignore_terminating_pods_seconds.unwrap_or(600)
    }

    /// Cap on misconfiguration replacements; `None` means unlimited (the default).
    pub fn max_concurrent_misconfiguration_replacements(&self) -> Option<i32> {
        self.max_concurrent_replacements
    }

    /// Whether exclusions may use localities (default true; the version must support it).
    pub fn use_localities_for_exclusion(&self) -> bool {
        self.use_localities_for_exclusion.unwrap_or(true)
    }

    /// Whether the management API is used (default false).
    pub fn use_management_api(&self) -> bool {
        self.use_management_api.unwrap_or(false)
    }

    /// Whether exclusions are non-blocking (default false).
    pub fn use_non_blocking_excludes(&self) -> bool {
        self.use_non_blocking_excludes.unwrap_or(false)
    }

    /// Minimum seconds between removals (default 60).
    pub fn wait_between_removals_seconds(&self) -> i64 {
        self.wait_between_removals_seconds.unwrap_or(60)
    }
}

impl MaintenanceModeOptions {
    /// Whether maintenance mode is used around storage pod deletions (default false).
    pub fn use_maintenance_mode_checker(&self) -> bool {
        self.use_maintenance_mode_checker.unwrap_or(false)
    }

    /// Seconds the maintenance zone is set for (default 600).
    pub fn maintenance_mode_time_seconds(&self) -> i64 {
        self.maintenance_mode_time_seconds.unwrap_or(600)
    }

    /// Whether the operator resets the maintenance zone (default true).
    pub fn reset_maintenance_mode(&self) -> bool {
        self.reset_maintenance_mode.unwrap_or(true)
    }
}

impl AutomaticReplacementOptions {
    /// Whether automatic replacements are on (default true).
    pub fn enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }

    /// Seconds a group must have failed before replacement (default 7200).
    pub fn failure_detection_time_seconds(&self) -> i64 {
        self.failure_detection_time_seconds.unwrap_or(7200)
    }

    /// Whether failures are counted per fault domain (default false).
    pub fn fault_domain_based_replacements(&self) -> bool {
        self.fault_domain_based_replacements.unwrap_or(false)
    }

    /// Maximum groups marked but not yet excluded at a time (default 1).
    pub fn max_concurrent_replacements(&self) -> i32 {
        self.max_concurrent_replacements.unwrap_or(1)
    }

    /// Seconds a node must be tainted before replacement (default 1800).
    pub fn taint_replacement_time_seconds(&self) -> i64 {
        self.taint_replacement_time_seconds.unwrap_or(1800)
    }

    /// How many fault domains, of the cluster's `fault_domains`, may have process groups
    /// replaced for node taints at once (`maxFaultDomainsWithTaintedProcessGroups`,
    /// default [`DEFAULT_MAX_FAULT_DOMAINS_WITH_TAINTED_PROCESS_GROUPS`]): a number, or a
    /// percentage of `fault_domains` rounded up. The error names what is wrong with the
    /// value.
    pub fn max_fault_domains_with_tainted_process_groups(
        &self,
        fault_domains: usize,
    ) -> Result<usize, String> {
        let default =
            IntOrString::String(DEFAULT_MAX_FAULT_DOMAINS_WITH_TAINTED_PROCESS_GROUPS.to_owned());
        match self
            .max_fault_domains_with_tainted_process_groups
            .as_ref()
            .unwrap_or(&default)
        {
            IntOrString::Int(count) => {
                usize::try_from(*count).map_err(|_| format!("{count} is negative"))
            }
            IntOrString::String(text) => {
                let percent: usize = text
                    .trim()
                    .strip_suffix('%')
                    .and_then(|number| number.trim().parse().ok())
                    .ok_or_else(|| {
                        format!("{text:?} is neither a number nor a percentage such as \"10%\"")
                    })?;
                Ok(percent.saturating_mul(fault_domains).div_ceil(100))
            }
        }
    }
}

/// The default of `automationOptions.replacements.maxFaultDomainsWithTaintedProcessGroups`:
/// a tenth of the fault domains, rounded up (so at least one).
pub const DEFAULT_MAX_FAULT_DOMAINS_WITH_TAINTED_PROCESS_GROUPS: &str = "10%";

#[cfg(test)]
mod tests {
    use super::*;

    fn options(value: Option<IntOrString>) -> AutomaticReplacementOptions {
        AutomaticReplacementOptions {
            max_fault_domains_with_tainted_process_groups: value,
            ..AutomaticReplacementOptions::default()
        }
    }

    #[test]
    fn max_fault_domains_with_tainted_groups_is_a_count_or_a_rounded_up_percentage() {
        let default = options(None);
        assert_eq!(
            default.max_fault_domains_with_tainted_process_groups(4),
            Ok(1)
        );
        assert_eq!(
            default.max_fault_domains_with_tainted_process_groups(20),
            Ok(2)
        );
        assert_eq!(
            default.max_fault_domains_with_tainted_process_groups(21),
            Ok(3)
        );
        assert_eq!(
            default.max_fault_domains_with_tainted_process_groups(0),
            Ok(0)
        );
        let count = options(Some(IntOrString::Int(3)));
        assert_eq!(
            count.max_fault_domains_with_tainted_process_groups(100),
            Ok(3)
        );
        let half = options(Some(IntOrString::String(" 50% ".into())));
        assert_eq!(half.max_fault_domains_with_tainted_process_groups(5), Ok(3));
        for bad in [
            IntOrString::Int(-1),
            IntOrString::String("10".into()),
            IntOrString::String("ten%".into()),
            IntOrString::String("-5%".into()),
        ] {
            assert!(
                options(Some(bad.clone()))
                    .max_fault_domains_with_tainted_process_groups(4)
                    .is_err(),
                "{bad:?}"
            );
        }
    }
}
