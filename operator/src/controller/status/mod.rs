//! Building the cluster status (docs/controller-model.md, "Process group status") from what
//! a pass observed: process group conditions, health, version, connection string,
//! configuration, the `needs*` generations, and `generations.reconciled` only when the
//! cluster is Reconciled.

pub(crate) mod mutations;

use std::collections::BTreeMap;

use fdb_shared::api::cluster::{ProcessGroupConditionType, ProcessGroupStatus, RequiredAddressSet};
use fdb_shared::api::{
    DatabaseConfiguration, FoundationDBCluster, FoundationDBClusterSpec, FoundationDBClusterStatus,
    ProcessClass,
};
use fdb_shared::cluster_math::{
    configure_change_command, desired_coordinator_count, desired_database_configuration,
    desired_process_counts,
};
use fdb_shared::connection_string::ConnectionString;
use fdb_shared::status_json::DatabaseStatus;

use self::mutations::record_addresses;
use super::model::process_groups::{
    GroupFacts, ProcessFacts, TaintFacts, merge_conditions, observed_conditions,
};

/// The status to write, and whether it judges the cluster Reconciled.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StatusDecision {
    /// The whole new status (the write sends only what differs).
    pub status: FoundationDBClusterStatus,
    /// Whether this observation judged the cluster Reconciled.
    pub reconciled: bool,
}

/// What is known about the database this pass.
#[derive(Debug, Clone, Copy)]
pub enum DatabaseView<'a> {
    /// There is no connection string yet: no database to ask.
    NotCreated,
    /// `status json` failed.
    Unreachable,
    /// `status json` answered.
    Status(&'a DatabaseStatus),
}

/// What was observed of one process group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupObservation {
    /// The facts the conditions follow from.
    pub facts: GroupFacts,
    /// The group's current address (its pod IP), if any.
    pub address: Option<String>,
    /// The group's zone, if known.
    pub fault_domain: Option<String>,
    /// What the group's pod runs, when it has one.
    pub pod_shape: Option<PodShape>,
}

/// What a live pod was made with, for the status's `imageTypes`,
/// `storageServersPerDisk` and `logServersPerDisk`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodShape {
    /// Its image type (`split` when the pod does not say).
    pub image_type: String,
    /// The servers it runs (from the monitor conf key it mounts), when known.
    pub servers_per_pod: Option<u32>,
}

/// Everything the status is built from.
#[derive(Debug, Clone)]
pub struct StatusInputs<'a> {
    /// The cluster (spec and metadata).
    pub cluster: &'a FoundationDBCluster,
    /// The live status.
    pub previous: &'a FoundationDBClusterStatus,
    /// Observations by process group ID (groups without one keep their entry).
    pub observations: &'a BTreeMap<String, GroupObservation>,
    /// The database.
    pub database: DatabaseView<'a>,
    /// Whether the ConfigMap's data equals the desired data.
    pub config_map_in_sync: bool,
    /// The pass's time.
    pub now_unix: i64,
}

fn update_group(
    group: &ProcessGroupStatus,
    observation: Option<&GroupObservation>,
    now_unix: i64,
    database: DatabaseView<'_>,
) -> ProcessGroupStatus {
    let database_unavailable = match database {
        DatabaseView::NotCreated => false,
        DatabaseView::Unreachable => true,
        DatabaseView::Status(database) => !database.is_available(),
    };
    let Some(observation) = observation else {
        return group.clone();
    };
    let mut updated = group.clone();
    let observed = observed_conditions(&observation.facts, &group.process_group_conditions);
    updated.process_group_conditions =
        merge_conditions(&group.process_group_conditions, &observed, now_unix);
    // A taint is detected since it was added to the node, when the node says so.
    if let TaintFacts::Tainted { detected_since, .. } = observation.facts.taints
        && let Some(detected) = updated
            .process_group_conditions
            .iter_mut()
            .find(|c| c.condition_type == ProcessGroupConditionType::NodeTaintDetected)
    {
        detected.timestamp = detected.timestamp.min(detected_since);
    }
    if let Some(address) = &observation.address {
        record_addresses(
            &mut updated,
            std::slice::from_ref(address),
            database_unavailable,
        );
    }
    if let Some(zone) = &observation.fault_domain {
        updated.fault_domain = Some(zone.clone());
    }
    let unlisted = match database {
        DatabaseView::Status(database) => no_longer_listed(&updated, &observation.facts, database),
        DatabaseView::NotCreated | DatabaseView::Unreachable => false,
    };
    if unlisted || included_again(&updated, &observation.facts) {
        updated.exclusion_timestamp = None;
    }
    updated
}

