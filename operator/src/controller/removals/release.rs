//! When a removed group's resources no longer hold back the next ones: the pod, then the
//! PVC, then the service are taken apart in that order, each confirmed gone (or stuck
//! terminating past `ignoreTerminatingPodsSeconds`, for a pod) before the next.

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::ResourceExt;

use crate::controller::snapshot::{ClusterSnapshot, GroupView};

/// Whether an object has been terminating longer than `seconds`.
pub(crate) fn terminating_longer_than<K: ResourceExt>(
    snapshot: &ClusterSnapshot,
    object: &K,
    seconds: i64,
) -> bool {
    object
        .meta()
        .deletion_timestamp
        .as_ref()
        .is_some_and(|since| snapshot.now_unix() - since.0.as_second() > seconds)
}

/// Whether the object is being deleted.
pub(crate) fn is_terminating<K: ResourceExt>(object: &K) -> bool {
    object.meta().deletion_timestamp.is_some()
}

/// Whether the group's pod no longer holds back its PVC and service: gone, or stuck
/// terminating past `ignoreTerminatingPodsSeconds`.
pub(crate) fn pod_released(snapshot: &ClusterSnapshot, group: &GroupView<'_>) -> bool {
    let ignore = snapshot
        .spec()
        .automation_options
        .ignore_terminating_pods_seconds();
    group
        .pod_head()
        .is_none_or(|pod| terminating_longer_than(snapshot, pod, ignore))
}

/// Whether the group's PVC is gone or terminating.
pub(crate) fn pvc_released(group: &GroupView<'_>) -> bool {
    group
        .pvc
        .is_none_or(|pvc: &PersistentVolumeClaim| is_terminating(pvc))
}
