//! Observation: what the snapshot shows about each process group (the facts its
//! conditions follow from, its address and zone) and about the ConfigMap. Pure; the
//! status built from it is UpdateStatus's decision.

use std::collections::BTreeMap;

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::ProcessGroupStatus;
use fdb_shared::status_json::ProcessStatus;
use kube::ResourceExt;

use super::super::errors::StepError;
use super::super::model::desired::{ConfigHashes, desired_config_map_for};
use super::super::model::desired_memo::cluster_key;
use super::super::model::pod::{
    IMAGE_TYPE_ANNOTATION, LAST_APPLIED_CONFIG_MAP_ANNOTATION, LAST_APPLIED_SPEC_ANNOTATION,
    pod_image_type, process_difference, process_group_labels,
};
use super::super::model::process_groups::{
    GroupFacts, PodFacts, Presence, ProcessFacts, TaintFacts, taint_facts,
};
use super::super::objects::{pod_is_failing, pod_phase, public_ip};
use super::super::pod_agent::PodAgent;
use super::super::status::{GroupObservation, PodShape};
use super::observe_memo::IO_PROBLEMS;
use super::pod_head::PodHead;
use super::pod_spec_facts::SpecFacts;
use super::{ClusterSnapshot, GroupView};
use fdb_shared::api::cluster::ImageType;
use fdb_shared::api::cluster::ProcessGroupConditionType;

fn build_error(
    what: String,
) -> impl FnOnce(crate::controller::model::pod::PodModelError) -> StepError {
    move |e| StepError::Build {
        what,
        message: e.to_string(),
    }
}

fn presence<K: ResourceExt>(needed: bool, object: Option<&K>) -> Presence {
    match (needed, object) {
        (false, _) => Presence::NotNeeded,
        (true, None) => Presence::Missing,
        (true, Some(o)) if o.meta().deletion_timestamp.is_some() => Presence::Terminating,
        (true, Some(_)) => Presence::Present,
    }
}

/// Whether each reporting process of the group runs the command line that the desired
/// conf (the class's template with the pod's substitutions) describes, and the version
/// `spec.version` asks for ([`version_judged`]): fdbmonitor does not restart processes
/// when the conf changes, so a difference means the process still runs an older
/// configuration and needs a bounce. `None` when the expected command line cannot be
/// known from the pod and the status.
///
/// The Go operator judges it the same way (`checkAndSetProcessStatus` in its
/// `controllers/update_status.go`): against the desired conf whether or not the pod
/// has it yet, so a change shows IncorrectConfigMap and IncorrectCommandLine together
/// until the pod takes the conf, then IncorrectCommandLine alone until the restart.
/// Runbooks and `kubectl fdb analyze` read that sequence; BounceProcesses waits for
/// IncorrectConfigMap to clear before it kills.
///
/// A unified pod's monitor starts the desired configuration with the environment it
/// reports (see [`super::super::pod_agent::monitor_command_lines`]).
fn command_lines_match(
    snapshot: &ClusterSnapshot,
    view: &GroupView<'_>,
    servers: u32,
    processes: &[&ProcessStatus],
) -> Option<bool> {
    let group = view.status;
    let head = view.pod_head()?;
    let expected = match PodAgent::of(head) {
        // The monitor reports its environment in the pod's annotations: no decoding.
        PodAgent::Monitor => std::sync::Arc::new(super::super::pod_agent::monitor_command_lines(
            snapshot.cluster(),
            group,
            head,
            servers,
        )?),
        PodAgent::Sidecar => {
            snapshot.expected_command_lines(group, servers, view.pod_substitutions()?)?
        }
    };
    let several = expected.len() > 1;
    let instance = &group.process_group_id;
    let wanted_version = version_judged(snapshot.cluster());
    for process in processes {
        let actual = process.command_line.as_deref()?;
        if let (Some(wanted), Some(running)) = (&wanted_version, &process.version)
            && wanted != running
        {
            return Some(false);
        }
        // With several servers per pod, `locality_process_id` is `<instance>-<i>`.
        let index = if several {
            process
                .locality
                .process_id
                .as_deref()?
                .strip_prefix(instance.as_str())?
                .strip_prefix('-')?
                .parse::<u32>()
                .ok()?
        } else {
            1
        };
        if expected.get(&index).map(String::as_str) != Some(actual) {
            return Some(false);
        }
    }
    Some(true)
}

/// The version every process must report, when the version is judged: with no version
/// change pending, and during an incompatible upgrade (every process must be restarted
/// onto the target). Not during a protocol-compatible change (pods roll one by one, the
/// versions are mixed until the last), nor while the change is refused or unparsable
/// (nothing is restarted for it). Go skips the check during compatible upgrades alone
/// (`VersionCompatibleUpgradeInProgress`); a refused downgrade never reaches its
/// status, its webhook refuses it first.
fn version_judged(cluster: &FoundationDBCluster) -> Option<fdb_shared::FdbVersion> {
    use super::super::versions::change::{VersionChange, version_change};
    match version_change(cluster) {
        VersionChange::None => cluster.spec.version.parse().ok(),
        VersionChange::Incompatible { to, .. } => Some(to),
        VersionChange::Compatible { .. }
        | VersionChange::Refused { .. }
        | VersionChange::Unparsable { .. } => None,
    }
}

