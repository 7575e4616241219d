//! Fault tolerance, role counts and process counts (docs/controller-model.md, "Process
//! counts and roles").

use std::collections::BTreeMap;

use serde::Serialize;

use crate::api::cluster::FoundationDBClusterSpec;
use crate::api::database_configuration::{DatabaseConfiguration, RedundancyMode};
use crate::api::process_class::{ALL_PROCESS_CLASSES, ProcessClass};

/// How many failures (zones) the redundancy mode tolerates: single 0, double 1,
/// triple 2, three_data_hall 2. Unknown modes count as the default (double).
pub fn fault_tolerance(mode: &RedundancyMode) -> i32 {
    match mode {
        RedundancyMode::Single => 0,
        RedundancyMode::Double
        | RedundancyMode::ThreeDataHallFallback
        | RedundancyMode::ThreeDatacenterFallback
        | RedundancyMode::Other(_) => 1,
        RedundancyMode::Triple
        | RedundancyMode::ThreeDataHall
        | RedundancyMode::ThreeDatacenter => 2,
    }
}

/// The minimum number of fault domains the mode needs: single 1, double 2, triple 3.
pub fn minimum_fault_domains(mode: &RedundancyMode) -> i32 {
    fault_tolerance(mode) + 1
}

/// The number of each FoundationDB role the database should run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RoleCounts {
    /// Storage servers (2F+1 by default).
    pub storage: i32,
    /// Transaction logs (3 by default, 4 for three_data_hall).
    pub logs: i32,
    /// Proxies (3 by default when neither commit nor GRV proxies are set, else 0).
    pub proxies: i32,
    /// Commit proxies (2 by default when commit or GRV proxies are set, else 0).
    pub commit_proxies: i32,
    /// GRV proxies (1 by default when commit or GRV proxies are set, else 0).
    pub grv_proxies: i32,
    /// Resolvers (1 by default).
    pub resolvers: i32,
    /// Log routers (multi-region only; default the number of logs).
    pub log_routers: i32,
    /// Remote logs (multi-region only; default the number of logs).
    pub remote_logs: i32,
}

/// A positive configured value, if any (0 and negative values mean "default").
fn set(value: Option<i32>) -> Option<i32> {
    value.filter(|count| *count > 0)
}

/// The mode whose default counts `mode` takes. three_data_hall_fallback is a temporary
/// mode for while a hall is lost: its roles and processes stay those of three_data_hall,
/// so that falling back and returning neither remove nor add process groups in the
/// middle of an outage.
fn counted_as(mode: RedundancyMode) -> RedundancyMode {
    match mode {
        RedundancyMode::ThreeDataHallFallback => RedundancyMode::ThreeDataHall,
        mode => mode,
    }
}

/// The role counts of a database configuration, defaults filled in.
pub fn role_counts(config: &DatabaseConfiguration) -> RoleCounts {
    let mode = config
        .redundancy_mode
        .clone()
        .unwrap_or(RedundancyMode::DEFAULT);
    let tolerance = fault_tolerance(&counted_as(mode.clone()));
    let default_logs = if mode.spreads_over_data_halls() { 4 } else { 3 };
    let logs = set(config.logs).unwrap_or(default_logs);
    let (proxies, commit_proxies, grv_proxies) = match (
        set(config.proxies),
        set(config.commit_proxies),
        set(config.grv_proxies),
    ) {
        (None, None, None) => (3, 0, 0),
        (proxies, None, None) => (proxies.unwrap_or(0), 0, 0),
        (proxies, commit, grv) => (proxies.unwrap_or(0), commit.unwrap_or(2), grv.unwrap_or(1)),
    };
    let multi_region = config.usable_regions.unwrap_or(1) > 1;
    RoleCounts {
        storage: set(config.storage).unwrap_or(2 * tolerance + 1),
        logs,
        proxies,
        commit_proxies,
        grv_proxies,
        resolvers: set(config.resolvers).unwrap_or(1),
        log_routers: if multi_region {
            set(config.log_routers).unwrap_or(logs)
        } else {
            0
        },
        remote_logs: if multi_region {
            set(config.remote_logs).unwrap_or(logs)
        } else {
            0
        },
    }
}

/// The number of process groups desired per class, defaults applied; classes with zero
/// groups are included with 0.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct DesiredProcessCounts(BTreeMap<ProcessClass, i32>);

impl DesiredProcessCounts {
    /// Desired number of groups of a class.
    pub fn count(&self, class: ProcessClass) -> i32 {
        self.0.get(&class).copied().unwrap_or(0)
    }

    /// Classes with at least one desired group, in the order of [`ALL_PROCESS_CLASSES`].
    pub fn positive(&self) -> BTreeMap<ProcessClass, i32> {
        self.0
            .iter()
            .filter(|(_, count)| **count > 0)
            .map(|(class, count)| (*class, *count))
            .collect()
    }

    /// Total number of desired process groups.
    pub fn total(&self) -> i32 {
        self.0.values().sum()
    }
}

