//! Version changes (docs/upgrades.md), decided from the snapshot alone: which
//! kind of change `spec.version` asks for, whether an incompatible upgrade is pending,
//! which sidecar image each pod must run, which clients block the upgrade, whether every
//! pod is ready for the cluster-wide kill (and which processes it covers), and which
//! processes missed it.
//!
//! The upgrade's state lives in the world, never in the operator: the pending upgrade is
//! `status.runningVersion` (the most common process version) differing from
//! `spec.version` across a protocol boundary; staging is the sidecar image and the
//! `last-applied-config-map` annotation (whose hash includes the staged binary while an
//! upgrade is pending, see [`super::model::desired::desired_config_hash`]); the kill
//! happened when the processes report the new version. So every decision here can be taken
//! again after an operator crash at any point.

use std::collections::BTreeSet;

use fdb_shared::FdbVersion;
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::ImageType;
use fdb_shared::cluster_math::images::{sidecar_image, unified_image};
use fdb_shared::status_json::DatabaseStatus;
use kube::ResourceExt;

pub(crate) use super::versions::change::{
    VersionChange, pending_upgrade_target, staged_fdbserver, version_change,
};

use super::errors::StepError;
use super::model::desired::ConfigHashes;
use super::model::pod::{LAST_APPLIED_CONFIG_MAP_ANNOTATION, pod_image_type, pod_version};
use super::objects::pod_is_running;
use super::safety::{self, Refusal};
use super::snapshot::pod_head::PodHead;
use super::snapshot::pod_spec_facts::SpecFacts;
use super::snapshot::{ClusterSnapshot, GroupView};
#[cfg(test)]
use super::versions::incompatible_processes::decide_incompatible;
use super::versions::incompatible_processes::ip_of;
use super::versions::quorum::{QuorumKept, quorum_kept};
use crate::fdb::{ClientInfo, clients_without_support_for};

/// The sidecar image every pod must run now: the target's during an incompatible upgrade
/// (so the sidecar stages its binaries), else the image of the version pods are built
/// with.
///
/// A unified pod's sidecar-mode container runs the monitor image of that version.
pub(crate) fn wanted_sidecar_image(cluster: &FoundationDBCluster) -> String {
    let version = match pending_upgrade_target(cluster) {
        Some(target) => target.to_string(),
        None => pod_version(cluster).to_owned(),
    };
    match cluster.image_type() {
        ImageType::Unified => unified_image(&cluster.spec, &version),
        _ => sidecar_image(&cluster.spec, &version),
    }
}

/// The main container image pods are built with now (the unified monitor image or the
/// split main image of [`pod_version`]).
pub(crate) fn wanted_main_image(cluster: &FoundationDBCluster) -> String {
    let version = pod_version(cluster);
    match cluster.image_type() {
        ImageType::Unified => unified_image(&cluster.spec, version),
        _ => fdb_shared::cluster_math::main_image(&cluster.spec, version),
    }
}

/// A connected client that does not support the upgrade's target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BlockingClient {
    /// Its address.
    pub address: String,
    /// Its log group.
    pub log_group: String,
    /// The versions it supports.
    pub versions: Vec<String>,
}

impl std::fmt::Display for BlockingClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (log group {}, supports {})",
            self.address,
            self.log_group,
            self.versions.join(", ")
        )
    }
}

/// The clients in `status json` that do not support `target`: the clients listed in
/// `cluster.clients.supported_versions`, without those whose log group is in
/// `ignoreLogGroupsForUpgrade` and without the cluster's own fdbserver processes and pods
/// (fdbserver processes connect to each other as clients; they are restarted by the
/// upgrade, not left behind by it). Empty when the status was not read.
pub(crate) fn blocking_clients(
    snapshot: &ClusterSnapshot,
    target: &FdbVersion,
) -> Vec<BlockingClient> {
    let Some(status) = snapshot.database_status() else {
        return Vec::new();
    };
    let mut own_ips: BTreeSet<String> = status
        .cluster
        .processes
        .values()
        .filter_map(|p| p.address.as_ref())
        .map(|a| ip_of(&a.to_string()).to_owned())
        .collect();
    own_ips.extend(
        snapshot
            .pod_heads()
            .filter_map(|pod| crate::controller::objects::pod_ip(pod).map(str::to_owned)),
    );
    let clients: Vec<ClientInfo> = ClientInfo::from_status(status)
        .into_iter()
        .filter(|client| !own_ips.contains(ip_of(&client.address)))
        .collect();
    let ignored = snapshot
        .spec()
        .automation_options
        .ignore_log_groups_for_upgrade();
    clients_without_support_for(&clients, target, &ignored)
        .into_iter()
        .map(|address| {
            let mine: Vec<&ClientInfo> = clients.iter().filter(|c| c.address == address).collect();
            BlockingClient {
                log_group: mine
                    .first()
                    .map(|c| c.log_group.clone())
                    .unwrap_or_default(),
                versions: mine.iter().map(|c| c.version.to_string()).collect(),
                address,
            }
        })
        .collect()
}

