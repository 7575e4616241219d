//! Test fixtures and unit tests of the pod model: names, labels, merges, fault domains,
//! DNS, TLS, bin packing, PVCs, services and hashes.

use std::collections::BTreeMap;

use fdb_shared::api::cluster::ProcessGroupStatus;
use fdb_shared::api::{FoundationDBCluster, ProcessClass};
use k8s_openapi::api::core::v1::{Container, EnvVar, Pod};

use super::names::parse_process_group_id;
use super::volumes::DATA_VOLUME;
use super::*;
use fdb_shared::api::cluster::settings::{
    CLUSTER_NAME_LABEL, PROCESS_CLASS_LABEL, PROCESS_GROUP_ID_LABEL,
};

/// A cluster `sample` in namespace `fdb` (UID `uid-1`, version 7.1.57) with `spec_yaml` as
/// its spec.
pub(crate) fn cluster(spec_yaml: &str) -> FoundationDBCluster {
    let spec = if spec_yaml.trim().is_empty() {
        "version: 7.1.57".to_owned()
    } else {
        format!("version: 7.1.57\n{spec_yaml}")
    };
    let mut cluster = FoundationDBCluster::new("sample", serde_yaml_ng::from_str(&spec).unwrap());
    cluster.metadata.namespace = Some("fdb".to_owned());
    cluster.metadata.uid = Some("uid-1".to_owned());
    cluster
}

/// A process group of `class` with ID `id`.
pub(crate) fn group(class: ProcessClass, id: &str) -> ProcessGroupStatus {
    ProcessGroupStatus {
        process_group_id: id.to_owned(),
        process_class: class,
        addresses: Vec::new(),
        removal_timestamp: None,
        exclusion_timestamp: None,
        exclusion_skipped: false,
        excluded_targets: Vec::new(),
        fault_domain: None,
        process_group_conditions: Vec::new(),
    }
}

pub(crate) fn storage_1() -> ProcessGroupStatus {
    group(ProcessClass::Storage, "storage-1")
}

pub(crate) fn pod(cluster: &FoundationDBCluster, group: &ProcessGroupStatus) -> Pod {
    build_pod(cluster, group, &PodOptions::default()).unwrap()
}

pub(crate) fn container<'a>(pod: &'a Pod, name: &str) -> &'a Container {
    let spec = pod.spec.as_ref().unwrap();
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no container {name}"))
}

pub(crate) fn env<'a>(container: &'a Container, name: &str) -> Option<&'a EnvVar> {
    container.env.iter().flatten().find(|e| e.name == name)
}

pub(crate) fn field_path(var: &EnvVar) -> Option<&str> {
    var.value_from
        .as_ref()?
        .field_ref
        .as_ref()
        .map(|f| f.field_path.as_str())
}

pub(crate) fn args(container: &Container) -> String {
    container.args.clone().unwrap_or_default().join(" ")
}

pub(crate) fn volume<'a>(pod: &'a Pod, name: &str) -> &'a k8s_openapi::api::core::v1::Volume {
    pod.spec
        .as_ref()
        .unwrap()
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == name)
        .unwrap()
}