/// Whether a group recorded as fully excluded runs again with none of its processes
/// excluded (someone ran `include all`, say): it must be excluded once more before
/// anything of it is removed, so its exclusion timestamp goes (as the Go operator
/// resets it). Only from a full report: with processes missing nothing is known.
fn included_again(group: &ProcessGroupStatus, facts: &GroupFacts) -> bool {
    let ProcessFacts::Reported {
        reporting,
        excluded,
    } = facts.processes
    else {
        return false;
    };
    group.exclusion_timestamp.is_some()
        && !group.exclusion_skipped
        && !excluded
        && reporting > 0
        && reporting >= facts.expected_processes
}

/// Whether a group recorded as fully excluded, with its pod or PVC still there, was
/// excluded with targets the database's exclusion list no longer holds (an `include`):
/// as [`included_again`], but also while its processes are missing from `status json`
/// (FoundationDB/fdb-kubernetes-operator PR #2504: then nothing else shows it).
fn no_longer_listed(group: &ProcessGroupStatus, facts: &GroupFacts, db: &DatabaseStatus) -> bool {
    let Some(configuration) = db.cluster.configuration.as_ref() else {
        return false;
    };
    let has_data_left = facts.pod.is_some()
        || matches!(
            facts.pvc,
            super::model::process_groups::Presence::Present
                | super::model::process_groups::Presence::Terminating
        );
    group.exclusion_timestamp.is_some()
        && !group.exclusion_skipped
        && has_data_left
        && group
            .excluded_targets
            .iter()
            .any(|target| !configuration.lists_exclusion(target))
}

/// Whether a group marked for removal only waits for resources that are terminating:
/// excluded (or removed without exclusion), nothing left that is not being deleted, and
/// something still terminating.
fn only_terminating_left(group: &ProcessGroupStatus, observation: &GroupObservation) -> bool {
    use super::model::process_groups::Presence;
    let facts = &observation.facts;
    let done = |p: Presence| {
        matches!(
            p,
            Presence::NotNeeded | Presence::Missing | Presence::Terminating
        )
    };
    let pod_terminating = facts.pod.as_ref().is_some_and(|p| p.terminating);
    group.is_marked_for_removal()
        && (group.exclusion_timestamp.is_some() || group.exclusion_skipped)
        && facts.pod.as_ref().is_none_or(|p| p.terminating)
        && done(facts.pvc)
        && done(facts.service)
        && (pod_terminating
            || facts.pvc == Presence::Terminating
            || facts.service == Presence::Terminating)
}

/// Live (not marked for removal) group counts per class.
pub(crate) fn live_counts(groups: &[ProcessGroupStatus]) -> BTreeMap<ProcessClass, i32> {
    let mut counts = BTreeMap::new();
    for group in groups.iter().filter(|g| !g.is_marked_for_removal()) {
        *counts.entry(group.process_class).or_insert(0) += 1;
    }
    counts
}

/// Whether the coordinators the database reports are all reachable and as many as
/// desired.
/// The database configuration as the status shows it: the proxy counts the spec uses
/// and not the others (`grv_proxies` and `commit_proxies` when the spec sets either,
/// else `proxies`), as the Go operator normalizes it.
fn shown_configuration(
    spec: &FoundationDBClusterSpec,
    live: &DatabaseConfiguration,
) -> DatabaseConfiguration {
    let mut shown = live.clone();
    let wanted = &spec.database_configuration;
    let separated =
        wanted.grv_proxies.is_some_and(|n| n > 0) || wanted.commit_proxies.is_some_and(|n| n > 0);
    if separated {
        shown.proxies = None;
    } else {
        shown.grv_proxies = None;
        shown.commit_proxies = None;
    }
    shown
}

