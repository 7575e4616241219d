//! RemovePods (docs/operator.md, "The steps"): takes apart the groups marked for removal
//! whose exclusion is complete (or skipped): pod, then PVC, then (RemoveServices) service,
//! each confirmed gone before the next; then one `include` of every finished group's
//! targets; then the groups leave the status.
//!
//! - Never the pod of a group hosting a current coordinator (ChangeCoordinators moves it).
//! - A group removed without exclusion still holds data: its pod is deleted only when
//!   the fault-tolerance budget allows taking its zone down.
//! - Never a group whose removal the user holds back (`buggify.blockRemoval`,
//!   `automationOptions.removalMode: None`): it stays excluded, with its resources.
//! - One stuck group never blocks the others: each group advances on its own.
//! - A pod that stays Terminating longer than `ignoreTerminatingPodsSeconds` no longer
//!   holds back its PVC and service; once only terminating resources remain the group
//!   just waits (the cluster may be Reconciled meanwhile, with `hasPendingRemoval`).
//!
//! Every action is idempotent: a crash after any of them is picked up from the live state.

use std::collections::BTreeSet;

use std::time::Duration;

use async_trait::async_trait;

use crate::controller::snapshot::pod_head::PodHead;
use kube::ResourceExt;

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::events::EventReason;
use crate::controller::object_kind::ObjectKind;
use crate::controller::pass::plan::{
    Action, Barrier, PassFacts, Plan, Planned, Verdict, Wait, WaitOn,
};
use crate::controller::removals::exclusion_decision::pending_reason;
use crate::controller::removals::release::{is_terminating, pod_released};
use crate::controller::removals::{
    exclusions, placement, ready_for_deletion, removal_held, skips_exclusion,
};
use crate::controller::safety::{self, LockedAction};
use crate::controller::snapshot::{ClusterSnapshot, GroupView};
use crate::controller::status::mutations::StatusMutation;
use crate::fdb::ExclusionTarget;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct RemovePods;

/// What RemovePods does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct RemovePodsDecision {
    /// Pods to delete, by name.
    pub delete_pods: Vec<String>,
    /// PVCs to delete, by name.
    pub delete_pvcs: Vec<String>,
    /// Groups whose resources are all gone: include them and drop them.
    pub finished: Vec<String>,
    /// The targets to include for the finished groups.
    pub include: Vec<ExclusionTarget>,
    /// Groups that wait, with why.
    pub waiting: Vec<(String, String)>,
    /// Groups that only wait for resources that are terminating.
    pub terminating: Vec<String>,
    /// Groups whose removal the user holds back, with why: they wait without an Event
    /// per pass (the user knows), and keep the cluster from Reconciled.
    pub held: Vec<(String, String)>,
}

/// A removed group's pod still running: deleted unless it hosts a coordinator or, not
/// excluded, its zone would take more than the fault tolerance down.
fn delete_live_pod(
    snapshot: &ClusterSnapshot,
    group: &GroupView<'_>,
    pod: &PodHead,
    decision: &mut RemovePodsDecision,
    zones_taken: &mut BTreeSet<String>,
) {
    let id = group.id().to_owned();
    if let Some(coordinator) = placement::hosted_coordinator(snapshot, group) {
        decision.waiting.push((
            id,
            format!("it hosts coordinator {coordinator}; coordinators change first"),
        ));
        return;
    }
    if let Err(why) = relies_on_exclusion(snapshot, group) {
        decision.waiting.push((id, why));
        return;
    }
    if group.status.exclusion_timestamp.is_none() && skips_exclusion(snapshot, group) {
        // Not excluded: its processes still hold data and count for fault tolerance.
        let zone = placement::zone(group);
        let mut zones = zones_taken.clone();
        zones.insert(zone.clone());
        if let Err(refusal) = safety::may_take_down(snapshot, &zones) {
            decision.waiting.push((id, refusal.to_string()));
            return;
        }
        zones_taken.insert(zone);
    }
    decision.delete_pods.push(pod.name_any());
}

/// Whether the group's recorded exclusion still holds now, or why that cannot be said:
/// the database answers and lists every target the group was excluded with. A record
/// of a complete exclusion is not trusted once the database stopped listing it (someone
/// ran `include`: data distribution may have moved data back), nor while the database
/// cannot say (FoundationDB/fdb-kubernetes-operator PR #2504).
fn exclusion_still_listed(snapshot: &ClusterSnapshot, group: &GroupView<'_>) -> Result<(), String> {
    let db = safety::database(snapshot)
        .map_err(|refusal| format!("its exclusion cannot be checked now: {refusal}"))?;
    let targets =
        exclusions::targets_to_include(snapshot, group).map_err(|error| error.to_string())?;
    match targets.iter().find(|t| !exclusions::is_listed(db, t)) {
        Some(target) => Err(format!(
            "the database no longer lists {target} as excluded; it is excluded again first"
        )),
        None => Ok(()),
    }
}