/// Why the cluster-wide kill of an upgrade must wait.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum UpgradeWait {
    /// A gate of [`super::safety`] refuses.
    #[error(transparent)]
    Unsafe(#[from] Refusal),
    /// Pods are not ready: their sidecar image, staged binary or configuration is not
    /// confirmed, or they do not run.
    #[error("pods not ready for the upgrade to {target}: {}", .pods.join("; "))]
    PodsNotReady {
        /// The target.
        target: FdbVersion,
        /// `<pod or group>: <why>`, in status order.
        pods: Vec<String>,
    },
    /// Processes of live groups do not report, so the kill could not reach them.
    #[error("processes not reporting, the kill would miss them: {}", .groups.join(", "))]
    ProcessesMissing {
        /// The groups.
        groups: Vec<String>,
    },
    /// A zone is in maintenance: someone works on it (the Go operator waits too).
    #[error("zone {zone} is in maintenance; the upgrade's kill waits until it is off")]
    Maintenance {
        /// The zone.
        zone: String,
    },
    /// Coordinators kept out of the kill would hold the quorum on the old version: the
    /// kill cannot bring the database back ([`super::versions::quorum`]).
    #[error(transparent)]
    QuorumKept(#[from] QuorumKept),
    /// Process groups of the database on the old version (other operator instances')
    /// are not on the pending-upgrade list yet: their instances have not confirmed them
    /// ready.
    #[error(
        "{} of {total} process groups on the old version are not on the pending-upgrade list for {target} yet (their operator instances have not confirmed them ready): {}",
        .groups.len(),
        .groups.join(", ")
    )]
    NotAgreed {
        /// The target.
        target: FdbVersion,
        /// The groups missing from the list, sorted.
        groups: Vec<String>,
        /// How many groups of the database are on the old version.
        total: usize,
    },
}

/// The decision of the upgrade's bounce.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum UpgradeBounce {
    /// No incompatible upgrade is pending.
    NotUpgrading,
    /// The upgrade waits.
    Wait(UpgradeWait),
    /// Kill every process of the cluster at once (addresses sorted).
    KillAll {
        /// The target.
        target: FdbVersion,
        /// Every process address of the cluster.
        addresses: Vec<ProcessAddress>,
        /// With locks in use: the instance must first agree with the others through
        /// the pending-upgrade list.
        agreement: Option<Agreement>,
        /// Processes of the cluster already run the target (see [`on_target`]): they
        /// are out of the database until the others join them, so the kill is what
        /// ends the mixed versions (and brings the database back when it is down). It
        /// waits neither for availability nor for the last recovery to settle.
        ends_mixed_versions: bool,
    },
}

/// What an instance brings to the pending-upgrade list before the kill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Agreement {
    /// Its lock ID.
    pub lock_id: String,
    /// Its process groups, all ready for the kill, sorted.
    pub groups: Vec<String>,
}

/// Why one pod is not ready for the kill (`None`: ready).
fn pod_not_ready(
    snapshot: &ClusterSnapshot,
    pod: Option<(&PodHead, &SpecFacts)>,
    wanted_image: &str,
    desired_hash: Option<&String>,
    target: &FdbVersion,
) -> Option<String> {
    let Some((pod, facts)) = pod else {
        return Some("no pod".to_owned());
    };
    let name = pod.name_any();
    if pod.metadata.deletion_timestamp.is_some() || !pod_is_running(pod) {
        return Some(format!("{name}: not running"));
    }
    if facts.sidecar_image.as_deref() != Some(wanted_image) {
        return Some(format!("{name}: sidecar image is not {wanted_image} yet"));
    }
    let confirmed = desired_hash.is_some()
        && pod.annotations().get(LAST_APPLIED_CONFIG_MAP_ANNOTATION) == desired_hash;
    if !confirmed {
        let _ = snapshot;
        return Some(format!(
            "{name}: {} and the monitor conf not confirmed by its sidecar yet",
            staged_fdbserver(target)
        ));
    }
    None
}

