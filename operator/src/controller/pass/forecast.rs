//! The one forecast of pod deletions to come ([`upcoming_pod_deletions`]): the pods that
//! UpdatePods (its next batch), DeletePodsForBuggification and the removal of processes
//! that missed an upgrade will delete, while they host a coordinator. Built once per
//! snapshot with the configured [`ReplacePolicy`] (what UpdatePods acts with), so the
//! steps that must act before those deletions (ChangeCoordinators moves the
//! coordinators off first) see what will really happen.

use super::super::buggify_deletions;
use super::super::model::replace_only::ReplacePolicy;
use super::super::pod_updates::Deletion;
use super::super::pod_updates::decision;
use super::super::snapshot::ClusterSnapshot;
use super::super::versions::incompatible_processes::decide_incompatible;
use super::plan::PassFacts;

pub(crate) use super::plan::UpcomingDeletions;

/// The forecast for `snapshot`: the pass's look-ahead when [`fill`] made it for this
/// snapshot version, else made now (the same value: the forecast is pure).
pub(crate) fn upcoming(facts: &PassFacts, snapshot: &ClusterSnapshot) -> Option<UpcomingDeletions> {
    match facts.look_ahead.upcoming(snapshot) {
        Some(known) => known.clone(),
        None => upcoming_pod_deletions(snapshot, facts.settings.replace_policy),
    }
}

/// Makes the forecast for `snapshot` into the pass's look-ahead, once per snapshot
/// version, before the `decide` of a step that reads it.
pub(crate) fn fill(facts: &mut PassFacts, snapshot: &ClusterSnapshot) {
    let policy = facts.settings.replace_policy;
    facts
        .look_ahead
        .fill_upcoming(snapshot, || upcoming_pod_deletions(snapshot, policy));
}

/// The forecast for `snapshot` under `policy` (`None`: no deletion waits on the
/// coordinators).
pub(crate) fn upcoming_pod_deletions(
    snapshot: &ClusterSnapshot,
    policy: ReplacePolicy,
) -> Option<UpcomingDeletions> {
    if let Deletion::MoveCoordinators { groups, reason } =
        decision::decide_with(snapshot, policy).deletion
    {
        return Some(UpcomingDeletions { groups, reason });
    }
    let buggify = buggify_deletions::decide(snapshot);
    if !buggify.hosting_coordinators.is_empty() {
        return Some(UpcomingDeletions {
            groups: buggify.hosting_coordinators.iter().cloned().collect(),
            reason: format!("spec.buggify changes pods: {}", buggify.waiting.join("; ")),
        });
    }
    let incompatible = decide_incompatible(snapshot);
    (!incompatible.hosting_coordinators.is_empty()).then(|| UpcomingDeletions {
        groups: incompatible.hosting_coordinators.iter().cloned().collect(),
        reason: format!(
            "processes that missed the upgrade must be restarted: {}",
            incompatible.waiting.join("; ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::coordinators::change::{CoordinatorAction, decide};
    use crate::controller::fixtures::{Fixture, cluster, group, reporting};
    use crate::controller::model::desired::pod_options;
    use crate::controller::model::pod::build_pod;
    use fdb_shared::api::cluster::{ProcessGroupCondition, ProcessGroupConditionType};

    /// A single-redundancy cluster whose storage-1 hosts the only coordinator; its pod was built before the spec set
    /// `fsGroup` (a file ownership change), so it has IncorrectPodSpec. storage-2 (zone
    /// z2) can take the coordinator (without it the coordinator could not move at all,
    /// and UpdatePods would replace storage-1 instead).
    fn ownership_change() -> ClusterSnapshot {
        let old = cluster("version: 7.1.57");
        let mut status = group("storage-1");
        status.process_group_conditions.push(ProcessGroupCondition {
            condition_type: ProcessGroupConditionType::IncorrectPodSpec,
            timestamp: 1,
        });
        let pod = build_pod(&old, &status, &pod_options(&old, &status)).unwrap();
        let mut db = reporting(&["storage-1", "storage-2"]);
        db.cluster
            .fault_tolerance
            .max_zone_failures_without_losing_availability = Some(1);
        db.cluster
            .fault_tolerance
            .max_zone_failures_without_losing_data = Some(1);
        Fixture::new(
            "{version: 7.1.57, databaseConfiguration: {redundancy_mode: single}, processes: {general: {podTemplate: {spec: {securityContext: {fsGroup: 4059}}}}}}",
        )
        .groups([status, group("storage-2")])
        .pods([
            pod,
            crate::controller::fixtures::pod("sample-storage-2", "storage-2", "z2", "10.0.0.2"),
        ])
        .connection_string("a:b@10.0.0.1:4501")
        .status(|s| s.configured = true)
        .database(db)
        .build()
    }

    #[test]
    fn the_forecast_follows_the_configured_replace_policy() {
        let snapshot = ownership_change();
        // By default UpdatePods recreates the pod: the coordinator must move first.
        let forecast = upcoming_pod_deletions(&snapshot, ReplacePolicy::default()).unwrap();
        assert!(forecast.groups.contains("storage-1"), "{forecast:?}");
        // With --replace-on-security-context-change the group is replaced instead
        // (ReplaceMisconfiguredPods): UpdatePods deletes no pod, nothing to forecast.
        let flag = ReplacePolicy {
            replace_on_security_context_change: true,
        };
        assert_eq!(upcoming_pod_deletions(&snapshot, flag), None);
        // ChangeCoordinators reads the pass's forecast, under the pass's policy.
        assert_eq!(
            decide(&snapshot, &PassFacts::new(flag)),
            CoordinatorAction::None
        );
        match decide(&snapshot, &PassFacts::new(ReplacePolicy::default())) {
            CoordinatorAction::Wait(reason) | CoordinatorAction::Change { reason, .. } => {
                assert!(reason.contains("need an update"), "{reason}");
            }
            CoordinatorAction::None => panic!("the coordinator on a pod to delete stays"),
        }
    }
}