/// For a group removed through its exclusion (not one removed without), whether that
/// exclusion still holds now ([`exclusion_still_listed`]).
fn relies_on_exclusion(snapshot: &ClusterSnapshot, group: &GroupView<'_>) -> Result<(), String> {
    if group.status.exclusion_timestamp.is_none() || skips_exclusion(snapshot, group) {
        return Ok(());
    }
    exclusion_still_listed(snapshot, group)
}

/// Once every resource is gone, the group's excluded addresses are included again (when
/// the database lists them); false when that must wait.
fn include_again(
    snapshot: &ClusterSnapshot,
    group: &GroupView<'_>,
    decision: &mut RemovePodsDecision,
) -> bool {
    let id = group.id().to_owned();
    if group.status.exclusion_timestamp.is_none() && group.status.excluded_targets.is_empty() {
        return true;
    }
    match (
        exclusions::targets_to_include(snapshot, group),
        safety::database(snapshot),
    ) {
        (Ok(targets), Ok(db)) => decision
            .include
            .extend(targets.into_iter().filter(|t| exclusions::is_listed(db, t))),
        (Err(error), _) => {
            decision.waiting.push((id, error.to_string()));
            return false;
        }
        (_, Err(refusal)) => {
            decision
                .waiting
                .push((id, format!("cannot include it again: {refusal}")));
            return false;
        }
    }
    true
}

/// Decides for one ready group.
fn decide_group(
    snapshot: &ClusterSnapshot,
    group: &GroupView<'_>,
    decision: &mut RemovePodsDecision,
    zones_taken: &mut BTreeSet<String>,
) {
    let id = group.id().to_owned();
    if let Some(why) = removal_held(snapshot, group) {
        decision.held.push((id, why.to_owned()));
        return;
    }
    if let Some(pod) = group.pod_head().filter(|pod| !is_terminating(*pod)) {
        delete_live_pod(snapshot, group, pod, decision, zones_taken);
        return;
    }
    if !pod_released(snapshot, group) {
        let name = group
            .pod_head()
            .map(ResourceExt::name_any)
            .unwrap_or_default();
        decision.terminating.push(id.clone());
        decision
            .waiting
            .push((id, format!("pod {name} is terminating")));
        return;
    }
    if let Some(pvc) = group.pvc {
        if is_terminating(pvc) {
            decision.terminating.push(id.clone());
            decision
                .waiting
                .push((id, format!("PVC {} is terminating", pvc.name_any())));
        } else if let Err(why) = relies_on_exclusion(snapshot, group) {
            decision.waiting.push((id, why));
        } else {
            decision.delete_pvcs.push(pvc.name_any());
        }
        return;
    }
    if let Some(service) = group.service {
        // RemoveServices deletes it.
        if is_terminating(service) {
            decision.terminating.push(id.clone());
        }
        decision.waiting.push((
            id,
            format!("service {} is being deleted", service.name_any()),
        ));
        return;
    }
    if group.has_pod() {
        decision.terminating.push(id.clone());
        decision
            .waiting
            .push((id, "its pod is still terminating".to_owned()));
        return;
    }
    if include_again(snapshot, group, decision) {
        decision.finished.push(id);
    }
}

/// Decides from the snapshot.
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> RemovePodsDecision {
    let mut decision = RemovePodsDecision::default();
    let mut zones_taken = BTreeSet::new();
    for group in snapshot.groups().filter(|g| g.is_marked_for_removal()) {
        if ready_for_deletion(snapshot, &group) {
            decide_group(snapshot, &group, &mut decision, &mut zones_taken);
        } else {
            let reason = pending_reason(snapshot, group.id());
            decision.waiting.push((group.id().to_owned(), reason));
        }
    }
    decision.include.sort();
    decision.include.dedup();
    decision
}

/// The step's name, as its Events carry it.
const STEP: &str = "RemovePods";

fn event(reason: EventReason, note: String) -> Planned {
    Planned::plain(Action::Event {
        reason,
        action: STEP.to_owned(),
        note,
    })
}

