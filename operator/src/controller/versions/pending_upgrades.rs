//! The database's pending-upgrade list, where each operator instance of a shared
//! database marks its process groups ready for an upgrade's cluster-wide kill: what one
//! instance writes to it, and who agreed once it did. Pure; the executor performs the
//! write and the upgrade's decision (`upgrade.rs`) reads who agreed.

use std::collections::BTreeSet;

use fdb_shared::FdbVersion;

use crate::fdb::PendingUpgrade;

/// What an instance writes to the pending-upgrade list, and who agreed after it did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct PendingListUpdate {
    /// Its groups not on the list for the target yet.
    pub add: Vec<PendingUpgrade>,
    /// Entries for other versions, left behind by an instance that crashed between its
    /// kill and clearing the list: they never count, and are dropped in the same write.
    pub stale: Vec<PendingUpgrade>,
    /// The groups on the list for the target once the write is done.
    pub agreed: BTreeSet<String>,
}

/// Plans the instance's write to the pending-upgrade list `listed` for `target`.
pub(crate) fn plan_pending_list(
    listed: &[PendingUpgrade],
    target: &FdbVersion,
    own: &[String],
) -> PendingListUpdate {
    let (current, stale): (Vec<&PendingUpgrade>, Vec<&PendingUpgrade>) =
        listed.iter().partition(|entry| entry.is_for(target));
    let mut agreed: BTreeSet<String> = current.iter().map(|e| e.group.clone()).collect();
    let add = own
        .iter()
        .filter(|group| agreed.insert((*group).clone()))
        .map(|group| PendingUpgrade::new(target, group.clone()))
        .collect();
    PendingListUpdate {
        add,
        stale: stale.into_iter().cloned().collect(),
        agreed,
    }
}
