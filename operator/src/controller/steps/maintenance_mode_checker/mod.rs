//! MaintenanceModeChecker (docs/operator.md, "The steps", maintenance mode): ends the
//! maintenance window UpdatePods opened for a zone once that zone's work is done, and
//! cleans up the window a crashed operator left open.
//!
//! Acts only with `maintenanceModeOptions.UseMaintenanceModeChecker` and
//! `resetMaintenanceMode` (default true). The database's maintenance zone is reset when
//! it is a zone of this cluster's process groups and every group of that zone is back:
//! its pod runs and is not terminating, all its processes report, and no live group of
//! the zone still waits for a pod update (IncorrectPodSpec). While a group of the zone is
//! not back, the window stays (UpdatePods goes on with that same zone first), and expires
//! on its own after `maintenanceModeTimeSeconds` in the worst case. A maintenance zone that
//! names no zone of this cluster is left alone.

use fdb_shared::api::cluster::ProcessGroupConditionType;

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::events::EventReason;
use crate::controller::objects::pod_is_running;
use crate::controller::pass::plan::{Action, Barrier, PassFacts, Plan, Planned, Verdict};
use crate::controller::safety::{self, LockedAction};
use crate::controller::snapshot::{ClusterSnapshot, GroupView};

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct MaintenanceModeChecker;

/// What the checker does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MaintenanceAction {
    /// Nothing to reset (no window, not ours, or the checker is off).
    Nothing,
    /// The zone's groups are not all back yet; the window stays. Names them.
    Keep {
        /// The zone in maintenance.
        zone: String,
        /// The groups that are not back, with why.
        pending: Vec<String>,
    },
    /// Every group of the zone is back: reset the maintenance zone.
    Reset {
        /// The zone.
        zone: String,
    },
}

