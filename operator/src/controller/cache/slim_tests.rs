use fdb_shared::status_json::DatabaseStatus;
use serde_json::json;

use super::*;
use std::sync::Arc;

use crate::controller::cache::decoded_pods::DecodedPods;
use crate::controller::cache::pod::CompactPod;
use crate::controller::fixtures::{Fixture, database, group};
use crate::controller::model::desired::pod_options;
use crate::controller::model::pod::{build_pod, build_pvc, mounted_servers_per_pod};
use crate::controller::model::pod::{expected_substitutions, expected_zone};
use crate::controller::objects::is_terminal;
use crate::controller::objects::{pod_ip, pod_is_failing, pod_is_running, pod_phase, public_ip};
use crate::controller::pass::plan::PassFacts;
use crate::controller::snapshot::ClusterSnapshot;
use crate::controller::snapshot::observe::observe_groups;
use crate::controller::steps::ordered_steps;

/// `managedFields` as an API server records them: one entry per manager.
fn managed_fields() -> serde_json::Value {
    json!([
        {"manager": "fdb-operator", "operation": "Update", "apiVersion": "v1",
         "time": "2026-11-28T00:00:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:foundationdb.org/fdb-process-group-id": {}}},
                      "f:spec": {"f:containers": {"k:{\"name\":\"foundationdb\"}": {".": {}, "f:image": {}}}}}},
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
         "time": "2026-11-28T00:00:00Z", "fieldsType": "FieldsV1", "subresource": "status",
         "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:podIP": {}}}}
    ])
}

/// A pod status as a kubelet writes it: `phase`, `reason` and the first container's
/// waiting reason as given, and everything a kubelet adds besides.
fn kubelet_status(
    phase: &str,
    ip: Option<&str>,
    reason: Option<&str>,
    waiting: Option<&str>,
) -> serde_json::Value {
    let state = match waiting {
        Some(reason) => json!({"waiting": {"reason": reason, "message": "back-off"}}),
        None => json!({"running": {"startedAt": "2026-11-28T00:00:00Z"}}),
    };
    let container = |name: &str, state: serde_json::Value| {
        json!({"name": name, "image": "foundationdb/foundationdb:7.1.57",
               "imageID": "docker.io/foundationdb/foundationdb@sha256:00", "containerID": "containerd://00",
               "ready": waiting.is_none(), "restartCount": 3, "started": true, "state": state,
               "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                   "startedAt": "2026-11-28T00:00:00Z", "finishedAt": "2026-11-28T00:00:00Z"}}})
    };
    let mut status = json!({
        "phase": phase,
        "hostIP": "192.168.0.1", "hostIPs": [{"ip": "192.168.0.1"}],
        "startTime": "2026-11-28T00:00:00Z", "qosClass": "Burstable",
        "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-28T00:00:00Z"},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-28T00:00:00Z"}],
        "containerStatuses": [
            container("foundationdb", state),
            container("foundationdb-kubernetes-sidecar", json!({"running": {}}))],
        "initContainerStatuses": [container("foundationdb-kubernetes-init", json!({"terminated": {"exitCode": 0}}))]
    });
    if let Some(ip) = ip {
        status["podIP"] = json!(ip);
        status["podIPs"] = json!([{"ip": ip}]);
    }
    if let Some(reason) = reason {
        status["reason"] = json!(reason);
    }
    status
}

/// A cluster of storage groups whose pods are as an API server would list them
/// (managed fields, the kubelet's whole status): running, crash-looping, evicted,
/// pending without an IP and terminating.
/// `slim`: as a pass reads them from the pods' cache (slimmed, compacted, decoded).
fn fixture(slim: bool) -> Fixture {
    let ids = [
        "storage-1",
        "storage-2",
        "storage-3",
        "storage-4",
        "storage-5",
    ];
    let spec = "{version: 7.1.57, processCounts: {storage: 5, log: -1, stateless: -1}}";
    let groups: Vec<_> = ids.iter().map(|id| group(id)).collect();
    let base = Fixture::new(spec).groups(groups.clone());
    let cluster = base.clone().build().cluster().clone();
    let statuses = [
        kubelet_status("Running", Some("10.0.0.1"), None, None),
        kubelet_status("Running", Some("10.0.0.2"), None, Some("CrashLoopBackOff")),
        kubelet_status("Failed", Some("10.0.0.3"), Some("Evicted"), None),
        kubelet_status("Pending", None, None, Some("ContainerCreating")),
        kubelet_status("Running", Some("10.0.0.5"), None, None),
    ];
    let mut pods = Vec::new();
    let mut pvcs = Vec::new();
    for (index, (g, status)) in groups.iter().zip(statuses).enumerate() {
        let mut pod = build_pod(&cluster, g, &pod_options(&cluster, g)).unwrap();
        pod.spec.get_or_insert_with(Default::default).node_name = Some(format!("node-{index}"));
        pod.status = Some(serde_json::from_value(status).unwrap());
        pod.metadata.managed_fields = Some(serde_json::from_value(managed_fields()).unwrap());
        pod.metadata.uid = Some(format!("uid-{index}"));
        if index == 4 {
            pod.metadata.deletion_timestamp = Some(
                k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
            );
        }
        if slim {
            // Through the cache's compact form, as a pass reads it.
            pod = CompactPod::new(pod).decode().unwrap();
        }
        pods.push(pod);
        pvcs.extend(build_pvc(&cluster, g).unwrap());
    }
    let processes: serde_json::Map<String, serde_json::Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            (format!("p{i}"), json!({"address": format!("10.0.0.{}:4501", i + 1), "uptime_seconds": 1000.0,
                                     "locality": {"instance_id": id, "zoneid": format!("node-{i}")}}))
        })
        .collect();
    let db: DatabaseStatus = database(json!({
        "client": {"database_status": {"available": true, "healthy": true},
                   "coordinators": {"quorum_reachable": true, "coordinators": [
                       {"address": "10.0.0.1:4501", "reachable": true},
                       {"address": "10.0.0.2:4501", "reachable": true},
                       {"address": "10.0.0.5:4501", "reachable": true}]}},
        "cluster": {"processes": processes}
    }));
    base.connection_string("sample:abc@10.0.0.1:4501,10.0.0.2:4501,10.0.0.5:4501")
        .status(|s| s.configured = true)
        .pods(pods)
        .pvcs(pvcs)
        .database(db)
}

