//! Names of the objects of a cluster (docs/controller-model.md, "Names, labels,
//! annotations"): process group IDs, pods, PVCs, DNS names, and the owner reference every
//! object carries.

use fdb_shared::api::cluster::ProcessGroupStatus;
use fdb_shared::api::{FoundationDBCluster, ProcessClass};
use fdb_shared::validation::names::{
    dns1123_label_error, dns1123_subdomain_error, label_value_error,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;

use super::PodModelError;
use crate::controller::errors::StepError;

/// The process group ID of the `n`-th group of `class`: `[prefix-]<class>-<n>`, with the
/// class in FoundationDB's spelling (`cluster_controller-1`).
pub(crate) fn process_group_id(
    cluster: &FoundationDBCluster,
    class: ProcessClass,
    n: u32,
) -> String {
    let prefix = cluster.spec.process_group_id_prefix();
    if prefix.is_empty() {
        format!("{class}-{n}")
    } else {
        format!("{prefix}-{class}-{n}")
    }
}

/// Splits a process group ID of this cluster into its class and number; `None` when the ID
/// does not have this cluster's prefix, names no known class or has no positive number.
#[cfg(test)]
pub(crate) fn parse_process_group_id(
    cluster: &FoundationDBCluster,
    id: &str,
) -> Option<(ProcessClass, u32)> {
    let prefix = cluster.spec.process_group_id_prefix();
    let rest = if prefix.is_empty() {
        id
    } else {
        id.strip_prefix(prefix)?.strip_prefix('-')?
    };
    let (class, number) = rest.rsplit_once('-')?;
    let class = class.parse::<ProcessClass>().ok()?;
    let number = number.parse::<u32>().ok().filter(|n| *n > 0)?;
    Some((class, number))
}

/// The class and number of any process group ID, whatever its prefix (`a-storage-1`,
/// `storage-1`, `dc2-cluster_controller-3`): the number after the last `-` and the class
/// name right before it. The prefix is ignored on purpose: a group keeps its pod, PVC and
/// number when `processGroupIDPrefix` changes (as in the Go operator), so a prefix change
/// never makes the operator build a second pod for the same group.
pub(crate) fn parse_any_process_group_id(id: &str) -> Option<(ProcessClass, u32)> {
    let (head, number) = id.rsplit_once('-')?;
    let number = number.parse::<u32>().ok().filter(|n| *n > 0)?;
    let class = head.parse::<ProcessClass>().ok().or_else(|| {
        let (_, class) = head.rsplit_once('-')?;
        class.parse().ok()
    })?;
    Some((class, number))
}

/// The cluster's name (empty when unset; builders that need it return an error instead).
pub(crate) fn cluster_name(cluster: &FoundationDBCluster) -> &str {
    cluster.metadata.name.as_deref().unwrap_or_default()
}

/// The pod of a process group: `<cluster>-<class with _ as ->-<n>`, from the group's class
/// and the number at the end of its ID; the ID prefix is not part of the name (so it may
/// change without renaming anything). An ID without a number falls back to
/// `<cluster>-<id, _ as ->`.
pub(crate) fn pod_name(cluster: &FoundationDBCluster, group: &ProcessGroupStatus) -> String {
    let cluster_name = cluster_name(cluster);
    let id = &group.process_group_id;
    match parse_any_process_group_id(id) {
        Some((_, n)) => format!("{cluster_name}-{}-{n}", group.process_class.dns_name()),
        None => format!("{cluster_name}-{}", id.replace('_', "-").to_lowercase()),
    }
}

/// The data PVC of a process group: `<pod>-data`.
pub(crate) fn pvc_name(cluster: &FoundationDBCluster, group: &ProcessGroupStatus) -> String {
    format!("{}-data", pod_name(cluster, group))
}

/// Checks what a process group's objects are named and labelled with before they are
/// built: the pod name (also its hostname and, with `-data`, its PVC's) must be a
/// DNS-1123 label and the process group ID a label value. Validation guarantees this for
/// the groups the operator numbers itself; IDs read from the status (another operator's)
/// are only checked here.
pub(crate) fn check_group_names(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
) -> Result<(), PodModelError> {
    let invalid = |what, value: String, problem| PodModelError::InvalidName {
        process_group: group.process_group_id.clone(),
        what,
        value,
        problem,
    };
    let pod = pod_name(cluster, group);
    if let Some(problem) = dns1123_label_error(&pod) {
        return Err(invalid("pod name", pod, problem));
    }
    if let Some(problem) = label_value_error(&group.process_group_id) {
        return Err(invalid(
            "process group ID label value",
            group.process_group_id.clone(),
            problem,
        ));
    }
    Ok(())
}

/// kube puts an object's name into the request path as it is: a name built from live
/// state (a process group ID in the status) that no object can have, e.g. holding `/`
/// or `?`, is refused here instead of addressing another path.
pub(crate) fn checked_object_name(name: &str, action: &str) -> Result<(), StepError> {
    match dns1123_subdomain_error(name) {
        None => Ok(()),
        Some(problem) => Err(StepError::InvalidState(format!(
            "{action}: {name:?} cannot name an object ({problem}); not sent"
        ))),
    }
}

/// The DNS name of a process group's pod through the headless Service:
/// `<pod>.<cluster>.<namespace>.svc.<dnsDomain>`.
pub(crate) fn pod_dns_name(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
) -> Result<String, PodModelError> {
    let identity = ClusterIdentity::of(cluster)?;
    Ok(format!(
        "{}.{}.{}.svc.{}",
        pod_name(cluster, group),
        identity.name,
        identity.namespace,
        cluster.spec.dns_domain()
    ))
}

/// Name, namespace and owner reference of a cluster, checked once per build.
#[derive(Debug, Clone)]
pub(crate) struct ClusterIdentity {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// The controller owner reference to put on every object of the cluster.
    pub owner: OwnerReference,
}

impl ClusterIdentity {
    /// Reads and checks the cluster's identity: every owned object needs the name, the
    /// namespace and the UID (an owner reference without UID is rejected by the API
    /// server).
    pub(crate) fn of(cluster: &FoundationDBCluster) -> Result<Self, PodModelError> {
        let name = cluster
            .metadata
            .name
            .clone()
            .filter(|name| !name.is_empty())
            .ok_or(PodModelError::MissingClusterName)?;
        let namespace = cluster
            .metadata
            .namespace
            .clone()
            .filter(|namespace| !namespace.is_empty())
            .ok_or_else(|| PodModelError::MissingNamespace {
                cluster: name.clone(),
            })?;
        let uid = cluster
            .metadata
            .uid
            .clone()
            .filter(|uid| !uid.is_empty())
            .ok_or_else(|| PodModelError::MissingUid {
                cluster: format!("{namespace}/{name}"),
            })?;
        let owner = OwnerReference {
            api_version: FoundationDBCluster::api_version(&()).into_owned(),
            kind: FoundationDBCluster::kind(&()).into_owned(),
            name: name.clone(),
            uid,
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        Ok(Self {
            name,
            namespace,
            owner,
        })
    }
}
