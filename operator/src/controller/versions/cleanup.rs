//! The clusters whose instance made an upgrade's cluster-wide kill but could not clear
//! the pending-upgrade list yet: right after killing every process the database is
//! unavailable, so the clear is retried in later passes once it is available again.
//!
//! Kept in memory only: an operator that crashes before clearing forgets it, which is
//! harmless (the entries left name the old target, never count for another one, and the
//! next upgrade's first write drops them).

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

/// Clusters (namespace, name) with a pending-upgrade list still to clear.
#[derive(Debug, Default)]
pub struct UpgradeCleanup {
    clusters: Mutex<BTreeSet<(String, String)>>,
}

impl UpgradeCleanup {
    /// Remembers that the cluster `namespace`/`name` must clear the list.
    pub fn mark(&self, namespace: &str, name: &str) {
        self.lock().insert((namespace.to_owned(), name.to_owned()));
    }

    /// Whether the cluster still has to clear the list.
    pub fn is_marked(&self, namespace: &str, name: &str) -> bool {
        self.lock()
            .contains(&(namespace.to_owned(), name.to_owned()))
    }

    /// The cluster's list is cleared.
    pub fn done(&self, namespace: &str, name: &str) {
        self.lock().remove(&(namespace.to_owned(), name.to_owned()));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<(String, String)>> {
        self.clusters.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_per_cluster_until_done() {
        let cleanup = UpgradeCleanup::default();
        cleanup.mark("default", "a");
        assert!(cleanup.is_marked("default", "a"));
        assert!(!cleanup.is_marked("default", "b"));
        assert!(!cleanup.is_marked("other", "a"));
        cleanup.done("default", "a");
        assert!(!cleanup.is_marked("default", "a"));
    }
}