#[test]
fn process_group_ids_pod_and_pvc_names() {
    let plain = cluster("");
    assert_eq!(
        process_group_id(&plain, ProcessClass::Storage, 3),
        "storage-3"
    );
    assert_eq!(
        process_group_id(&plain, ProcessClass::ClusterController, 1),
        "cluster_controller-1"
    );
    assert_eq!(
        parse_process_group_id(&plain, "cluster_controller-12"),
        Some((ProcessClass::ClusterController, 12))
    );
    assert_eq!(parse_process_group_id(&plain, "storage-0"), None);
    assert_eq!(parse_process_group_id(&plain, "blob-1"), None);
    assert_eq!(parse_process_group_id(&plain, "storage"), None);
    let cc = group(ProcessClass::ClusterController, "cluster_controller-1");
    assert_eq!(pod_name(&plain, &cc), "sample-cluster-controller-1");
    assert_eq!(pvc_name(&plain, &storage_1()), "sample-storage-1-data");

    let prefixed = cluster("processGroupIDPrefix: dc1");
    let id = process_group_id(&prefixed, ProcessClass::Log, 2);
    assert_eq!(id, "dc1-log-2");
    assert_eq!(
        parse_process_group_id(&prefixed, &id),
        Some((ProcessClass::Log, 2))
    );
    assert_eq!(parse_process_group_id(&prefixed, "log-2"), None);
    assert_eq!(parse_process_group_id(&prefixed, "dc2-log-2"), None);
    // The prefix is not part of the pod name.
    assert_eq!(
        pod_name(&prefixed, &group(ProcessClass::Log, &id)),
        "sample-log-2"
    );
    // IDs the cluster did not generate still get a valid name.
    assert_eq!(
        pod_name(&prefixed, &group(ProcessClass::Log, "dc1-Odd_ID")),
        "sample-dc1-odd-id"
    );
    // Changing the prefix renames nothing: a group made under the old prefix keeps its
    // pod, so the operator never builds a second pod for it.
    let renamed = cluster("processGroupIDPrefix: dc2");
    assert_eq!(
        pod_name(&renamed, &group(ProcessClass::Log, "dc1-log-2")),
        "sample-log-2"
    );
    assert_eq!(
        pvc_name(&renamed, &group(ProcessClass::Log, "dc1-log-2")),
        "sample-log-2-data"
    );
    assert_eq!(
        parse_any_process_group_id("dc1-cluster_controller-3"),
        Some((ProcessClass::ClusterController, 3))
    );
    assert_eq!(
        parse_any_process_group_id("a-b-grv_proxy-4"),
        Some((ProcessClass::GrvProxy, 4))
    );
    assert_eq!(parse_any_process_group_id("storage-0"), None);
    assert_eq!(parse_any_process_group_id("storage"), None);
}

#[test]
fn labels_follow_the_label_config() {
    let default = cluster("");
    let cc = group(ProcessClass::ClusterController, "cluster_controller-1");
    assert_eq!(
        process_group_labels(&default, &cc),
        BTreeMap::from([
            (CLUSTER_NAME_LABEL.to_owned(), "sample".to_owned()),
            (
                PROCESS_CLASS_LABEL.to_owned(),
                "cluster_controller".to_owned()
            ),
            (
                PROCESS_GROUP_ID_LABEL.to_owned(),
                "cluster_controller-1".to_owned()
            ),
        ])
    );
    let custom = cluster(
        "labels:\n  matchLabels: {app: db}\n  processClassLabels: [a/class, b/class]\n  processGroupIDLabels: [a/id]\n  resourceLabels: {team: x}",
    );
    assert_eq!(
        cluster_labels(&custom),
        BTreeMap::from([("app".to_owned(), "db".to_owned())])
    );
    let labels = process_group_labels(&custom, &storage_1());
    assert_eq!(labels.len(), 4);
    assert_eq!(labels["b/class"], "storage");
    assert_eq!(labels["a/id"], "storage-1");
    let pod = pod(&custom, &storage_1());
    assert_eq!(pod.metadata.labels.as_ref().unwrap()["team"], "x");
}

#[test]
fn stateless_pod_uses_an_empty_dir_and_has_no_pvc() {
    let cluster = cluster("");
    let stateless = group(ProcessClass::Stateless, "stateless-4");
    let pod = pod(&cluster, &stateless);
    assert_eq!(pod.metadata.name.as_deref(), Some("sample-stateless-4"));
    assert!(volume(&pod, DATA_VOLUME).empty_dir.is_some());
    let items = volume(&pod, CONFIG_MAP_VOLUME)
        .config_map
        .as_ref()
        .unwrap()
        .items
        .clone()
        .unwrap();
    assert_eq!(items[0].key, "fdbmonitor-conf-stateless");
    assert_eq!(build_pvc(&cluster, &stateless).unwrap(), None);
}

