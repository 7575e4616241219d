//! ExcludeInstances (operator-behavior §8): excludes the processes of groups marked for
//! removal and records `exclusionTimestamp` once their exclusion is complete (see
//! [`exclusions`] for the targets and the completion rule).
//!
//! A group is excluded only when:
//! - it has targets (a locality, or at least one address ever seen);
//! - it hosts no current coordinator (ChangeCoordinators moves them first; this step
//!   leaves the group for a later pass);
//! - the database is available, its last recovery is at least 120 s old, and no live
//!   group of its class went missing less than 5 minutes ago (the gates of §8);
//! - for a group still serving, its class's budget: the live groups of its class that
//!   report and are not excluded are at least the desired count, i.e. replacements are
//!   up before the process they replace is drained. A group that does not serve costs
//!   nothing to exclude.
//!
//! Groups in `processGroupsToRemoveWithoutExclusion` are never excluded.

use std::collections::BTreeMap;

use fdb_shared::api::ProcessClass;
use fdb_shared::cluster_math::desired_process_counts;

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::events::EventReason;
use crate::controller::plan::{Action, PassFacts, Plan, Planned, Verdict};
use crate::controller::removals::{exclusions, placement, skips_exclusion};
use crate::controller::safety::{self, LockedAction, MINIMUM_SECONDS_SINCE_RECOVERY};
use crate::controller::snapshot::{ClusterSnapshot, GroupView};
use crate::controller::status_mutations::StatusMutation;
use crate::fdb::ExclusionTarget;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct ExcludeInstances;

/// What ExcludeInstances does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExcludeDecision {
    /// Groups to exclude now, with their targets.
    pub exclude: Vec<(String, Vec<ExclusionTarget>)>,
    /// Groups whose exclusion is complete (`exclusionTimestamp` to record).
    pub complete: Vec<String>,
    /// Groups that wait, with why.
    pub waiting: Vec<(String, String)>,
}

/// Whether the group serves: all its processes report and none is excluded.
fn serving(group: &GroupView<'_>) -> bool {
    let expected = group.servers_per_pod();
    let processes: Vec<_> = group.processes().collect();
    u32::try_from(processes.len()).unwrap_or(u32::MAX) >= expected
        && processes.iter().all(|p| !p.excluded)
}

/// Live serving groups per class.
fn serving_per_class(snapshot: &ClusterSnapshot) -> BTreeMap<ProcessClass, i32> {
    let mut counts = BTreeMap::new();
    for group in snapshot.live_groups() {
        if serving(&group) {
            *counts.entry(group.status.process_class).or_insert(0) += 1;
        }
    }
    counts
}

/// Why a group that must be excluded cannot be now, if it cannot.
fn gate(
    snapshot: &ClusterSnapshot,
    group: &GroupView<'_>,
    serving_counts: &BTreeMap<ProcessClass, i32>,
) -> Option<String> {
    if let Some(coordinator) = placement::hosted_coordinator(snapshot, group) {
        return Some(format!(
            "it hosts coordinator {coordinator}; coordinators change first"
        ));
    }
    let class = group.status.process_class;
    let gates = safety::available(snapshot)
        .and_then(|()| safety::recovered_for(snapshot, MINIMUM_SECONDS_SINCE_RECOVERY))
        .and_then(|()| safety::no_recently_missing(snapshot, class));
    if let Err(refusal) = gates {
        return Some(refusal.to_string());
    }
    if serving(group) {
        let desired = desired_process_counts(snapshot.spec()).count(class);
        let up = serving_counts.get(&class).copied().unwrap_or(0);
        if up < desired {
            return Some(format!(
                "only {up} of {desired} desired {class} process groups serve; replacements come up first"
            ));
        }
    }
    None
}

/// Decides from the snapshot.
pub fn decide(snapshot: &ClusterSnapshot) -> ExcludeDecision {
    let mut decision = ExcludeDecision::default();
    let pending: Vec<GroupView<'_>> = snapshot
        .groups()
        .filter(|g| {
            g.is_marked_for_removal()
                && g.status.exclusion_timestamp.is_none()
                && !skips_exclusion(snapshot, g)
        })
        .collect();
    if pending.is_empty() {
        return decision;
    }
    let db = match safety::database(snapshot) {
        Ok(db) => db,
        Err(refusal) => {
            for group in &pending {
                decision
                    .waiting
                    .push((group.id().to_owned(), refusal.to_string()));
            }
            return decision;
        }
    };
    let serving_counts = serving_per_class(snapshot);
    for group in pending {
        let id = group.id().to_owned();
        let targets = match exclusions::targets(snapshot, &group) {
            Ok(targets) => targets,
            Err(error) => {
                decision.waiting.push((id, error.to_string()));
                continue;
            }
        };
        if targets.iter().all(|t| exclusions::is_listed(db, t)) {
            match exclusions::verdict(db, &targets) {
                Ok(()) => decision.complete.push(id),
                Err(reason) => decision
                    .waiting
                    .push((id, format!("exclusion in progress: {reason}"))),
            }
            continue;
        }
        match gate(snapshot, &group, &serving_counts) {
            Some(reason) => decision
                .waiting
                .push((id, format!("not excluded: {reason}"))),
            None => decision.exclude.push((id, targets)),
        }
    }
    decision
}

