//! `CONTROLLER_SCALE_SIZES=1`: the size of one cached pod, PVC, service and cluster, and
//! of a production-shaped pod (with the `managedFields` and kubelet status a real API
//! server returns) before and after the cache trims and compacts it (the spec's JSON
//! deflated).

use std::collections::BTreeMap;

use fdb_operator::controller::{CLUSTER_NAME_LABEL, ObjectCache};
use fdb_simulation::fleet::Fleet;

use super::heap_size;

/// Prints what the cached objects of the first cluster hold, per object (diagnostic).
pub(crate) fn object_sizes(cache: &ObjectCache, fleet: &Fleet) {
    let Some((namespace, name)) = fleet.clusters.first() else {
        return;
    };
    let labels = BTreeMap::from([(CLUSTER_NAME_LABEL.to_owned(), name.clone())]);
    let pods = cache.pods(namespace, &labels).unwrap_or_default();
    let count = pods.len().max(1);
    let compact: usize = cache
        .compact_pods(namespace, &labels)
        .iter()
        .map(|pod| heap_size(&**pod))
        .sum();
    eprintln!(
        "per cached pod as the cache keeps it (compact: the spec's JSON deflated): {} B",
        compact / count
    );
    decode_cost(cache, namespace, &labels);
    let mut totals = [0usize; 6];
    for pod in &pods {
        let pod: &k8s_openapi::api::core::v1::Pod = pod;
        totals[0] += heap_size(pod);
        totals[1] += heap_size(&pod.metadata);
        totals[2] += heap_size(&pod.spec);
        totals[3] += heap_size(&pod.status);
        totals[4] += heap_size(&pod.metadata.annotations);
        totals[5] += heap_size(&pod.metadata.labels);
    }
    eprintln!(
        "per cached pod ({count}): {} B; metadata {} (annotations {}, labels {}), spec {}, status {}",
        totals[0] / count,
        totals[1] / count,
        totals[4] / count,
        totals[5] / count,
        totals[2] / count,
        totals[3] / count,
    );
    if let Some(pod) = pods.first() {
        let (full, slim) = production_shaped(pod);
        let compact = fdb_operator::controller::CompactPod::new(full.clone());
        eprintln!(
            "a production-shaped pod (managed fields of the operator and the kubelet, a \
             kubelet's status): {} B, {} B slimmed, {} B as the cache keeps it (compact)",
            heap_size(&full),
            heap_size(&slim),
            heap_size(&compact)
        );
    }
    let pvcs = cache.pvcs(namespace, &labels);
    let size: usize = pvcs.iter().map(|pvc| heap_size(&**pvc)).sum();
    eprintln!(
        "per cached PVC ({}): {} B",
        pvcs.len(),
        size / pvcs.len().max(1)
    );
    let services = cache.services(namespace, &labels);
    let size: usize = services.iter().map(|s| heap_size(&**s)).sum();
    eprintln!(
        "per cached service ({}): {} B",
        services.len(),
        size / services.len().max(1)
    );
    if let Some(pod) = pods.first()
        && let Some(spec) = &pod.spec
    {
        eprintln!(
            "a pod's spec: containers {} init {} volumes {} affinity {} tolerations {}; size_of Container {} Volume {} PodSpec {}",
            heap_size(&spec.containers),
            heap_size(&spec.init_containers),
            heap_size(&spec.volumes),
            heap_size(&spec.affinity),
            heap_size(&spec.tolerations),
            std::mem::size_of::<k8s_openapi::api::core::v1::Container>(),
            std::mem::size_of::<k8s_openapi::api::core::v1::Volume>(),
            std::mem::size_of::<k8s_openapi::api::core::v1::PodSpec>(),
        );
        for c in &spec.containers {
            eprintln!(
                "  container {:?}: env {} mounts {} resources {} probe {}",
                c.name,
                heap_size(&c.env),
                heap_size(&c.volume_mounts),
                heap_size(&c.resources),
                heap_size(&c.liveness_probe)
            );
        }
    }
}

