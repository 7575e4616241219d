//! Whether the coordinators must change, and to which (the decision of the step that
//! changes them, `steps/change_coordinators/mod.rs`, and of the exclusions that wait
//! for it): when a current coordinator is unreachable, excluded, under
//! maintenance, marked for removal, not a live stateful process group or of a class
//! `coordinatorSelection` does not name, when two share a
//! zone (in three_data_hall: when one reports no data hall, or a hall holds more than a
//! third of them), when their number differs from the desired one, or when one is on a pod about
//! to be deleted (the next batch of UpdatePods, a process RemoveIncompatibleProcesses
//! restarts), chooses new coordinators (same rules as the initial choice) and changes
//! them; the new connection string goes to `status.connectionString`.
//!
//! A planned move (off a group marked for removal or a pod about to go) first waits, for
//! a bounded time, for new process groups of the rollout to report, and then prefers
//! groups already on the current pod spec: during a rollout the coordinators move once,
//! not once per zone (each move is a recovery). A failed coordinator moves at once.

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::address::ProcessAddress;
use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::ProcessGroupConditionType;
use fdb_shared::cluster_math::desired_coordinator_count;
use fdb_shared::connection_string::ConnectionString;
use fdb_shared::status_json::DatabaseStatus;

use super::candidates::{coordinator_candidates, current_candidates};
use crate::controller::coordinators::{
    CoordinatorCandidate, configured_datacenters, coordinators_per_hall, database_candidates,
    dc_limit, priority, select_coordinators_spread,
};
use crate::controller::pass::forecast::upcoming;
use crate::controller::pass::plan::PassFacts;
use crate::controller::removals::placement;
use crate::controller::safety::{self, Refusal};
use crate::controller::snapshot::{ClusterSnapshot, GroupView};

/// What to do about the coordinators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CoordinatorAction {
    /// They are fine.
    None,
    /// Something is wrong but cannot be fixed now.
    Wait(String),
    /// Change to these, because of the reason given.
    Change {
        /// The new coordinators.
        coordinators: Vec<ProcessAddress>,
        /// What was wrong.
        reason: String,
    },
}

/// Why the current coordinators are not acceptable, if they are not.
fn problem(
    cluster: &FoundationDBCluster,
    current: &ConnectionString,
    candidates: &[crate::controller::coordinators::CoordinatorCandidate],
    db: &DatabaseStatus,
    wanted: usize,
) -> Option<String> {
    if current.coordinators.len() != wanted {
        return Some(format!(
            "{} coordinators, {wanted} wanted",
            current.coordinators.len()
        ));
    }
    let mut zones = BTreeSet::new();
    let by_hall = cluster.spec.redundancy_mode().spreads_over_data_halls();
    let per_hall = coordinators_per_hall(wanted);
    let mut halls: BTreeMap<String, usize> = BTreeMap::new();
    let tls = cluster.spec.tls_enabled();
    for coordinator in &current.coordinators {
        let text = coordinator.to_string();
        if coordinator.tls != tls {
            return Some(tls_mismatch(&text, tls));
        }
        let unreachable = db.client.coordinators.coordinators.iter().any(|c| {
            c.address.as_ref().map(ToString::to_string).as_deref() == Some(text.as_str())
                && c.reachable == Some(false)
        });
        if unreachable {
            return Some(format!("coordinator {text} is unreachable"));
        }
        // A coordinator may be hosted by another FoundationDBCluster resource of the same
        // database (one per data center): it is fine as long as it reports, is not
        // excluded, and its zone is distinct.
        let ours = candidates
            .iter()
            // `current` already says which match a coordinator: no formatting of every
            // candidate's address per coordinator.
            .find(|c| c.current && c.address.to_string() == text);
        if let Some(candidate) = ours
            && priority(&cluster.spec.coordinator_selection(), candidate.class).is_none()
        {
            // The Go operator's IsEligibleAsCandidate: with a coordinatorSelection, only
            // the classes it names may host coordinators.
            return Some(format!(
                "coordinator {text} is on {}, a {} process, a class spec.coordinatorSelection does not name",
                candidate.process_group_id, candidate.class
            ));
        }
        let zone = ours
            .map(|c| c.zone.clone())
            .or_else(|| reported_locality(db, coordinator).and_then(|(zone, _)| zone));
        if by_hall {
            let hall = ours
                .and_then(|c| c.hall.clone())
                .or_else(|| reported_locality(db, coordinator).and_then(|(_, hall)| hall));
            let Some(hall) = hall else {
                return Some(format!(
                    "coordinator {text} reports no data_hall locality (three_data_hall spreads coordinators across halls)"
                ));
            };
            let in_hall = halls.entry(hall.clone()).or_insert(0);
            *in_hall += 1;
            if *in_hall > per_hall {
                return Some(format!(
                    "more than {per_hall} coordinators in data hall {hall}: losing it would lose the majority"
                ));
            }
        }
        let Some(zone) = zone else {
            return Some(format!(
                "coordinator {text} is neither an eligible process group of {} nor a reporting, non-excluded process",
                cluster.metadata.name.as_deref().unwrap_or_default()
            ));
        };
        if !zones.insert(zone.clone()) {
            return Some(format!("two coordinators share zone {zone}"));
        }
    }
    None
}

