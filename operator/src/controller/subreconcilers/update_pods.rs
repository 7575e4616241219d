//! UpdatePods (operator-behavior §8): rolls out pod spec changes (IncorrectPodSpec).
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
//! ([`crate::controller::replace_only`]) are left to ReplaceMisconfiguredPods, also while
//! they wait for `maxConcurrentReplacements`: deleting their pods would not apply the
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
//! [`super::update_pods_coordinators`]): waiting would never end.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use fdb_shared::api::ProcessClass;
use fdb_shared::api::cluster::{DeletionMode, PodUpdateStrategy, ProcessGroupConditionType};
use fdb_shared::cluster_math::fault_tolerance;
use kube::ResourceExt;

use super::Subreconciler;
use super::update_pods_coordinators::{
    coordinators_hosted, coordinators_move_first, unless_immovable, zones_in_order,
};
pub use super::update_pods_decision::{Deletion, PodToDelete, PodUpdateDecision};
use crate::controller::errors::StepError;
use crate::controller::events::EventReason;
use crate::controller::plan::{Action, PassFacts, Plan, Planned, Verdict, Wait, WaitOn};
use crate::controller::pod_model::process_difference;
use crate::controller::process_config::listens_on_both;
use crate::controller::replace_only::{ReplacePolicy, replace_only_change};
use crate::controller::safety::{self, LockedAction};
use crate::controller::snapshot::{ClusterSnapshot, GroupView};
use crate::controller::status_mutations::StatusMutation;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct UpdatePods;

/// Whether `class` is replaced (not deleted) under `strategy`.
fn replaced(strategy: &PodUpdateStrategy, class: ProcessClass) -> bool {
    match strategy {
        PodUpdateStrategy::Replace => true,
        PodUpdateStrategy::Delete => false,
        // ReplaceTransactionSystem and any value this version does not know: only
        // storage keeps its pod (and PVC).
        _ => class != ProcessClass::Storage,
    }
}

/// Whether the group, whatever its class, is replaced under `strategy` because one of
/// its processes runs a remote log router now: with two usable regions FoundationDB puts
/// the remote log routers on storage processes first (`log` and `storage` fit a router
/// equally, fewer roles first). ReplaceTransactionSystem replaces the transaction system
/// so that its processes stop together at one exclusion, not one recovery per deleted
/// pod; such a storage group is part of it (its data is copied to the replacement, as
/// for any replaced storage group). Other transaction roles a storage process may hold
/// (a cluster short of stateless processes) do not count: their pods are deleted as the
/// Go operator does, rather than copy a storage server's data to save one recovery.
fn replaced_for_roles(strategy: &PodUpdateStrategy, group: &GroupView<'_>) -> bool {
    let replaces_transaction_system = !matches!(
        strategy,
        PodUpdateStrategy::Replace | PodUpdateStrategy::Delete
    );
    replaces_transaction_system
        && group
            .processes()
            .any(|process| process.roles.iter().any(|r| r.role == "log_router"))
}

fn needs_update(group: &GroupView<'_>) -> bool {
    group
        .status
        .condition_since(&ProcessGroupConditionType::IncorrectPodSpec)
        .is_some()
}

/// How many more groups may be marked (`None`: unlimited).
fn replacement_slots(snapshot: &ClusterSnapshot) -> Option<usize> {
    let max = snapshot
        .spec()
        .automation_options
        .max_concurrent_misconfiguration_replacements()?;
    let in_flight = snapshot
        .groups()
        .filter(|g| g.is_marked_for_removal() && g.status.exclusion_timestamp.is_none())
        .count();
    Some(usize::try_from(max).unwrap_or(0).saturating_sub(in_flight))
}

/// Decides from the snapshot, with the default [`ReplacePolicy`].
pub fn decide(snapshot: &ClusterSnapshot) -> PodUpdateDecision {
    decide_with(snapshot, ReplacePolicy::default())
}

