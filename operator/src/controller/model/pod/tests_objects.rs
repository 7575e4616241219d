//! Unit tests of the pod model: PVCs, services, servers per pod and the spec hash.

use fdb_shared::api::ProcessClass;

use super::hash::pvc_spec_hash;
use super::tests::{cluster, group, pod, storage_1, volume};
use super::volumes::DATA_VOLUME;
use super::*;

#[test]
fn pvc_defaults_and_template() {
    let default = build_pvc(&cluster(""), &storage_1()).unwrap().unwrap();
    let expected = r#"apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  annotations:
    foundationdb.org/last-applied-spec: HASH
  labels:
    foundationdb.org/fdb-cluster-name: sample
    foundationdb.org/fdb-process-class: storage
    foundationdb.org/fdb-process-group-id: storage-1
  name: sample-storage-1-data
  namespace: fdb
  ownerReferences:
  - apiVersion: apps.foundationdb.org/v1beta2
    blockOwnerDeletion: true
    controller: true
    kind: FoundationDBCluster
    name: sample
    uid: uid-1
spec:
  accessModes:
  - ReadWriteOnce
  resources:
    requests:
      storage: 128G
"#
    .replace("HASH", &pvc_spec_hash(&default));
    assert_eq!(serde_yaml_ng::to_string(&default).unwrap(), expected);

    let templated = cluster(
        "processes:\n  storage:\n    volumeClaimTemplate:\n      metadata: {labels: {tier: fast}, annotations: {a: b}}\n      spec: {storageClassName: ssd, resources: {requests: {storage: 1Ti}}}",
    );
    let pvc = build_pvc(&templated, &storage_1()).unwrap().unwrap();
    assert_eq!(pvc.metadata.labels.as_ref().unwrap()["tier"], "fast");
    assert_eq!(pvc.metadata.annotations.as_ref().unwrap()["a"], "b");
    let spec = pvc.spec.as_ref().unwrap();
    assert_eq!(spec.storage_class_name.as_deref(), Some("ssd"));
    assert_eq!(
        spec.resources.as_ref().unwrap().requests.as_ref().unwrap()["storage"].0,
        "1Ti"
    );
    assert_ne!(pvc_spec_hash(&pvc), pvc_spec_hash(&default));

    let own_volume = cluster(
        "processes:\n  general:\n    podTemplate:\n      spec: {volumes: [{name: data, hostPath: {path: /mnt}}]}",
    );
    assert_eq!(build_pvc(&own_volume, &storage_1()).unwrap(), None);
    assert!(
        volume(&pod(&own_volume, &storage_1()), DATA_VOLUME)
            .host_path
            .is_some()
    );
}

#[test]
fn services_on_and_off() {
    let default = cluster("");
    assert_eq!(
        build_process_group_service(&default, &storage_1()).unwrap(),
        None
    );
    let headless = build_headless_service(&default).unwrap();
    assert_eq!(headless.metadata.name.as_deref(), Some("sample"));
    let spec = headless.spec.unwrap();
    assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
    assert_eq!(spec.publish_not_ready_addresses, Some(true));
    assert_eq!(spec.selector.unwrap(), cluster_labels(&default));

    assert_eq!(
        build_headless_service(&cluster("routing: {useDNSInClusterFile: false}")),
        None
    );
    assert!(
        build_headless_service(&cluster(
            "routing: {useDNSInClusterFile: false, headlessService: true}"
        ))
        .is_some()
    );

    let services = cluster("routing: {publicIPSource: service}\nstorageServersPerPod: 2");
    let service = build_process_group_service(&services, &storage_1())
        .unwrap()
        .unwrap();
    assert_eq!(service.metadata.name.as_deref(), Some("sample-storage-1"));
    let spec = service.spec.unwrap();
    assert_eq!(
        spec.selector.unwrap(),
        process_group_labels(&services, &storage_1())
    );
    let ports: Vec<_> = spec
        .ports
        .unwrap()
        .into_iter()
        .map(|p| (p.name.unwrap(), p.port))
        .collect();
    assert_eq!(
        ports,
        [("non-tls".to_owned(), 4501), ("non-tls-2".to_owned(), 4503)]
    );
    let tls = cluster("routing: {publicIPSource: service}\nmainContainer: {enableTls: true}");
    let ports = build_process_group_service(&tls, &storage_1())
        .unwrap()
        .unwrap()
        .spec
        .unwrap()
        .ports
        .unwrap();
    assert_eq!(
        (ports[0].name.as_deref(), ports[0].port),
        (Some("tls"), 4500)
    );
}

#[test]
fn servers_per_pod_by_class() {
    let cluster = cluster("storageServersPerPod: 3\nlogServersPerPod: 2");
    assert_eq!(servers_per_pod(&cluster, ProcessClass::Storage), 3);
    assert_eq!(servers_per_pod(&cluster, ProcessClass::Log), 2);
    assert_eq!(servers_per_pod(&cluster, ProcessClass::Transaction), 2);
    assert_eq!(servers_per_pod(&cluster, ProcessClass::Stateless), 1);
    assert_eq!(
        servers_per_pod(
            &super::tests::cluster("storageServersPerPod: -4"),
            ProcessClass::Storage
        ),
        1
    );
    let pod = pod(&cluster, &storage_1());
    let items = volume(&pod, CONFIG_MAP_VOLUME)
        .config_map
        .as_ref()
        .unwrap()
        .items
        .clone()
        .unwrap();
    assert_eq!(items[0].key, "fdbmonitor-conf-storage-density-3");
}

#[test]
fn spec_hash_is_stable_and_tracks_changes() {
    let cluster = cluster("");
    let first = pod(&cluster, &storage_1());
    let second = pod(&cluster, &storage_1());
    assert_eq!(first, second);
    let annotation = &first.metadata.annotations.as_ref().unwrap()[LAST_APPLIED_SPEC_ANNOTATION];
    assert_eq!(annotation, &pod_spec_hash(&first));
    assert_eq!(annotation.len(), 64);

    let mut changed = cluster.clone();
    changed.spec.version = "7.1.59".to_owned();
    assert_ne!(
        pod_spec_hash(&pod(&changed, &storage_1())),
        pod_spec_hash(&first)
    );
    let other_group = pod(&cluster, &group(ProcessClass::Storage, "storage-2"));
    assert_ne!(pod_spec_hash(&other_group), pod_spec_hash(&first));
    // Metadata-only changes are updated in place, not by recreating the pod.
    let relabelled = super::tests::cluster("labels: {resourceLabels: {team: x}}");
    assert_eq!(
        pod_spec_hash(&pod(&relabelled, &storage_1())),
        pod_spec_hash(&first)
    );
}