/// Whether the upgrade's cluster-wide kill restarts the group's processes, so it must be
/// staged (sidecar image, staged binary, monitor conf) first: every live group, and every
/// group marked for removal whose pod still runs (issue 26: its processes stay in the
/// cluster until its pod goes; killed unstaged they would come back on the old version
/// beside the new ones). A group being removed whose pod is gone, terminating or not
/// running, or whose processes do not report to the database (the kill restarts only
/// processes that report), is left out of the kill instead of holding it.
pub(crate) fn restarted_by_the_kill(group: &GroupView<'_>) -> bool {
    if !group.is_marked_for_removal() {
        return true;
    }
    group
        .pod_head()
        .is_some_and(|pod| pod.metadata.deletion_timestamp.is_none() && pod_is_running(pod))
        && group.is_reporting()
}

/// Whether every process of the group reports to the database, so its pod may be staged
/// for the upgrade (issue 26, seed 71). Staging switches the binary a process starts
/// from: a process that is not running when its pod is staged (missing, or unseen while
/// the database has no quorum) would start on the target whenever it comes back, beside
/// processes on the old version, and the kill that would end that mix needs the
/// database. Unstaged, it comes back on the running version, joins, and is staged then.
pub(crate) fn processes_report(group: &GroupView<'_>) -> bool {
    let expected = usize::try_from(group.servers_per_pod()).unwrap_or(1);
    group.processes().count() >= expected
}

/// Whether a live group's processes cannot run for now and have not for longer than
/// `ignoreMissingProcessesSeconds`, so the kill goes on without them (issue 25, as the Go
/// operator's `ShouldBeIgnoredBecauseMissing`): its pod does not run (pending,
/// unschedulable, failed) and the group has had `PodPending` or `MissingProcesses` that
/// long. Nothing of it runs to be left behind on the old version; once its pod runs it
/// starts from a spec built for the running version, and a process that still comes up
/// on the old one is recreated as a straggler (RemoveIncompatibleProcesses).
fn missing_long_enough(snapshot: &ClusterSnapshot, group: &GroupView<'_>) -> bool {
    use fdb_shared::api::cluster::ProcessGroupConditionType as C;
    if group.pod_head().is_some_and(pod_is_running) || group.processes().next().is_some() {
        return false;
    }
    let ignore = snapshot
        .spec()
        .automation_options
        .ignore_missing_processes_seconds();
    [C::PodPending, C::MissingProcesses, C::MissingPod]
        .iter()
        .filter_map(|condition| group.status.condition_since(condition))
        .min()
        .is_some_and(|since| snapshot.now_unix() - since > ignore)
}

/// The processes of this cluster that already run the upgrade's target while the
/// database runs the old version, by group: a process that restarted after its pod was
/// staged (a crash, a fault healed) starts from the conf that names the staged binary.
/// They cannot join the database, which lists them in `incompatible_connections` (the
/// only other binary their pod has is the target), not in its processes. Groups in
/// status order, with the incompatible addresses on their pod's IP.
pub(crate) fn on_target(snapshot: &ClusterSnapshot) -> Vec<(String, Vec<ProcessAddress>)> {
    let Some(status) = snapshot.database_status() else {
        return Vec::new();
    };
    if status.cluster.incompatible_connections.is_empty() {
        return Vec::new();
    }
    let mut found = Vec::new();
    for group in snapshot.groups() {
        let Some(ip) = group
            .pod_head()
            .filter(|pod| pod.metadata.deletion_timestamp.is_none())
            .and_then(|pod| crate::controller::objects::pod_ip(pod))
        else {
            continue;
        };
        let mut addresses: Vec<ProcessAddress> = status
            .cluster
            .incompatible_connections
            .iter()
            .filter(|address| ip_of(&address.to_string()) == ip)
            .cloned()
            .collect();
        if addresses.is_empty() {
            continue;
        }
        addresses.sort_by_key(ToString::to_string);
        addresses.dedup();
        found.push((group.id().to_owned(), addresses));
    }
    found
}