/// Decides from the snapshot; `policy` says which changes are ReplaceMisconfiguredPods's.
pub fn decide_with(snapshot: &ClusterSnapshot, policy: ReplacePolicy) -> PodUpdateDecision {
    let options = &snapshot.spec().automation_options;
    let strategy = options.pod_update_strategy();
    let mut to_replace = Vec::new();
    let mut to_delete: Vec<(String, PodToDelete)> = Vec::new();
    // A desired pod that cannot be built failed UpdateStatus already; such a group is
    // judged by IncorrectPodSpec alone.
    let replace_only =
        |group: &GroupView<'_>| matches!(replace_only_change(snapshot, group, policy), Ok(Some(_)));
    for group in snapshot
        .live_groups()
        .filter(needs_update)
        .filter(|g| !replace_only(g))
        // Buggify changes are DeletePodsForBuggification's, at once and on those groups.
        .filter(|g| !super::delete_pods_for_buggification::differs(snapshot, g))
    {
        let Some(pod) = group
            .pod_head()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
        else {
            continue;
        };
        if replaced(&strategy, group.status.process_class) || replaced_for_roles(&strategy, &group)
        {
            to_replace.push(group.id().to_owned());
        } else {
            to_delete.push((
                safety::group_zone(&group),
                PodToDelete {
                    group: group.id().to_owned(),
                    pod: pod.name_any(),
                    class: group.status.process_class,
                },
            ));
        }
    }
    // While TLS is turned on or off (the processes listen on both kinds of address), pod
    // updates wait, as the Go operator's: a pod recreated or replaced in the middle of the
    // migration is one more change at once, and the migration's bounce does not wait
    // for pod updates, so the two would not both finish.
    let pending = to_replace.len() + to_delete.len();
    if pending > 0 && listens_on_both(snapshot.cluster()) {
        return PodUpdateDecision {
            replace: Vec::new(),
            replacements_waiting: 0,
            deletion: Deletion::Wait(format!(
                "{pending} pods need an update; they wait for the TLS migration (status.requiredAddresses holds both kinds)"
            )),
        };
    }
    let mut deletion = decide_deletion(snapshot, to_delete);
    let slots = replacement_slots(snapshot);
    if let Deletion::ReplaceCoordinatorHosts { groups, reason } = &deletion {
        // The coordinators' hosts are replaced within maxConcurrentReplacements too.
        let free = slots.map_or(usize::MAX, |slots| slots.saturating_sub(to_replace.len()));
        if free < groups.len() {
            deletion = Deletion::Wait(format!(
                "{reason}; waiting for automationOptions.maxConcurrentReplacements"
            ));
        }
    }
    let (replace, replacements_waiting) = match slots {
        None => (to_replace, 0),
        Some(slots) => {
            let waiting = to_replace.len().saturating_sub(slots);
            to_replace.truncate(slots);
            (to_replace, waiting)
        }
    };
    PodUpdateDecision {
        replace,
        replacements_waiting,
        deletion,
    }
}

