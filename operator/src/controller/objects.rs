//! Small read helpers over the live objects of a cluster: which process group an object
//! belongs to (the snapshot indexes objects by it), pod phase and IP.

use fdb_shared::api::FoundationDBCluster;
use kube::ResourceExt;

use super::snapshot::pod_head::PodParts;

/// The process group ID a labelled object belongs to (first configured ID label).
pub(crate) fn group_of<K: ResourceExt>(
    cluster: &FoundationDBCluster,
    object: &K,
) -> Option<String> {
    group_of_meta(cluster, object.meta())
}

/// [`group_of`] an object with this metadata.
pub(crate) fn group_of_meta(
    cluster: &FoundationDBCluster,
    meta: &kube::api::ObjectMeta,
) -> Option<String> {
    let keys = cluster.spec.labels.process_group_id_labels();
    group_labelled(&keys, meta).map(str::to_owned)
}

/// The process group ID an object with this metadata carries under the first of `keys`
/// (`spec.labels.processGroupIDLabels`) it has, borrowed: for a caller that reads the
/// keys once for many objects.
pub(crate) fn group_labelled<'a>(
    keys: &[String],
    meta: &'a kube::api::ObjectMeta,
) -> Option<&'a str> {
    let labels = meta.labels.as_ref()?;
    keys.iter()
        .find_map(|key| labels.get(key))
        .map(String::as_str)
}

/// The pod's phase (`Pending` when unknown).
pub(crate) fn pod_phase(pod: &impl PodParts) -> &str {
    pod.pod_status()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
}

/// Whether the pod is in a terminal phase and not being deleted yet.
pub(crate) fn is_terminal(pod: &impl PodParts) -> bool {
    let evicted = pod.pod_status().and_then(|s| s.reason.as_deref()) == Some("Evicted");
    pod.meta().deletion_timestamp.is_none()
        && (evicted || matches!(pod_phase(pod), "Failed" | "Succeeded"))
}

/// The pod's IP its processes use, when it has one: with the
/// `foundationdb.org/ip-family` annotation (the pod was made for `routing.podIPFamily`)
/// the first of `status.podIPs` of that family, else `status.podIP`. Each pod is judged
/// by the family it was made with, not the spec's: while the family changes, the old
/// pods still listen on the old one (the Go operator's `GetPublicIPsForPod`,
/// `internal/pod_helper.go`).
pub(crate) fn pod_ip(pod: &impl PodParts) -> Option<&str> {
    let status = pod.pod_status()?;
    let Some(family) = pod_ip_family(pod) else {
        return status.pod_ip.as_deref().filter(|ip| !ip.is_empty());
    };
    status
        .pod_ips
        .iter()
        .flatten()
        .map(|listed| listed.ip.as_str())
        .chain(status.pod_ip.as_deref())
        .find(|ip| {
            ip.parse::<std::net::IpAddr>().is_ok_and(|ip| {
                if family == 6 {
                    ip.is_ipv6()
                } else {
                    ip.is_ipv4()
                }
            })
        })
}

/// The IP family (4 or 6) the pod was made for (`foundationdb.org/ip-family`), if any.
pub(crate) fn pod_ip_family(pod: &impl PodParts) -> Option<i32> {
    pod.meta()
        .annotations
        .as_ref()?
        .get(crate::controller::model::pod::IP_FAMILY_ANNOTATION)?
        .trim()
        .parse()
        .ok()
        .filter(|family| matches!(family, 4 | 6))
}

/// The address the pod's processes advertise (`FDB_PUBLIC_IP`): the service IP recorded
/// in the `foundationdb.org/public-ip` annotation with `routing.publicIPSource: service`,
/// else the pod IP.
pub(crate) fn public_ip<'a>(
    cluster: &FoundationDBCluster,
    pod: &'a impl PodParts,
) -> Option<&'a str> {
    use fdb_shared::api::cluster::PublicIpSource;
    if cluster.spec.routing.public_ip_source() == PublicIpSource::Service {
        return pod
            .meta()
            .annotations
            .as_ref()?
            .get(crate::controller::model::pod::PUBLIC_IP_ANNOTATION)
            .map(String::as_str)
            .filter(|ip| !ip.is_empty());
    }
    pod_ip(pod)
}