fn coordinators_healthy(cluster: &FoundationDBCluster, status: &DatabaseStatus) -> bool {
    let coordinators = &status.client.coordinators;
    let wanted = desired_coordinator_count(
        &cluster.spec.redundancy_mode(),
        cluster.spec.usable_regions(),
    );
    coordinators.quorum_reachable.unwrap_or(false)
        && usize::try_from(wanted).is_ok_and(|w| w == coordinators.coordinators.len())
        && coordinators
            .coordinators
            .iter()
            .all(|c| c.reachable.unwrap_or(false))
}

/// Builds the new status. Pure: the same inputs give the same status, so an unchanged
/// world gives an unchanged status (and no write).
pub fn build_status(inputs: &StatusInputs<'_>) -> FoundationDBClusterStatus {
    build_status_judged(inputs).0
}

/// Like [`build_status`], also telling whether this observation judged the cluster
/// Reconciled. `generations.reconciled` keeps the last generation that was reconciled (as
/// the Go operator does, for the printer column), so it alone cannot tell that a cluster
/// that was reconciled has since lost a process.
pub(crate) fn build_status_judged(inputs: &StatusInputs<'_>) -> (FoundationDBClusterStatus, bool) {
    let cluster = inputs.cluster;
    let spec = &cluster.spec;
    let generation = cluster.metadata.generation.unwrap_or(0);
    // The groups are rebuilt below: not cloned twice.
    let mut status = inputs.previous.without_process_groups();
    status.process_groups = inputs
        .previous
        .process_groups
        .iter()
        .map(|group| {
            update_group(
                group,
                inputs.observations.get(&group.process_group_id),
                inputs.now_unix,
                inputs.database,
            )
        })
        .collect();
    set_pod_shapes(
        &mut status,
        inputs.observations,
        &inputs.previous.process_groups,
    );
    let counts = judge_counts(spec, &status.process_groups);
    let database = judge_database(&mut status, inputs);
    let groups = judge_groups(&status, inputs);
    status.desired_process_groups = Some(counts.desired_total);
    status.reconciled_process_groups = i32::try_from(groups.clean).ok();
    status.has_incorrect_config_map = !inputs.config_map_in_sync;
    status.needs_new_coordinators =
        matches!(inputs.database, DatabaseView::Status(_)) && !database.coordinators_ok;
    set_generations(&mut status, inputs, generation, &counts, &database, &groups);
    let reconciled = status.configured
        && status.connection_string.is_some()
        && counts.matching
        && !groups.any_condition
        && !groups.unfinished_removal
        && !groups.removals_requested
        && database.available
        && database.configuration_matches
        && database.coordinators_ok
        && inputs.config_map_in_sync
        && !status.required_addresses.both()
        && status.running_version.as_deref() == Some(spec.version.as_str());
    if reconciled {
        status.generations.reconciled = Some(generation);
    }
    (status, reconciled)
}

/// How the live process groups compare with the desired counts.
struct CountJudgement {
    /// Every class has exactly its desired count.
    matching: bool,
    /// A class has fewer than desired.
    grow: bool,
    /// A class has more than desired.
    shrink: bool,
    /// The desired total.
    desired_total: i32,
}

fn judge_counts(spec: &FoundationDBClusterSpec, groups: &[ProcessGroupStatus]) -> CountJudgement {
    let desired = desired_process_counts(spec);
    let live = live_counts(groups);
    let live_of = |class: &ProcessClass| live.get(class).copied().unwrap_or(0);
    CountJudgement {
        matching: desired
            .positive()
            .iter()
            .all(|(class, count)| live_of(class) == *count)
            && live
                .iter()
                .all(|(class, count)| desired.count(*class) == *count),
        grow: desired
            .positive()
            .iter()
            .any(|(class, count)| live_of(class) < *count),
        shrink: live
            .iter()
            .any(|(class, count)| desired.count(*class) < *count),
        desired_total: desired.total(),
    }
}