/// Whether the pod's sidecar runs the image it must have now
/// ([`crate::controller::upgrade::wanted_sidecar_image`]). A pod whose main container is
/// not the desired one yet (a compatible version change rolls out by recreating pods) is
/// judged by IncorrectPodSpec alone.
fn sidecar_image_matches(images: &WantedImages, facts: &SpecFacts) -> bool {
    let live = facts.sidecar_image.as_deref();
    if live == Some(images.sidecar.as_str()) {
        return true;
    }
    if images.upgrading {
        return false;
    }
    let main = facts.main_image.as_deref();
    main != Some(images.main.as_str()) || live.is_none()
}

/// The images pods must run now, the same for every group of a pass (computed once).
#[derive(Debug)]
struct WantedImages {
    /// [`super::super::upgrade::wanted_sidecar_image`].
    sidecar: String,
    /// Whether an incompatible upgrade is pending.
    upgrading: bool,
    /// The main container's image.
    main: String,
}

impl WantedImages {
    fn of(cluster: &FoundationDBCluster) -> Self {
        use super::super::upgrade::{pending_upgrade_target, wanted_sidecar_image};
        Self {
            sidecar: wanted_sidecar_image(cluster),
            upgrading: pending_upgrade_target(cluster).is_some(),
            main: super::super::upgrade::wanted_main_image(cluster),
        }
    }
}

/// What every group's observation needs that depends on the cluster alone, computed
/// once per observation of all groups.
struct Shared {
    hashes: ConfigHashes,
    images: WantedImages,
}

/// The image type and servers per pod `pod` was made with.
fn pod_shape(head: &PodHead, facts: &SpecFacts) -> PodShape {
    PodShape {
        image_type: head
            .annotations()
            .get(IMAGE_TYPE_ANNOTATION)
            .cloned()
            .unwrap_or_else(|| ImageType::Split.to_string()),
        servers_per_pod: facts.mounted_servers,
    }
}

/// Whether a pod whose spec hash is not the desired one (another operator's, or this
/// operator's for another spec) runs its processes as the desired pod would
/// ([`process_difference`]): it is then re-stamped, not recreated.
fn runs_as_desired(
    cluster: &fdb_shared::api::FoundationDBCluster,
    status: &fdb_shared::api::cluster::ProcessGroupStatus,
    group: &GroupView<'_>,
) -> Result<bool, StepError> {
    let desired = super::super::model::desired_memo::DesiredObjects::pod(cluster, status).map_err(
        build_error(format!("desired pod of {}", status.process_group_id)),
    )?;
    Ok(
        match (
            desired.spec.as_ref(),
            group.pod().and_then(|p| p.spec.as_ref()),
        ) {
            (Some(desired), Some(live)) => process_difference(desired, live).is_none(),
            _ => false,
        },
    )
}

/// What the group's pod shows against the desired one.
fn pod_facts(
    cluster: &FoundationDBCluster,
    group: &GroupView<'_>,
    (pod, spec): (&PodHead, &SpecFacts),
    servers: u32,
    desired: &super::super::model::desired_memo::DesiredObjects,
    shared: &mut Shared,
) -> Result<PodFacts, StepError> {
    let status = group.status;
    let annotations = pod.annotations();
    let labels = pod.labels();
    let config_hash = shared
        .hashes
        .of(cluster, status, servers, pod_image_type(pod))?;
    Ok(PodFacts {
        terminating: pod.metadata.deletion_timestamp.is_some(),
        pending: pod_phase(pod) == "Pending",
        failing: pod_is_failing(pod),
        spec_matches: annotations.get(LAST_APPLIED_SPEC_ANNOTATION) == Some(&desired.pod_spec_hash)
            || runs_as_desired(cluster, status, group)?,
        labels_match: process_group_labels(cluster, status)
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v)),
        config_confirmed: config_hash.is_some()
            && annotations.get(LAST_APPLIED_CONFIG_MAP_ANNOTATION) == config_hash.as_ref(),
        sidecar_image_matches: sidecar_image_matches(&shared.images, spec),
    })
}

/// The taints of the node the group's pod runs on.
fn group_taints(
    snapshot: &ClusterSnapshot,
    status: &ProcessGroupStatus,
    pod: Option<&SpecFacts>,
) -> TaintFacts {
    let cluster = snapshot.cluster();
    match snapshot.nodes() {
        None => TaintFacts::Clear,
        Some(nodes) => {
            let options = &cluster
                .spec
                .automation_options
                .replacements
                .taint_replacement_options;
            let node_name = pod.and_then(|facts| facts.node_name.as_deref());
            match node_name {
                None => TaintFacts::Clear,
                // Scheduled after the nodes were read: judged next pass.
                Some(name) if !nodes.contains_key(name) => TaintFacts::Unknown,
                Some(name) => taint_facts(
                    options,
                    nodes.get(name),
                    status.condition_since(&ProcessGroupConditionType::NodeTaintDetected),
                    snapshot.now_unix(),
                ),
            }
        }
    }
}