/// Why a group of the maintenance zone is not back yet, if it is not.
fn not_back(group: &GroupView<'_>) -> Option<&'static str> {
    let Some(pod) = group.pod_head() else {
        return Some("no pod");
    };
    if pod.metadata.deletion_timestamp.is_some() {
        return Some("pod terminating");
    }
    if !pod_is_running(pod) {
        return Some("pod not running");
    }
    let expected = group.servers_per_pod();
    if u32::try_from(group.processes().count()).unwrap_or(u32::MAX) < expected {
        return Some("processes not reporting");
    }
    let pending_update = !group.is_marked_for_removal()
        && group
            .status
            .condition_since(&ProcessGroupConditionType::IncorrectPodSpec)
            .is_some();
    pending_update.then_some("pod update pending")
}

/// Decides from the snapshot.
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> MaintenanceAction {
    let options = &snapshot.spec().automation_options.maintenance_mode_options;
    if !options.use_maintenance_mode_checker() || !options.reset_maintenance_mode() {
        return MaintenanceAction::Nothing;
    }
    let Some(zone) = snapshot
        .database_status()
        .and_then(|db| db.cluster.maintenance_zone.clone())
        .filter(|zone| !zone.is_empty())
    else {
        return MaintenanceAction::Nothing;
    };
    let in_zone: Vec<GroupView<'_>> = snapshot
        .groups()
        .filter(|g| g.status.exclusion_timestamp.is_none())
        .filter(|g| safety::group_zone(g) == zone)
        .collect();
    if in_zone.is_empty() {
        return MaintenanceAction::Nothing;
    }
    let pending: Vec<String> = in_zone
        .iter()
        .filter_map(|g| Some(format!("{} ({})", g.id(), not_back(g)?)))
        .collect();
    if pending.is_empty() {
        MaintenanceAction::Reset { zone }
    } else {
        MaintenanceAction::Keep { zone, pending }
    }
}

impl Subreconciler for MaintenanceModeChecker {
    fn name(&self) -> &'static str {
        "MaintenanceModeChecker"
    }

    fn barrier(&self) -> Barrier {
        Barrier::Holds
    }

    fn decide(&self, snapshot: &ClusterSnapshot, _facts: &PassFacts) -> Result<Verdict, StepError> {
        Ok(match decide(snapshot) {
            MaintenanceAction::Nothing => Verdict::Continue,
            MaintenanceAction::Keep { zone, pending } => {
                tracing::debug!(%zone, pending = %pending.join(", "), "maintenance zone kept");
                Verdict::Continue
            }
            MaintenanceAction::Reset { zone } => {
                tracing::info!(%zone, "the zone's processes are back; resetting the maintenance zone");
                Verdict::Act(Plan::new(
                    vec![
                        Planned::locked(Action::ResetMaintenanceZone, LockedAction::Maintenance),
                        Planned::plain(Action::Event {
                            reason: EventReason::MaintenanceZoneChanged,
                            action: "MaintenanceModeChecker".to_owned(),
                            note: format!("zone {zone}: its processes are back; maintenance reset"),
                        }),
                    ],
                    format!("resetting maintenance zone {zone}: "),
                ))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use fdb_shared::api::cluster::{ProcessGroupCondition, ProcessGroupStatus};

    use super::*;
    use crate::controller::fixtures::{Fixture, group, pod, reporting};

    const SPEC: &str = "{version: 7.1.57, automationOptions: {maintenanceModeOptions: {UseMaintenanceModeChecker: true}}}";

    fn in_zone(id: &str, zone: &str) -> ProcessGroupStatus {
        let mut g = group(id);
        g.fault_domain = Some(zone.into());
        g
    }

    fn fixture(spec: &str, maintenance: Option<&str>, reporting_ids: &[&str]) -> Fixture {
        let mut db = reporting(reporting_ids);
        db.cluster.maintenance_zone = maintenance.map(str::to_owned);
        Fixture::new(spec)
            .groups([
                in_zone("storage-1", "z1"),
                in_zone("storage-2", "z1"),
                in_zone("storage-3", "z2"),
            ])
            .pods([
                pod("sample-storage-1", "storage-1", "z1", "10.0.0.1"),
                pod("sample-storage-2", "storage-2", "z1", "10.0.0.2"),
                pod("sample-storage-3", "storage-3", "z2", "10.0.0.3"),
            ])
            .database(db)
    }

    const ALL: [&str; 3] = ["storage-1", "storage-2", "storage-3"];

    #[test]
    fn a_zone_whose_processes_are_back_is_reset() {
        assert_eq!(
            decide(&fixture(SPEC, Some("z1"), &ALL).build()),
            MaintenanceAction::Reset { zone: "z1".into() }
        );
        // No window, a zone of someone else, the checker off, or reset disabled: nothing.
        assert_eq!(
            decide(&fixture(SPEC, None, &ALL).build()),
            MaintenanceAction::Nothing
        );
        assert_eq!(
            decide(&fixture(SPEC, Some("z9"), &ALL).build()),
            MaintenanceAction::Nothing
        );
        assert_eq!(
            decide(&fixture("version: 7.1.57", Some("z1"), &ALL).build()),
            MaintenanceAction::Nothing
        );
        let no_reset = "{version: 7.1.57, automationOptions: {maintenanceModeOptions: {UseMaintenanceModeChecker: true, resetMaintenanceMode: false}}}";
        assert_eq!(
            decide(&fixture(no_reset, Some("z1"), &ALL).build()),
            MaintenanceAction::Nothing
        );
    }

    #[test]
    fn the_window_stays_while_a_group_of_the_zone_is_not_back() {
        // storage-2's processes do not report yet.
        assert_eq!(
            decide(&fixture(SPEC, Some("z1"), &["storage-1", "storage-3"]).build()),
            MaintenanceAction::Keep {
                zone: "z1".into(),
                pending: vec!["storage-2 (processes not reporting)".into()]
            }
        );
        // A crash between setting the zone and deleting the pods: the update is pending.
        let pending = fixture(SPEC, Some("z1"), &ALL).status(|s| {
            s.process_groups[0].process_group_conditions = vec![ProcessGroupCondition {
                condition_type: ProcessGroupConditionType::IncorrectPodSpec,
                timestamp: 1,
            }];
        });
        assert!(matches!(
            decide(&pending.build()),
            MaintenanceAction::Keep { .. }
        ));
    }
}