/// What the database says, once copied into the status.
struct DatabaseJudgement {
    available: bool,
    coordinators_ok: bool,
    configuration_matches: bool,
}

/// Copies health, version, configuration and connection string from the database into
/// `status`, and judges them.
fn judge_database(
    status: &mut FoundationDBClusterStatus,
    inputs: &StatusInputs<'_>,
) -> DatabaseJudgement {
    let cluster = inputs.cluster;
    let spec = &cluster.spec;
    let desired_config = desired_database_configuration(spec);
    let mut judgement = DatabaseJudgement {
        available: false,
        coordinators_ok: false,
        configuration_matches: false,
    };
    let mut live_configuration_matches = None;
    match inputs.database {
        DatabaseView::Status(db) => {
            status.health.available = db.is_available();
            status.health.healthy = db.is_healthy();
            status.health.full_replication = db.cluster.full_replication.unwrap_or(false);
            status.health.data_movement_priority = db
                .cluster
                .data
                .moving_data
                .highest_priority
                .and_then(|p| i32::try_from(p).ok());
            judgement.available = db.is_available();
            judgement.coordinators_ok = coordinators_healthy(cluster, db);
            if let Some(version) = db.cluster.running_version() {
                status.running_version = Some(version.to_string());
            }
            if let Some(configuration) = &db.cluster.configuration {
                status.configured = true;
                let running = db.cluster.running_version();
                live_configuration_matches = Some(
                    configure_change_command(configuration, &desired_config, running.as_ref())
                        .is_none(),
                );
                status.database_configuration = Some(shown_configuration(spec, configuration));
            }
            if let Some(reported) = &db.cluster.connection_string {
                let current = status
                    .connection_string
                    .as_deref()
                    .and_then(|s| ConnectionString::parse(s).ok());
                if current.as_ref() != Some(reported) {
                    status.connection_string = Some(reported.to_string());
                }
            }
        }
        DatabaseView::Unreachable => {
            // What cannot be read cannot be claimed: assume unavailable and unhealthy,
            // as the Go operator does, until the status can be read again.
            status.health.available = false;
            status.health.healthy = false;
        }
        DatabaseView::NotCreated => {}
    }
    status.required_addresses = required_addresses(spec.tls_enabled(), status);
    if status.running_version.is_none() {
        // Before any process reports, the version is the one being created.
        status.running_version = Some(spec.version.clone());
    }
    judgement.configuration_matches = live_configuration_matches.unwrap_or_else(|| {
        status.database_configuration.as_ref().is_some_and(|live| {
            let running = status
                .running_version
                .as_deref()
                .and_then(|v| v.parse::<fdb_shared::FdbVersion>().ok());
            configure_change_command(live, &desired_config, running.as_ref()).is_none()
        })
    });
    judgement
}

/// The address kinds the processes must listen on: the spec's, and the current
/// coordinators' until they move (turning TLS on or off goes through both).
fn required_addresses(spec_tls: bool, status: &FoundationDBClusterStatus) -> RequiredAddressSet {
    let coordinators = status
        .connection_string
        .as_deref()
        .and_then(|text| ConnectionString::parse(text).ok())
        .map(|connection| connection.coordinators)
        .unwrap_or_default();
    RequiredAddressSet::needed(spec_tls, coordinators.iter().map(|c| c.tls))
}

/// What the process groups of the new status say.
struct GroupJudgement {
    /// Live groups without a condition.
    clean: usize,
    /// A group is marked for removal.
    pending_removal: bool,
    /// A removal waits for more than its resources terminating.
    unfinished_removal: bool,
    /// A group has a condition (other than one only waiting for termination).
    any_condition: bool,
    /// The spec asks to remove a group not marked yet.
    removals_requested: bool,
}