#[test]
fn user_pod_template_is_merged() {
    let cluster = cluster(
        r#"processes:
  general:
    podTemplate:
      metadata:
        labels: {team: storage, foundationdb.org/fdb-process-class: forged}
        annotations: {note: kept}
      spec:
        tolerations: [{key: dedicated, operator: Exists}]
        nodeSelector: {disk: ssd}
        volumes: [{name: extra, emptyDir: {}}]
        containers:
        - name: foundationdb
          image: ignored/image
          resources: {requests: {cpu: "2", memory: 8Gi}}
          env: [{name: EXTRA, value: "1"}, {name: FDB_INSTANCE_ID, value: forged}]
          volumeMounts: [{name: extra, mountPath: /extra}, {name: extra, mountPath: /var/fdb/data}]
          securityContext: {runAsUser: 4059}
        - name: foundationdb-kubernetes-sidecar
          resources: {requests: {cpu: 50m}}
        - name: logger
          image: busybox
        initContainers:
        - name: prepare
          image: busybox
"#,
    );
    let pod = pod(&cluster, &storage_1());
    let meta_labels = pod.metadata.labels.as_ref().unwrap();
    assert_eq!(meta_labels["team"], "storage");
    assert_eq!(meta_labels[PROCESS_CLASS_LABEL], "storage");
    assert_eq!(pod.metadata.annotations.as_ref().unwrap()["note"], "kept");
    let spec = pod.spec.as_ref().unwrap();
    let names: Vec<_> = spec.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, [MAIN_CONTAINER, SIDECAR_CONTAINER, "logger"]);
    let inits: Vec<_> = spec
        .init_containers
        .iter()
        .flatten()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(inits, [INIT_CONTAINER, "prepare"]);
    assert_eq!(
        spec.tolerations.as_ref().unwrap()[0].key.as_deref(),
        Some("dedicated")
    );
    assert_eq!(spec.node_selector.as_ref().unwrap()["disk"], "ssd");
    assert!(spec.volumes.iter().flatten().any(|v| v.name == "extra"));

    let main = container(&pod, MAIN_CONTAINER);
    assert_eq!(
        main.image.as_deref(),
        Some("foundationdb/foundationdb:7.1.57")
    );
    let requests = main.resources.as_ref().unwrap().requests.as_ref().unwrap();
    assert_eq!(requests["memory"].0, "8Gi");
    assert_eq!(env(main, "EXTRA").unwrap().value.as_deref(), Some("1"));
    assert_eq!(
        env(main, "FDB_INSTANCE_ID").unwrap().value.as_deref(),
        Some("storage-1")
    );
    assert_eq!(
        main.env
            .as_ref()
            .unwrap()
            .iter()
            .filter(|e| e.name == "FDB_INSTANCE_ID")
            .count(),
        1
    );
    let mounts: Vec<_> = main
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| (m.name.as_str(), m.mount_path.as_str()))
        .collect();
    assert!(mounts.contains(&("extra", "/extra")));
    assert!(mounts.contains(&("data", "/var/fdb/data")));
    assert!(!mounts.contains(&("extra", "/var/fdb/data")));
    assert_eq!(
        main.security_context.as_ref().unwrap().run_as_user,
        Some(4059)
    );

    // The user set sidecar resources: no defaults added.
    let sidecar = container(&pod, SIDECAR_CONTAINER);
    let resources = sidecar.resources.as_ref().unwrap();
    assert_eq!(resources.requests.as_ref().unwrap()["cpu"].0, "50m");
    assert!(resources.limits.is_none());
    // The init container keeps the defaults.
    let init = container(&pod, INIT_CONTAINER);
    assert_eq!(
        init.resources.as_ref().unwrap().limits.as_ref().unwrap()["memory"].0,
        "256Mi"
    );
}

#[test]
fn class_template_replaces_the_general_one() {
    let cluster = cluster(
        "processes:\n  general:\n    podTemplate: {metadata: {labels: {from: general}}}\n  log:\n    podTemplate: {metadata: {labels: {from: log}}}",
    );
    let log = pod(&cluster, &group(ProcessClass::Log, "log-1"));
    assert_eq!(log.metadata.labels.as_ref().unwrap()["from"], "log");
    let storage = pod(&cluster, &storage_1());
    assert_eq!(storage.metadata.labels.as_ref().unwrap()["from"], "general");
}
