//! UpdatePods (docs/operator.md, "The steps"): rolls out pod spec changes
//! (IncorrectPodSpec).
//!
//! `automationOptions.podUpdateStrategy` says how: `ReplaceTransactionSystem` (default)
//! marks log and stateless groups for removal (the removal pipeline then replaces them)
//! and deletes storage pods, which AddPods recreates on their PVCs (the data stays),
//! unless a storage process runs a remote log router: that group is replaced with the
//! transaction system (`replaced_for_roles`);
//! `Replace` marks every group; `Delete` deletes every pod. Marking is capped by
//! `automationOptions.maxConcurrentReplacements` (default unlimited).
//!
//! Groups with a change only a new process group can apply
//! ([`crate::controller::model::replace_only`]) are left to ReplaceMisconfiguredPods, also
//! while they wait for `maxConcurrentReplacements`: deleting their pods would not apply the
//! change, and would roll the pods twice.
//!
//! While TLS is turned on or off (`status.requiredAddresses` holds both kinds), no pod is
//! updated: the migration goes first, as in the Go operator.
//!
//! Deletions follow `automationOptions.deletionMode`: `Zone` (default) the pods of one
//! zone, `ProcessGroup` one pod, `All` as many zones as the fault-tolerance budget allows,
//! `None` nothing (logged; the groups keep IncorrectPodSpec and the cluster is not
//! Reconciled). A batch is deleted only when no pod of the cluster is terminating, the
//! database is available, the zones fit the budget ([`safety::may_take_down`], which
//! includes `maxZonesWithUnavailablePods`), and, with the maintenance mode
//! (`maintenanceModeOptions.UseMaintenanceModeChecker`), no other zone is in maintenance
//! ([`safety::maintenance`]): the zone of a storage batch is put in maintenance first,
//! and the MaintenanceModeChecker resets it once its processes report again. With locks
//! in use the global lock is taken first. A coordinator's pod is never deleted: zones
//! hosting coordinators go last, and a batch that includes one waits
//! ([`Deletion::MoveCoordinators`]) until ChangeCoordinators has moved them. When the
//! other groups cannot hold the coordinators at all (too few zones among them), the
//! groups hosting them are replaced instead ([`Deletion::ReplaceCoordinatorHosts`],
//! [`crate::controller::pod_updates::coordinators`]): waiting would never end.

use async_trait::async_trait;
use fdb_shared::api::ProcessClass;
use fdb_shared::cluster_math::fault_tolerance;

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::events::EventReason;
use crate::controller::model::pod::process_difference;
use crate::controller::pass::plan::{
    Action, Barrier, PassFacts, Plan, Planned, Verdict, Wait, WaitOn,
};
pub(crate) use crate::controller::pod_updates::decision::decide_with;
pub(crate) use crate::controller::pod_updates::{Deletion, PodToDelete, PodUpdateDecision};
use crate::controller::safety::{self, LockedAction};
use crate::controller::snapshot::ClusterSnapshot;
use crate::controller::status::mutations::StatusMutation;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct UpdatePods;

fn names(pods: &[PodToDelete]) -> String {
    let names: Vec<&str> = pods.iter().map(|p| p.pod.as_str()).collect();
    names.join(", ")
}

/// Whether deleting the pods causes a recovery ([`safety::causes_recovery`]), and of
/// what. In single redundancy a storage pod counts as one: its data has no other
/// replica, so the database is unavailable until the pod is back, as in a recovery.
/// Paced like one, it is never deleted seconds after a recovery ended (issue 26, seed
/// 19: a log pod's recovery, then a storage pod deleted 7 s later, was one outage).
fn batch_recovery(snapshot: &ClusterSnapshot, pods: &[PodToDelete]) -> Option<String> {
    let single = fault_tolerance(&snapshot.spec().redundancy_mode()) == 0;
    let what: Vec<String> = pods
        .iter()
        .filter_map(|p| {
            let group = snapshot.group(&p.group)?;
            safety::causes_recovery(snapshot, &group).or_else(|| {
                (single && p.class == ProcessClass::Storage).then(|| {
                    format!(
                        "storage process group {} (single redundancy: its data has no other replica)",
                        p.group
                    )
                })
            })
        })
        .collect();
    (!what.is_empty()).then(|| format!("deleted pods hosting {}", what.join(", ")))
}

/// The plan of one batch: the maintenance zone first (storage), then the pods (one
/// disruption, locked, paced when a pod hosts a transaction process or coordinator, or
/// storage in single redundancy),
/// then the pass waits for them to come back.
fn delete_plan(
    snapshot: &ClusterSnapshot,
    pods: Vec<PodToDelete>,
    zones: Vec<String>,
    maintenance_zone: Option<String>,
    progress: String,
) -> Plan {
    let zone_text = zones.join(", ");
    let recovery = batch_recovery(snapshot, &pods);
    let mut actions = Vec::new();
    if let Some(zone) = maintenance_zone {
        let seconds = snapshot
            .spec()
            .automation_options
            .maintenance_mode_options
            .maintenance_mode_time_seconds();
        let seconds = u64::try_from(seconds).unwrap_or(600);
        actions.push(
            Planned::locked(
                Action::SetMaintenanceZone {
                    zone: zone.clone(),
                    seconds,
                },
                LockedAction::DeletePods,
            )
            .recovering(recovery.clone()),
        );
        actions.push(Planned::plain(Action::Event {
            reason: EventReason::MaintenanceZoneChanged,
            action: "UpdatePods".to_owned(),
            note: format!("zone {zone} in maintenance for {seconds}s to update its storage pods"),
        }));
    }
    for pod in &pods {
        tracing::info!(pod = %pod.pod, group = %pod.group, "deleting pod to update its spec");
        actions.push(
            Planned::locked(Action::DeletePod(pod.pod.clone()), LockedAction::DeletePods)
                .disrupting()
                .recovering(recovery.clone()),
        );
    }
    actions.push(Planned::plain(Action::Event {
        reason: EventReason::PodsUpdated,
        action: "UpdatePods".to_owned(),
        note: format!(
            "deleted pods of zone {zone_text} to update their spec: {}{}",
            names(&pods),
            differences(snapshot, pods.iter().map(|p| p.group.as_str()))
        ),
    }));
    Plan::new(actions, format!("pods of zone {zone_text} need an update; ")).then(Wait::new(
        WaitOn::Kubernetes,
        format!(
            "deleted {} pods of zone {zone_text} to update their spec ({progress}); waiting for them to come back",
            pods.len()
        ),
    ))
}

