//! How a process group is excluded, and when its exclusion is complete.
//!
//! A group is excluded by the locality `locality_instance_id:<id>` when the running
//! version supports it (and `useLocalitiesForExclusion` is not off), else by every IP it
//! was ever seen with (the status keeps all of them while it is marked), so a pod that is
//! pending or was rescheduled is still excluded everywhere it served.
//!
//! An exclusion is complete when every target is in the database's exclusion list and:
//! - the processes it matches report excluded and have no roles (a storage server keeps
//!   its role until its data has moved), or
//! - it matches no reporting process (the process is dead): data distribution reports
//!   no silent server still holding data (`team_trackers[].unhealthy_servers == 0`),
//!   data is healthy and a single generation is active, so the dead process holds nothing
//!   that exists nowhere else.

use std::net::IpAddr;
use std::str::FromStr;

use fdb_shared::FdbVersion;
use fdb_shared::status_json::DatabaseStatus;

use crate::controller::snapshot::{ClusterSnapshot, GroupView};
use crate::fdb::{ExclusionReport, ExclusionTarget};

/// Why a group cannot be excluded yet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TargetError {
    /// Address exclusions need an address, and the group never had one.
    #[error(
        "process group {group} never had an address and version {version} cannot exclude by locality; it waits for its pod to get an IP (or list it in processGroupsToRemoveWithoutExclusion)"
    )]
    NoAddress {
        /// The group.
        group: String,
        /// The version that decided.
        version: String,
    },
    /// A recorded exclusion target does not parse (the status was edited by hand): it
    /// is not included blindly; the group waits for a person to look.
    #[error(
        "process group {group}: the recorded exclusion target {target:?} is not a locality, an address or an IP"
    )]
    Recorded {
        /// The group.
        group: String,
        /// The recorded text.
        target: String,
    },
    /// The group's ID cannot be a locality value (a hostile `processGroupIDPrefix`,
    /// refused at validation): no exclude command is built from it.
    #[error("process group {group:?} cannot be excluded by locality: {reason}")]
    Locality {
        /// The group.
        group: String,
        /// Why.
        reason: String,
    },
}

/// The version exclusions are made for: the running version, else the spec's.
fn exclusion_version(snapshot: &ClusterSnapshot) -> Option<FdbVersion> {
    let status = snapshot.status();
    status
        .running_version
        .as_deref()
        .and_then(|v| FdbVersion::from_str(v).ok())
        .or_else(|| FdbVersion::from_str(&snapshot.spec().version).ok())
}

/// Whether exclusions use localities for this cluster now.
pub(crate) fn uses_localities(snapshot: &ClusterSnapshot) -> bool {
    snapshot
        .spec()
        .automation_options
        .use_localities_for_exclusion()
        && exclusion_version(snapshot).is_some_and(|v| v.supports_locality_based_exclusions())
}

/// The exclusion targets of a group.
pub(crate) fn targets(
    snapshot: &ClusterSnapshot,
    group: &GroupView<'_>,
) -> Result<Vec<ExclusionTarget>, TargetError> {
    if uses_localities(snapshot) {
        return ExclusionTarget::instance_id(group.id())
            .map(|target| vec![target])
            .map_err(|error| TargetError::Locality {
                group: group.id().to_owned(),
                reason: error.to_string(),
            });
    }
    let mut targets: Vec<ExclusionTarget> = super::placement::known_ips(snapshot, group)
        .iter()
        .filter_map(|ip| IpAddr::from_str(ip).ok())
        .map(ExclusionTarget::Ip)
        .collect();
    targets.sort();
    targets.dedup();
    if targets.is_empty() {
        return Err(TargetError::NoAddress {
            group: group.id().to_owned(),
            version: exclusion_version(snapshot).map_or_else(String::new, |v| v.to_string()),
        });
    }
    Ok(targets)
}

/// The targets to include again when the group's removal is finished: exactly those
/// recorded when it was excluded (`excludedTargets`), whatever the options or the
/// version say now. A group excluded before targets were recorded falls back to the
/// targets the options give now.
pub(crate) fn targets_to_include(
    snapshot: &ClusterSnapshot,
    group: &GroupView<'_>,
) -> Result<Vec<ExclusionTarget>, TargetError> {
    let recorded = &group.status.excluded_targets;
    if recorded.is_empty() {
        return targets(snapshot, group);
    }
    recorded
        .iter()
        .map(|text| {
            ExclusionTarget::parse(text).ok_or_else(|| TargetError::Recorded {
                group: group.id().to_owned(),
                target: text.clone(),
            })
        })
        .collect()
}

/// Whether the database lists `target` as excluded.
pub(crate) fn is_listed(db: &DatabaseStatus, target: &ExclusionTarget) -> bool {
    let text = target.to_string();
    let listed = db
        .cluster
        .configuration
        .as_ref()
        .is_some_and(|c| c.lists_exclusion(&text));
    listed
        || (db.cluster.processes.values().any(|p| target.matches(p))
            && db
                .cluster
                .processes
                .values()
                .filter(|p| target.matches(p))
                .all(|p| p.excluded))
}