/// Every process of the database the upgrade's kill restarts: not ignored during
/// restarts (`buggify.ignoreDuringRestart`), not left out.
fn kill_addresses(snapshot: &ClusterSnapshot, left_out: &BTreeSet<&str>) -> Vec<ProcessAddress> {
    let mut addresses: Vec<ProcessAddress> = snapshot
        .database_status()
        .map(|status| {
            status
                .cluster
                .processes
                .values()
                // `buggify.ignoreDuringRestart` holds for the upgrade's kill too.
                .filter(|p| {
                    status_group(p).is_none_or(|id| {
                        !snapshot.ignored_during_restart(id) && !left_out.contains(id)
                    })
                })
                .filter_map(|p| p.address.clone())
                .collect()
        })
        .unwrap_or_default();
    addresses.sort_by_key(ToString::to_string);
    addresses.dedup();
    addresses
}

/// With locks in use, the agreement the instance reaches with the others first.
fn kill_agreement(snapshot: &ClusterSnapshot) -> Option<Agreement> {
    match safety::lock_needed(snapshot, safety::LockedAction::Bounce) {
        safety::LockNeed::Needed { lock_id } => {
            let mut groups: Vec<String> = snapshot
                .groups()
                .filter(restarted_by_the_kill)
                .map(|group| group.id().to_owned())
                .collect();
            groups.sort();
            Some(Agreement { lock_id, groups })
        }
        safety::LockNeed::NotNeeded => None,
    }
}

/// Decides the cluster-wide kill of an incompatible upgrade (docs/upgrades.md,
/// "Incompatible upgrades" step 4): once every live pod runs the target's sidecar and has
/// confirmed the staged binary and its monitor conf, every live group's processes report,
/// every process has been up `minimumUptimeSecondsForBounce` and the database is available,
/// every process of the cluster is killed in one command, unless coordinators kept out of
/// it would hold the old version's quorum ([`super::versions::quorum`]: then it is
/// refused). After the kill the processes report the target, the running version follows
/// and no upgrade is pending any more: an operator that crashed right after the kill does
/// not kill again. With locks in use the kill also carries the
/// [`Agreement`] the instance must reach with the others first (the pending-upgrade list,
/// [`super::versions::pending_upgrades::plan_pending_list`] and [`check_agreement`]); the
/// addresses are then every process of the database, whichever operator instance manages
/// it.
pub(crate) fn decide_bounce(snapshot: &ClusterSnapshot) -> Result<UpgradeBounce, StepError> {
    let cluster = snapshot.cluster();
    let Some(target) = pending_upgrade_target(cluster) else {
        return Ok(UpgradeBounce::NotUpgrading);
    };
    let wait = |w: UpgradeWait| Ok(UpgradeBounce::Wait(w));
    let wanted_image = wanted_sidecar_image(cluster);
    let mut hashes = ConfigHashes::default();
    let mut not_ready = Vec::new();
    let mut missing = Vec::new();
    // Groups being removed whose pod no longer runs: their processes (if any still
    // report) are left out of the kill rather than restarted unstaged.
    let mut left_out: BTreeSet<&str> = BTreeSet::new();
    let on_target = on_target(snapshot);
    for group in snapshot.groups() {
        if !restarted_by_the_kill(&group) || missing_long_enough(snapshot, &group) {
            left_out.insert(group.id());
            continue;
        }
        let image_type = group
            .pod_head()
            .map_or_else(|| cluster.image_type(), pod_image_type);
        let hash = hashes.of(cluster, group.status, group.servers_per_pod(), image_type)?;
        let pod = group.pod_head().zip(group.pod_facts());
        if let Some(why) = pod_not_ready(snapshot, pod, &wanted_image, hash.as_ref(), &target) {
            not_ready.push(format!("{} ({why})", group.id()));
            continue;
        }
        let expected = usize::try_from(group.servers_per_pod()).unwrap_or(1);
        // An excluded group being removed may have lost processes already: the kill
        // restarts those that report.
        // A group whose processes already run the target is not missing: they run,
        // outside the database until the others join them.
        if !group.is_marked_for_removal()
            && snapshot.database_status().is_some()
            && group.processes().count() < expected
            && !on_target.iter().any(|(id, _)| id == group.id())
        {
            missing.push(group.id().to_owned());
        }
    }
    if !not_ready.is_empty() {
        return wait(UpgradeWait::PodsNotReady {
            target,
            pods: not_ready,
        });
    }
    let ends_mixed_versions = match kill_gates(snapshot, missing, &left_out, &on_target) {
        Ok(ends_mixed_versions) => ends_mixed_versions,
        Err(w) => return wait(w),
    };
    // Only the processes the database lists: those already on the target need no
    // restart, and fdbcli refuses a whole `kill` naming one address its cluster
    // controller does not list (they are only in `incompatible_connections`;
    // apple/foundationdb `fdbcli/KillCommand.actor.cpp`, `process `ADDR' not
    // recognized`).
    let addresses = kill_addresses(snapshot, &left_out);
    let agreement = kill_agreement(snapshot);
    Ok(UpgradeBounce::KillAll {
        target,
        addresses,
        agreement,
        ends_mixed_versions,
    })
}