fn judge_groups(status: &FoundationDBClusterStatus, inputs: &StatusInputs<'_>) -> GroupJudgement {
    let spec = &inputs.cluster.spec;
    let groups = &status.process_groups;
    // Removals that wait only for terminating resources do not hold back Reconciled
    // (docs/controller-model.md, "Process group status"); `hasPendingRemoval` still says
    // they are there.
    let waiting_on_termination = |g: &ProcessGroupStatus| {
        inputs
            .observations
            .get(&g.process_group_id)
            .is_some_and(|o| only_terminating_left(g, o))
    };
    GroupJudgement {
        clean: groups
            .iter()
            .filter(|g| !g.is_marked_for_removal() && g.process_group_conditions.is_empty())
            .count(),
        pending_removal: groups.iter().any(ProcessGroupStatus::is_marked_for_removal),
        unfinished_removal: groups
            .iter()
            .any(|g| g.is_marked_for_removal() && !waiting_on_termination(g)),
        any_condition: groups
            .iter()
            .any(|g| !g.process_group_conditions.is_empty() && !waiting_on_termination(g)),
        removals_requested: groups.iter().any(|g| {
            !g.is_marked_for_removal()
                && (spec.process_groups_to_remove.contains(&g.process_group_id)
                    || spec
                        .process_groups_to_remove_without_exclusion
                        .contains(&g.process_group_id))
        }),
    }
}

/// The `needs*` generations: set to the cluster's generation while each holds.
fn set_generations(
    status: &mut FoundationDBClusterStatus,
    inputs: &StatusInputs<'_>,
    generation: i64,
    counts: &CountJudgement,
    database: &DatabaseJudgement,
    groups: &GroupJudgement,
) {
    let has_condition = |condition: ProcessGroupConditionType| {
        status.process_groups.iter().any(|g| {
            g.process_group_conditions
                .iter()
                .any(|c| c.condition_type == condition)
        })
    };
    let monitor_conf = has_condition(ProcessGroupConditionType::IncorrectConfigMap);
    let pod_deletion = has_condition(ProcessGroupConditionType::IncorrectPodSpec);
    let configuration_change = status.configured && !database.configuration_matches;
    let coordinator_change = status.needs_new_coordinators;
    let flag = |on: bool| on.then_some(generation);
    let g = &mut status.generations;
    g.needs_grow = flag(counts.grow);
    g.needs_shrink = flag(counts.shrink);
    g.needs_configuration_change = flag(configuration_change);
    g.needs_coordinator_change = flag(coordinator_change);
    g.missing_database_status = flag(!matches!(inputs.database, DatabaseView::Status(_)));
    g.has_pending_removal = flag(groups.pending_removal);
    g.has_unhealthy_process = flag(groups.any_condition);
    g.needs_monitor_conf_update = flag(monitor_conf);
    g.needs_pod_deletion = flag(pod_deletion);
    g.has_extra_listeners = flag(status.required_addresses.both());
}

/// `imageTypes`, `storageServersPerDisk` and `logServersPerDisk` from the pods of the
/// groups (sorted, distinct): what is in use now, so that the ConfigMap keeps the monitor
/// conf of every density a pod still mounts while a change of servers per pod rolls
/// out. Left as they were when no pod was observed (a pass that could not see pods
/// must not make the ConfigMap drop keys).
fn set_pod_shapes(
    status: &mut FoundationDBClusterStatus,
    observations: &BTreeMap<String, GroupObservation>,
    groups: &[ProcessGroupStatus],
) {
    let mut image_types = std::collections::BTreeSet::new();
    let mut storage = std::collections::BTreeSet::new();
    let mut log = std::collections::BTreeSet::new();
    for group in groups {
        let Some(shape) = observations
            .get(&group.process_group_id)
            .and_then(|o| o.pod_shape.as_ref())
        else {
            continue;
        };
        image_types.insert(shape.image_type.clone());
        let Some(servers) = shape.servers_per_pod.and_then(|n| i32::try_from(n).ok()) else {
            continue;
        };
        if group.process_class == ProcessClass::Storage {
            storage.insert(servers);
        } else if group.process_class.is_log_process() {
            log.insert(servers);
        }
    }
    if image_types.is_empty() {
        return;
    }
    status.image_types = image_types.into_iter().collect();
    status.storage_servers_per_disk = storage.into_iter().collect();
    status.log_servers_per_disk = log.into_iter().collect();
}

#[cfg(test)]
mod tests;
