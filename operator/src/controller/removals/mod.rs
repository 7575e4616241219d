//! What the removal steps (ChooseRemovals, ExcludeInstances, RemoveServices, RemovePods,
//! ReplaceFailedPods, ReplaceMisconfiguredPods) share: how a group is excluded and how
//! that exclusion is verified ([`exclusions`]), where a group is ([`placement`]), and
//! which survivors a shrink keeps ([`choice`]).

pub(crate) mod choice;
pub(crate) mod exclusion_decision;
pub(crate) mod exclusion_retries;
pub(crate) mod exclusions;
pub(crate) mod placement;
pub(crate) mod release;

use fdb_shared::api::cluster::DeletionMode;

use super::snapshot::{ClusterSnapshot, GroupView};

/// Whether the spec asks to remove this group without excluding it first
/// (`processGroupsToRemoveWithoutExclusion`), or the status already records that.
pub(crate) fn skips_exclusion(snapshot: &ClusterSnapshot, group: &GroupView<'_>) -> bool {
    group.status.exclusion_skipped
        || snapshot
            .spec()
            .process_groups_to_remove_without_exclusion
            .iter()
            .any(|id| id == group.id())
}

/// Why the user holds back the removal of this marked group, if they do:
/// `buggify.blockRemoval` lists it, or `automationOptions.removalMode` is `None`. Such a
/// group is still excluded, but its resources stay and it stays in the status (the Go
/// operator's removeProcessGroups filters it out the same way).
pub(crate) fn removal_held(
    snapshot: &ClusterSnapshot,
    group: &GroupView<'_>,
) -> Option<&'static str> {
    let spec = snapshot.spec();
    if spec.buggify.block_removal.iter().any(|id| id == group.id()) {
        return Some("it is listed in spec.buggify.blockRemoval");
    }
    if spec.automation_options.removal_mode() == DeletionMode::None {
        return Some("spec.automationOptions.removalMode is None");
    }
    None
}

/// Whether the group keeps running for the foreseeable future: live, or marked for
/// removal with its removal held ([`removal_held`]). Such groups get configuration
/// updates and restarts like live ones (the Go operator updates a group marked for
/// removal too); waiting for their removal would wait forever.
pub(crate) fn kept_running(snapshot: &ClusterSnapshot, group: &GroupView<'_>) -> bool {
    !group.is_marked_for_removal() || removal_held(snapshot, group).is_some()
}

/// Whether a marked group may have its resources deleted: fully excluded, or removed
/// without exclusion.
pub(crate) fn ready_for_deletion(snapshot: &ClusterSnapshot, group: &GroupView<'_>) -> bool {
    group.is_marked_for_removal()
        && (group.status.exclusion_timestamp.is_some() || skips_exclusion(snapshot, group))
}

/// Marked groups still holding a place in the "in flight" budget of replacements: marked
/// and not yet fully excluded (groups only waiting for their resources to terminate do
/// not count).
pub(crate) fn in_flight(snapshot: &ClusterSnapshot) -> Vec<String> {
    snapshot
        .groups()
        .filter(|g| g.is_marked_for_removal() && !ready_for_deletion(snapshot, g))
        .map(|g| g.id().to_owned())
        .collect()
}