fn decide_deletion(snapshot: &ClusterSnapshot, candidates: Vec<(String, PodToDelete)>) -> Deletion {
    if candidates.is_empty() {
        return Deletion::Nothing;
    }
    let options = &snapshot.spec().automation_options;
    let mode = options.deletion_mode();
    if mode == DeletionMode::None {
        return Deletion::Disabled(candidates.into_iter().map(|(_, p)| p.group).collect());
    }
    if let Some(wait) = deletion_blocked(snapshot, candidates.len()) {
        return wait;
    }
    let maintenance_mode = options
        .maintenance_mode_options
        .use_maintenance_mode_checker();
    let current_maintenance = snapshot
        .database_status()
        .and_then(|db| db.cluster.maintenance_zone.clone())
        .filter(|z| !z.is_empty());
    let mut by_zone: BTreeMap<String, Vec<PodToDelete>> = BTreeMap::new();
    for (zone, pod) in candidates {
        by_zone.entry(zone).or_default().push(pod);
    }
    let coordinator_of = coordinators_hosted(snapshot, &by_zone);
    let zones = zones_in_order(&by_zone, &coordinator_of, current_maintenance.as_deref());
    let budget = safety::zone_budget(snapshot);
    let zones_total = zones.len();
    let max_zones = match mode {
        DeletionMode::All if !maintenance_mode => budget.remaining().max(1),
        _ => 1,
    };
    let chosen: Vec<String> = zones.into_iter().take(max_zones).collect();
    let zone_set: BTreeSet<String> = chosen.iter().cloned().collect();
    if let Err(refusal) = safety::may_take_down(snapshot, &zone_set) {
        return Deletion::Wait(format!(
            "pods of zone {} need an update; {refusal}",
            chosen.join(", ")
        ));
    }
    let mut pods: Vec<PodToDelete> = chosen
        .iter()
        .flat_map(|z| by_zone.remove(z).unwrap_or_default())
        .collect();
    if mode == DeletionMode::ProcessGroup {
        pods.sort_by_key(|p| coordinator_of.contains_key(&p.group));
        pods.truncate(1);
    }
    if let Some(move_first) = coordinators_move_first(&pods, &chosen, &coordinator_of) {
        return unless_immovable(snapshot, move_first, &coordinator_of);
    }
    let has_storage = pods.iter().any(|p| p.class == ProcessClass::Storage);
    let maintenance_zone = match chosen.first() {
        Some(zone) if maintenance_mode && has_storage => {
            if let Err(refusal) = safety::maintenance(snapshot, zone) {
                return Deletion::Wait(format!("pods of zone {zone} need an update; {refusal}"));
            }
            (current_maintenance.as_deref() != Some(zone.as_str())).then(|| zone.clone())
        }
        _ => None,
    };
    let left = zones_total.saturating_sub(chosen.len());
    let progress = if budget.one_zone_at_a_time {
        format!(
            "single redundancy: one zone at a time, its data unavailable until its pods return; {left} more zones to update after this one"
        )
    } else {
        format!("{left} more zones to update after this batch")
    };
    Deletion::Delete {
        pods,
        zones: chosen,
        maintenance_zone,
        progress,
    }
}

/// The gates that hold every deletion back: a pod still terminating, or a database that
/// is not available.
fn deletion_blocked(snapshot: &ClusterSnapshot, candidates: usize) -> Option<Deletion> {
    // A pod stuck terminating past `ignoreTerminatingPodsSeconds` holds nothing back
    // any more (issue 25): its group counts as down in the zone budget, which then
    // decides what else may go.
    let ignore_after = snapshot
        .spec()
        .automation_options
        .ignore_terminating_pods_seconds();
    let now = snapshot.now_unix();
    if let Some(terminating) = snapshot.pod_heads().find(|p| {
        p.metadata
            .deletion_timestamp
            .as_ref()
            .is_some_and(|since| now - since.0.as_second() <= ignore_after)
    }) {
        return Some(Deletion::Wait(format!(
            "{candidates} pods need an update; waiting for pod {} to finish terminating",
            terminating.name_any()
        )));
    }
    safety::available(snapshot)
        .err()
        .map(|refusal| Deletion::Wait(format!("{candidates} pods need an update; {refusal}")))
}

/// What differs, per group, between its pod and the desired one (the first field that
/// matters to the processes), as ` (differs: log-1 containers[foundationdb].env, ...)`;
/// empty when nothing that matters differs (only the spec hash).
fn differences<'a>(snapshot: &ClusterSnapshot, groups: impl Iterator<Item = &'a str>) -> String {
    let found: Vec<String> = groups
        .filter_map(|id| {
            let group = snapshot.group(id)?;
            let live = group.pod()?.spec.as_ref()?;
            let desired = crate::controller::desired_memo::DesiredObjects::pod(
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
pub fn verdict_of(snapshot: &ClusterSnapshot, decision: PodUpdateDecision) -> Verdict {
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

    fn decide(&self, snapshot: &ClusterSnapshot, facts: &PassFacts) -> Result<Verdict, StepError> {
        Ok(verdict_of(
            snapshot,
            decide_with(snapshot, facts.replace_policy),
        ))
    }
}

#[cfg(test)]
#[path = "update_pods_tests.rs"]
mod tests;