/// Desired process counts of a cluster (docs/controller-model.md, "Process counts and
/// roles"): explicit counts win, -1 means none, 0 or unset takes the default. Defaults:
/// storage = storage role count, log = logs + F, stateless = master + cluster_controller +
/// resolvers + ratekeeper + data_distributor + proxies + F, minus the roles that have their
/// own dedicated class.
pub fn desired_process_counts(spec: &FoundationDBClusterSpec) -> DesiredProcessCounts {
    let config = &spec.database_configuration;
    let roles = role_counts(config);
    let tolerance = fault_tolerance(&counted_as(spec.redundancy_mode()));
    let explicit = &spec.process_counts;

    let dedicated_roles = [
        (ProcessClass::Master, 1),
        (ProcessClass::ClusterController, 1),
        (ProcessClass::Resolution, roles.resolvers),
        (ProcessClass::Ratekeeper, 1),
        (ProcessClass::DataDistributor, 1),
        (ProcessClass::Proxy, roles.proxies),
        (ProcessClass::CommitProxy, roles.commit_proxies),
        (ProcessClass::GrvProxy, roles.grv_proxies),
    ];
    let stateless_roles: i32 = dedicated_roles
        .iter()
        .filter(|(class, _)| explicit.get(*class) <= 0)
        .map(|(_, count)| count)
        .sum();

    let default_for = |class: ProcessClass| match class {
        ProcessClass::Storage => roles.storage,
        ProcessClass::Log => roles.logs + tolerance,
        ProcessClass::Stateless => stateless_roles + tolerance,
        _ => 0,
    };
    let counts = ALL_PROCESS_CLASSES
        .into_iter()
        .map(|class| {
            let count = match explicit.get(class) {
                0 => default_for(class),
                n if n < 0 => 0,
                n => n,
            };
            (class, count)
        })
        .collect();
    DesiredProcessCounts(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> FoundationDBClusterSpec {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    fn summary(spec: &FoundationDBClusterSpec) -> (i32, i32, i32) {
        let counts = desired_process_counts(spec);
        (
            counts.count(ProcessClass::Storage),
            counts.count(ProcessClass::Log),
            counts.count(ProcessClass::Stateless),
        )
    }

    #[test]
    fn defaults_per_redundancy_mode_match_the_worked_examples() {
        let cases = [
            ("single", 0, (1, 3, 8)),
            ("double", 1, (3, 4, 9)),
            ("triple", 2, (5, 5, 10)),
            ("three_data_hall", 2, (5, 6, 10)),
            // The fallback keeps three_data_hall's processes (it returns to it).
            ("three_data_hall_fallback", 1, (5, 6, 10)),
        ];
        for (mode, tolerance, expected) in cases {
            let spec = spec(&format!(
                "databaseConfiguration: {{redundancy_mode: {mode}}}"
            ));
            assert_eq!(
                fault_tolerance(&spec.redundancy_mode()),
                tolerance,
                "{mode}"
            );
            assert_eq!(summary(&spec), expected, "{mode}");
        }
        assert_eq!(summary(&FoundationDBClusterSpec::default()), (3, 4, 9));
    }

    #[test]
    fn dedicated_classes_leave_the_stateless_total() {
        let spec = spec("processCounts: {storage: 4, cluster_controller: 1}");
        let counts = desired_process_counts(&spec);
        assert_eq!(summary(&spec), (4, 4, 8));
        assert_eq!(counts.count(ProcessClass::ClusterController), 1);
        assert_eq!(counts.total(), 17);
        let positive: Vec<_> = counts.positive().into_iter().collect();
        assert_eq!(
            positive,
            [
                (ProcessClass::Storage, 4),
                (ProcessClass::Log, 4),
                (ProcessClass::Stateless, 8),
                (ProcessClass::ClusterController, 1)
            ]
        );
    }

    #[test]
    fn minus_one_means_none_and_explicit_counts_win() {
        let spec = spec(
            "processCounts: {stateless: -1, log: 7, resolution: 2}\ndatabaseConfiguration: {resolvers: 2}",
        );
        assert_eq!(summary(&spec), (3, 7, 0));
        assert_eq!(
            desired_process_counts(&spec).count(ProcessClass::Resolution),
            2
        );
        let spec = spec_with_resolvers();
        // 1 master + 1 cc + 3 resolvers + 1 rk + 1 dd + 3 proxies + F(1).
        assert_eq!(summary(&spec).2, 11);
    }

    fn spec_with_resolvers() -> FoundationDBClusterSpec {
        spec("databaseConfiguration: {resolvers: 3}")
    }

    #[test]
    fn proxies_split_into_commit_and_grv_when_either_is_set() {
        let roles = role_counts(&serde_json::from_str(r#"{"commit_proxies": 4}"#).unwrap());
        assert_eq!(
            (roles.proxies, roles.commit_proxies, roles.grv_proxies),
            (0, 4, 1)
        );
        let roles = role_counts(&DatabaseConfiguration::default());
        assert_eq!(
            (roles.proxies, roles.commit_proxies, roles.grv_proxies),
            (3, 0, 0)
        );
        let roles = role_counts(&serde_json::from_str(r#"{"proxies": 5}"#).unwrap());
        assert_eq!(
            (roles.proxies, roles.commit_proxies, roles.grv_proxies),
            (5, 0, 0)
        );
        // Stateless: 1+1+1+1+1 + 2 commit + 1 grv + F(1) = 9.
        let spec = spec("databaseConfiguration: {grv_proxies: 1}");
        assert_eq!(summary(&spec).2, 9);
    }

    #[test]
    fn remote_roles_only_with_several_regions() {
        let roles = role_counts(&DatabaseConfiguration::default());
        assert_eq!((roles.log_routers, roles.remote_logs), (0, 0));
        let roles = role_counts(
            &serde_json::from_str(r#"{"usable_regions": 2, "logs": 5, "remote_logs": 4}"#).unwrap(),
        );
        assert_eq!((roles.log_routers, roles.remote_logs), (5, 4));
        assert_eq!(minimum_fault_domains(&RedundancyMode::Triple), 3);
    }
}
