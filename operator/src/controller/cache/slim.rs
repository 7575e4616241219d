//! What the watch caches keep of each object: everything a pass reads, nothing else.
//! The caches hold every pod, PVC, service and ConfigMap of every cluster the operator
//! watches, so what is kept per object is multiplied by the fleet (issue 20: 100
//! clusters of 100 process groups within 256 MiB).
//!
//! Dropped before an object enters its store:
//! - `metadata.managedFields`, on every kind: the API server's field ownership, as
//!   large as the object's own fields (a JSON tree per manager) and never read;
//! - a PVC's status but its phase (capacity, conditions): the take-over rule judges a
//!   claim by its spec; ReplaceFailedPods reads whether it is bound;
//! - of a pod's status, all but what a pass reads: the phase, the pod IP, the reason
//!   (`Evicted`), a failed `PodScheduled` condition (the scheduler's reason: a volume
//!   bound elsewhere, a claim that cannot bind), and per container its name, image,
//!   readiness, restarts and state (a waiting reason tells a crash loop or an image
//!   that cannot be pulled). The other conditions, host IPs, start time, init
//!   containers' statuses and each container's last state and IDs go.
//!
//! Pod specs, labels and annotations are kept whole: pods are compared with their
//! desired spec field by field (`pod_model::equivalence`, `replace_only`). The pods'
//! cache then keeps each slimmed pod compact, its spec as JSON (`cache/pod.rs`),
//! and passes read it decoded. A field a pass starts reading must be kept here; the
//! tests below hold the read helpers and every step's decision to the same answers on
//! pods as listed and as a pass reads them from the cache.

use k8s_openapi::api::core::v1::{
    ConfigMap, ContainerStatus, PersistentVolumeClaim, PersistentVolumeClaimStatus, Pod, PodStatus,
    Service,
};
use kube::api::ObjectMeta;

/// Drops the field ownership records.
fn slim_metadata(metadata: &mut ObjectMeta) {
    metadata.managed_fields = None;
}

/// What a pass reads of a container's status.
fn slim_container_status(status: ContainerStatus) -> ContainerStatus {
    ContainerStatus {
        name: status.name,
        image: status.image,
        ready: status.ready,
        restart_count: status.restart_count,
        started: status.started,
        state: status.state,
        ..ContainerStatus::default()
    }
}

/// A pod as its cache keeps it (see the module documentation).
pub fn slim_pod(pod: &mut Pod) {
    slim_metadata(&mut pod.metadata);
    pod.status = pod.status.take().map(|status| PodStatus {
        phase: status.phase,
        pod_ip: status.pod_ip,
        // A pod made for `routing.podIPFamily` is addressed by the IP of its family.
        pod_ips: status.pod_ips,
        reason: status.reason,
        conditions: status
            .conditions
            .map(|conditions| {
                conditions
                    .into_iter()
                    .filter(|c| c.type_ == "PodScheduled" && c.status == "False")
                    .collect::<Vec<_>>()
            })
            .filter(|kept| !kept.is_empty()),
        container_statuses: status
            .container_statuses
            .map(|statuses| statuses.into_iter().map(slim_container_status).collect()),
        ..PodStatus::default()
    });
}

/// A PVC as its cache keeps it: metadata (without managed fields), spec and phase.
pub(crate) fn slim_pvc(pvc: &mut PersistentVolumeClaim) {
    slim_metadata(&mut pvc.metadata);
    pvc.status = pvc
        .status
        .take()
        .and_then(|status| status.phase)
        .map(|phase| PersistentVolumeClaimStatus {
            phase: Some(phase),
            ..PersistentVolumeClaimStatus::default()
        });
}

/// A service as its cache keeps it (without managed fields).
pub(crate) fn slim_service(service: &mut Service) {
    slim_metadata(&mut service.metadata);
}

/// A ConfigMap as its cache keeps it (without managed fields).
pub(crate) fn slim_config_map(config_map: &mut ConfigMap) {
    slim_metadata(&mut config_map.metadata);
}

#[cfg(test)]
#[path = "slim_tests.rs"]
mod tests;
