//! Whether the cluster-wide kill of an incompatible upgrade can bring the database back
//! (issue 25, the Go case "upgrading a cluster and no coordinator is restarted"): the
//! processes it restarts come up on the new version and can only form a database with a
//! majority of the coordinators on that version too. Coordinators that keep running on
//! the old version (their groups in `buggify.ignoreDuringRestart`: the user asked the
//! operator not to restart them) hold the old quorum; when too few of the others are
//! restarted to make a majority, the kill cannot succeed: every restarted process would
//! wait outside the database until the user restarts the kept coordinators. The Go
//! operator kills anyway and the database is down meanwhile; ours refuses the kill and
//! says why, so the database stays up on the old version until the user lets the
//! coordinators be restarted.

use std::collections::BTreeSet;

use fdb_shared::connection_string::ConnectionString;

use super::super::removals::placement::hosted_coordinator;
use super::super::snapshot::{ClusterSnapshot, GroupView};

/// Coordinators the upgrade's kill would leave on the old version, with too few of the
/// others restarted to form a majority on the new one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the kill would restart {restarted} of the {total} coordinators onto the new version; the others keep running on the old one (spec.buggify.ignoreDuringRestart: {}), so the restarted processes could not reach a quorum and the database would be down until they are restarted: the kill waits until they can be (take them out of spec.buggify.ignoreDuringRestart)",
    .kept.join(", ")
)]
pub(crate) struct QuorumKept {
    /// The kept coordinators, as `<group> (<coordinator address>)`, in status order.
    pub kept: Vec<String>,
    /// How many coordinators the kill restarts.
    pub restarted: usize,
    /// How many coordinators the connection string names.
    pub total: usize,
}

/// The coordinators' quorum the kill would leave behind, if any. `restarted(group)`
/// says whether the kill restarts the group's processes (or they already run the new
/// version); a coordinator's group it does not restart is kept on the old version when
/// the user keeps it out of restarts and its processes report.
pub(crate) fn quorum_kept(
    snapshot: &ClusterSnapshot,
    restarted: impl Fn(&GroupView<'_>) -> bool,
) -> Option<QuorumKept> {
    let total = snapshot
        .status()
        .connection_string
        .as_deref()
        .and_then(|text| ConnectionString::parse(text).ok())?
        .coordinators
        .len();
    let mut kept = Vec::new();
    // By address: a coordinator is counted once, whichever groups claim it.
    let mut restarted_coordinators = BTreeSet::new();
    for group in snapshot.groups() {
        let Some(coordinator) = hosted_coordinator(snapshot, &group) else {
            continue;
        };
        if restarted(&group) {
            restarted_coordinators.insert(coordinator);
        } else if snapshot.ignored_during_restart(group.id()) && group.processes().next().is_some()
        {
            kept.push(format!("{} ({coordinator})", group.id()));
        }
    }
    let restarted = restarted_coordinators.len();
    // A majority of the coordinators must be on the new version for it to recover.
    (!kept.is_empty() && restarted * 2 <= total).then_some(QuorumKept {
        kept,
        restarted,
        total,
    })
}