/// Observes one process group of `snapshot`.
fn observe_group(
    snapshot: &ClusterSnapshot,
    group: GroupView<'_>,
    shared: &mut Shared,
) -> Result<GroupObservation, StepError> {
    let cluster = snapshot.cluster();
    let status = group.status;
    let id = group.id();
    let pod = group.pod_head().zip(group.pod_facts());
    // A pod made before a change of servers per pod is judged by what it runs until
    // its group is replaced.
    let servers = group.servers_per_pod();
    let desired = snapshot
        .desired(status)
        .map_err(build_error(format!("desired objects of {id}")))?;
    let pod_facts = match pod {
        None => None,
        Some(pod) => Some(pod_facts(cluster, &group, pod, servers, &desired, shared)?),
    };
    let (pvc_needed, service_needed) = (desired.pvc.is_some(), desired.service_needed);
    let processes: Vec<&ProcessStatus> = group.processes().collect();
    let process_facts = match snapshot.database_status() {
        None => ProcessFacts::Unknown,
        Some(_) => ProcessFacts::Reported {
            reporting: processes.len(),
            excluded: processes.iter().any(|p| p.excluded),
        },
    };
    let command_lines_match = match (pod, &pod_facts) {
        (Some(_), Some(_)) if !processes.is_empty() => {
            command_lines_match(snapshot, &group, servers, &processes)
        }
        _ => None,
    };
    let taints = group_taints(snapshot, status, group.pod_facts());
    let fault_domain = processes
        .iter()
        .find_map(|p| p.locality.zoneid.clone())
        .or_else(|| group.pod_zone().map(str::to_owned));
    Ok(GroupObservation {
        facts: GroupFacts {
            marked_for_removal: status.is_marked_for_removal(),
            pod: pod_facts,
            pvc: presence(pvc_needed, group.pvc),
            service: presence(service_needed, group.service),
            processes: process_facts,
            expected_processes: usize::try_from(servers).unwrap_or(1),
            command_lines_match,
            io_error: processes
                .iter()
                .any(|p| IO_PROBLEMS.iter().any(|name| p.has_message(name))),
            taints,
        },
        address: pod
            .and_then(|(head, _)| public_ip(cluster, head))
            .map(str::to_owned),
        fault_domain,
        pod_shape: pod.map(|(head, facts)| pod_shape(head, facts)),
    })
}

/// Observes every process group, by ID (of a duplicated ID, the last entry's). A group
/// whose inputs did not change since the last observation keeps it
/// ([`super::observe_memo`]).
pub(crate) fn observe_groups(
    snapshot: &ClusterSnapshot,
) -> Result<BTreeMap<String, GroupObservation>, StepError> {
    let mut shared = Shared {
        hashes: ConfigHashes::default(),
        images: WantedImages::of(snapshot.cluster()),
    };
    // Taints are judged against the pass's time: with nodes read, every group afresh.
    let remembering = snapshot.nodes().is_none();
    let memo = snapshot.observation_memo();
    let key = cluster_key(snapshot.cluster());
    let mut remembered = memo.take(&key);
    let fingerprint = snapshot.fingerprint();
    let database_read = snapshot.database_status().is_some();
    let mut observations = BTreeMap::new();
    let mut epochs = Vec::new();
    for group in snapshot.groups() {
        let reused = remembering
            .then(|| remembered.reuse(fingerprint, &group, database_read))
            .flatten();
        let slot = group.slot;
        let (observation, epoch) = match reused {
            Some((observation, epoch)) => {
                // Every test run checks the memo against a fresh observation.
                debug_assert_eq!(
                    Some(&observation),
                    observe_group(snapshot, group, &mut shared).ok().as_ref(),
                    "remembered observation of {}",
                    group.id()
                );
                (observation, Some(epoch))
            }
            None => {
                let observation = observe_group(snapshot, group, &mut shared)?;
                let epoch = remembering
                    .then(|| remembered.remember(fingerprint, &group, database_read, &observation))
                    .flatten();
                (observation, epoch)
            }
        };
        if epochs.len() <= slot {
            epochs.resize(slot + 1, None);
        }
        epochs[slot] = epoch;
        observations.insert(group.id().to_owned(), observation);
    }
    memo.put_back(key, remembered);
    snapshot.record_epochs(epochs);
    Ok(observations)
}

/// Whether the ConfigMap exists with exactly the desired data.
pub(crate) fn config_map_in_sync(snapshot: &ClusterSnapshot) -> Result<bool, StepError> {
    let desired = desired_config_map_for(
        snapshot.cluster(),
        snapshot.config_map(),
        snapshot.pod_spec_facts(),
    )?;
    Ok(snapshot.config_map().is_some_and(|live| {
        live.data.clone().unwrap_or_default() == desired.data.unwrap_or_default()
    }))
}

#[cfg(test)]
#[path = "observe_tests.rs"]
mod tests;