/// Everything a pass decides from `snapshot`: the observation of every group and
/// every step's verdict.
fn decisions(snapshot: &ClusterSnapshot) -> Vec<String> {
    let mut all = vec![format!("{:?}", observe_groups(snapshot))];
    for step in ordered_steps() {
        let verdict = step.decide(snapshot, &PassFacts::default());
        all.push(format!("{}: {verdict:?}", step.name()));
    }
    all
}

#[test]
fn a_slim_pod_keeps_what_passes_read() {
    let (full, slim) = (fixture(false).build(), fixture(true).build());
    let cluster = full.cluster();
    assert_eq!(full.pod_heads().len(), 5);
    for (before, after) in full.pods().zip(slim.pods()) {
        // What goes.
        assert!(before.metadata.managed_fields.is_some());
        assert_eq!(after.metadata.managed_fields, None);
        let status = after.status.as_ref().unwrap();
        assert_eq!(status.conditions, None);
        assert_eq!(status.init_container_statuses, None);
        assert!(
            status
                .container_statuses
                .iter()
                .flatten()
                .all(|c| c.last_state.is_none())
        );
        // What stays: spec, labels, annotations and the read helpers' answers.
        assert_eq!(before.spec, after.spec);
        assert_eq!(before.metadata.labels, after.metadata.labels);
        assert_eq!(before.metadata.annotations, after.metadata.annotations);
        assert_eq!(pod_phase(before), pod_phase(after));
        assert_eq!(pod_ip(before), pod_ip(after));
        assert_eq!(public_ip(cluster, before), public_ip(cluster, after));
        assert_eq!(pod_is_running(before), pod_is_running(after));
        assert_eq!(pod_is_failing(before), pod_is_failing(after));
        assert_eq!(is_terminal(before), is_terminal(after));
        assert_eq!(
            expected_substitutions(before),
            expected_substitutions(after)
        );
        assert_eq!(expected_zone(before), expected_zone(after));
        assert_eq!(
            mounted_servers_per_pod(before),
            mounted_servers_per_pod(after)
        );
    }
    // The fixture shows each state the helpers tell apart.
    let pods: Vec<&Pod> = full.pods().collect();
    assert!(pods.iter().any(|p| pod_is_failing(*p)));
    assert!(pods.iter().any(|p| is_terminal(*p)));
    assert!(pods.iter().any(|p| pod_is_running(*p)));
    assert!(pods.iter().any(|p| pod_ip(*p).is_none()));
    assert_eq!(decisions(&full), decisions(&slim));
}

