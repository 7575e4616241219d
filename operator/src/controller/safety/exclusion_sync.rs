//! One exclusion for a database shared by several operator instances (the Go
//! operator's `pendingForExclusion` / `readyForExclusion` lists).
//!
//! Each instance excludes only what it sees: when the instances of one database replace
//! their transaction groups together (an upgrade to a new image), each excluding its own
//! would be one recovery per instance. So they agree through the database, as for
//! restarts ([`super::restart_sync`]): each writes its groups marked for removal that
//! need the exclude command (pending) and those its own gates would exclude now (ready);
//! the instance that finds every pending group of the database ready, with no entry
//! added for [`SETTLE_SECONDS`], excludes every ready group at once (one recovery) and
//! clears the entries it served. Other instances' groups are excluded by their locality
//! (`locality_instance_id:<group>`, the Go operator's choice with locality exclusions),
//! so this applies only while this instance excludes by locality; the owners then find
//! their groups excluded and record it. The decisions here are pure; the lists are read
//! and written by `Action::SyncExclusionLists` and `Action::ClearExclusionEntries`.

use std::collections::BTreeSet;

use super::super::removals::exclusions::uses_localities;
use super::super::snapshot::ClusterSnapshot;
use super::restart_sync::{RestartLists, SETTLE_SECONDS, synchronized};
use crate::fdb::{ExclusionTarget, RestartEntry};

/// Whether this instance excludes through the database's lists: it restarts through
/// them ([`synchronized`]) and excludes by locality.
pub(crate) fn shares_exclusions(snapshot: &ClusterSnapshot) -> bool {
    synchronized(snapshot) && uses_localities(snapshot)
}

/// What the lists allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SharedExclusion {
    /// Not yet: why, and after how many seconds to look again.
    Wait {
        /// Why.
        reason: String,
        /// When to look again.
        after_seconds: u64,
    },
    /// Exclude these groups (of every instance) at once, and clear these entries.
    Exclude {
        /// Every ready group of the database with its targets, this instance's first.
        groups: Vec<(String, Vec<ExclusionTarget>)>,
        /// The ready entries the exclusion serves (their keys are cleared from both
        /// lists).
        served: Vec<RestartEntry>,
    },
}

/// Judges the lists of the whole database at `now` for this instance, whose ready
/// groups are `own` (with their targets; `owner` its `processGroupIDPrefix`): every
/// pending group must be ready and the newest entry at least [`SETTLE_SECONDS`] old.
pub(crate) fn decide_shared_exclusion(
    lists: &RestartLists,
    owner: &str,
    own: &[(String, Vec<ExclusionTarget>)],
    now: i64,
) -> SharedExclusion {
    let wait = |reason: String, after_seconds: u64| SharedExclusion::Wait {
        reason,
        after_seconds,
    };
    let ready: BTreeSet<&str> = lists.ready.iter().map(|e| e.group.as_str()).collect();
    let not_ready: BTreeSet<&str> = lists
        .pending
        .iter()
        .map(|e| e.group.as_str())
        .filter(|g| !ready.contains(g))
        .collect();
    if !not_ready.is_empty() {
        return wait(
            format!(
                "{} process groups of the database wait for their exclusion but their operator instances have not marked them ready yet: {}",
                not_ready.len(),
                not_ready.into_iter().collect::<Vec<_>>().join(", ")
            ),
            SETTLE_SECONDS.unsigned_abs(),
        );
    }
    if let Some((reason, after_seconds)) = lists.unsettled(now, "waits for its exclusion") {
        return wait(reason, after_seconds);
    }
    let pending: BTreeSet<&str> = lists.pending.iter().map(|e| e.group.as_str()).collect();
    let mut groups: Vec<(String, Vec<ExclusionTarget>)> = own.to_vec();
    let mut served: Vec<RestartEntry> = Vec::new();
    for entry in lists
        .ready
        .iter()
        .filter(|e| pending.contains(e.group.as_str()))
    {
        if entry.owner != owner && !groups.iter().any(|(g, _)| *g == entry.group) {
            match ExclusionTarget::instance_id(&entry.group) {
                Ok(target) => groups.push((entry.group.clone(), vec![target])),
                // A key this operator would not write: it is not spliced into a
                // command, and its instance excludes it alone.
                Err(error) => {
                    tracing::warn!(group = %entry.group, %error, "not excluded for another instance");
                    continue;
                }
            }
        }
        served.push(entry.clone());
    }
    SharedExclusion::Exclude { groups, served }
}

#[cfg(test)]
#[path = "exclusion_sync_tests.rs"]
mod tests;
