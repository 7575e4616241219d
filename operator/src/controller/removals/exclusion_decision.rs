//! Which groups marked for removal are excluded now, which are fully excluded, and which
//! wait (and why): one decision from the snapshot, read by the step that excludes them
//! and by the step that deletes their resources once they are (for its wait reason).
//!
//! A group is excluded only when it has targets, hosts no current coordinator, the
//! database is available, its last recovery is old enough, no live group of its class
//! went missing recently, and (for a group still serving) its class's budget allows it:
//! replacements are up before the process they replace is drained.

use std::collections::BTreeMap;

use fdb_shared::api::ProcessClass;
use fdb_shared::cluster_math::desired_process_counts;

use super::{exclusions, placement, skips_exclusion};
use crate::controller::safety::{self, MINIMUM_SECONDS_SINCE_RECOVERY};
use crate::controller::snapshot::{ClusterSnapshot, GroupView};
use crate::fdb::ExclusionTarget;

/// What the exclusion of the groups marked for removal does this pass.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ExcludeDecision {
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
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> ExcludeDecision {
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
/// wait reason of the deletion of its resources).
pub(crate) fn pending_reason(snapshot: &ClusterSnapshot, id: &str) -> String {
    decide(snapshot)
        .waiting
        .into_iter()
        .find(|(group, _)| group == id)
        .map_or_else(
            || format!("waiting for the exclusion of {id}"),
            |(group, reason)| format!("process group {group} is not fully excluded: {reason}"),
        )
}
