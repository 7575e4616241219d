//! Whether the coordinator a process group hosts could move now: the reachable
//! coordinator candidates other than the group span enough zones for the coordinators
//! the cluster needs. ReplaceFailedPods reads it before replacing a failed group: a
//! replacement whose exclusion must wait for a coordinator change that cannot happen (a
//! zone down and no free zone) would hold the replacement budget for as long as the
//! zone stays down, and the marked group could not take its coordinator back when the
//! zone returns.

use std::collections::BTreeSet;

use fdb_shared::cluster_math::desired_coordinator_count;

use super::super::removals::placement::hosted_coordinator;
use super::super::snapshot::{ClusterSnapshot, GroupView};
use super::candidates::coordinator_candidates;

/// Whether `group` hosts a current coordinator that no coordinator change could move
/// now: the reachable candidates besides it span fewer zones than the coordinators
/// wanted. Only for one usable region (several regions draw coordinators from the
/// other clusters too, which this snapshot does not hold).
pub(crate) fn coordinator_cannot_move(snapshot: &ClusterSnapshot, group: &GroupView<'_>) -> bool {
    let spec = &snapshot.cluster().spec;
    if spec.usable_regions() > 1 || hosted_coordinator(snapshot, group).is_none() {
        return false;
    }
    let wanted = usize::try_from(desired_coordinator_count(
        &spec.redundancy_mode(),
        spec.usable_regions(),
    ))
    .unwrap_or(1);
    let (candidates, _gaps) = coordinator_candidates(snapshot, &[], &|candidate| {
        candidate.id() == group.id()
            || candidate.is_marked_for_removal()
            || !candidate.is_reporting()
            || candidate
                .processes()
                .any(|p| p.excluded || p.under_maintenance)
    });
    let zones: BTreeSet<&str> = candidates.iter().map(|c| c.zone.as_str()).collect();
    zones.len() < wanted
}
