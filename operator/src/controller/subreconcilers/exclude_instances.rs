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

use async_trait::async_trait;
use fdb_shared::api::ProcessClass;
use fdb_shared::cluster_math::desired_process_counts;

use super::Subreconciler;
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::events::{EventReason, publish};
use crate::controller::locks;
use crate::controller::outcome::StepOutcome;
use crate::controller::pass_io::PassIo;
use crate::controller::removals::{exclusions, placement, skips_exclusion};
use crate::controller::safety::{self, LockedAction, MINIMUM_SECONDS_SINCE_RECOVERY};
use crate::controller::snapshot::{ClusterSnapshot, GroupView};
use crate::controller::status_mutations::StatusMutation;
use crate::fdb::{AdminClient, ExclusionTarget};

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

#[async_trait]
impl Subreconciler for ExcludeInstances {
    fn name(&self) -> &'static str {
        "ExcludeInstances"
    }

    async fn reconcile(
        &self,
        ctx: &Context,
        snapshot: &ClusterSnapshot,
        io: &mut PassIo,
    ) -> Result<StepOutcome, StepError> {
        let decision = decide(snapshot);
        for (group, reason) in &decision.waiting {
            tracing::info!(step = self.name(), %group, %reason, "exclusion waits");
        }
        if !decision.complete.is_empty() {
            let mutations: Vec<StatusMutation> = decision
                .complete
                .iter()
                .map(|group| StatusMutation::RecordExclusion {
                    group: group.clone(),
                })
                .collect();
            if io.apply_status(ctx, snapshot, &mutations).await? {
                publish(
                    ctx,
                    snapshot.cluster(),
                    EventReason::ExclusionComplete,
                    self.name(),
                    format!("fully excluded: {}", decision.complete.join(", ")),
                )
                .await;
            }
        }
        if !decision.exclude.is_empty() {
            let targets: Vec<ExclusionTarget> = decision
                .exclude
                .iter()
                .flat_map(|(_, targets)| targets.iter().cloned())
                .collect();
            let groups: Vec<&str> = decision.exclude.iter().map(|(g, _)| g.as_str()).collect();
            let text: Vec<String> = targets.iter().map(ToString::to_string).collect();
            if let Some(outcome) =
                locks::acquire_or_requeue(ctx, snapshot, io, LockedAction::Exclude, |refusal| {
                    format!("{} wait to be excluded: {refusal}", groups.join(", "))
                })
                .await?
            {
                return Ok(outcome);
            }
            // Recorded before the command: whatever changes later (options, version, an
            // operator restart), exactly these targets are included again.
            let records: Vec<StatusMutation> = decision
                .exclude
                .iter()
                .map(|(group, targets)| StatusMutation::RecordExcludedTargets {
                    group: group.clone(),
                    targets: targets.iter().map(ToString::to_string).collect(),
                })
                .collect();
            io.apply_status(ctx, snapshot, &records).await?;
            tracing::info!(step = self.name(), ?groups, targets = ?text, "excluding");
            let admin = io.admin(ctx, snapshot)?;
            admin
                .exclude(&targets, false)
                .await
                .map_err(StepError::admin(format!("exclude {}", text.join(" "))))?;
            publish(
                ctx,
                snapshot.cluster(),
                EventReason::ProcessesExcluded,
                self.name(),
                format!("excluded {} ({})", groups.join(", "), text.join(" ")),
            )
            .await;
        }
        Ok(StepOutcome::Continue)
    }
}

#[cfg(test)]
#[path = "exclude_instances_tests.rs"]
mod tests;
