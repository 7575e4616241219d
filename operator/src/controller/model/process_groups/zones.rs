//! The fault domain (zone) of a pod, as `spec.faultDomain` defines it (docs/controller-model.md,
//! "The pod").

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::settings::KUBERNETES_CLUSTER_FAULT_DOMAIN_KEY;
#[cfg(test)]
use k8s_openapi::api::core::v1::Pod;
#[cfg(test)]
use kube::ResourceExt;

use crate::controller::snapshot::pod_spec_facts::SpecFacts;

/// The zone of `pod`: the zone its processes will report, i.e. what the sidecar's
/// `FDB_ZONE_ID` resolves to (which covers every `faultDomain.valueFrom` and the bin
/// packing distribution key); for pods without our sidecar, by `spec.faultDomain`: its node
/// (`spec.nodeName`, the default), its name (`foundationdb.org/none`), or the fixed value
/// (`foundationdb.org/kubernetes-cluster`). `None` while the pod is not scheduled (zone by
/// node).
#[cfg(test)]
pub(crate) fn pod_zone(cluster: &FoundationDBCluster, pod: &Pod) -> Option<String> {
    let name = pod.name_any();
    zone_of(cluster, &name, &SpecFacts::of(pod)).map(str::to_owned)
}

/// [`pod_zone`] of the pod named `name` whose spec shows `facts`.
pub(crate) fn zone_of<'a>(
    cluster: &'a FoundationDBCluster,
    name: &'a str,
    facts: &'a SpecFacts,
) -> Option<&'a str> {
    if let Some(zone) = facts.expected_zone.as_deref() {
        return Some(zone);
    }
    if facts.has_sidecar {
        // Our pod, whose zone source has not resolved yet (not scheduled).
        return None;
    }
    let domain = &cluster.spec.fault_domain;
    if domain.key() == KUBERNETES_CLUSTER_FAULT_DOMAIN_KEY {
        return domain.value.as_deref();
    }
    match domain.value_from() {
        "metadata.name" => Some(name),
        // `spec.nodeName` and node-derived sources: the node the pod runs on.
        _ => facts.node_name.as_deref().filter(|node| !node.is_empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(fault_domain: &str) -> FoundationDBCluster {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
            "metadata": {"name": "sample"},
            "spec": {"version": "7.1.57", "faultDomain": serde_json::from_str::<serde_json::Value>(fault_domain).unwrap()}
        }))
        .unwrap()
    }

    fn pod(node: Option<&str>) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "sample-storage-1"},
            "spec": {"containers": [], "nodeName": node}
        }))
        .unwrap()
    }

    #[test]
    fn zone_by_node_name_pod_name_or_fixed_value() {
        assert_eq!(
            pod_zone(&cluster("{}"), &pod(Some("node-3"))).as_deref(),
            Some("node-3")
        );
        assert_eq!(pod_zone(&cluster("{}"), &pod(None)), None);
        assert_eq!(
            pod_zone(&cluster(r#"{"key": "foundationdb.org/none"}"#), &pod(None)).as_deref(),
            Some("sample-storage-1")
        );
        assert_eq!(
            pod_zone(
                &cluster(r#"{"key": "foundationdb.org/kubernetes-cluster", "value": "kc2"}"#),
                &pod(Some("node-1"))
            )
            .as_deref(),
            Some("kc2")
        );
    }
}