/// The gates between pods ready for the kill and the kill: an available database (unless
/// processes already on the target hold it down: then `Ok(true)`, the kill is what
/// brings it back), every live group's processes reporting (`missing` names those that
/// do not), no zone in maintenance, `minimumUptimeSecondsForBounce` (unless processes
/// already run the target: the versions are mixed until the kill), and a majority of
/// the coordinators restarted with the others ([`super::versions::quorum`]).
fn kill_gates(
    snapshot: &ClusterSnapshot,
    missing: Vec<String>,
    left_out: &BTreeSet<&str>,
    on_target: &[(String, Vec<ProcessAddress>)],
) -> Result<bool, UpgradeWait> {
    // Processes already on the target cannot rejoin before the others move: when the
    // database is unavailable then (their data is out of reach, issue 26 seed 18),
    // waiting for it would wait forever, and the kill is what brings it back.
    let ends_mixed_versions = !on_target.is_empty();
    if !ends_mixed_versions && let Err(refusal) = safety::available(snapshot) {
        return Err(refusal.into());
    }
    if !missing.is_empty() {
        return Err(UpgradeWait::ProcessesMissing { groups: missing });
    }
    if let Some(zone) = snapshot
        .database_status()
        .and_then(|db| db.cluster.maintenance_zone.clone())
        .filter(|zone| !zone.is_empty())
    {
        return Err(UpgradeWait::Maintenance { zone });
    }
    // Processes already on the target (a user's restart onto the staged binary, or a
    // kill some missed) are out of the database until the others join them: waiting
    // for the others' uptime only keeps the versions mixed longer (issue 38 item 5).
    if on_target.is_empty()
        && let Err(refusal) = safety::minimum_uptime(snapshot)
    {
        return Err(refusal.into());
    }
    let restarted = |group: &GroupView<'_>| {
        !left_out.contains(group.id())
            && (!snapshot.ignored_during_restart(group.id())
                || on_target.iter().any(|(id, _)| id == group.id()))
    };
    if let Some(kept) = quorum_kept(snapshot, restarted) {
        return Err(kept.into());
    }
    Ok(ends_mixed_versions)
}

/// The process group of a process in `status json`: its `instance_id` locality, else
/// its `process_id` (the Go operator reads either).
fn status_group(process: &fdb_shared::status_json::ProcessStatus) -> Option<&str> {
    process
        .locality
        .instance_id
        .as_deref()
        .or(process.locality.process_id.as_deref())
}

/// Checks the pending-upgrade list against the whole database: every process group with
/// a process in `status` not on `target` yet (of any operator instance) must be in
/// `agreed`. `Err` names the missing groups.
pub(crate) fn check_agreement(
    status: &DatabaseStatus,
    target: &FdbVersion,
    agreed: &BTreeSet<String>,
) -> Result<(), UpgradeWait> {
    let old: BTreeSet<&str> = status
        .cluster
        .processes
        .values()
        .filter(|p| p.version.as_ref() != Some(target))
        .filter_map(status_group)
        .collect();
    let groups: Vec<String> = old
        .iter()
        .filter(|group| !agreed.contains(**group))
        .map(|group| (*group).to_owned())
        .collect();
    if groups.is_empty() {
        Ok(())
    } else {
        Err(UpgradeWait::NotAgreed {
            target: *target,
            groups,
            total: old.len(),
        })
    }
}

#[cfg(test)]
#[path = "upgrade_tests.rs"]
mod tests;
