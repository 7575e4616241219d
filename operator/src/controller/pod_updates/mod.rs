//! What the rollout of pod spec changes (IncorrectPodSpec) intends, as data: the pods to
//! delete next, or why not, and the groups to replace. A leaf, so the decision
//! (`pod_updates/decision.rs`), its coordinator helpers (`pod_updates/coordinators.rs`),
//! the step that acts on it and the look-ahead (`pass/forecast.rs`) share these types without
//! importing each other.

pub(crate) mod coordinators;
pub(crate) mod decision;

use std::collections::BTreeSet;

use fdb_shared::api::ProcessClass;

/// A pod to delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PodToDelete {
    /// Its process group.
    pub group: String,
    /// The pod's name.
    pub pod: String,
    /// The group's class.
    pub class: ProcessClass,
}

/// What to do about pods to delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Deletion {
    /// No pod needs deleting.
    Nothing,
    /// `deletionMode: None`: these groups' pods would be deleted.
    Disabled(Vec<String>),
    /// A gate refuses; the reason names what blocks.
    Wait(String),
    /// The next batch includes pods hosting coordinators: ChangeCoordinators moves them
    /// off these groups first (a coordinator's pod is never deleted).
    MoveCoordinators {
        /// Every group of the next batch (none of them may host a coordinator).
        groups: BTreeSet<String>,
        /// Which coordinators are on which pods.
        reason: String,
    },
    /// The next batch includes pods hosting coordinators that cannot move anywhere else
    /// (the other eligible groups span too few zones): these groups are replaced, so a
    /// new group gives the coordinators a place, instead of waiting forever.
    ReplaceCoordinatorHosts {
        /// The groups hosting the coordinators.
        groups: Vec<String>,
        /// Why.
        reason: String,
    },
    /// Delete these pods (of `zones`), first putting `maintenance_zone` in maintenance
    /// when it is set.
    Delete {
        /// The pods.
        pods: Vec<PodToDelete>,
        /// Their zones.
        zones: Vec<String>,
        /// The zone to put in maintenance first (storage batches with the maintenance
        /// mode), unless it already is.
        maintenance_zone: Option<String>,
        /// How the rollout stands after this batch, for the progress line: zones left
        /// and, with single redundancy, that the batch's data is unavailable until its
        /// pods return.
        progress: String,
    },
}

/// UpdatePods's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PodUpdateDecision {
    /// Groups to mark for removal (their replacements carry the new spec).
    pub replace: Vec<String>,
    /// Groups whose replacement waits for `maxConcurrentReplacements`.
    pub replacements_waiting: usize,
    /// Pods to delete.
    pub deletion: Deletion,
}
