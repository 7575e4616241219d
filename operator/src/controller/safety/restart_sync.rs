//! One restart for a database shared by several operator instances (the Go operator's
//! global synchronization mode, its `pendingForRestart` / `readyForRestart` lists).
//!
//! Each instance kills only what it sees; with several instances on one database, a
//! knob change on all of them would be one kill per instance, each taking that
//! instance's zones down at once: beyond the fault tolerance when an instance holds
//! more than it tolerates (dc2's two storage zones of a `double` region). So the
//! instances agree through the database ([`crate::fdb::restart_lists`]): each writes
//! its groups that need a restart (pending) and those ready for it (ready: the instance
//! would kill them now), and the one that finds every pending group of the database
//! ready, with no entry added for [`SETTLE_SECONDS`] (so an instance a pass behind can
//! add its own), kills every process of the database at once and clears the ready
//! entries. The decisions here are pure; the lists are read and written by
//! `Action::SyncRestartLists` and `Action::ClearReadyForRestart`.

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::address::ProcessAddress;

use super::super::kill_target::{KillReason, KillTarget};
use super::super::snapshot::ClusterSnapshot;
use crate::fdb::RestartEntry;

/// How long no instance may have added an entry before the kill (the Go operator's
/// `--global-synchronization-wait-duration` default).
pub(crate) const SETTLE_SECONDS: i64 = 30;

/// Both lists, every instance's entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RestartLists {
    /// Groups that need a restart.
    pub pending: Vec<RestartEntry>,
    /// Groups ready for it.
    pub ready: Vec<RestartEntry>,
}

impl RestartLists {
    /// While an entry was added less than [`SETTLE_SECONDS`] ago, the wait (its reason,
    /// and the seconds left) that lets an instance a pass behind add its own: `what`
    /// says what the listed groups wait for ("needs a restart").
    pub(crate) fn unsettled(&self, now: i64, what: &str) -> Option<(String, u64)> {
        let newest = self
            .pending
            .iter()
            .chain(&self.ready)
            .map(|e| e.since)
            .max()
            .unwrap_or(i64::MIN);
        let quiet = now.saturating_sub(newest);
        (quiet < SETTLE_SECONDS).then(|| {
            (
                format!(
                    "every process group of the database that {what} is ready; waiting {SETTLE_SECONDS} s after the last one was listed ({quiet} s ago) for the other operator instances"
                ),
                (SETTLE_SECONDS - quiet).unsigned_abs(),
            )
        })
    }
}

/// Whether this instance restarts through the database's lists: when
/// `automationOptions.synchronizationMode` is `global`, or, unless it is `local`, when
/// the database runs processes of other instances (process groups this cluster does not
/// have), so a kill of this instance's processes alone would not be the only one.
pub(crate) fn synchronized(snapshot: &ClusterSnapshot) -> bool {
    match snapshot
        .spec()
        .automation_options
        .synchronization_mode
        .as_deref()
    {
        Some("global") => true,
        Some("local") => false,
        _ => snapshot.database_status().is_some_and(|status| {
            status.cluster.processes.values().any(|p| {
                p.locality
                    .instance_id
                    .as_deref()
                    .is_some_and(|id| snapshot.group(id).is_none())
            })
        }),
    }
}

/// The changes that bring `owner`'s entries of a list (`listed`: the whole list) to
/// `wanted`: entries to add (stamped `now`) and entries to remove. Other instances'
/// entries are never touched.
pub(crate) fn own_changes(
    owner: &str,
    listed: &[RestartEntry],
    wanted: &[String],
    now: i64,
) -> (Vec<RestartEntry>, Vec<RestartEntry>) {
    let own: BTreeSet<&str> = listed
        .iter()
        .filter(|e| e.owner == owner)
        .map(|e| e.group.as_str())
        .collect();
    let wanted_set: BTreeSet<&str> = wanted.iter().map(String::as_str).collect();
    let add = wanted_set
        .iter()
        .filter(|g| !own.contains(*g))
        .map(|g| RestartEntry {
            owner: owner.to_owned(),
            group: (*g).to_owned(),
            since: now,
        })
        .collect();
    let remove = listed
        .iter()
        .filter(|e| e.owner == owner && !wanted_set.contains(e.group.as_str()))
        .cloned()
        .collect();
    (add, remove)
}

/// The list after `add` and `remove` were written.
pub(crate) fn applied(
    mut listed: Vec<RestartEntry>,
    add: Vec<RestartEntry>,
    remove: &[RestartEntry],
) -> Vec<RestartEntry> {
    listed.retain(|e| !remove.contains(e));
    listed.extend(add);
    listed
}

/// What the lists allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SharedKill {
    /// Not yet: why, and after how many seconds to look again.
    Wait {
        /// Why.
        reason: String,
        /// When to look again.
        after_seconds: u64,
    },
    /// Kill every reporting process of the database, and clear these ready entries.
    Kill {
        /// The processes, by group (`IncorrectCommandLine` for the ready ones, the
        /// others restarted alongside).
        targets: Vec<KillTarget>,
        /// The ready entries the kill serves.
        ready: Vec<RestartEntry>,
    },
}

/// Judges the lists of the whole database at `now` (see the module documentation):
/// every pending group that reports must be ready, and the newest entry at least
/// [`SETTLE_SECONDS`] old. Pending groups without a reporting process are left out (a
/// kill cannot restart them; they start on their new configuration).
pub(crate) fn decide_shared_kill(
    snapshot: &ClusterSnapshot,
    lists: &RestartLists,
    now: i64,
) -> SharedKill {
    let wait = |reason: String, after_seconds: u64| SharedKill::Wait {
        reason,
        after_seconds,
    };
    let Some(status) = snapshot.database_status() else {
        return wait("waiting for the database status".to_owned(), 5);
    };
    let mut reporting: BTreeMap<&str, Vec<ProcessAddress>> = BTreeMap::new();
    for process in status.cluster.processes.values() {
        if let (Some(id), Some(address)) = (&process.locality.instance_id, &process.address) {
            reporting
                .entry(id.as_str())
                .or_default()
                .push(address.clone());
        }
    }
    let ready: BTreeSet<&str> = lists.ready.iter().map(|e| e.group.as_str()).collect();
    let not_ready: Vec<&str> = lists
        .pending
        .iter()
        .map(|e| e.group.as_str())
        .filter(|g| reporting.contains_key(g) && !ready.contains(g))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !not_ready.is_empty() {
        return wait(
            format!(
                "{} process groups of the database need a restart but their operator instances have not marked them ready yet: {}",
                not_ready.len(),
                not_ready.join(", ")
            ),
            SETTLE_SECONDS.unsigned_abs(),
        );
    }
    if let Some((reason, after_seconds)) = lists.unsettled(now, "needs a restart") {
        return wait(reason, after_seconds);
    }
    let targets = reporting
        .into_iter()
        .map(|(group, mut addresses)| {
            addresses.sort_by_key(ToString::to_string);
            addresses.dedup();
            KillTarget {
                group: group.to_owned(),
                addresses,
                reason: if ready.contains(group) {
                    KillReason::IncorrectCommandLine
                } else {
                    KillReason::Alongside
                },
            }
        })
        .collect();
    SharedKill::Kill {
        targets,
        ready: lists.ready.clone(),
    }
}

#[cfg(test)]
#[path = "restart_sync_tests.rs"]
mod tests;
