//! The take-over equivalence (`equivalence.rs`): what admission adds is no difference;
//! what changes the processes is named.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{EnvVar, PersistentVolumeClaimSpec, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::json;

use super::equivalence::{process_difference, pvc_difference};
use k8s_openapi::api::core::v1::{
    ConfigMapVolumeSource, ContainerPort, ResourceRequirements, Toleration, VolumeMount,
};

fn spec() -> PodSpec {
    serde_json::from_value(json!({
        "containers": [
            {"name": "foundationdb", "image": "foundationdb/foundationdb:7.1.57",
             "command": ["sh", "-c"], "args": ["fdbmonitor"],
             "env": [{"name": "FDB_CLUSTER_FILE", "value": "/var/fdb/data/fdb.cluster"}],
             "volumeMounts": [{"name": "data", "mountPath": "/var/fdb/data"}]},
            {"name": "foundationdb-kubernetes-sidecar",
             "image": "foundationdb/foundationdb-kubernetes-sidecar:7.1.57-1",
             "env": [{"name": "FDB_PUBLIC_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]},
        ],
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "sample-storage-1-data"}},
            {"name": "config-map", "configMap": {"name": "sample-config"}},
        ],
    }))
    .unwrap()
}

#[test]
fn what_the_api_server_adds_is_not_a_difference() {
    let desired = spec();
    let mut live = spec();
    for container in &mut live.containers {
        container.image_pull_policy = Some("IfNotPresent".into());
        container.termination_message_path = Some("/dev/termination-log".into());
        for env in container.env.iter_mut().flatten() {
            if let Some(field) = env.value_from.as_mut().and_then(|f| f.field_ref.as_mut()) {
                field.api_version = Some("v1".into());
            }
        }
    }
    for volume in live.volumes.iter_mut().flatten() {
        if let Some(config_map) = volume.config_map.as_mut() {
            *config_map = ConfigMapVolumeSource {
                default_mode: Some(420),
                ..config_map.clone()
            };
        }
    }
    live.tolerations = Some(vec![Toleration {
        key: Some("node.kubernetes.io/not-ready".into()),
        effect: Some("NoExecute".into()),
        operator: Some("Exists".into()),
        toleration_seconds: Some(300),
        value: None,
    }]);
    live.restart_policy = Some("Always".into());
    assert_eq!(process_difference(&desired, &live), None);
}

/// What the ServiceAccount plugin and the core defaults add, as in
/// `simulation/src/kube/service_account.rs` and `core_defaults.rs`.
#[test]
fn what_admission_adds_is_not_a_difference() {
    let mut desired = spec();
    desired.containers[1].ports = Some(vec![ContainerPort {
        container_port: 8080,
        name: Some("sidecar".into()),
        ..Default::default()
    }]);
    desired.containers[1].resources = Some(ResourceRequirements {
        limits: Some(
            [
                ("cpu".to_owned(), Quantity("0.1".into())),
                ("memory".to_owned(), Quantity("0.25Gi".into())),
            ]
            .into(),
        ),
        ..Default::default()
    });
    let mut live: PodSpec = serde_json::from_value(json!(desired)).unwrap();
    let mount = VolumeMount {
        name: "kube-api-access-x2b9k".into(),
        mount_path: "/var/run/secrets/kubernetes.io/serviceaccount".into(),
        read_only: Some(true),
        ..Default::default()
    };
    for container in &mut live.containers {
        container
            .volume_mounts
            .get_or_insert_with(Vec::new)
            .push(mount.clone());
    }
    live.volumes.as_mut().unwrap().push(
        serde_json::from_value(json!({"name": "kube-api-access-x2b9k", "projected": {
            "defaultMode": 420,
            "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}))
        .unwrap(),
    );
    let sidecar = &mut live.containers[1];
    sidecar.ports.as_mut().unwrap()[0].protocol = Some("TCP".into());
    let canonical: BTreeMap<String, Quantity> = [
        ("cpu".to_owned(), Quantity("100m".into())),
        ("memory".to_owned(), Quantity("256Mi".into())),
    ]
    .into();
    sidecar.resources = Some(ResourceRequirements {
        limits: Some(canonical.clone()),
        requests: Some(canonical),
        ..Default::default()
    });
    assert_eq!(process_difference(&desired, &live), None);

    // A token volume the desired pod asks for is judged like any other volume, and
    // a mount of another volume at the token's path still differs.
    let mut other_mount = live.clone();
    other_mount.containers[0].volume_mounts.as_mut().unwrap()[1].name = "data".into();
    assert_eq!(
        process_difference(&desired, &other_mount).as_deref(),
        Some("containers[foundationdb].volumeMounts")
    );
    let mut bigger = live.clone();
    bigger.containers[1]
        .resources
        .as_mut()
        .unwrap()
        .requests
        .as_mut()
        .unwrap()
        .insert("cpu".into(), Quantity("200m".into()));
    assert_eq!(
        process_difference(&desired, &bigger).as_deref(),
        Some("containers[foundationdb-kubernetes-sidecar].resources")
    );
}

#[test]
fn claim_sizes_compare_as_amounts() {
    let desired: PersistentVolumeClaimSpec =
        serde_json::from_value(json!({"resources": {"requests": {"storage": "0.5Gi"}}})).unwrap();
    let live: PersistentVolumeClaimSpec = serde_json::from_value(json!({
        "resources": {"requests": {"storage": "512Mi"}},
        "volumeMode": "Filesystem", "storageClassName": "standard"}))
    .unwrap();
    assert_eq!(pvc_difference(&desired, &live), None);
    let smaller: PersistentVolumeClaimSpec =
        serde_json::from_value(json!({"resources": {"requests": {"storage": "256Mi"}}})).unwrap();
    assert_eq!(
        pvc_difference(&desired, &smaller).as_deref(),
        Some("spec.resources")
    );
}

#[test]
fn each_difference_that_matters_is_named() {
    let desired = spec();
    let mut live = spec();
    live.containers[1].image = Some("foundationdb/foundationdb-kubernetes-sidecar:7.1.57-0".into());
    assert_eq!(
        process_difference(&desired, &live).as_deref(),
        Some("containers[foundationdb-kubernetes-sidecar].image")
    );
    let mut live = spec();
    live.containers[0].env = Some(vec![EnvVar {
        name: "FDB_CLUSTER_FILE".into(),
        value: Some("/other".into()),
        value_from: None,
    }]);
    assert_eq!(
        process_difference(&desired, &live).as_deref(),
        Some("containers[foundationdb].env")
    );
    let mut live = spec();
    live.volumes.as_mut().unwrap()[1]
        .config_map
        .as_mut()
        .unwrap()
        .name = "other".into();
    assert_eq!(
        process_difference(&desired, &live).as_deref(),
        Some("volumes[config-map]")
    );
    let mut live = spec();
    live.node_selector = Some([("a".to_owned(), "b".to_owned())].into());
    assert_eq!(
        process_difference(&desired, &live).as_deref(),
        Some("nodeSelector")
    );
}