/// Why a coordinator of the other kind (TLS or not) than `mainContainer.enableTls` asks
/// for must move.
fn tls_mismatch(coordinator: &str, tls: bool) -> String {
    if tls {
        format!(
            "coordinator {coordinator} does not use TLS, which mainContainer.enableTls asks for"
        )
    } else {
        format!("coordinator {coordinator} uses TLS, which mainContainer.enableTls turns off")
    }
}

/// The reporting processes that do not listen yet on an address of the kind (TLS or not)
/// `tls` says, read from their command lines (`--public_address=A[,B]`): the coordinators
/// can move to that kind only once every process listens on it (the Go operator's
/// CheckCoordinatorValidity), or the new coordinators could not reach each other.
pub(crate) fn not_listening_on(db: &DatabaseStatus, tls: bool) -> Vec<String> {
    db.cluster
        .processes
        .values()
        .filter(|process| !process.excluded)
        .filter_map(|process| {
            let command_line = process.command_line.as_deref()?;
            let listens = command_line
                .split_whitespace()
                .filter_map(|argument| argument.strip_prefix("--public_address="))
                .flat_map(|list| list.split(','))
                .filter_map(|address| {
                    // The unified image brackets IPv4 addresses too.
                    ProcessAddress::parse(address).ok().or_else(|| {
                        let (host, tail) = address.strip_prefix('[')?.split_once(']')?;
                        ProcessAddress::parse(&format!("{host}{tail}")).ok()
                    })
                })
                .any(|address| address.tls == tls);
            (!listens).then(|| {
                process
                    .address
                    .as_ref()
                    .map_or_else(|| "a process".to_owned(), ToString::to_string)
            })
        })
        .collect()
}

/// More current coordinators in one datacenter than [`dc_limit`] allows (the loss of
/// that datacenter would take the majority with it), among our candidates and `others`.
fn crowded_dc(
    current: &[String],
    ours: &[CoordinatorCandidate],
    others: &[CoordinatorCandidate],
    wanted: usize,
    configured: usize,
) -> Option<String> {
    let all: Vec<CoordinatorCandidate> = ours.iter().chain(others).cloned().collect();
    let limit = dc_limit(&all, wanted, configured)?;
    let mut per_dc: std::collections::BTreeMap<&str, usize> = Default::default();
    for coordinator in current {
        let dc = all
            .iter()
            .find(|c| &c.address.to_string() == coordinator)
            .and_then(|c| c.dc.as_deref());
        if let Some(dc) = dc {
            *per_dc.entry(dc).or_insert(0) += 1;
        }
    }
    per_dc
        .into_iter()
        .find(|(_, count)| *count > limit)
        .map(|(dc, count)| {
            format!("{count} coordinators in datacenter {dc}, at most {limit} wanted")
        })
}