/// Why the dead processes of an exclusion cannot be judged drained yet, if they cannot.
fn dead_processes_not_drained(db: &DatabaseStatus) -> Option<String> {
    if db.cluster.recovery_state.active_generations.unwrap_or(1) > 1 {
        return Some("more than one transaction generation is active".to_owned());
    }
    if !db.cluster.data.state.healthy.unwrap_or(false) {
        return Some(format!(
            "data distribution is not healthy ({})",
            db.cluster.data.state.name.as_deref().unwrap_or("unknown")
        ));
    }
    // An excluded server that does not report may still be drained: data distribution
    // reports its drain as `healthy_removing_server` (fdbserver/Status.actor.cpp,
    // PRIORITY_TEAM_CONTAINS_UNDESIRED_SERVER), healthy as that is. Only the names of
    // priorities below it say no server is being emptied (PR #2504 of the Go operator:
    // an exclusion that cannot be checked must not let a PVC go).
    let state = db.cluster.data.state.name.as_deref().unwrap_or("unknown");
    if !matches!(state, "healthy" | "healthy_rebalancing") {
        return Some(format!("data distribution is busy ({state})"));
    }
    let silent: i64 = db
        .cluster
        .data
        .team_trackers
        .iter()
        .filter_map(|t| t.unhealthy_servers)
        .sum();
    if silent > 0 {
        return Some(format!(
            "{silent} servers that do not report still hold data"
        ));
    }
    None
}

/// Whether the exclusion of `targets` is complete, or why not.
pub(crate) fn verdict(db: &DatabaseStatus, targets: &[ExclusionTarget]) -> Result<(), String> {
    if let Some(target) = targets.iter().find(|t| !is_listed(db, t)) {
        return Err(format!("{target} is not excluded yet"));
    }
    let report = ExclusionReport::from_status(db, targets);
    for (target, reason) in &report.incomplete {
        let reporting = db.cluster.processes.values().any(|p| target.matches(p));
        if reporting {
            return Err(format!("{target}: {reason}"));
        }
        if let Some(reason) = dead_processes_not_drained(db) {
            return Err(format!(
                "{target} matches no reporting process and cannot be confirmed drained: {reason}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::database;

    fn db(processes: serde_json::Value, excluded: &[&str], unhealthy: i64) -> DatabaseStatus {
        let excluded: Vec<_> = excluded
            .iter()
            .map(|l| serde_json::json!({"locality": l}))
            .collect();
        database(serde_json::json!({
            "client": {"database_status": {"available": true, "healthy": true}},
            "cluster": {
                "processes": processes,
                "configuration": {"excluded_servers": excluded},
                "data": {"state": {"healthy": true, "name": "healthy"},
                         "team_trackers": [{"primary": true, "unhealthy_servers": unhealthy, "state": {"healthy": true}}]},
                "recovery_state": {"active_generations": 1}
            }
        }))
    }

    #[test]
    fn a_reporting_process_is_complete_once_excluded_without_roles() {
        let target = [ExclusionTarget::instance_id("storage-4").unwrap()];
        let with_role = serde_json::json!({"p": {"address": "10.0.0.4:4501", "excluded": true,
            "locality": {"instance_id": "storage-4"}, "roles": [{"role": "storage"}]}});
        let listed = db(with_role, &["locality_instance_id:storage-4"], 0);
        assert!(
            verdict(&listed, &target)
                .unwrap_err()
                .contains("still has roles")
        );
        let drained = serde_json::json!({"p": {"address": "10.0.0.4:4501", "excluded": true,
            "locality": {"instance_id": "storage-4"}, "roles": []}});
        assert_eq!(
            verdict(
                &db(drained, &["locality_instance_id:storage-4"], 0),
                &target
            ),
            Ok(())
        );
    }

    #[test]
    fn a_dead_process_is_complete_only_when_no_silent_server_holds_data() {
        let target = [ExclusionTarget::instance_id("storage-2").unwrap()];
        let none = serde_json::json!({});
        assert!(
            verdict(&db(none.clone(), &[], 0), &target).is_err(),
            "not listed"
        );
        let holding = verdict(
            &db(none.clone(), &["locality_instance_id:storage-2"], 1),
            &target,
        );
        assert!(holding.unwrap_err().contains("1 servers"));
        assert_eq!(
            verdict(&db(none, &["locality_instance_id:storage-2"], 0), &target),
            Ok(())
        );
    }

    /// A target no reporting process matches (its processes are missing from `status
    /// json`, yet serve) is not drained while data distribution still empties a server.
    #[test]
    fn a_process_missing_from_status_is_not_drained_while_a_server_is_being_removed() {
        let target = [ExclusionTarget::instance_id("storage-2").unwrap()];
        let with_state = |name: &str| {
            let mut status = db(
                serde_json::json!({}),
                &["locality_instance_id:storage-2"],
                0,
            );
            status.cluster.data.state.name = Some(name.to_owned());
            verdict(&status, &target)
        };
        assert!(
            with_state("healthy_removing_server")
                .unwrap_err()
                .contains("data distribution is busy (healthy_removing_server)")
        );
        assert_eq!(with_state("healthy_rebalancing"), Ok(()));
        assert_eq!(with_state("healthy"), Ok(()));
    }
}
