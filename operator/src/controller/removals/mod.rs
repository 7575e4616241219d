//! What the removal steps (ChooseRemovals, ExcludeInstances, RemoveServices, RemovePods,
//! ReplaceFailedPods, ReplaceMisconfiguredPods) share: how a group is excluded and how
//! that exclusion is verified ([`exclusions`]), where a group is ([`placement`]), and
//! which survivors a shrink keeps ([`choice`]).

pub mod choice;
pub mod exclusions;
pub mod placement;

use super::snapshot::{ClusterSnapshot, GroupView};

/// Whether the spec asks to remove this group without excluding it first
/// (`processGroupsToRemoveWithoutExclusion`), or the status already records that.
pub fn skips_exclusion(snapshot: &ClusterSnapshot, group: &GroupView<'_>) -> bool {
    group.status.exclusion_skipped
        || snapshot
            .spec()
            .process_groups_to_remove_without_exclusion
            .iter()
            .any(|id| id == group.id())
}

/// Whether a marked group may have its resources deleted: fully excluded, or removed
/// without exclusion.
pub fn ready_for_deletion(snapshot: &ClusterSnapshot, group: &GroupView<'_>) -> bool {
    group.is_marked_for_removal()
        && (group.status.exclusion_timestamp.is_some() || skips_exclusion(snapshot, group))
}

/// Marked groups still holding a place in the "in flight" budget of replacements: marked
/// and not yet fully excluded (groups only waiting for their resources to terminate do
/// not count).
pub fn in_flight(snapshot: &ClusterSnapshot) -> Vec<String> {
    snapshot
        .groups()
        .filter(|g| g.is_marked_for_removal() && !ready_for_deletion(snapshot, g))
        .map(|g| g.id().to_owned())
        .collect()
}
