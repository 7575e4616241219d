//! The fault-tolerance budget every deletion of running pods spends: which zones are
//! down now, how many more may go ([`zone_budget`]), and whether taking given zones down
//! stays within it ([`may_take_down`]).

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::cluster_math::fault_tolerance;

use super::{Refusal, ZoneDown, available_and_healthy};
use crate::controller::objects::pod_is_running;
use crate::controller::snapshot::{ClusterSnapshot, GroupView};

/// How many zones may be down at once, and which are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ZoneBudget {
    /// The redundancy mode's fault tolerance, capped by `maxZonesWithUnavailablePods`.
    pub tolerated: usize,
    /// How many more zone failures the database reports it survives (the lower of
    /// availability and data), when the status was read.
    pub reported: Option<usize>,
    /// The zones down now.
    pub down: Vec<ZoneDown>,
    /// The redundancy mode keeps one copy (`single`): it tolerates no zone failure, yet
    /// a planned restart of one zone at a time leaves that zone's data unavailable, not
    /// lost, so one zone may go down while none is (the Go operator's desired fault
    /// tolerance of 0). Off when `maxZonesWithUnavailablePods` is 0.
    pub one_zone_at_a_time: bool,
}

impl ZoneBudget {
    /// How many more zones may go down now.
    pub(crate) fn remaining(&self) -> usize {
        if self.one_zone_at_a_time {
            return usize::from(self.down.is_empty());
        }
        let ours = self.tolerated.saturating_sub(self.down.len());
        self.reported.map_or(ours, |reported| ours.min(reported))
    }
}

/// Whether a group counts as down: not fully excluded, and its pod missing, terminating
/// or not running, or (with a readable status) fewer processes reporting than it runs.
fn is_down(snapshot: &ClusterSnapshot, group: &GroupView<'_>) -> bool {
    if group.status.exclusion_timestamp.is_some() {
        return false;
    }
    if !group.pod_head().is_some_and(pod_is_running) {
        return true;
    }
    let expected = group.servers_per_pod();
    snapshot.database_status().is_some()
        && u32::try_from(group.processes().count()).unwrap_or(u32::MAX) < expected
}

/// The zone a group counts in for [`zone_budget`] and [`may_take_down`] (its fault
/// domain, else its pod's zone; a group of unknown zone is its own zone).
pub(crate) fn group_zone(group: &GroupView<'_>) -> String {
    group
        .status
        .fault_domain
        .clone()
        .or_else(|| group.pod_zone().map(str::to_owned))
        .unwrap_or_else(|| format!("{} (zone unknown)", group.id()))
}

/// The fault-tolerance budget of the cluster now. One pass over the groups.
pub(crate) fn zone_budget(snapshot: &ClusterSnapshot) -> ZoneBudget {
    let spec = snapshot.spec();
    let mut tolerated = usize::try_from(fault_tolerance(&spec.redundancy_mode())).unwrap_or(0);
    let one_zone_at_a_time = tolerated == 0 && spec.max_zones_with_unavailable_pods != Some(0);
    if let Some(max) = spec.max_zones_with_unavailable_pods {
        tolerated = tolerated.min(usize::try_from(max).unwrap_or(0));
    }
    let reported = snapshot.database_status().and_then(|db| {
        let tolerance = &db.cluster.fault_tolerance;
        let lowest = [
            tolerance.max_zone_failures_without_losing_availability,
            tolerance.max_zone_failures_without_losing_data,
        ]
        .into_iter()
        .flatten()
        .min()?;
        Some(usize::try_from(lowest).unwrap_or(0))
    });
    let mut down: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for group in snapshot.groups() {
        if is_down(snapshot, &group) {
            down.entry(group_zone(&group))
                .or_default()
                .push(group.id().to_owned());
        }
    }
    ZoneBudget {
        tolerated,
        reported,
        down: down
            .into_iter()
            .map(|(zone, groups)| ZoneDown { zone, groups })
            .collect(),
        one_zone_at_a_time,
    }
}

/// Taking down `zones` now keeps the cluster within its fault tolerance: zones already
/// down cost nothing more, every other zone costs one of [`ZoneBudget::remaining`].
pub(crate) fn may_take_down(
    snapshot: &ClusterSnapshot,
    zones: &BTreeSet<String>,
) -> Result<(), Refusal> {
    let budget = zone_budget(snapshot);
    if budget.one_zone_at_a_time && budget.down.is_empty() && !zones.is_empty() {
        // Single redundancy: the zone's data is unavailable until it returns, so the
        // next zone waits until every shard has its replica again.
        available_and_healthy(snapshot)?;
    }
    let already: BTreeSet<&str> = budget.down.iter().map(|z| z.zone.as_str()).collect();
    let requested: Vec<String> = zones
        .iter()
        .filter(|zone| !already.contains(zone.as_str()))
        .cloned()
        .collect();
    let remaining = budget.remaining();
    // A zone already down costs nothing more only while the zones down are within what
    // the redundancy tolerates. Beyond it, "down" zones still serve data (a zone counts
    // as down for a new stateless pod that does not report yet), and a storage pod of one
    // of them may hold the last live replica of some shard (issue 37: with storage-1 gone
    // and new pods starting in three zones, storage-2 was deleted as "free"). The Go
    // operator deletes no pod while the database lacks its desired fault tolerance
    // (`CanDeletePods` in pkg/podmanager of FoundationDB/fdb-kubernetes-operator).
    let capacity = if budget.one_zone_at_a_time {
        1
    } else {
        budget.tolerated
    };
    if requested.len() <= remaining && budget.down.len() <= capacity {
        return Ok(());
    }
    let requested = if requested.is_empty() {
        zones.iter().cloned().collect()
    } else {
        requested
    };
    Err(Refusal::FaultTolerance {
        requested,
        down: budget.down,
        remaining,
    })
}
