use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::controller::cache::decoded_pods::DecodedPods;
use crate::controller::fixtures::{Fixture, group};
use crate::controller::model::desired::pod_options;
use crate::controller::model::pod::build_pod;

/// A pod as an API server lists it: the operator's pod for `id`, on a node, with
/// managed fields and a kubelet's status.
fn listed_pod(id: &str) -> Pod {
    let cluster = Fixture::new("{version: 7.1.57, processCounts: {storage: 3}}")
        .build()
        .cluster()
        .clone();
    let g = group(id);
    let mut pod = build_pod(&cluster, &g, &pod_options(&cluster, &g)).unwrap();
    pod.metadata.namespace = Some("default".into());
    pod.metadata.resource_version = Some("7".into());
    pod.spec.get_or_insert_with(Default::default).node_name = Some("node-1".into());
    pod.metadata.managed_fields = serde_json::from_value(json!([
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:podIP": {}}}}
    ]))
    .unwrap();
    pod.status = serde_json::from_value(json!({
        "phase": "Running", "podIP": "10.0.0.1", "hostIP": "192.168.0.1",
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [{"name": "foundationdb", "image": "foundationdb/foundationdb:7.1.57",
            "imageID": "x", "ready": true, "restartCount": 2,
            "state": {"running": {}}, "lastState": {"terminated": {"exitCode": 1}}}]
    }))
    .unwrap();
    pod
}

#[test]
fn a_compact_pod_decodes_to_the_slim_pod() {
    let pod = listed_pod("storage-1");
    let mut slim = pod.clone();
    slim_pod(&mut slim);
    let compact = CompactPod::new(pod);
    assert!(matches!(compact.spec, Some(CompactSpec::Deflated { .. })));
    assert_eq!(compact.decode().unwrap(), slim);
    // The cache's index and own-write waits read the metadata as it is.
    assert_eq!(kube::Resource::meta(&compact), &slim.metadata);
    assert_eq!(<CompactPod as kube::Resource>::plural(&()), "pods");
    let no_spec = CompactPod::new(Pod::default());
    assert_eq!(no_spec.decode().unwrap(), Pod::default());
}

/// The spec is kept deflated, in well under half the bytes of its JSON.
#[test]
fn the_spec_is_kept_deflated() {
    let pod = listed_pod("storage-1");
    let json = serde_json::to_vec(pod.spec.as_ref().unwrap()).unwrap();
    let compact = CompactPod::new(pod);
    let Some(CompactSpec::Deflated { bytes, json_len }) = &compact.spec else {
        panic!("not deflated: {:?}", compact.spec);
    };
    assert!(*json_len <= json.len(), "{json_len} > {}", json.len());
    assert!(bytes.len() * 2 < *json_len, "{} of {json_len}", bytes.len());
}

/// A stream that does not inflate is the decoding error, naming the pod.
#[test]
fn a_spec_that_does_not_inflate_is_an_error_naming_the_pod() {
    let mut compact = CompactPod::new(listed_pod("storage-1"));
    compact.spec = Some(CompactSpec::Deflated {
        bytes: vec![0xff; 16].into(),
        json_len: 100,
    });
    let error = compact.decode().unwrap_err();
    assert!(
        error.to_string().contains("default/sample-storage-1"),
        "{error}"
    );
    let source = std::error::Error::source(&error).unwrap().to_string();
    assert!(source.contains("does not inflate"), "{source}");
}

#[test]
fn a_spec_that_does_not_decode_is_an_error_naming_the_pod() {
    let mut compact = CompactPod::new(listed_pod("storage-1"));
    compact.spec = Some(CompactSpec::deflated(b"{\"containers\": 3}"));
    let error = compact.decode().unwrap_err();
    assert!(
        error.to_string().contains("default/sample-storage-1"),
        "{error}"
    );
    // A snapshot holding it reads its head and facts; asked for the whole pod, it has
    // none and records why (the pass then fails after the step).
    let snapshot = Fixture::new("{version: 7.1.57, processCounts: {storage: 3}}")
        .groups([group("storage-1")])
        .pods([listed_pod("storage-1")])
        .build_with(|_| crate::controller::snapshot::PodSource::Cached {
            pod: Arc::new(compact.clone()),
            decoder: Arc::default(),
        });
    assert_eq!(snapshot.decode_failure(), None);
    let view = snapshot.group("storage-1").unwrap();
    assert!(view.pod_head().is_some() && view.pod_facts().is_some());
    assert_eq!(snapshot.decode_failure(), None, "nothing decoded yet");
    assert!(view.pod().is_none());
    let failure = snapshot.decode_failure().unwrap();
    assert!(failure.contains("default/sample-storage-1"), "{failure}");
}

#[test]
fn pods_read_again_are_shared_until_they_change() {
    let decoded = DecodedPods::new(10);
    let first = vec![
        Arc::new(CompactPod::new(listed_pod("storage-1"))),
        Arc::new(CompactPod::new(listed_pod("storage-2"))),
    ];
    let a = decoded.decode(&first).unwrap();
    let b = decoded.decode(&first).unwrap();
    assert_eq!(decoded.len(), 2);
    for (a, b) in a.iter().zip(&b) {
        assert!(Arc::ptr_eq(a, b), "read again: the same decoded pod");
    }
    // The watch replaced storage-2 (a new object, even if equal): decoded again.
    let mut changed = listed_pod("storage-2");
    changed.metadata.resource_version = Some("8".into());
    let second = vec![first[0].clone(), Arc::new(CompactPod::new(changed))];
    let c = decoded.decode(&second).unwrap();
    assert!(Arc::ptr_eq(&a[0], &c[0]));
    assert!(!Arc::ptr_eq(&a[1], &c[1]));
    assert_eq!(c[1].metadata.resource_version.as_deref(), Some("8"));
    assert_eq!(decoded.len(), 2, "one entry per pod");
}