/// The zone and data hall of the reporting, non-excluded process at `address` (matched
/// by its address, or by its DNS name locality when the connection string uses DNS
/// names).
fn reported_locality(
    db: &DatabaseStatus,
    address: &ProcessAddress,
) -> Option<(Option<String>, Option<String>)> {
    db.cluster.processes.values().find_map(|process| {
        if process.excluded {
            return None;
        }
        let reported = process.address.as_ref()?;
        let same_address = reported.host == address.host && reported.port == address.port;
        let same_dns_name = process.locality.dns_name.as_deref() == Some(address.host.as_str())
            && reported.port == address.port;
        (same_address || same_dns_name).then(|| {
            (
                process.locality.zoneid.clone(),
                process.locality.data_hall.clone(),
            )
        })
    })
}

/// A current coordinator hosted by a group marked for removal: it must move before the
/// group is excluded and its pod deleted.
fn marked_coordinator(snapshot: &ClusterSnapshot) -> Option<String> {
    snapshot
        .groups()
        .filter(|g| g.is_marked_for_removal())
        .find_map(|g| {
            let coordinator = placement::hosted_coordinator(snapshot, &g)?;
            Some(format!(
                "coordinator {coordinator} is on process group {}, which is marked for removal",
                g.id()
            ))
        })
}