/// The groups marked for removal, so replacements with the new pod spec are added, and
/// the Event that says so with `note`.
fn mark_replaced(groups: &[String], note: String) -> [Planned; 2] {
    let mutations = groups
        .iter()
        .map(|group| StatusMutation::MarkForRemoval {
            group: group.clone(),
        })
        .collect();
    [
        Planned::plain(Action::WriteStatus(mutations)),
        Planned::plain(Action::Event {
            reason: EventReason::ProcessGroupsReplaced,
            action: "UpdatePods".to_owned(),
            note,
        }),
    ]
}

/// The verdict of `decision`: the groups to replace marked for removal (an Event names
/// them and what differs), then the deletions, the Event of a needed deletion that
/// `deletionMode: None` forbids, or the wait.
pub(crate) fn verdict_of(snapshot: &ClusterSnapshot, decision: PodUpdateDecision) -> Verdict {
    let mut actions = Vec::new();
    if !decision.replace.is_empty() {
        actions.extend(mark_replaced(
            &decision.replace,
            format!(
                "replacing process groups to update their pod spec: {}{}",
                decision.replace.join(", "),
                differences(snapshot, decision.replace.iter().map(String::as_str))
            ),
        ));
    }
    if decision.replacements_waiting > 0 {
        tracing::info!(
            waiting = decision.replacements_waiting,
            "replacements wait for maxConcurrentReplacements"
        );
    }
    let (refused, wait) = match decision.deletion {
        Deletion::Nothing => (String::new(), None),
        Deletion::Disabled(groups) => {
            tracing::info!(
                groups = %groups.join(", "),
                "pods need an update, but automationOptions.deletionMode is None"
            );
            // As the Go operator reports it (tools watch for this reason).
            actions.push(Planned::plain(Action::Event {
                reason: EventReason::NeedsPodsDeletion,
                action: "UpdatePods".to_owned(),
                note: format!(
                    "Spec require deleting some pods, but deleting pods is disabled: {}",
                    groups.join(", ")
                ),
            }));
            (String::new(), None)
        }
        Deletion::Wait(reason) | Deletion::MoveCoordinators { reason, .. } => {
            (String::new(), Some(Wait::new(WaitOn::Kubernetes, reason)))
        }
        Deletion::ReplaceCoordinatorHosts { groups, reason } => {
            tracing::info!(groups = %groups.join(", "), %reason, "replacing coordinator hosts");
            actions.extend(mark_replaced(&groups, reason.clone()));
            (String::new(), Some(Wait::new(WaitOn::Kubernetes, reason)))
        }
        Deletion::Delete {
            pods,
            zones,
            maintenance_zone,
            progress,
        } => {
            let plan = delete_plan(snapshot, pods, zones, maintenance_zone, progress);
            actions.extend(plan.actions);
            (plan.refused, plan.then)
        }
    };
    if actions.is_empty() {
        return Verdict::Continue.then(wait);
    }
    Verdict::Act(Plan::new(actions, refused)).then(wait)
}

#[async_trait]
impl Subreconciler for UpdatePods {
    fn name(&self) -> &'static str {
        "UpdatePods"
    }

    fn barrier(&self) -> Barrier {
        Barrier::Holds
    }

    fn decide(&self, snapshot: &ClusterSnapshot, facts: &PassFacts) -> Result<Verdict, StepError> {
        Ok(verdict_of(
            snapshot,
            decide_with(snapshot, facts.settings.replace_policy),
        ))
    }
}

#[cfg(test)]
mod tests;

/// What differs, per group, between its pod and the desired one (the first field that
/// matters to the processes), as ` (differs: log-1 containers[foundationdb].env, ...)`;
/// empty when nothing that matters differs (only the spec hash).
fn differences<'a>(snapshot: &ClusterSnapshot, groups: impl Iterator<Item = &'a str>) -> String {
    let found: Vec<String> = groups
        .filter_map(|id| {
            let group = snapshot.group(id)?;
            let live = group.pod()?.spec.as_ref()?;
            let desired = crate::controller::model::desired_memo::DesiredObjects::pod(
                snapshot.cluster(),
                group.status,
            )
            .ok()?;
            let field = process_difference(desired.spec.as_ref()?, live)?;
            Some(format!("{id} {field}"))
        })
        .collect();
    if found.is_empty() {
        String::new()
    } else {
        format!(" (differs: {})", found.join(", "))
    }
}
