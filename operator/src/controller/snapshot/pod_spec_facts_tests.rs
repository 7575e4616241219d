use serde_json::json;

use super::*;
use crate::controller::fixtures::{Fixture, group};
use crate::controller::model::desired::pod_options;
use crate::controller::model::pod::buggify::pod_state;
use crate::controller::model::pod::build_pod;
use crate::controller::model::process_groups::zone_of;
use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::settings::KUBERNETES_CLUSTER_FAULT_DOMAIN_KEY;
use kube::ResourceExt;

/// The operator's pods for `spec`, each on a node with an IP, and once more unscheduled
/// (no node, no IP), as a kubelet would show them.
fn pods(spec: &str, ids: &[&str]) -> (FoundationDBCluster, Vec<Pod>) {
    let cluster = Fixture::new(spec).build().cluster().clone();
    let mut pods = Vec::new();
    for (n, id) in ids.iter().enumerate() {
        let g = group(id);
        let built = build_pod(&cluster, &g, &pod_options(&cluster, &g)).unwrap();
        let mut running = built.clone();
        running.spec.get_or_insert_with(Default::default).node_name = Some(format!("node-{n}"));
        running.status =
            serde_json::from_value(json!({"phase": "Running", "podIP": format!("10.0.0.{n}")}))
                .unwrap();
        pods.extend([built, running]);
    }
    (cluster, pods)
}

/// The zone as UpdateStatus told it from the decoded pod before the facts existed.
fn zone_from_the_pod(cluster: &FoundationDBCluster, pod: &Pod) -> Option<String> {
    if let Some(zone) = expected_zone(pod) {
        return Some(zone);
    }
    if has_sidecar(pod) {
        return None;
    }
    let domain = &cluster.spec.fault_domain;
    if domain.key() == KUBERNETES_CLUSTER_FAULT_DOMAIN_KEY {
        return domain.value.clone();
    }
    match domain.value_from() {
        "metadata.name" => Some(pod.name_any()),
        _ => pod
            .spec
            .as_ref()
            .and_then(|spec| spec.node_name.clone())
            .filter(|node| !node.is_empty()),
    }
}

#[test]
fn the_facts_are_what_the_steps_read_from_the_decoded_pod() {
    let specs = [
        "{version: 7.1.57, processCounts: {storage: 2, log: 1}}",
        "{version: 7.1.57, imageType: unified, processCounts: {storage: 2, log: 1}}",
        "{version: 7.1.57, storageServersPerPod: 2, trustedCAs: [CA], processCounts: {storage: 2}}",
        "{version: 7.1.57, buggify: {crashLoop: [storage-1], noSchedule: [storage-2]}, processCounts: {storage: 2}}",
        "{version: 7.1.57, faultDomain: {key: foundationdb.org/none}, processCounts: {storage: 2}}",
    ];
    let mut seen = (0, 0, 0, 0);
    for spec in specs {
        let (cluster, pods) = pods(spec, &["storage-1", "storage-2", "log-1"]);
        for pod in pods {
            let facts = SpecFacts::of(&pod);
            let spec = pod.spec.as_ref().unwrap();
            assert_eq!(facts.mounted_servers, mounted_servers_per_pod(&pod));
            assert_eq!(facts.substitutions, expected_substitutions(&pod));
            assert_eq!(
                zone_of(&cluster, &pod.name_any(), &facts).map(str::to_owned),
                zone_from_the_pod(&cluster, &pod)
            );
            assert_eq!(facts.node_name, spec.node_name);
            assert_eq!(facts.sidecar_image.as_deref(), live_sidecar_image(&pod));
            let main = spec.containers.iter().find(|c| c.name == MAIN_CONTAINER);
            assert_eq!(facts.main_image, main.and_then(|c| c.image.clone()));
            assert_eq!(facts.buggify, pod_state(&pod));
            let mounted: Vec<(String, String)> = spec
                .volumes
                .iter()
                .flatten()
                .filter_map(|v| v.config_map.as_ref())
                .filter(|cm| cm.optional != Some(true))
                .flat_map(|cm| {
                    cm.items
                        .iter()
                        .flatten()
                        .map(|i| (cm.name.clone(), i.key.clone()))
                })
                .collect();
            let from_facts: Vec<(String, String)> = facts
                .config_map_mounts
                .iter()
                .flat_map(|m| m.keys.iter().map(|k| (m.name.clone(), k.clone())))
                .collect();
            assert_eq!(from_facts, mounted);
            // The cache derives them once, from the slimmed pod: the same.
            let compact = crate::controller::cache::pod::CompactPod::new(pod.clone());
            assert_eq!(compact.facts(), &facts);
            seen.0 += usize::from(facts.substitutions.is_some());
            seen.1 += usize::from(facts.mounted_servers == Some(2));
            seen.2 += usize::from(facts.buggify != Default::default());
            seen.3 += usize::from(!facts.config_map_mounts.is_empty());
        }
    }
    // The fixtures show each fact set and unset.
    assert!(
        seen.0 > 0 && seen.1 > 0 && seen.2 > 0 && seen.3 > 0,
        "{seen:?}"
    );
}
