//! The one forecast of pod deletions to come ([`upcoming_pod_deletions`]): the pods that
//! UpdatePods (its next batch), DeletePodsForBuggification and the removal of processes
//! that missed an upgrade will delete, while they host a coordinator. Built once per
//! snapshot with the configured [`ReplacePolicy`] (what UpdatePods acts with), so the
//! steps that must act before those deletions (ChangeCoordinators moves the
//! coordinators off first) see what will really happen.

use std::collections::BTreeSet;

use super::replace_only::ReplacePolicy;
use super::snapshot::ClusterSnapshot;
use super::subreconcilers::delete_pods_for_buggification;
use super::subreconcilers::update_pods::{self, Deletion};
use super::upgrade::decide_incompatible;

/// Groups whose pods are about to be deleted while they host a coordinator, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpcomingDeletions {
    /// The groups (none of them may keep a coordinator).
    pub groups: BTreeSet<String>,
    /// Which step deletes them, and why.
    pub reason: String,
}

/// The forecast for `snapshot` under `policy` (`None`: no deletion waits on the
/// coordinators).
pub fn upcoming_pod_deletions(
    snapshot: &ClusterSnapshot,
    policy: ReplacePolicy,
) -> Option<UpcomingDeletions> {
    if let Deletion::MoveCoordinators { groups, reason } =
        update_pods::decide_with(snapshot, policy).deletion
    {
        return Some(UpcomingDeletions { groups, reason });
    }
    let buggify = delete_pods_for_buggification::decide(snapshot);
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
