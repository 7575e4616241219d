//! The processes that missed an upgrade's kill (docs/upgrades.md, "Incompatible upgrades",
//! after step 4): processes still on the old protocol once the cluster runs the new one,
//! whose pods are deleted so they come back on the new version.

use std::collections::BTreeSet;

use fdb_shared::FdbVersion;
use kube::ResourceExt;

use super::super::model::pod::running_version;
use super::super::removals::placement::hosted_coordinator;
use super::super::safety;
use super::super::snapshot::ClusterSnapshot;
use super::super::snapshot::pod_spec_facts::SpecFacts;
use super::change::{VersionChange, version_change};

/// A process group whose processes missed the upgrade's kill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IncompatibleGroup {
    /// The process group ID.
    pub group: String,
    /// Its pod.
    pub pod: String,
    /// What was seen.
    pub reason: String,
}

/// What RemoveIncompatibleProcesses does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct IncompatibleDecision {
    /// Pods to delete (their processes come back on their image's binary).
    pub delete: Vec<IncompatibleGroup>,
    /// Groups left alone for now, and why.
    pub waiting: Vec<String>,
    /// Groups whose pod must go but hosts a coordinator (ChangeCoordinators moves it).
    pub hosting_coordinators: Vec<String>,
}

/// The FoundationDB version the tag of the pod's main image names (`...:7.1.57`).
fn main_image_version(facts: &SpecFacts) -> Option<FdbVersion> {
    let image = facts.main_image.as_deref()?;
    let last = image.split('@').next()?.rsplit('/').next()?;
    let (_, tag) = last.rsplit_once(':')?;
    tag.split('-').next()?.parse().ok()
}

/// Decides which pods to delete because their processes did not restart with the rest of
/// the cluster (docs/upgrades.md, "Incompatible upgrades" step 5): no upgrade is pending
/// any more (the running version is `spec.version`), the database is available, and a live
/// group's pod IP is in `incompatible_connections`, or one of its processes runs a version
/// not protocol-compatible with the running one. Pods hosting a coordinator are left to
/// ChangeCoordinators first (a coordinator's pod is never deleted).
pub(crate) fn decide_incompatible(snapshot: &ClusterSnapshot) -> IncompatibleDecision {
    let mut decision = IncompatibleDecision::default();
    let cluster = snapshot.cluster();
    if !matches!(version_change(cluster), VersionChange::None) {
        return decision;
    }
    let Ok(running) = running_version(cluster).parse::<FdbVersion>() else {
        return decision;
    };
    let Some(status) = snapshot.database_status() else {
        return decision;
    };
    if safety::available(snapshot).is_err() {
        return decision;
    }
    let incompatible_ips: BTreeSet<String> = status
        .cluster
        .incompatible_connections
        .iter()
        .map(|a| ip_of(&a.to_string()).to_owned())
        .collect();
    let coordinator_ips: BTreeSet<String> = status
        .client
        .coordinators
        .coordinators
        .iter()
        .filter_map(|c| c.address.as_ref())
        .map(|a| ip_of(&a.to_string()).to_owned())
        .collect();
    for group in snapshot.live_groups() {
        let old = group
            .processes()
            .find_map(|p| p.version.filter(|v| !v.is_protocol_compatible(&running)));
        // Without incompatible connections only an old process makes a straggler: the
        // pod's IP and image are read only then (issue 37: reading them for every group
        // was a tenth of a steady 1000-group pass, twice, with the coordinators' forecast).
        if old.is_none() && incompatible_ips.is_empty() {
            continue;
        }
        let (Some(pod), Some(facts)) = (group.pod_head(), group.pod_facts()) else {
            continue;
        };
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let Some(ip) = crate::controller::objects::pod_ip(pod).map(str::to_owned) else {
            continue;
        };
        // Only stragglers of an upgrade: a pod whose main image is newer than the running
        // version was not left behind by a kill (someone changed its image); that is the
        // pod spec's business, not this step's.
        if main_image_version(facts).is_some_and(|v| v > running) {
            continue;
        }
        let reason = if incompatible_ips.contains(&ip) {
            format!("{ip} is in incompatible_connections (it did not restart on {running})")
        } else if let Some(version) = old {
            format!("a process still runs {version}, not compatible with {running}")
        } else {
            continue;
        };
        // Coordinators are named by IP, or by the pod's DNS name (DNS in the cluster file).
        let in_coordinators = coordinator_ips.contains(&ip)
            || group
                .processes()
                .filter_map(|p| p.address.as_ref())
                .any(|a| coordinator_ips.contains(ip_of(&a.to_string())))
            || hosted_coordinator(snapshot, &group).is_some();
        if in_coordinators {
            decision.hosting_coordinators.push(group.id().to_owned());
            decision.waiting.push(format!(
                "{} ({reason}) hosts a coordinator; waiting for the coordinators to change",
                group.id()
            ));
            continue;
        }
        decision.delete.push(IncompatibleGroup {
            group: group.id().to_owned(),
            pod: pod.name_any(),
            reason,
        });
    }
    decision
}

/// The IP part of an `IP:port[:tls]` address (IPv6 in brackets kept whole).
pub(in crate::controller) fn ip_of(address: &str) -> &str {
    if let Some(rest) = address.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    address.split(':').next().unwrap_or(address)
}
