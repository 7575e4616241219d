//! The decision of the rollout of pod spec changes (IncorrectPodSpec): the pods to delete
//! next, or why not, and the groups to replace (see the step that acts on it,
//! `steps/update_pods/mod.rs`, for the rules). Pure, from the snapshot: the step
//! acts on it, and the look-ahead of the steps that must act before those deletions
//! (`pass/forecast.rs`) reads it.

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::api::ProcessClass;
use fdb_shared::api::cluster::{DeletionMode, PodUpdateStrategy, ProcessGroupConditionType};
use kube::ResourceExt;

use super::super::model::process_config::listens_on_both;
use super::super::model::replace_only::{ReplacePolicy, replace_only_change};
use super::super::safety;
use super::super::snapshot::{ClusterSnapshot, GroupView};
use super::coordinators::{
    coordinators_hosted, coordinators_move_first, unless_immovable, zones_in_order,
};
use super::{Deletion, PodToDelete, PodUpdateDecision};

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
/// FoundationDB lists a log router as the role `router` (`roles.addRole("router", ...)`
/// in fdbserver/Status.actor.cpp; the schema's role enum in fdbclient/Schemas.cpp).
fn replaced_for_roles(strategy: &PodUpdateStrategy, group: &GroupView<'_>) -> bool {
    let replaces_transaction_system = !matches!(
        strategy,
        PodUpdateStrategy::Replace | PodUpdateStrategy::Delete
    );
    replaces_transaction_system
        && group
            .processes()
            .any(|process| process.roles.iter().any(|r| r.role == "router"))
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
#[cfg(test)]
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> PodUpdateDecision {
    decide_with(snapshot, ReplacePolicy::default())
}

/// Decides from the snapshot; `policy` says which changes are ReplaceMisconfiguredPods's.
pub(crate) fn decide_with(snapshot: &ClusterSnapshot, policy: ReplacePolicy) -> PodUpdateDecision {
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
        .filter(|g| !crate::controller::buggify_deletions::differs(snapshot, g))
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
    if has_storage && let Some(wait) = single_storage_back_recently(snapshot, &pods) {
        return Deletion::Wait(format!(
            "pods of zone {} need an update; {wait}",
            chosen.join(", ")
        ));
    }
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

/// In single redundancy a storage pod's deletion leaves its data unavailable until the
/// pod is back, as a recovery does: the next storage zone waits until every other
/// storage pod has been back for the pacing of recoveries
/// ([`safety::MINIMUM_SECONDS_SINCE_RECOVERY`]), or the rollout's outages come one
/// after the other with no time between them (randomized rollout seeds 6, 8 and 10: six
/// storage pods deleted 2 s apart were one 11 s outage). A pod created that recently
/// counts, whoever recreated it; a pod that crash-loops in place does not, so it never
/// holds the rollout that may fix it. `None` when the deletion may go on.
fn single_storage_back_recently(
    snapshot: &ClusterSnapshot,
    batch: &[PodToDelete],
) -> Option<String> {
    if fdb_shared::cluster_math::fault_tolerance(&snapshot.spec().redundancy_mode()) != 0 {
        return None;
    }
    let now = snapshot.now_unix();
    let minimum = safety::MINIMUM_SECONDS_SINCE_RECOVERY;
    let (pod, seconds_ago) = snapshot
        .groups()
        .filter(|group| group.status.process_class == ProcessClass::Storage)
        .filter(|group| !batch.iter().any(|p| p.group == group.id()))
        .filter_map(|group| {
            let pod = group.pod_head()?;
            let created = pod.metadata.creation_timestamp.as_ref()?.0.as_second();
            let seconds_ago = now - created;
            // Precision: seconds, far below 2^52.
            #[allow(clippy::cast_precision_loss)]
            let recent = (seconds_ago as f64) < minimum;
            recent.then(|| (pod.name_any(), seconds_ago))
        })
        .min_by_key(|(_, seconds_ago)| *seconds_ago)?;
    Some(format!(
        "single redundancy: storage pod {pod} came back {seconds_ago}s ago; the next storage zone waits until {minimum:.0}s have passed, so clients are not failed again at once"
    ))
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
