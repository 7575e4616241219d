//! Which pods a change of `spec.buggify` deletes (see [`crate::controller::model::pod::buggify`]):
//! the pods whose buggify state differs from the spec's, minus those that must wait (a
//! coordinator to move first; for a pod still running its processes, the database
//! unavailable or the fault-tolerance budget spent). One decision, read by the step
//! that deletes them and by the look-ahead of the steps that must act before.

use std::collections::BTreeSet;

use kube::ResourceExt;

use super::model::pod::buggify::desired_state;
use super::objects::{pod_is_failing, pod_is_running};
use super::removals::placement;
use super::safety;
use super::snapshot::{ClusterSnapshot, GroupView};

/// What a change of `spec.buggify` deletes this pass.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct BuggifyDecision {
    /// `(group, pod)` to delete.
    pub delete: Vec<(String, String)>,
    /// Groups that wait, and why.
    pub waiting: Vec<String>,
    /// Groups that wait for their coordinator to move (ChangeCoordinators moves it).
    pub hosting_coordinators: Vec<String>,
}

/// Whether the group's pod runs another buggify state than the spec asks for.
pub(crate) fn differs(snapshot: &ClusterSnapshot, group: &GroupView<'_>) -> bool {
    group
        .pod_facts()
        .is_some_and(|facts| facts.buggify != desired_state(snapshot.cluster(), group.id()))
}

/// Decides from the snapshot.
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> BuggifyDecision {
    let mut decision = BuggifyDecision::default();
    let changed: Vec<GroupView<'_>> = snapshot
        .live_groups()
        .filter(|g| {
            g.pod_head()
                .is_some_and(|pod| pod.metadata.deletion_timestamp.is_none())
        })
        .filter(|g| differs(snapshot, g))
        .collect();
    if changed.is_empty() {
        return decision;
    }
    let unavailable = snapshot
        .status()
        .configured
        .then(|| safety::available(snapshot).err())
        .flatten();
    let mut zones_taken = BTreeSet::new();
    for group in changed {
        let Some(pod) = group.pod_head() else {
            continue;
        };
        let id = group.id().to_owned();
        if let Some(coordinator) = placement::hosted_coordinator(snapshot, &group) {
            decision.hosting_coordinators.push(id.clone());
            decision.waiting.push(format!(
                "{id}: its pod hosts coordinator {coordinator}; the coordinators move first"
            ));
            continue;
        }
        // A pod that runs no process (unschedulable, crash-looping, failed) is down
        // already: deleting it takes nothing more out of service, so it waits for neither
        // the database nor the budget. Turning `noSchedule` off while the pending pods
        // are what keeps the database down must not wait for that database.
        if !pod_is_running(pod) || pod_is_failing(pod) {
            decision.delete.push((id, pod.name_any()));
            continue;
        }
        if let Some(refusal) = &unavailable {
            decision.waiting.push(format!("{id}: {refusal}"));
            continue;
        }
        // A running pod's deletion takes its zone down (its recreation may not come back
        // at all, with `noSchedule`): as many zones as the fault tolerance allows.
        let zone = safety::group_zone(&group);
        let mut zones = zones_taken.clone();
        zones.insert(zone.clone());
        if let Err(refusal) = safety::may_take_down(snapshot, &zones) {
            decision.waiting.push(format!("{id}: {refusal}"));
            continue;
        }
        zones_taken.insert(zone);
        decision.delete.push((id, pod.name_any()));
    }
    decision
}