/// The plan of `decision`: the pods and PVCs to delete (an Event naming them), the
/// `include` of the finished groups (locked; paced when it lets a transaction process
/// take roles again), their leaving the status (an Event); then the wait, if any: a
/// group whose removal is blocked (an Event says why), resources still going, removals
/// the user holds. Only terminating resources left: the pass goes on.
pub(crate) fn verdict_of(snapshot: &ClusterSnapshot, decision: &RemovePodsDecision) -> Verdict {
    let mut actions = Vec::new();
    for name in &decision.delete_pods {
        tracing::info!(step = STEP, pod = %name, "deleting the pod of a removed process group");
        actions.push(Planned::plain(Action::Delete {
            kind: ObjectKind::Pods,
            name: name.clone(),
        }));
    }
    for name in &decision.delete_pvcs {
        actions.push(Planned::plain(Action::Delete {
            kind: ObjectKind::Pvcs,
            name: name.clone(),
        }));
    }
    let deleted: Vec<&str> = decision
        .delete_pods
        .iter()
        .chain(&decision.delete_pvcs)
        .map(String::as_str)
        .collect();
    if !deleted.is_empty() {
        actions.push(event(
            EventReason::ResourcesDeleted,
            format!("deleted {}", deleted.join(", ")),
        ));
    }
    let refused = finish_removals(snapshot, decision, &mut actions);
    let wait = removal_wait(decision, !deleted.is_empty(), &mut actions);
    if actions.is_empty() {
        return Verdict::Continue.then(wait);
    }
    Verdict::Act(Plan::new(actions, refused)).then(wait)
}

/// The groups whose removal finished: included (locked; a recovery when a transaction
/// process takes roles again), dropped from the status, announced. Returns the text
/// naming what waits on the include, for a refused lock.
fn finish_removals(
    snapshot: &ClusterSnapshot,
    decision: &RemovePodsDecision,
    actions: &mut Vec<Planned>,
) -> String {
    let mut refused = String::new();
    if !decision.finished.is_empty() {
        if !decision.include.is_empty() {
            let text: Vec<String> = decision.include.iter().map(ToString::to_string).collect();
            // Including a transaction process lets it take roles again: a recovery.
            let recovering: Vec<String> = decision
                .finished
                .iter()
                .filter_map(|id| snapshot.group(id))
                .filter(|g| safety::runs_transaction_roles(g.status.process_class))
                .map(|g| g.id().to_owned())
                .collect();
            actions.push(
                Planned::locked(
                    Action::Include(decision.include.clone()),
                    LockedAction::Include,
                )
                .recovering(
                    (!recovering.is_empty()).then(|| format!("included {}", recovering.join(", "))),
                ),
            );
            refused = format!("{} wait to be included: ", text.join(" "));
        }
        let mutations: Vec<StatusMutation> = decision
            .finished
            .iter()
            .map(|group| StatusMutation::RemoveProcessGroup {
                group: group.clone(),
            })
            .collect();
        actions.push(Planned::plain(Action::WriteStatus(mutations)));
        actions.push(event(
            EventReason::ProcessGroupRemoved,
            format!("removed {}", decision.finished.join(", ")),
        ));
    }
    refused
}

/// What the step waits on: a blocked removal (announced), resources still going, or
/// removals the user holds; nothing when only terminating resources remain.
fn removal_wait(
    decision: &RemovePodsDecision,
    deleted_any: bool,
    actions: &mut Vec<Planned>,
) -> Option<Wait> {
    let blocking = decision
        .waiting
        .iter()
        .find(|(group, _)| !decision.terminating.contains(group));
    if let Some((group, reason)) = blocking {
        let reason = format!("removal of {group} waits: {reason}");
        actions.push(event(EventReason::RemovalBlocked, reason.clone()));
        Some(Wait::new(WaitOn::After(Duration::from_secs(15)), reason))
    } else if deleted_any {
        Some(Wait::new(
            WaitOn::After(Duration::from_secs(5)),
            "waiting for the resources of removed process groups to go",
        ))
    } else if let Some((group, why)) = decision.held.first() {
        let reason = format!(
            "the removal of {} process groups is held ({group}: {why})",
            decision.held.len()
        );
        Some(Wait::new(WaitOn::After(Duration::from_secs(60)), reason))
    } else {
        // Only terminating resources remain (or nothing): look again later, without
        // holding the cluster back from Reconciled.
        None
    }
}

#[async_trait]
impl Subreconciler for RemovePods {
    fn name(&self) -> &'static str {
        STEP
    }

    fn barrier(&self) -> Barrier {
        Barrier::GoesOn
    }

    fn decide(&self, snapshot: &ClusterSnapshot, _facts: &PassFacts) -> Result<Verdict, StepError> {
        if !super::any_marked_for_removal(snapshot) {
            return Ok(Verdict::Continue);
        }
        Ok(verdict_of(snapshot, &decide(snapshot)))
    }
}

#[cfg(test)]
mod tests;
