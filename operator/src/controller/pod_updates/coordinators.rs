//! The rollout of pod spec changes and the coordinators: which candidate groups host one, the order of the
//! zones, the wait for them to move first, and whether they can move at all (issue 26,
//! short seed 26).
//!
//! A coordinator's pod is never deleted: the coordinators move off a batch first. When
//! the other eligible groups cannot hold them (five coordinators need five zones, and the
//! pods of the other stateful groups were rescheduled onto four nodes), ChangeCoordinators
//! can never move them and the batch would wait forever. The Go operator deletes such a
//! pod anyway and lets ChangeCoordinators repair the coordinators afterwards; we keep the
//! coordinator up instead and replace its process group: the replacement is scheduled
//! where no pod of its class runs (a zone the coordinators can use), the coordinator
//! moves to it as off any group marked for removal, and the old group is excluded and
//! removed.

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::api::RedundancyMode;
use fdb_shared::cluster_math::desired_coordinator_count;
use fdb_shared::connection_string::ConnectionString;

use crate::controller::coordinators::candidates::coordinator_candidates;
use crate::controller::coordinators::{
    CoordinatorChoiceError, configured_datacenters, database_candidates, select_coordinators_spread,
};
use crate::controller::pod_updates::{Deletion, PodToDelete};
use crate::controller::removals::placement;
use crate::controller::snapshot::ClusterSnapshot;

/// Why the coordinators could not be placed on any group but `leaving` (the groups of
/// the next batch), once every stateful group's pod is placed and its processes report;
/// `None` when they could, or when that cannot be told yet (a pod not placed, a group
/// not reporting: it may give the zone that is missing once it is back).
pub(crate) fn unplaceable_without(
    snapshot: &ClusterSnapshot,
    leaving: &BTreeSet<String>,
) -> Option<CoordinatorChoiceError> {
    let cluster = snapshot.cluster();
    let current: Vec<String> = snapshot
        .status()
        .connection_string
        .as_deref()
        .and_then(|text| ConnectionString::parse(text).ok())
        .map(|cs| cs.coordinators.iter().map(ToString::to_string).collect())
        .unwrap_or_default();
    let (ours, gaps) = coordinator_candidates(snapshot, &current, &|group| {
        leaving.contains(group.id()) || group.processes().any(|p| p.excluded || p.under_maintenance)
    });
    let all_back = gaps.waiting.is_empty()
        && ours.iter().all(|c| {
            snapshot
                .group(&c.process_group_id)
                .is_some_and(|g| g.is_reporting())
        });
    if !all_back {
        return None;
    }
    let mut candidates = ours;
    // With several usable regions the coordinators spread over every datacenter of the
    // database, as ChangeCoordinators chooses them.
    if cluster.spec.usable_regions() > 1 {
        let db = snapshot.database_status()?;
        let own: BTreeSet<String> = snapshot.groups().map(|g| g.id().to_owned()).collect();
        candidates.extend(database_candidates(
            db,
            &own,
            &current,
            cluster.spec.routing.use_dns_in_cluster_file(),
        ));
    }
    let wanted = usize::try_from(desired_coordinator_count(
        &cluster.spec.redundancy_mode(),
        cluster.spec.usable_regions(),
    ))
    .unwrap_or(1);
    let by_hall = cluster.spec.redundancy_mode() == RedundancyMode::ThreeDataHall;
    select_coordinators_spread(
        &candidates,
        &cluster.spec.coordinator_selection(),
        wanted,
        by_hall,
        configured_datacenters(&cluster.spec),
    )
    .err()
}

/// The coordinator each candidate group hosts, by group ID.
pub(super) fn coordinators_hosted(
    snapshot: &ClusterSnapshot,
    by_zone: &BTreeMap<String, Vec<PodToDelete>>,
) -> BTreeMap<String, String> {
    by_zone
        .values()
        .flatten()
        .filter_map(|p| {
            let group = snapshot.group(&p.group)?;
            Some((
                p.group.clone(),
                placement::hosted_coordinator(snapshot, &group)?,
            ))
        })
        .collect()
}

/// The zones in the order they are updated: the zone already in maintenance first
/// (a deletion there may have been interrupted), zones hosting coordinators last (by
/// then updated groups can take the coordinators, so they move once, not once per zone).
pub(super) fn zones_in_order(
    by_zone: &BTreeMap<String, Vec<PodToDelete>>,
    coordinator_of: &BTreeMap<String, String>,
    current_maintenance: Option<&str>,
) -> Vec<String> {
    let mut zones: Vec<String> = by_zone.keys().cloned().collect();
    zones.sort_by_key(|zone| {
        by_zone
            .get(zone)
            .is_some_and(|pods| pods.iter().any(|p| coordinator_of.contains_key(&p.group)))
    });
    if let Some(current) = current_maintenance
        && let Some(position) = zones.iter().position(|z| z == current)
    {
        let zone = zones.remove(position);
        zones.insert(0, zone);
    }
    zones
}

/// When the batch holds pods hosting coordinators, the coordinators move off them first.
pub(super) fn coordinators_move_first(
    pods: &[PodToDelete],
    chosen: &[String],
    coordinator_of: &BTreeMap<String, String>,
) -> Option<Deletion> {
    let hosting: Vec<String> = pods
        .iter()
        .filter_map(|p| {
            let coordinator = coordinator_of.get(&p.group)?;
            Some(format!("{} hosts coordinator {coordinator}", p.pod))
        })
        .collect();
    (!hosting.is_empty()).then(|| Deletion::MoveCoordinators {
        groups: pods.iter().map(|p| p.group.clone()).collect(),
        reason: format!(
            "pods of zone {} need an update, but {}; the coordinators move first",
            chosen.join(", "),
            hosting.join(", ")
        ),
    })
}

/// A wait for the coordinators to move, unless they cannot move at all: then the groups
/// hosting them are replaced ([`Deletion::ReplaceCoordinatorHosts`]).
pub(super) fn unless_immovable(
    snapshot: &ClusterSnapshot,
    move_first: Deletion,
    coordinator_of: &BTreeMap<String, String>,
) -> Deletion {
    let Deletion::MoveCoordinators { groups, reason } = &move_first else {
        return move_first;
    };
    let Some(error) = unplaceable_without(snapshot, groups) else {
        return move_first;
    };
    let hosts: Vec<String> = groups
        .iter()
        .filter(|group| coordinator_of.contains_key(*group))
        .cloned()
        .collect();
    Deletion::ReplaceCoordinatorHosts {
        reason: format!(
            "{reason}, but they cannot move: {error}; replacing {} instead",
            hosts.join(", ")
        ),
        groups: hosts,
    }
}