/// Why the marked group `id` is not ready for its resources to be deleted (for the
/// requeue reason of RemovePods).
pub fn pending_reason(snapshot: &ClusterSnapshot, id: &str) -> String {
    decide(snapshot)
        .waiting
        .into_iter()
        .find(|(group, _)| group == id)
        .map_or_else(
            || format!("waiting for the exclusion of {id}"),
            |(group, reason)| format!("process group {group} is not fully excluded: {reason}"),
        )
}

/// What of the group makes excluding it cause a recovery, if anything.
fn exclusion_recovery(snapshot: &ClusterSnapshot, id: &str) -> Option<String> {
    safety::causes_recovery(snapshot, &snapshot.group(id)?)
}

/// The order that costs the fewest recoveries: when a coordinator must move off a
/// group marked for removal (its exclusion waits for that) and the coordinators can move
/// now, the exclusions that cause a recovery wait too, so that after the coordinators
/// change one recovery excludes every group, instead of one recovery for these, one for
/// the coordinators and one more for the group that hosted a coordinator. Exclusions
/// that cause no recovery (storage) go on. When the coordinators cannot move now
/// (nowhere to place them), nothing waits for them.
pub fn order_after_coordinators(
    snapshot: &ClusterSnapshot,
    facts: &PassFacts,
    mut decision: ExcludeDecision,
) -> ExcludeDecision {
    let nothing_to_order = decision.exclude.is_empty()
        || !snapshot.groups().any(|g| {
            g.is_marked_for_removal()
                && g.status.exclusion_timestamp.is_none()
                && placement::hosted_coordinator(snapshot, &g).is_some()
        });
    if nothing_to_order {
        return decision;
    }
    let recovering = |id: &str| exclusion_recovery(snapshot, id).is_some();
    if !decision.exclude.iter().any(|(id, _)| recovering(id)) {
        return decision;
    }
    let movable = matches!(
        super::change_coordinators::decide(snapshot, facts),
        super::change_coordinators::CoordinatorAction::Change { .. }
    );
    if !movable {
        return decision;
    }
    let (held, go): (Vec<_>, Vec<_>) = std::mem::take(&mut decision.exclude)
        .into_iter()
        .partition(|(id, _)| recovering(id));
    decision.exclude = go;
    decision.waiting.extend(held.into_iter().map(|(id, _)| {
        (
            id,
            "not excluded: the coordinators move first, so one recovery excludes every group"
                .to_owned(),
        )
    }));
    decision
}

impl Subreconciler for ExcludeInstances {
    fn name(&self) -> &'static str {
        "ExcludeInstances"
    }

    fn decide(&self, snapshot: &ClusterSnapshot, facts: &PassFacts) -> Result<Verdict, StepError> {
        let decision = order_after_coordinators(snapshot, facts, decide(snapshot));
        for (group, reason) in &decision.waiting {
            tracing::info!(step = self.name(), %group, %reason, "exclusion waits");
        }
        let mut actions = Vec::new();
        if !decision.complete.is_empty() {
            let mutations: Vec<StatusMutation> = decision
                .complete
                .iter()
                .map(|group| StatusMutation::RecordExclusion {
                    group: group.clone(),
                })
                .collect();
            actions.push(Planned::plain(Action::WriteStatus(mutations)));
            actions.push(Planned::plain(Action::Event {
                reason: EventReason::ExclusionComplete,
                action: self.name().to_owned(),
                note: format!("fully excluded: {}", decision.complete.join(", ")),
            }));
        }
        let groups: Vec<&str> = decision.exclude.iter().map(|(g, _)| g.as_str()).collect();
        if !decision.exclude.is_empty() {
            let targets: Vec<ExclusionTarget> = decision
                .exclude
                .iter()
                .flat_map(|(_, targets)| targets.iter().cloned())
                .collect();
            let text: Vec<String> = targets.iter().map(ToString::to_string).collect();
            let recovering: Vec<String> = decision
                .exclude
                .iter()
                .filter_map(|(id, _)| exclusion_recovery(snapshot, id))
                .collect();
            let recovery =
                (!recovering.is_empty()).then(|| format!("excluded {}", recovering.join(", ")));
            // Recorded before the command: whatever changes later (options, version, an
            // operator restart), exactly these targets are included again. Paced and
            // locked with the exclusion, so they are never recorded without it.
            let records: Vec<StatusMutation> = decision
                .exclude
                .iter()
                .map(|(group, targets)| StatusMutation::RecordExcludedTargets {
                    group: group.clone(),
                    targets: targets.iter().map(ToString::to_string).collect(),
                })
                .collect();
            actions.push(
                Planned::locked(Action::WriteStatus(records), LockedAction::Exclude)
                    .recovering(recovery.clone()),
            );
            actions.push(
                Planned::locked(Action::Exclude(targets), LockedAction::Exclude)
                    .recovering(recovery),
            );
            actions.push(Planned::plain(Action::Event {
                reason: EventReason::ProcessesExcluded,
                action: self.name().to_owned(),
                note: format!("excluded {} ({})", groups.join(", "), text.join(" ")),
            }));
        }
        if actions.is_empty() {
            return Ok(Verdict::Continue);
        }
        Ok(Verdict::Act(Plan::new(
            actions,
            format!("{} wait to be excluded: ", groups.join(", ")),
        )))
    }
}

#[cfg(test)]
#[path = "exclude_instances_tests.rs"]
mod tests;