#[test]
fn at_most_capacity_pods_are_kept_decoded_the_least_recently_read_go() {
    let decoded = DecodedPods::new(8);
    let cluster = |from: usize| -> Vec<Arc<CompactPod>> {
        (from..from + 4)
            .map(|n| Arc::new(CompactPod::new(listed_pod(&format!("storage-{n}")))))
            .collect()
    };
    let (one, two, three) = (cluster(1), cluster(11), cluster(21));
    let kept = decoded.decode(&one).unwrap();
    decoded.decode(&two).unwrap();
    assert_eq!(decoded.len(), 8);
    decoded.decode(&three).unwrap();
    assert!(decoded.len() <= 8, "{}", decoded.len());
    // The first cluster's pods were the least recently read: decoded anew.
    let again = decoded.decode(&one).unwrap();
    assert!(!Arc::ptr_eq(&kept[0], &again[0]));
    assert_eq!(kept, again, "the same values");
    let none = DecodedPods::new(0);
    none.decode(&one).unwrap();
    assert!(none.is_empty());
}

/// A unified pod's monitor reports the environment it starts its processes with in the
/// pod's annotations, so checking their command lines reads the pod's head, never its
/// spec: a steady pass over a unified cluster decodes no pod either. The cached pod's
/// spec here would not decode, so a decode would show as the snapshot's failure.
#[test]
fn a_unified_pods_command_lines_are_checked_without_decoding_it() {
    use fdb_shared::api::ProcessClass;
    use fdb_shared::api::cluster::ImageType;
    use fdb_shared::monitor_conf::process_config::{
        CURRENT_CONFIGURATION_ANNOTATION, ENVIRONMENT_ANNOTATION,
    };

    use crate::controller::model::process_config::desired_process_configuration;
    use crate::controller::pod_agent::monitor_command_lines;
    use crate::controller::snapshot::PodSource;
    use crate::controller::snapshot::observe::observe_groups;

    let spec = "{version: 7.1.57, imageType: unified, processCounts: {storage: 3}}";
    let fixture = Fixture::new(spec).connection_string("sample:abc@10.0.0.1:4501");
    let cluster = fixture.clone().build().cluster().clone();
    let storage_1 = group("storage-1");
    let mut listed = build_pod(&cluster, &storage_1, &pod_options(&cluster, &storage_1)).unwrap();
    listed.metadata.namespace = Some("default".into());
    listed.status = serde_json::from_value(serde_json::json!({
        "phase": "Running", "podIP": "10.0.0.1",
        "containerStatuses": [{"name": "foundationdb", "ready": true, "restartCount": 0,
            "image": "x", "imageID": "x", "state": {"running": {}}}]
    }))
    .unwrap();
    let desired = desired_process_configuration(&cluster, ProcessClass::Storage, true);
    let annotations = listed
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    annotations.insert(
        CURRENT_CONFIGURATION_ANNOTATION.into(),
        serde_json::to_string(&desired).unwrap(),
    );
    annotations.insert(
        ENVIRONMENT_ANNOTATION.into(),
        r#"{"BINARY_DIR":"/usr/bin","FDB_INSTANCE_ID":"storage-1","FDB_MACHINE_ID":"n1","FDB_POD_IP":"10.0.0.1","FDB_PUBLIC_IP":"10.0.0.1","FDB_ZONE_ID":"n1","FDB_DNS_NAME":"sample-storage-1.sample.default.svc.cluster.local"}"#.into(),
    );
    // The kubelet projected the desired configuration (the operator's annotation says so).
    let config_hash = crate::controller::model::desired::ConfigHashes::default()
        .of(&cluster, &storage_1, 1, ImageType::Unified)
        .unwrap()
        .unwrap();
    annotations.insert(
        crate::controller::model::pod::LAST_APPLIED_CONFIG_MAP_ANNOTATION.into(),
        config_hash,
    );
    let lines = monitor_command_lines(&cluster, &storage_1, &listed, 1).unwrap();
    let mut db = crate::controller::fixtures::reporting(&["storage-1"]);
    db.cluster.processes.get_mut("p0").unwrap().command_line = Some(lines[&1].clone());

    let mut compact = CompactPod::new(listed.clone());
    compact.spec = Some(CompactSpec::deflated(b"{\"containers\": 3}"));
    let snapshot = fixture
        .groups([storage_1])
        .pods([listed])
        .database(db)
        .build_with(|_| PodSource::Cached {
            pod: std::sync::Arc::new(compact.clone()),
            decoder: std::sync::Arc::default(),
        });
    let observations = observe_groups(&snapshot).unwrap();
    assert_eq!(
        observations["storage-1"].facts.command_lines_match,
        Some(true),
        "{:?}",
        observations["storage-1"]
    );
    assert_eq!(snapshot.decode_failure(), None, "the pod was decoded");
}
