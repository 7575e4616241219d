//! When an instance gives the global lock up at the end of a pass (docs/operations.md,
//! "Locks"). The Go operator gives it up only once its cluster is reconciled
//! (FoundationDB/fdb-kubernetes-operator PR 2117: releasing right after an operation lets
//! another instance start a disruptive one at once), so an instance whose cluster waits
//! for something else (pods that cannot be scheduled, capacity being added) stalls the
//! other instances until the lock expires (issue 2315, PR 2524).
//!
//! The rule here: an instance keeps the lock while one of its own operations is still
//! under way in the database (so no other instance acts between its steps) and gives it up
//! at the end of any other pass, reconciled or not. Under way means: the pass itself took
//! the lock for an action (this pass's snapshot predates it, so its effect is unknown
//! yet), a removal excluded but not yet included, a process group seen running whose
//! processes do not report (taken down and not back), or the maintenance zone on one of
//! its zones. A database whose status cannot be read keeps it too. The decision
//! ([`decide_at_pass_end`]) is pure; [`in_flight`] reads it from the snapshot.
//!
//! [`LockReleases`] remembers which clusters' instances gave the lock up and took no lock
//! since, so a pass that has nothing to give up reads no lock key.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use super::super::snapshot::ClusterSnapshot;

/// An operation of this instance still under way in the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InFlight {
    /// The pass took the lock for an action: its effect is not observed yet.
    LockedActionThisPass,
    /// The database's status could not be read.
    DatabaseUnknown,
    /// Removals excluded (or removed without exclusion) and not yet included.
    Removals(Vec<String>),
    /// Process groups seen running whose processes do not report.
    ProcessesDown(Vec<String>),
    /// The database's maintenance zone is one of this cluster's zones.
    Maintenance(String),
}

impl std::fmt::Display for InFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::LockedActionThisPass => f.write_str("this pass acted under the lock"),
            Self::DatabaseUnknown => f.write_str("the database status could not be read"),
            Self::Removals(groups) => write!(f, "removals in flight: {}", groups.join(", ")),
            Self::ProcessesDown(groups) => {
                write!(f, "processes not back: {}", groups.join(", "))
            }
            Self::Maintenance(zone) => write!(f, "zone {zone} is in maintenance"),
        }
    }
}

/// What the instance does with the lock at the end of a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PassEndLock {
    /// It gives the lock up (when it holds it).
    Release,
    /// It keeps it: an operation of its own is under way.
    Keep(InFlight),
}

/// The decision at the end of a pass: a reconciled cluster gives the lock up; otherwise
/// the instance keeps it only while an operation of its own is under way.
pub(crate) fn decide_at_pass_end(reconciled: bool, in_flight: Option<InFlight>) -> PassEndLock {
    match in_flight {
        Some(operation) if !reconciled => PassEndLock::Keep(operation),
        _ => PassEndLock::Release,
    }
}

/// The first operation of this instance still under way, as the snapshot shows it;
/// `locked_this_pass` when the pass took the lock for an action.
pub(crate) fn in_flight(snapshot: &ClusterSnapshot, locked_this_pass: bool) -> Option<InFlight> {
    if locked_this_pass {
        return Some(InFlight::LockedActionThisPass);
    }
    let Some(database) = snapshot.database_status() else {
        return Some(InFlight::DatabaseUnknown);
    };
    let removals: Vec<String> = snapshot
        .groups()
        .filter(|group| {
            let status = group.status;
            group.is_marked_for_removal()
                && (!status.excluded_targets.is_empty()
                    || status.exclusion_timestamp.is_some()
                    || status.exclusion_skipped)
        })
        .map(|group| group.id().to_owned())
        .collect();
    if !removals.is_empty() {
        return Some(InFlight::Removals(removals));
    }
    let down: Vec<String> = snapshot
        .live_groups()
        .filter(|group| !group.status.addresses.is_empty() && !group.is_reporting())
        .map(|group| group.id().to_owned())
        .collect();
    if !down.is_empty() {
        return Some(InFlight::ProcessesDown(down));
    }
    let zone = database.cluster.maintenance_zone.as_deref()?;
    snapshot
        .groups()
        .any(|group| group.status.fault_domain.as_deref() == Some(zone))
        .then(|| InFlight::Maintenance(zone.to_owned()))
}

/// Clusters (namespace, name) whose instance gave the lock up (or found it not its own)
/// and has not taken it since. Kept in memory only: after a restart each cluster reads
/// the lock key once more.
#[derive(Debug, Default)]
pub(crate) struct LockReleases {
    clusters: Mutex<BTreeSet<(String, String)>>,
}

impl LockReleases {
    /// The cluster's instance does not hold the lock.
    pub(crate) fn released(&self, namespace: &str, name: &str) {
        self.lock().insert((namespace.to_owned(), name.to_owned()));
    }

    /// The cluster's instance took (or confirmed) the lock.
    pub(crate) fn taken(&self, namespace: &str, name: &str) {
        self.lock().remove(&(namespace.to_owned(), name.to_owned()));
    }

    /// Whether the cluster's instance is known not to hold the lock.
    pub(crate) fn is_released(&self, namespace: &str, name: &str) -> bool {
        self.lock()
            .contains(&(namespace.to_owned(), name.to_owned()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<(String, String)>> {
        self.clusters.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
#[path = "lock_release_tests.rs"]
mod tests;