/// Whether the pod is running (phase Running, not terminating) and has an IP.
pub(crate) fn pod_is_running(pod: &impl PodParts) -> bool {
    pod.meta().deletion_timestamp.is_none() && pod_phase(pod) == "Running" && pod_ip(pod).is_some()
}

/// Whether the pod is failing: phase Failed, or a container crash-looping or unable to
/// pull its image.
pub(crate) fn pod_is_failing(pod: &impl PodParts) -> bool {
    if pod_phase(pod) == "Failed" {
        return true;
    }
    let statuses = pod
        .pod_status()
        .into_iter()
        .flat_map(|s| s.container_statuses.iter().flatten());
    statuses
        .filter_map(|c| c.state.as_ref()?.waiting.as_ref()?.reason.as_deref())
        .any(|reason| {
            matches!(
                reason,
                "CrashLoopBackOff" | "ErrImagePull" | "ImagePullBackOff"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    #[test]
    fn pod_states() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "labels": {"foundationdb.org/fdb-process-group-id": "log-1"}},
            "status": {"phase": "Running", "podIP": "127.0.0.5",
                "containerStatuses": [{"name": "foundationdb", "image": "x", "imageID": "", "ready": false,
                    "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}
        }))
        .unwrap();
        assert!(pod_is_running(&pod));
        assert!(pod_is_failing(&pod));
        assert_eq!(pod_ip(&pod), Some("127.0.0.5"));
        let cluster = FoundationDBCluster::new("sample", Default::default());
        assert_eq!(group_of(&cluster, &pod).as_deref(), Some("log-1"));
        let pending: Pod =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "q"}})).unwrap();
        assert_eq!(pod_phase(&pending), "Pending");
        assert!(!pod_is_running(&pending));
        assert!(!pod_is_failing(&pending));
    }

    #[test]
    fn a_pod_made_for_an_ip_family_is_addressed_by_its_ip_of_that_family() {
        let pod = |annotations: serde_json::Value| -> Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "p", "annotations": annotations},
                "status": {"phase": "Running", "podIP": "10.1.0.5",
                    "podIPs": [{"ip": "10.1.0.5"}, {"ip": "fd00::1:5"}]}
            }))
            .unwrap()
        };
        let six = pod(serde_json::json!({"foundationdb.org/ip-family": "6"}));
        assert_eq!(pod_ip_family(&six), Some(6));
        assert_eq!(pod_ip(&six), Some("fd00::1:5"));
        let four = pod(serde_json::json!({"foundationdb.org/ip-family": "4"}));
        assert_eq!(pod_ip(&four), Some("10.1.0.5"));
        // Unset: `status.podIP`, whatever the family of the primary.
        assert_eq!(pod_ip(&pod(serde_json::json!({}))), Some("10.1.0.5"));
        let single: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "annotations": {"foundationdb.org/ip-family": "6"}},
            "status": {"phase": "Running", "podIP": "10.1.0.5", "podIPs": [{"ip": "10.1.0.5"}]}
        }))
        .unwrap();
        assert_eq!(pod_ip(&single), None, "no address of the family: none");
        assert!(!pod_is_running(&single));
    }

    #[test]
    fn the_public_ip_is_the_service_ip_with_service_routing() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "annotations": {"foundationdb.org/public-ip": "10.96.0.7"}},
            "status": {"phase": "Running", "podIP": "10.1.0.5"}
        }))
        .unwrap();
        let by_pod = FoundationDBCluster::new("sample", Default::default());
        assert_eq!(public_ip(&by_pod, &pod), Some("10.1.0.5"));
        let by_service: FoundationDBCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
            "metadata": {"name": "sample"},
            "spec": {"version": "7.1.57", "routing": {"publicIPSource": "service"}}
        }))
        .unwrap();
        assert_eq!(public_ip(&by_service, &pod), Some("10.96.0.7"));
    }
}
