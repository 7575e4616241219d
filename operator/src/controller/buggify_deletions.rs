//! Which pods a change of `spec.buggify` deletes (see [`crate::controller::model::pod::buggify`]):
//! the pods whose buggify state differs from the spec's, minus those that must wait (the
//! database unavailable, a coordinator to move first). One decision, read by the step
//! that deletes them and by the look-ahead of the steps that must act before.

use kube::ResourceExt;

use super::model::pod::buggify::desired_state;
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
    for group in changed {
        let Some(pod) = group.pod_head() else {
            continue;
        };
        if let Some(refusal) = &unavailable {
            decision.waiting.push(format!("{}: {refusal}", group.id()));
        } else if let Some(coordinator) = placement::hosted_coordinator(snapshot, &group) {
            decision.hosting_coordinators.push(group.id().to_owned());
            decision.waiting.push(format!(
                "{}: its pod hosts coordinator {coordinator}; the coordinators move first",
                group.id()
            ));
        } else {
            decision
                .delete
                .push((group.id().to_owned(), pod.name_any()));
        }
    }
    decision
}