/// The groups of other instances of the database waiting for their exclusion (the
/// exclusion lists, [`crate::controller::safety::exclusion_sync`], read this pass): they will
/// go, so they take no coordinator, and one that hosts a coordinator is a planned move,
/// made once for every instance.
fn listed_for_exclusion(snapshot: &ClusterSnapshot, facts: &PassFacts) -> BTreeSet<String> {
    facts
        .answers
        .exclusion_lists
        .as_ref()
        .map(|lists| {
            lists
                .pending
                .iter()
                .filter(|e| snapshot.group(&e.group).is_none())
                .map(|e| e.group.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// A current coordinator on a group of another instance that waits for its exclusion.
fn listed_coordinator(
    current_text: &[String],
    others: &[CoordinatorCandidate],
    listed: &BTreeSet<String>,
) -> Option<String> {
    others
        .iter()
        .filter(|c| c.current && listed.contains(&c.process_group_id))
        .find(|c| current_text.contains(&c.address.to_string()))
        .map(|c| {
            format!(
                "coordinator {} is on process group {}, which another operator instance marked for removal",
                c.address, c.process_group_id
            )
        })
}

/// Whether the group's pod waits for a spec update (it will be deleted or replaced).
fn needs_pod_update(snapshot: &ClusterSnapshot, group_id: &str) -> bool {
    snapshot.group(group_id).is_some_and(|g| {
        g.status
            .condition_since(&ProcessGroupConditionType::IncorrectPodSpec)
            .is_some()
    })
}

/// How long a planned move of the coordinators waits for new process groups to report
/// (so they can take the coordinators in one move); a group not up by then does not
/// hold the move any longer.
const NEW_GROUP_WAIT_SECONDS: i64 = 300;

/// New stateful process groups on the current spec whose processes have not reported
/// yet (for at most [`NEW_GROUP_WAIT_SECONDS`]): the replacements of a rollout, which
/// will soon be the best coordinators.
fn new_groups_coming(snapshot: &ClusterSnapshot) -> Vec<String> {
    let now = snapshot.now_unix();
    snapshot
        .live_groups()
        .filter(|g| g.status.process_class.is_stateful() && !g.is_reporting())
        .filter(|g| !needs_pod_update(snapshot, g.id()))
        .filter(|g| {
            g.status
                .condition_since(&ProcessGroupConditionType::MissingProcesses)
                .is_none_or(|since| now.saturating_sub(since) < NEW_GROUP_WAIT_SECONDS)
        })
        .filter(|g| {
            g.pod_head()
                .is_none_or(|pod| pod.metadata.deletion_timestamp.is_none())
        })
        .map(|g| g.id().to_owned())
        .collect()
}

/// With several usable regions the coordinators spread over every datacenter of the
/// database: the other clusters' processes are candidates too.
fn other_datacenters(
    snapshot: &ClusterSnapshot,
    db: &DatabaseStatus,
    current_text: &[String],
) -> Vec<CoordinatorCandidate> {
    let cluster = snapshot.cluster();
    if cluster.spec.usable_regions() <= 1 {
        return Vec::new();
    }
    let ours: BTreeSet<String> = snapshot.groups().map(|g| g.id().to_owned()).collect();
    database_candidates(
        db,
        &ours,
        current_text,
        cluster.spec.routing.use_dns_in_cluster_file(),
    )
}

/// Why the change waits: a planned move waits for the new groups of a rollout, every
/// move for an available database and, when the coordinators change kind (TLS), for
/// every process to listen on the new kind.
fn deferral(
    snapshot: &ClusterSnapshot,
    db: &DatabaseStatus,
    current: &ConnectionString,
    reason: &str,
    planned_only: bool,
) -> Option<String> {
    if planned_only {
        let coming = new_groups_coming(snapshot);
        if !coming.is_empty() {
            return Some(format!(
                "{reason}; waiting for the new process groups {} to report, so the coordinators move once",
                coming.join(", ")
            ));
        }
    }
    if let Err(refusal) = safety::available(snapshot) {
        return Some(format!("{reason}, but {refusal}"));
    }
    let kind = snapshot.cluster().spec.tls_enabled();
    if current.coordinators.iter().any(|c| c.tls != kind) {
        let behind = not_listening_on(db, kind);
        if let Some(first) = behind.first() {
            return Some(format!(
                "{reason}; deferring the change until every process listens on that kind of address ({} do not yet, {first} first)",
                behind.len()
            ));
        }
    }
    None
}

/// The coordinators chosen among the reachable candidates (during a rollout, groups
/// already on the new spec first; in three_data_hall, a third per hall; with `dcs`
/// datacenters in the regions of two usable regions, a third per datacenter).
fn choose(
    snapshot: &ClusterSnapshot,
    reachable: &[CoordinatorCandidate],
    wanted: usize,
    dcs: usize,
    current: &ConnectionString,
    reason: String,
) -> CoordinatorAction {
    // During a rollout, groups already on the new spec are preferred: the coordinators
    // then move once, not once per zone the rollout reaches.
    let cluster = snapshot.cluster();
    let settings = cluster.spec.coordinator_selection();
    let settled: Vec<_> = reachable
        .iter()
        .filter(|c| !needs_pod_update(snapshot, &c.process_group_id))
        .cloned()
        .collect();
    // three_data_hall: among groups reporting a data hall, a third in each hall.
    let by_hall = cluster.spec.redundancy_mode().spreads_over_data_halls();
    let choice = if settled.len() < reachable.len() {
        select_coordinators_spread(&settled, &settings, wanted, by_hall, dcs)
            .or_else(|_| select_coordinators_spread(reachable, &settings, wanted, by_hall, dcs))
    } else {
        select_coordinators_spread(reachable, &settings, wanted, by_hall, dcs)
    };
    match choice {
        Ok(chosen) => {
            let coordinators: Vec<ProcessAddress> = chosen.into_iter().map(|c| c.address).collect();
            if coordinators == current.coordinators {
                CoordinatorAction::Wait(format!("{reason}, and no better choice exists"))
            } else {
                CoordinatorAction::Change {
                    coordinators,
                    reason,
                }
            }
        }
        Err(error) => CoordinatorAction::Wait(format!("{reason}, but {error}")),
    }
}

/// Decides from the snapshot (nothing before the database is configured); the pods
/// about to be deleted come from the pass's one forecast
/// ([`upcoming`], under the configured replace policy).
pub(crate) fn decide(snapshot: &ClusterSnapshot, facts: &PassFacts) -> CoordinatorAction {
    let status = snapshot.status();
    if !status.configured || status.connection_string.is_none() {
        return CoordinatorAction::None;
    }
    let db = match safety::database(snapshot) {
        Ok(db) => db,
        Err(Refusal::NoDatabase) => return CoordinatorAction::None,
        Err(refusal) => return CoordinatorAction::Wait(refusal.to_string()),
    };
    let cluster = snapshot.cluster();
    let Some(current) = status
        .connection_string
        .as_deref()
        .and_then(|s| ConnectionString::parse(s).ok())
    else {
        return CoordinatorAction::Wait("no valid connection string in the status".to_owned());
    };
    let current_text: Vec<String> = current
        .coordinators
        .iter()
        .map(ToString::to_string)
        .collect();
    let pending = upcoming(facts, snapshot);
    let pending_groups = pending.as_ref().map(|p| &p.groups);
    // Never a group whose processes are excluded or under maintenance, nor one whose pod
    // is about to be deleted.
    let unusable = |group: &GroupView<'_>| {
        group.processes().any(|p| p.excluded || p.under_maintenance)
            || pending_groups.is_some_and(|groups| groups.contains(group.id()))
    };
    let wanted = usize::try_from(desired_coordinator_count(
        &cluster.spec.redundancy_mode(),
        cluster.spec.usable_regions(),
    ))
    .unwrap_or(1);
    // With several usable regions the coordinators spread over every datacenter of the
    // database: the other clusters' processes are candidates too.
    let mut others = other_datacenters(snapshot, db, &current_text);
    let listed = listed_for_exclusion(snapshot, facts);
    // A planned move (off a group marked for removal, here or by another instance, or
    // a pod about to be deleted) can wait for the new groups of a rollout; a failed
    // coordinator cannot.
    let planned = marked_coordinator(snapshot)
        .or_else(|| listed_coordinator(&current_text, &others, &listed))
        .or_else(|| pending.as_ref().map(|p| p.reason.clone()));
    others.retain(|c| !listed.contains(&c.process_group_id));
    // Several usable regions: at most a third per datacenter of the regions (the rule
    // is off only in its mutation test).
    let dcs = if facts.rules.coordinator_spread {
        configured_datacenters(&cluster.spec)
    } else {
        0
    };
    // Whether the coordinators are fine reads only the current ones' candidates, unless
    // datacenters are counted (every candidate's datacenter then counts, `dc_limit` in
    // the coordinators module): every candidate is built only when a change is wanted.
    let datacenters_count = !others.is_empty() || dcs > 1;
    let mut candidates = if datacenters_count {
        coordinator_candidates(snapshot, &current_text, &unusable).0
    } else {
        current_candidates(snapshot, &current.coordinators, &current_text, &unusable)
    };
    let failure = problem(cluster, &current, &candidates, db, wanted)
        .or_else(|| crowded_dc(&current_text, &candidates, &others, wanted, dcs));
    let Some(reason) = failure.clone().or(planned) else {
        return CoordinatorAction::None;
    };
    if let Some(wait) = deferral(snapshot, db, &current, &reason, failure.is_none()) {
        return CoordinatorAction::Wait(wait);
    }
    if !datacenters_count {
        candidates = coordinator_candidates(snapshot, &current_text, &unusable).0;
    }
    let reachable: Vec<_> = candidates
        .into_iter()
        .filter(|c| {
            snapshot
                .group(&c.process_group_id)
                .is_some_and(|g| g.is_reporting())
        })
        .chain(others)
        .collect();
    choose(snapshot, &reachable, wanted, dcs, &current, reason)
}

#[cfg(test)]
#[path = "change_tests.rs"]
mod tests;