#[test]
fn slim_pvcs_services_and_config_maps_lose_only_server_records() {
    let metadata = || ObjectMeta {
        name: Some("x".into()),
        labels: Some([("a".to_owned(), "b".to_owned())].into()),
        managed_fields: Some(serde_json::from_value(managed_fields()).unwrap()),
        ..ObjectMeta::default()
    };
    let mut pvc: PersistentVolumeClaim = serde_json::from_value(json!({
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1G"}}},
        "status": {"phase": "Bound"}
    }))
    .unwrap();
    pvc.metadata = metadata();
    let spec = pvc.spec.clone();
    slim_pvc(&mut pvc);
    // The phase stays: ReplaceFailedPods reads whether a claim is bound.
    let phase = pvc.status.as_ref().and_then(|s| s.phase.clone());
    assert_eq!((phase, pvc.spec), (Some("Bound".to_owned()), spec));
    assert_eq!(pvc.status.and_then(|s| s.capacity), None);
    let mut service = Service {
        metadata: metadata(),
        ..Service::default()
    };
    slim_service(&mut service);
    let mut config_map = ConfigMap {
        metadata: metadata(),
        data: Some([("k".to_owned(), "v".to_owned())].into()),
        ..ConfigMap::default()
    };
    slim_config_map(&mut config_map);
    for slimmed in [&service.metadata, &config_map.metadata] {
        assert_eq!(slimmed.managed_fields, None);
        assert_eq!(slimmed.labels, metadata().labels);
    }
    assert_eq!(config_map.data.unwrap()["k"], "v");
}

#[test]
fn a_snapshot_of_cached_pods_decides_as_one_of_listed_pods() {
    let decoder = Arc::new(DecodedPods::new(0));
    let (listed, cached) = (
        fixture(false).build(),
        fixture(false).build_cached(&decoder),
    );
    assert_eq!(decisions(&listed), decisions(&cached));
    assert_eq!(cached.decode_failure(), None);
    // Every head reads as the listed pod's metadata and status, slimmed.
    for (whole, head) in listed.pods().zip(cached.pod_heads()) {
        let mut slim = whole.clone();
        crate::controller::cache::slim::slim_pod(&mut slim);
        assert_eq!(
            (&head.metadata, &head.status),
            (&slim.metadata, &slim.status)
        );
    }
}

/// The scheduler's failed PodScheduled condition stays (ReplaceFailedPods reads why a
/// pod cannot be placed); the other conditions go.
#[test]
fn a_slim_unschedulable_pod_keeps_the_scheduler_reason() {
    let mut pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "status": {"phase": "Pending", "conditions": [
            {"type": "Ready", "status": "False"},
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/3 nodes are available: 3 node(s) had volume node affinity conflict."}]}
    }))
    .unwrap();
    slim_pod(&mut pod);
    let conditions = pod.status.unwrap().conditions.unwrap();
    assert_eq!(conditions.len(), 1);
    assert_eq!(conditions[0].type_, "PodScheduled");
}
