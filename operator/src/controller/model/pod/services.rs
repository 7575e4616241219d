//! Services of a cluster: one per process group when public IPs come from services, and
//! the headless Service that gives pods their DNS names.

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::{ProcessGroupStatus, PublicIpSource};
use fdb_shared::monitor_conf::render::process_port;
use fdb_shared::validation::names::dns1035_label_error;
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::labels::{cluster_labels, merged_labels, process_group_labels};
use super::names::{ClusterIdentity, pod_name};
use super::{PodModelError, servers_per_pod};

/// The Service of one process group, named like its pod, whose cluster IP becomes the
/// processes' public IP; only with `routing.publicIPSource: service`. It selects the
/// group's pod by the process group labels and exposes one port per process
/// (`non-tls` 4501, `non-tls-2` 4503, ...; `tls` 4500, ... with TLS). Not-ready addresses
/// are published: the processes must be reachable whatever the pod's readiness.
pub(crate) fn build_process_group_service(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
) -> Result<Option<Service>, PodModelError> {
    if cluster.spec.routing.public_ip_source() != PublicIpSource::Service {
        return Ok(None);
    }
    let identity = ClusterIdentity::of(cluster)?;
    super::names::check_group_names(cluster, group)?;
    if let Some(problem) = dns1035_label_error(&pod_name(cluster, group)) {
        return Err(PodModelError::InvalidName {
            process_group: group.process_group_id.clone(),
            what: "Service name",
            value: pod_name(cluster, group),
            problem,
        });
    }
    let tls = cluster.spec.tls_enabled();
    let base_name = if tls { "tls" } else { "non-tls" };
    let ports = (1..=servers_per_pod(cluster, group.process_class))
        .map(|index| {
            let port = i32::try_from(process_port(index, tls)).unwrap_or(i32::MAX);
            ServicePort {
                name: Some(if index == 1 {
                    base_name.to_owned()
                } else {
                    format!("{base_name}-{index}")
                }),
                port,
                target_port: Some(IntOrString::Int(port)),
                protocol: Some("TCP".to_owned()),
                ..ServicePort::default()
            }
        })
        .collect();
    let labels = process_group_labels(cluster, group);
    Ok(Some(Service {
        metadata: ObjectMeta {
            name: Some(pod_name(cluster, group)),
            namespace: Some(identity.namespace),
            labels: Some(merged_labels(cluster, None, labels.clone())),
            owner_references: Some(vec![identity.owner]),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".to_owned()),
            selector: Some(labels),
            ports: Some(ports),
            publish_not_ready_addresses: Some(true),
            ..ServiceSpec::default()
        }),
        status: None,
    }))
}

/// The headless Service named like the cluster (`clusterIP: None`, not-ready addresses
/// published, selecting every pod of the cluster): with `routing.headlessService`, and
/// always with `routing.useDNSInClusterFile` (the default), whose DNS names
/// `<pod>.<cluster>.<namespace>.svc.<dnsDomain>` need it. `None` when not wanted or when
/// the cluster has no name, namespace or UID yet.
pub(crate) fn build_headless_service(cluster: &FoundationDBCluster) -> Option<Service> {
    if !cluster.spec.routing.headless_service() {
        return None;
    }
    let identity = ClusterIdentity::of(cluster).ok()?;
    let labels = cluster_labels(cluster);
    Some(Service {
        metadata: ObjectMeta {
            name: Some(identity.name),
            namespace: Some(identity.namespace),
            labels: Some(merged_labels(cluster, None, labels.clone())),
            owner_references: Some(vec![identity.owner]),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".to_owned()),
            selector: Some(labels),
            publish_not_ready_addresses: Some(true),
            ..ServiceSpec::default()
        }),
        status: None,
    })
}