/// Prints the CPU a pass pays per pod the cache decodes (the pods of one cluster,
/// decoded again and again; this thread's CPU time, which a busy machine does not
/// stretch).
fn decode_cost(cache: &ObjectCache, namespace: &str, labels: &BTreeMap<String, String>) {
    const ROUNDS: u32 = 50;
    let compact = cache.compact_pods(namespace, labels);
    let started = super::thread_cpu();
    let mut decoded = 0usize;
    for _ in 0..ROUNDS {
        for pod in &compact {
            decoded += usize::from(pod.decode().is_ok());
        }
    }
    let spent = super::thread_cpu().saturating_sub(started);
    eprintln!(
        "decoding a cached pod: {:.1} us ({decoded} decodes)",
        spent.as_secs_f64() * 1e6 / decoded.max(1) as f64
    );
}

/// The `fieldsV1` an API server records for a manager of `value`.
fn fields_v1(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::{Map, Value, json};
    match value {
        Value::Object(map) => {
            let mut fields = Map::from_iter([(".".to_owned(), json!({}))]);
            for (key, value) in map {
                fields.insert(format!("f:{key}"), fields_v1(value));
            }
            Value::Object(fields)
        }
        Value::Array(items) => {
            let mut fields = Map::new();
            for item in items {
                let key = match item.get("name") {
                    Some(name) => format!("k:{{\"name\":{name}}}"),
                    None => format!("v:{item}"),
                };
                fields.insert(key, fields_v1(item));
            }
            Value::Object(fields)
        }
        _ => json!({}),
    }
}

/// `pod` as a real API server lists it (the operator's and the kubelet's managed
/// fields, a kubelet's status), and the same as the cache keeps it.
fn production_shaped(
    pod: &k8s_openapi::api::core::v1::Pod,
) -> (
    k8s_openapi::api::core::v1::Pod,
    k8s_openapi::api::core::v1::Pod,
) {
    use serde_json::json;
    let container = |name: &str| {
        json!({"name": name, "image": "foundationdb/foundationdb:7.1.57",
               "imageID": "docker.io/foundationdb/foundationdb@sha256:0000000000000000000000000000000000000000000000000000000000000000",
               "containerID": "containerd://0000000000000000000000000000000000000000000000000000000000000000",
               "ready": true, "restartCount": 0, "started": true,
               "state": {"running": {"startedAt": "2026-11-28T00:00:00Z"}},
               "lastState": {}})
    };
    let condition = |kind: &str| {
        json!({"type": kind, "status": "True", "lastProbeTime": null,
               "lastTransitionTime": "2026-11-28T00:00:00Z"})
    };
    let conditions = [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    .map(condition);
    let status = json!({
        "phase": "Running", "hostIP": "192.168.0.1", "hostIPs": [{"ip": "192.168.0.1"}],
        "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}],
        "startTime": "2026-11-28T00:00:00Z", "qosClass": "Burstable",
        "conditions": conditions,
        "containerStatuses": [container("foundationdb"), container("foundationdb-kubernetes-sidecar")],
        "initContainerStatuses": [container("foundationdb-kubernetes-init")]
    });
    let mut as_json = serde_json::to_value(pod).unwrap_or_default();
    if let Some(object) = as_json.as_object_mut() {
        object.remove("status");
    }
    let managed = json!([
        {"manager": "fdb-operator", "operation": "Update", "apiVersion": "v1",
         "time": "2026-11-28T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields_v1(&as_json)},
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "subresource": "status",
         "time": "2026-11-28T00:00:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": fields_v1(&json!({"status": status.clone()}))}
    ]);
    let mut full = pod.clone();
    full.metadata.managed_fields = serde_json::from_value(managed).ok();
    full.status = serde_json::from_value(status).ok();
    let mut slim = full.clone();
    fdb_operator::controller::slim_pod(&mut slim);
    (full, slim)
}
